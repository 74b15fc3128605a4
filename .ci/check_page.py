"""Opens ``profile.html`` pages in headless Chromium and checks them.

    python .ci/check_page.py [--expect summary,links,...] [--screenshot PNG]
        PAGE.html ...

Each page is opened from its file (``file://``) in Debian's ``chromium``,
started as ``check_traces.py`` starts it and driven by Playwright; every
request that is not for the page itself is refused, so the page must be
whole offline.  A page fails when an image does not decode (``complete``
with a natural width), when the console shows an error or the page throws,
or when a section of ``--expect`` (the ``id`` of its ``<h2>``) is missing.
One line per page; exit status 1 when one fails, 2 when the check itself
could not run.
"""

import argparse
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_traces  # NOQA: E402 (beside this script)

IMAGES_JS = """() => Array.from(document.images).map(
    i => [i.alt, i.complete, i.naturalWidth])"""
SECTIONS_JS = """() => Array.from(document.querySelectorAll('h2[id]')).map(
    h => h.id)"""


def check(context, path, expect, screenshot, timeout):
    url = 'file://' + os.path.abspath(path)
    page = context.new_page()
    errors = []
    page.on('console', lambda m: m.type == 'error' and errors.append(
        'console: ' + m.text))
    page.on('pageerror', lambda e: errors.append('page error: {}'.format(e)))
    page.on('requestfailed', lambda r: r.url != url and errors.append(
        'request refused: ' + r.url))
    try:
        page.goto(url, wait_until='load', timeout=timeout * 1000)
        images = page.evaluate(IMAGES_JS)
        sections = page.evaluate(SECTIONS_JS)
        if screenshot:
            page.screenshot(path=screenshot)
    finally:
        page.close()
    broken = [alt for alt, complete, width in images
              if not complete or width <= 0]
    missing = [s for s in expect if s not in sections]
    problems = errors + ['image not decoded: ' + alt for alt in broken] + [
        'section missing: ' + s for s in missing]
    line = '{} {}: {} images decoded, sections {}'.format(
        'FAIL' if problems else 'OK', os.path.basename(path),
        len(images) - len(broken), ', '.join(sections) or '(none)')
    return not problems, line, problems


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('pages', nargs='+')
    parser.add_argument('--expect', default='',
                        help='comma-separated section ids each page has')
    parser.add_argument('--screenshot', metavar='PNG',
                        help='save the first page\'s first screen')
    parser.add_argument('--chromium',
                        default=shutil.which('chromium') or 'chromium')
    parser.add_argument('--timeout', type=float, default=60)
    args = parser.parse_args(argv)
    for path in args.pages:
        if not os.path.isfile(path):
            print('check_page: no file {}'.format(path), file=sys.stderr)
            return 2
    expect = [s for s in args.expect.split(',') if s]
    from playwright.sync_api import sync_playwright
    scratch = tempfile.mkdtemp(prefix='check_page_')
    browser = None
    try:
        browser = check_traces.Chromium(args.chromium, scratch, args.timeout)
        with sync_playwright() as playwright:
            cdp = playwright.chromium.connect_over_cdp(
                browser.endpoint, timeout=args.timeout * 1000)
            context = cdp.contexts[0]
            # Offline: nothing but the page's own file is loaded.
            pages = {'file://' + os.path.abspath(p) for p in args.pages}
            context.route(lambda url: url not in pages,
                          lambda route: route.abort())
            failed = 0
            for index, path in enumerate(args.pages):
                ok, line, problems = check(
                    context, path, expect,
                    args.screenshot if index == 0 else None, args.timeout)
                print(line, flush=True)
                for problem in problems:
                    print('    ' + problem, flush=True)
                failed += not ok
            cdp.close()
        return 1 if failed else 0
    except check_traces.Failure as e:
        print('check_page: {}'.format(e), file=sys.stderr)
        return 2
    finally:
        if browser is not None:
            browser.stop()
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == '__main__':
    sys.exit(main())

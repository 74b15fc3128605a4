"""``profile.html``: one self-contained page of a run (docs/profile.md).
"""

import base64
import html
import os

from chainer_hookext import _files
from chainer_hookext import plots
from chainer_hookext.plots import _memory_timeline
from chainer_hookext.profile import findings as findings_module
from chainer_hookext.profile import run as run_module
from chainer_hookext.report import keys
from chainer_hookext.report import units

PAGE_FILE = 'profile.html'

_STYLE = '''
body { font-family: sans-serif; max-width: 1100px; margin: 2em auto;
       color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em;
     border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; font-size: 0.9em; }
td, th { padding: 2px 10px; text-align: right; }
td:first-child, th:first-child { text-align: left; }
tr:nth-child(even) { background: #f4f4f4; }
img { max-width: 100%; }
.note { color: #666; font-size: 0.9em; }
code { background: #f0f0f0; padding: 0 3px; }
'''


def render(run):
    """Returns the page of a :class:`~.run.Run` as a string."""
    config = run.profile.get('config', {})
    parts = ['<!DOCTYPE html>', '<html><head><meta charset="utf-8">',
             f'<title>Profile: {_text(run.out)}</title>',
             f'<style>{_STYLE}</style></head><body>',
             f'<h1>Profile of <code>{_text(run.out)}</code></h1>']
    if config:
        parts.append(html_table(['', ''], [
            [key.replace('_', ' '), config[key]] for key in (
                'model', 'optimizer', 'batch_size', 'iteration', 'epoch')
            if config.get(key) is not None]))
    for section in (_summary, _links, _functions, _roofline, _memory,
                    _memory_over_time, _statistics, _loop, _traces):
        parts.extend(section(run))
    parts.append('<p class="note">Written by chainer_hookext.</p>')
    parts.append('</body></html>')
    return '\n'.join(parts)


def write(run, path=None):
    """Writes the page (default ``run.out/profile.html``); returns its path.
    """
    path = path or os.path.join(run.out, PAGE_FILE)
    _files.write_atomic(path, render(run).encode('utf-8'))
    return path


# -- sections -----------------------------------------------------------------
def _summary(run):
    found = findings_module.findings(run)
    if not found:
        return []
    return ['<h2 id="summary">Summary</h2>', '<ul>'] + [
        f'<li>{_text(f.text)}</li>' for f in found] + ['</ul>']


def _links(run):
    names = findings_module.link_names(run)
    if not names:
        return []
    out = ['<h2 id="links">Time per link</h2>'] + _figure(
        plots.link_time, run.log, names)
    entry = run_module.last_entry(run, keys.prefix('train', keys.TIME))
    if entry is not None:
        seconds = findings_module.link_seconds(entry, names).items()
        out += ['<p>Self time per training iteration, last report:</p>',
                html_table(['link', 'forward', 'backward'], [
                    [name, units.seconds(f), units.seconds(b)]
                    for name, (f, b) in seconds if f or b])]
    return out


def _functions(run):
    types = run.profile.get('links', {}).get('functions')
    if not types:
        return []
    out = ['<h2 id="functions">Function types</h2>',
           '<p>Whole run, every link together '
           '(<code>TimedLinks(functions=True)</code>):</p>']
    flops = any('flops' in row for row in types.values())
    out.append(html_table(
        ['type', 'forward', 'backward', 'nodes'] + (
            ['FLOPs', 'backward FLOPs'] if flops else []),
        [[name, units.seconds(row['time']),
          units.seconds(row['backward_time']), str(row['occurrence'])] + (
            [units.count(row.get('flops', 0)),
             units.count(row.get('backward_flops', 0))] if flops else [])
         for name, row in types.items()]))
    out += _figure(plots.functions, types)
    rows = []
    for path, link in run.profile.get('links', {}).get('links', {}).items():
        functions = link.get('functions') or {}
        if not functions:
            continue
        rows.append([path, units.seconds(link.get('self_time', 0.0)),
                     units.seconds(link.get('backward_self_time', 0.0))])
        rows += [['\u2003' + name, units.seconds(row['time']),
                  units.seconds(row['backward_time'])]
                 for name, row in functions.items()]
        if 'rest_time' in link:
            rows.append(['\u2003(rest: its own Python)',
                         units.seconds(link['rest_time']), ''])
    if rows:
        out += ['<p>Each link\'s self time by type, whole run:</p>',
                html_table(['link / type', 'forward', 'backward'], rows)]
    return out


def _roofline(run):
    links = run.profile.get('links', {})
    if not links.get('roofline'):
        return []
    return ['<h2 id="roofline">Roofline</h2>'] + _figure(
        plots.roofline, links)


def _memory(run):
    if run_module.last_entry(run, keys.prefix('train', keys.MEMORY)) is None:
        return []
    names = findings_module.link_names(run) or [
        n for n in run.profile.get('memory', {}) if n != keys.OUTSIDE]
    return ['<h2 id="memory">Memory per link</h2>'] + _figure(
        plots.memory, run.log, names)


def _memory_over_time(run):
    # From the last window trace with memory counters.
    memory = next((m for m in map(run_module.memory_trace, reversed(
        _windows(run))) if m is not None), None)
    if memory is None:
        return []
    out = ['<h2 id="memory_timeline">Memory over the iteration</h2>'] + (
        _figure(_memory_timeline.memory_timeline, memory))
    peak = memory.peak
    if peak is not None:
        out.append(f'<p>Peak {_text(units.nbytes(peak.total))} at the '
                   f'{_text(peak.phase)} of <code>{_text(peak.where)}</code>'
                   f' ({peak.ms:.3f} ms into {_text(memory.iteration)}); '
                   'the largest parts then (activations by the link whose '
                   'forward made them, the rest by the parameter\'s '
                   'link):</p>')
        out.append(html_table(['link', 'category', 'bytes'], [
            [h.get('holder'), h.get('category'),
             units.nbytes(h.get('bytes', 0))] for h in peak.holders]))
    measured = run.profile.get('memory_peak')
    if isinstance(measured, dict) and measured.get('forget'):
        out.append('<p>In the iteration <code>LinkMemory</code> measured, '
                   '<code>F.forget</code> lowers the peak of '
                   f"{_text(units.nbytes(measured.get('bytes', 0)))}: " +
                   ', '.join(f'around <code>{_text(link)}</code> by '
                             f'{_text(units.nbytes(n))}'
                             for link, n in measured['forget']) + '.</p>')
    return out


TABLE_TOP = 20
#: ``profile.json``'s field (the plot's name and the ``id``): the statistic
#: drawn when reported, the key, the heading.
_STATISTICS = (('activations', 'std', keys.activation_key,
                'Outputs per link (ActivationStatistics)'),
               ('gradients', 'norm', keys.gradient_key,
                'Gradients per link (GradientStatistics)'))


def _statistics(run):
    out = []
    for field, statistic, key_of, heading in _STATISTICS:
        ran = run.profile.get(field) or {}
        names, statistics = ran.get('names', []), ran.get('statistics', [])
        if not statistics:
            continue
        drawn = statistic if statistic in statistics else statistics[0]
        entry = next((one for one in reversed(run.log)
                      if any(key_of(n, (), drawn) in one for n in names)),
                     None)
        if entry is None:
            continue
        out += [f'<h2 id="{field}">{_text(heading)}</h2>'] + _figure(
            getattr(plots, field), run.log, names, drawn)
        rows = sorted((n for n in names if key_of(n, (), drawn) in entry),
                      key=lambda n: -abs(entry[key_of(n, (), drawn)]))
        out.append(f'<p>Last report, the {min(len(rows), TABLE_TOP)} links '
                   f'with the largest {_text(drawn)} of {len(rows)} (a '
                   'link\'s single output):</p>')
        out.append(html_table(['link'] + statistics, [
            [name] + [_number(entry.get(key_of(name, (), s)))
                      for s in statistics] for name in rows[:TABLE_TOP]]))
    return out


def _loop(run):
    if run_module.last_entry(run, keys.LOOP_PREFIX) is None:
        return []
    return ['<h2 id="loop">Where each iteration goes</h2>'] + _figure(
        plots.loop_time, run.log)


def _traces(run):
    if not run.traces:
        return []
    out = ['<h2 id="traces">Traces</h2>',
           '<p>Open a file at <code>https://ui.perfetto.dev</code> ("Open '
           'trace file"); it stays on your machine.</p>', '<ul>']
    out += [f'<li><code>{_text(os.path.relpath(path, run.out))}</code></li>'
            for path in run.traces[-10:]]
    out.append('</ul>')
    windows = _windows(run)
    if windows:
        name = _text(os.path.basename(windows[-1]))
        out.append(f'<p>The first iteration of <code>{name}</code>:</p>')
        out += _figure(plots.timeline, windows[-1])
    return out


# -- pieces -------------------------------------------------------------------
def _windows(run):
    return [p for p in run.traces
            if not os.path.basename(p).startswith('outlier_')]


def _figure(draw, *args):
    try:
        figure = draw(*args)
    except ImportError as e:
        return [f'<p class="note">{_text(e)}</p>']
    if figure is None:
        return ['<p class="note">Nothing to draw yet.</p>']
    data = base64.b64encode(plots.png(figure)).decode('ascii')
    alt = _text(draw.__name__)
    return [f'<p><img alt="{alt}" src="data:image/png;base64,{data}"></p>']


def html_table(header, rows):
    """An HTML table of ``header`` and ``rows``, each cell escaped."""
    return '\n'.join(['<table>'] + [
        '<tr>' + ''.join(f'<{c}>{_text(x)}</{c}>' for x in row) + '</tr>'
        for c, row in [('th', header)] + [('td', r) for r in rows]] + [
        '</table>'])


def _number(value):
    return '' if value is None else f'{value:.4g}'


def _text(value):
    return html.escape(str(value))

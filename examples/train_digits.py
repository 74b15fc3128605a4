#!/usr/bin/env python
"""Train a multi-layer perceptron with loop and per-link timing and memory,
graph release.

The shape of Chainer's ``examples/mnist/train_mnist.py``, plus
``chainer_hookext``:

* :class:`~chainer_hookext.TimedLinks` reports how long each link of the model
  takes, forward and backward, every epoch (``time/main/predictor/l1`` ...),
  prints the per-link tree table, and its self times are drawn per epoch,
  stacked, into ``link_time.png``; it counts each link's FLOPs too
  (``flops/main/predictor/l1`` ...) and places the links under the
  machine's roofline, drawn into ``roofline.png``; and splits each link's
  time by function type (``time/function/LinearFunction`` ...), printed
  per link beside the rest of its self time (its own Python);
* :class:`~chainer_hookext.LinkMemory` measures one training iteration per
  epoch and reports the bytes each link's forward keeps for backward, its
  parameters, gradients and optimizer state
  (``memory/main/predictor/l1/activations`` ...), prints them as a tree
  with the ``F.forget`` candidates, writes the last report into
  ``link_memory.json`` and draws the activations per epoch, stacked, and
  the model's state into ``memory.png``;
* :class:`~chainer_hookext.TimedLoop` reports where each training iteration
  goes (data, forward, backward, optimizer, each extension, the rest) every
  epoch, prints it as a table, and is drawn per epoch into ``loop_time.png``;
* :class:`~chainer_hookext.Timeline` traces three iterations, the first of
  epoch 2, into ``timeline/iteration_<N>.json.gz`` (open it in Perfetto); the
  first of them is drawn as a flame chart into ``timeline.png``; and each
  outlier iteration beside the one before it, into
  ``timeline/outlier_iteration_<N>.json.gz``;
* :class:`~chainer_hookext.UnchainVariables` releases the computational graphs
  that ``DumpGraph`` keeps alive through ``keep_graph_on_report``.

By default it trains offline on scikit-learn's bundled 8x8 digits (1,797
images, no download); ``--dataset mnist`` uses Chainer's MNIST downloader.
Run it again with the same ``--out`` to resume from the last snapshot.
"""

import argparse
import glob
import gzip
import json
import os
import sys

import chainer
import chainer.functions as F
import chainer.links as L
import numpy
from chainer import training
from chainer.training import extensions

import chainer_hookext


class MLP(chainer.Chain):
    """Three fully connected layers with ReLU activations."""

    def __init__(self, n_units, n_out):
        super().__init__()
        with self.init_scope():
            # the size of the inputs to each layer will be inferred
            self.l1 = L.Linear(None, n_units)
            self.l2 = L.Linear(None, n_units)
            self.l3 = L.Linear(None, n_out)

    def forward(self, x):
        h1 = F.relu(self.l1(x))
        h2 = F.relu(self.l2(h1))
        return self.l3(h2)


def load_digits(seed=0):
    """Returns scikit-learn's bundled 8x8 digits as Chainer datasets."""
    from sklearn import datasets

    digits = datasets.load_digits()
    x = (digits.data / 16.0).astype(numpy.float32)
    t = digits.target.astype(numpy.int32)
    order = numpy.random.RandomState(seed).permutation(len(x))
    x, t = x[order], t[order]
    n_train = len(x) * 4 // 5
    return (chainer.datasets.TupleDataset(x[:n_train], t[:n_train]),
            chainer.datasets.TupleDataset(x[n_train:], t[n_train:]))


def get_dataset(name):
    if name == 'digits':
        return load_digits()
    if name == 'mnist':
        return chainer.datasets.get_mnist()
    raise ValueError('--dataset {!r}: use digits or mnist'.format(name))


#: TimedLoop's phases drawn, bottom to top, and their colours; they add up
#: to the iteration.
LOOP_PHASES = (('data', 'tab:blue'), ('forward', 'tab:orange'),
               ('backward', 'tab:green'), ('optimizer', 'tab:red'),
               ('allreduce', 'tab:purple'), ('extensions', 'silver'),
               ('other', 'dimgray'))


#: Colours of the links in the order they are listed, ``(outside)`` after
#: them: a link has the same colour in every plot.
LINK_COLOURS = ('tab:blue', 'tab:orange', 'tab:green', 'tab:red',
                'tab:purple', 'tab:brown', 'tab:pink', 'tab:olive',
                'tab:cyan', 'tab:gray')


def link_colours(names):
    """Returns ``{name: colour}`` of the links ``names`` and ``(outside)``."""
    return dict(zip(list(names) + ['(outside)'], LINK_COLOURS))


def stack_bars(ax, xs, layers):
    """Draws a bar per ``xs``, split into ``layers``, bottom to top.

    Args:
        layers: ``(label, values, colour)``, one value per bar each.
    """
    bottom = numpy.zeros(len(xs))
    for label, values, colour in layers:
        ax.bar(xs, values, bottom=bottom, label=label, color=colour)
        bottom += values


def layers_per_epoch(log, series, scale=1.0):
    """Returns :func:`stack_bars`' layers of ``series``, ``(label, key,
    colour)``: a value per log entry (0 where it lacks the key) times
    ``scale``; a key in no entry is left out (``allreduce`` outside
    ChainerMN, backward keys without backward timing)."""
    return [(label, numpy.array([e.get(key, 0) for e in log], float) * scale,
             colour) for label, key, colour in series
            if any(key in e for e in log)]


def stack_bytes(ax, xs, layers):
    """:func:`stack_bars` of bytes, in the unit that suits the highest
    bar; returns the unit's name."""
    largest = max(sum(values for _, values, _ in layers))
    scale, unit = 1, 'bytes'
    for power, name in ((3, 'GiB'), (2, 'MiB'), (1, 'KiB')):
        if largest >= 1024 ** power:
            scale, unit = 1024 ** power, name
            break
    stack_bars(ax, xs, [(label, values / scale, colour)
                        for label, values, colour in layers])
    return unit


def legend_beside(ax, source=None):
    """Puts the legend of ``source`` (default ``ax``) right of ``ax``, top
    layer first, as stacked."""
    handles, labels = (source or ax).get_legend_handles_labels()
    ax.legend(handles[::-1], labels[::-1], loc='center left',
              bbox_to_anchor=(1.0, 0.5))


def set_epochs(ax, epochs):
    ax.set_xlabel('epoch')
    ax.set_xticks(epochs)


def plot_loop_time(log, path):
    """Draws TimedLoop's phases per epoch from LogReport's log, stacked."""
    from matplotlib import figure  # no pyplot: no GUI backend needed

    log = [e for e in log if 'time/loop/iteration' in e]
    epochs = [e['epoch'] for e in log]
    fig = figure.Figure(figsize=(7, 4.2))
    ax = fig.subplots()
    stack_bars(ax, epochs, layers_per_epoch(log, [
        (phase, 'time/loop/' + phase, colour)
        for phase, colour in LOOP_PHASES], scale=1e3))
    set_epochs(ax, epochs)
    ax.set_ylabel('ms per training iteration (epoch mean)')
    ax.set_title('Where each training iteration goes (TimedLoop)')
    legend_beside(ax)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def plot_link_time(log, names, path):
    """Draws TimedLinks' self times per epoch from LogReport's log, stacked.

    Forward on the left, backward on the right: each bar is a training
    iteration's milliseconds (epoch mean), split by link; self times add up
    to the whole model's time.
    """
    from matplotlib import figure

    log = [e for e in log if 'time/main' in e]
    epochs = [e['epoch'] for e in log]
    fig = figure.Figure(figsize=(9, 4.2))
    axes = fig.subplots(1, 2, sharey=True)
    colours = link_colours(names)
    # (outside) has backward time only, all of it self.
    outside = ('(outside)', 'time/(outside)/backward', colours['(outside)'])
    for ax, suffix, title, more in (
            (axes[0], '/self', 'forward', []),
            (axes[1], '/backward/self', 'backward', [outside])):
        stack_bars(ax, epochs, layers_per_epoch(log, [
            (name, 'time/{}{}'.format(name, suffix), colours[name])
            for name in names] + more, scale=1e3))
        set_epochs(ax, epochs)
        ax.set_title(title)
    axes[0].set_ylabel('ms per training iteration (epoch mean)')
    fig.suptitle('Self time of each link (TimedLinks)')
    legend_beside(axes[-1], axes[-1] if axes[-1].has_data() else axes[0])
    fig.tight_layout()
    fig.savefig(path, dpi=100)


#: LinkMemory's figures of the model's state, as drawn, and their keys.
MODEL_STATE = (('parameters', '/params'), ('gradients', '/grads'),
               ('optimizer\nstate', '/optimizer_state'))


def plot_memory(log, names, path):
    """Draws LinkMemory's bytes per link from LogReport's log, stacked.

    On the left, per epoch, the activations each link's own function nodes
    keep for backward (self bytes, and those of ``(outside)``: they add up
    to the whole model's); on the right, the last report's parameters,
    gradients and optimizer state of each link, less its child links'.
    """
    from matplotlib import figure

    log = [e for e in log if 'memory/(outside)/activations' in e]
    if not log:
        return
    epochs = [e['epoch'] for e in log]
    fig = figure.Figure(figsize=(10, 4.2))
    left, right = fig.subplots(1, 2, width_ratios=(3, 2))
    colours = link_colours(names)
    unit = stack_bytes(left, epochs, layers_per_epoch(log, [
        (name, 'memory/{}/activations/self'.format(name), colours[name])
        for name in names] + [('(outside)', 'memory/(outside)/activations',
                               colours['(outside)'])]))
    set_epochs(left, epochs)
    left.set_ylabel("{} in the epoch's measured iteration".format(unit))
    left.set_title('activations kept for backward')

    last = log[-1]
    kinds = [kind for kind, _ in MODEL_STATE]
    owned = [(name, numpy.array([own_bytes(last, names, name, suffix)
                                 for _, suffix in MODEL_STATE], float),
              colours[name]) for name in names]
    right.set_ylabel(stack_bytes(right, kinds, owned))
    right.set_title('model state at epoch {}'.format(last['epoch']))
    fig.suptitle('Bytes held by each link itself, child links apart '
                 '(LinkMemory)')
    legend_beside(right, left)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def own_bytes(entry, names, name, suffix):
    """A link's figure in a log entry less its child links' figures."""
    children = [n for n in names if n.startswith(name + '/')
                and '/' not in n[len(name) + 1:]]
    return entry['memory/' + name + suffix] - sum(
        entry['memory/' + n + suffix] for n in children)


def link_times(timed):
    """The whole run's figures by link path, as ``link_times.json`` keeps
    them: the summary, and with FLOPs counted the roofline and the function
    types without a formula."""
    out = {'links': timed.summary(by='path')}
    if timed.functions:
        out['functions'] = timed.function_summary()
    if timed.flops:
        out['peaks'] = timed.roofline_.peaks._asdict()
        out['roofline'] = {
            path: {way: None if point is None else point._asdict()
                   for way, point in points._asdict().items()}
            for path, points in timed.roofline(by='path').items()}
        out['unknown_functions'] = timed.unknown_functions(by='path')
    return out


def plot_roofline(timed, path):
    """Draws each link of the whole run under the machine's roofline.

    Arithmetic intensity (FLOPs per byte moved) against achieved FLOP/s,
    log-log, forward and backward; the ceilings are the measured peaks.
    """
    from matplotlib import figure

    peaks = timed.roofline_.peaks
    points = timed.roofline(by='name')
    found = [p for link in points.values() for p in link
             if p is not None and p.flops > 0]
    if not found:
        return
    low = min([p.intensity for p in found] + [1.0]) / 4
    high = max([p.intensity for p in found] + [
        4 * peaks.flops / peaks.bandwidth]) * 4
    fig = figure.Figure(figsize=(8, 5))
    ax = fig.subplots()
    ridge = peaks.flops / peaks.bandwidth
    xs = numpy.array([low, ridge, high])
    ax.plot(xs, numpy.minimum(peaks.flops, xs * peaks.bandwidth),
            color='black', linewidth=1.5)
    ax.annotate('{:.3g} GFLOP/s'.format(peaks.flops / 1e9),
                (high, peaks.flops), ha='right', va='bottom', fontsize=8)
    ax.annotate('{:.3g} GB/s'.format(peaks.bandwidth / 1e9),
                (low, low * peaks.bandwidth), ha='left', va='bottom',
                fontsize=8, rotation=30)
    colours = ('tab:blue', 'tab:orange', 'tab:green', 'tab:red',
               'tab:purple', 'tab:brown', 'tab:pink', 'tab:olive')
    for colour, (name, link) in zip(colours, points.items()):
        if name == '(outside)':
            continue
        for point, marker, way in ((link.forward, 'o', 'forward'),
                                   (link.backward, '^', 'backward')):
            if point is None or point.flops <= 0:
                continue
            ax.scatter(point.intensity, point.rate, color=colour,
                       marker=marker, label='{} ({})'.format(name, way))
    ax.set_xscale('log')
    ax.set_yscale('log')
    ax.set_xlabel('arithmetic intensity (FLOPs per byte moved)')
    ax.set_ylabel('achieved FLOP/s (whole run)')
    ax.set_title('Links under the roofline (TimedLinks, flops=True)')
    ax.legend(loc='center left', bbox_to_anchor=(1.0, 0.5), fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


#: Timeline's categories, top to bottom of a flame chart, and their colours.
TIMELINE_CATEGORIES = (('iteration', 'lightgray'), ('phase', 'tab:blue'),
                       ('extension', 'tab:purple'),
                       ('link_forward', 'tab:orange'),
                       ('link_backward', 'tab:green'),
                       ('function_forward', 'gold'),
                       ('function_backward', 'yellowgreen'),
                       ('gc', 'tab:red'))


def end_of_epoch(epoch):
    """A trigger firing once, at the end of ``epoch``; it keeps no state.

    Not ``ManualScheduleTrigger``: once fired it is ``finished``, and a
    resumed ``Trainer.run`` skips the ``initialize`` of an extension whose
    trigger is finished, so a window pending in the snapshot would be lost.
    """
    def trigger(trainer):
        updater = trainer.updater
        return updater.is_new_epoch and updater.epoch == epoch
    return trigger


def first_trace(out):
    """The path of the first window Timeline wrote in ``out``, or None."""
    paths = glob.glob(os.path.join(out, 'timeline', 'iteration_*.json.gz'))
    return min(paths, default=None, key=lambda path: int(
        os.path.basename(path).split('_')[1].split('.')[0]))


def first_iteration(events):
    """The spans of a Timeline file's first iteration, with their depth.

    Returns:
        list: ``(depth, event)``, depth 0 the iteration; a span is one
        deeper than the innermost span holding it in time.
    """
    order = {c: i for i, (c, _) in enumerate(TIMELINE_CATEGORIES)}
    spans = [e for e in events if e['ph'] == 'X']
    first = min((e for e in spans if e['cat'] == 'iteration'),
                key=lambda e: e['ts'])
    spans = [e for e in spans if e is first or e['cat'] != 'iteration'
             and first['ts'] <= e['ts'] < _end(first)]
    stack, depths = [], []
    for e in sorted(spans, key=lambda e: (e['ts'], -e['dur'],
                                          order[e['cat']])):
        while stack and _end(e) > _end(stack[-1]) + 1e-3:  # ts rounded
            stack.pop()
        depths.append((len(stack), e))
        stack.append(e)
    return depths


def _end(event):
    return event['ts'] + event['dur']


def plot_timeline(trace_path, path):
    """Draws a Timeline file's first iteration as a flame chart."""
    from matplotlib import figure
    from matplotlib import patches
    from matplotlib.backends import backend_agg

    with gzip.open(trace_path, 'rt', encoding='utf-8') as f:
        spans = first_iteration(json.load(f)['traceEvents'])
    colours = dict(TIMELINE_CATEGORIES)
    rows = max(depth for depth, _ in spans) + 1
    fig = figure.Figure(figsize=(10, 0.45 * rows + 1.6))
    ax = fig.subplots()
    iteration = spans[0][1]
    ax.set_xlim(0, iteration['dur'] / 1e3)
    ax.set_ylim(rows, 0)  # the iteration at the top
    ax.set_yticks([])
    ax.set_xlabel('ms from the start of {}'.format(iteration['name']))
    ax.set_title('One training iteration, nested calls below their caller '
                 '(Timeline, {})'.format(os.path.basename(trace_path)))
    shown = {e['cat'] for _, e in spans}
    ax.legend(handles=[patches.Patch(color=c, label=k)
                       for k, c in TIMELINE_CATEGORIES if k in shown],
              loc='upper left', bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()  # before the labels: they are fitted to the boxes
    renderer = backend_agg.FigureCanvasAgg(fig).get_renderer()
    for depth, e in spans:
        start = (e['ts'] - iteration['ts']) / 1e3
        ax.add_patch(patches.Rectangle(
            (start, depth + 0.05), e['dur'] / 1e3, 0.9,
            facecolor=colours[e['cat']], edgecolor='white', linewidth=0.5))
        label_span(ax, renderer, e['name'], start, e['dur'] / 1e3,
                   depth + 0.5)
    fig.savefig(path, dpi=100)


def label_span(ax, renderer, name, start, width, y):
    """Writes the longest of a span's names that fits in it, if any."""
    left, right = (ax.transData.transform((x, y))[0]
                   for x in (start, start + width))
    for label in (name, name.rsplit('/', 1)[-1]):
        text = ax.text(start + width / 2, y, label, ha='center',
                       va='center', fontsize=8, clip_on=True)
        if text.get_window_extent(renderer).width + 4 <= right - left:
            return
        text.remove()


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description='chainer_hookext example: per-link timing on an MLP')
    parser.add_argument('--dataset', choices=('digits', 'mnist'),
                        default='digits',
                        help='digits: bundled with scikit-learn (offline); '
                        'mnist: downloaded by Chainer')
    parser.add_argument('--batchsize', '-b', type=int, default=100,
                        help='Number of images in each mini-batch')
    parser.add_argument('--epoch', '-e', type=int, default=10,
                        help='Number of sweeps over the dataset to train')
    parser.add_argument('--iterations', type=int, default=None,
                        help='Stop after this many iterations instead '
                        '(overrides --epoch)')
    parser.add_argument('--frequency', '-f', type=int, default=1,
                        help='Frequency of taking a snapshot (epochs); the '
                        'newest one is kept and resumed from')
    parser.add_argument('--device', '-d', type=str, default='-1',
                        help='Device specifier: -1 or @numpy for CPU, '
                        '@cupy:0 or 0 for the first GPU')
    parser.add_argument('--out', '-o', default='result',
                        help='Directory to output the result')
    parser.add_argument('--resume', '-r', type=str,
                        help='Resume the training from this snapshot')
    parser.add_argument('--no-autoload', dest='autoload',
                        action='store_false',
                        help='Do not resume from the newest snapshot in --out')
    parser.add_argument('--unit', '-u', type=int, default=256,
                        help='Number of units')
    parser.add_argument('--no-backward', dest='backward',
                        action='store_false',
                        help='Time forward only')
    parser.add_argument('--noplot', dest='plot', action='store_false',
                        help='Disable PlotReport extension')
    parser.add_argument('--no-progress', dest='progress',
                        action='store_false',
                        help='Disable the ProgressBar extension (it is '
                        'on only when the output is a terminal)')
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    device = chainer.get_device(args.device)

    print('Device: {}'.format(device))
    print('Dataset: {}'.format(args.dataset))
    print('# unit: {}'.format(args.unit))
    print('# Minibatch-size: {}'.format(args.batchsize))
    print('# epoch: {}'.format(args.epoch))
    print('')

    model = L.Classifier(MLP(args.unit, 10))
    model.to_device(device)
    device.use()

    optimizer = chainer.optimizers.Adam()
    optimizer.setup(model)

    train, test = get_dataset(args.dataset)
    train_iter = chainer.iterators.SerialIterator(train, args.batchsize)
    test_iter = chainer.iterators.SerialIterator(
        test, args.batchsize, repeat=False, shuffle=False)

    updater = training.updaters.StandardUpdater(
        train_iter, optimizer, device=device)
    stop = ((args.iterations, 'iteration') if args.iterations
            else (args.epoch, 'epoch'))
    trainer = training.Trainer(updater, stop, out=args.out)

    trainer.extend(extensions.Evaluator(test_iter, model, device=device))

    # Per-link forward and backward time, reported every epoch into the
    # observation (time/main/predictor/l1 ...) and printed as a tree.
    # FLOPs too (they need backward timing), with each link's FLOP/s against
    # the machine's peaks, measured when training starts; and by function
    # type (time/function/LinearFunction ...), each link's self time split
    # into its functions and the rest.
    timed = chainer_hookext.TimedLinks(
        print_report=True, backward=args.backward, flops=args.backward,
        functions=args.backward)
    trainer.extend(timed, trigger=(1, 'epoch'))

    # Per-link bytes of one training iteration per epoch, the first of it
    # (memory/main/predictor/l1/activations, .../params ...): activations
    # kept for backward, parameters, gradients, optimizer state; printed as
    # a tree with the links where F.forget frees most.  It has TimedLinks'
    # priority, PRIORITY_WRITER: its keys are in the same epoch's log entry.
    memory = chainer_hookext.LinkMemory(print_report=True)
    trainer.extend(memory, trigger=(1, 'epoch'))

    # Where each training iteration goes (time/loop/data, .../forward ...),
    # every epoch.  It has Evaluator's, TimedLinks' and LinkMemory's
    # priority: extensions of equal priority run in the order they are
    # added, so theirs is in the same epoch's figures.  Extensions of lower
    # priority (LogReport, snapshot, PlotReport, PrintReport) run after it,
    # in the next epoch's.
    loop = chainer_hookext.TimedLoop(print_report=True)
    trainer.extend(loop, trigger=(1, 'epoch'))

    # A trace of three iterations, the first of epoch 2 (epoch 1's imports
    # and first plots done), in timeline/iteration_<N>.json.gz: one window.
    # And each iteration 5x slower than the median of the last 100 (after
    # 20), beside the one before it, in outlier_iteration_<N>.json.gz: here
    # the ends of epochs, where the plots are drawn.
    # Each function node's forward and backward step is a span too.
    trainer.extend(chainer_hookext.Timeline(iterations=3, outliers=5.0,
                                            functions=True),
                   trigger=end_of_epoch(1))

    # DumpGraph turns keep_graph_on_report on for its first iteration: the
    # reported loss then holds the whole graph.  UnchainVariables runs after
    # every other extension (snapshot included) and releases it.
    trainer.extend(extensions.DumpGraph('main/loss'))
    trainer.extend(chainer_hookext.UnchainVariables())

    # Resume: run again with the same --out and the newest snapshot is loaded
    # (autoload); TimedLinks' figures and call counts continue from it.
    trainer.extend(
        extensions.snapshot(n_retains=1, autoload=args.autoload),
        trigger=(max(1, args.frequency), 'epoch'))

    log_report = extensions.LogReport()
    trainer.extend(log_report)

    if args.plot and extensions.PlotReport.available():
        trainer.extend(extensions.PlotReport(
            ['main/loss', 'validation/main/loss'], 'epoch',
            file_name='loss.png'))
        trainer.extend(extensions.PlotReport(
            ['main/accuracy', 'validation/main/accuracy'], 'epoch',
            file_name='accuracy.png'))

    trainer.extend(extensions.PrintReport(
        ['epoch', 'main/loss', 'validation/main/loss',
         'main/accuracy', 'validation/main/accuracy',
         'time/main', 'elapsed_time']))
    # ProgressBar redraws its status lines in place with escape codes: only
    # on a terminal; in a log file or a pipe they are debris between rows.
    if args.progress and sys.stdout.isatty():
        trainer.extend(extensions.ProgressBar())

    if args.resume is not None:
        chainer.serializers.load_npz(args.resume, trainer)

    trainer.run()

    print('\nPer-link time of the training iterations, whole run:')
    timed.hook.print_report(by='path', mode='train')
    path = os.path.join(args.out, 'link_times.json')
    with open(path, 'w') as f:
        json.dump(link_times(timed), f, indent=1)
    print('Summary written to {}'.format(path))
    path = os.path.join(args.out, 'link_memory.json')
    with open(path, 'w') as f:
        json.dump(memory.summary(), f, indent=1)
    print('Memory of the last measured iteration written to {}'.format(path))
    if args.plot and extensions.PlotReport.available():
        names = [n for n in timed.summary(by='name') if n != '(outside)']
        path = os.path.join(args.out, 'link_time.png')
        plot_link_time(log_report.log, names, path)
        print('Link time per epoch drawn in {}'.format(path))
        if timed.flops:
            path = os.path.join(args.out, 'roofline.png')
            plot_roofline(timed, path)
            print('Roofline of the links drawn in {}'.format(path))
        path = os.path.join(args.out, 'loop_time.png')
        plot_loop_time(log_report.log, path)
        print('Loop time per epoch drawn in {}'.format(path))
        path = os.path.join(args.out, 'memory.png')
        plot_memory(log_report.log, [
            n for n in memory.summary() if n != '(outside)'], path)
        print('Memory per link per epoch drawn in {}'.format(path))
        first = first_trace(args.out)
        if first is not None:  # None when training stops within epoch 1
            path = os.path.join(args.out, 'timeline.png')
            plot_timeline(first, path)
            print('First traced iteration of {} drawn in {}'.format(
                first, path))
    return 0


if __name__ == '__main__':
    sys.exit(main())

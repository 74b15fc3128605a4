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
  per link beside the rest of its self time (its own Python), the whole
  run's per type drawn into ``functions.png``;
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

The pictures are drawn after training by :mod:`chainer_hookext.plots`
from the log, ``link_times.json`` and the first trace.

By default it trains offline on scikit-learn's bundled 8x8 digits (1,797
images, no download); ``--dataset mnist`` uses Chainer's MNIST downloader.
Run it again with the same ``--out`` to resume from the last snapshot.
"""

import argparse
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
from chainer_hookext import _files
from chainer_hookext import plots
from chainer_hookext.report import console


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


def draw(out, log, names, memory_names, times):
    """Draws the run's pictures into ``out`` with
    :mod:`chainer_hookext.plots`: from the log, ``link_times.json``
    (``times``) and the first trace; each one whose extension has figures.
    """
    first = plots.first_trace(out)  # None when training stops in epoch 1
    for name, what, draw_figure in (
            ('link_time.png', 'Link time per epoch',
             lambda: plots.link_time(log, names)),
            ('roofline.png', 'Roofline of the links',
             lambda: plots.roofline(times)),
            ('functions.png', 'Time of each function type',
             lambda: plots.functions(times.get('functions', {}))),
            ('loop_time.png', 'Loop time per epoch',
             lambda: plots.loop_time(log)),
            ('memory.png', 'Memory per link per epoch',
             lambda: plots.memory(log, memory_names)),
            ('timeline.png', 'First traced iteration of {}'.format(first),
             lambda: first and plots.timeline(first))):
        figure = draw_figure()
        if figure is not None:
            path = os.path.join(out, name)
            plots.save(figure, path)
            print('{} drawn in {}'.format(what, path))


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
    # And each iteration whose update or an extension took 5x its own
    # median (after 20), beside the one before it, in
    # outlier_iteration_<N>.json.gz: none in a clean run, the plots drawn
    # at each epoch's end judged against those of the epochs before.
    # Each function node's forward and backward step is a span too, and
    # the bytes alive (docs/memory.md) are counter tracks, the peak marked.
    trainer.extend(chainer_hookext.Timeline(iterations=3, outliers=5.0,
                                            functions=True, memory=True),
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

    # The run's profile page, <out>/profile.html, each epoch and when
    # training ends (Ctrl-C included): the findings that matter most, and
    # the pictures of the extensions above.  `python -m chainer_hookext
    # report <out>` rebuilds it from the files.  Every 5 epochs here:
    # drawing its pictures takes about a second, 18 iterations' worth.
    trainer.extend(chainer_hookext.ProfileReport(), trigger=(5, 'epoch'))

    if args.plot and extensions.PlotReport.available():
        trainer.extend(extensions.PlotReport(
            ['main/loss', 'validation/main/loss'], 'epoch',
            file_name='loss.png'))
        trainer.extend(extensions.PlotReport(
            ['main/accuracy', 'validation/main/accuracy'], 'epoch',
            file_name='accuracy.png'))

    # PrintReport erases the screen below the cursor before each row, as
    # ProgressBar needs; console.for_print_report drops that in a file.
    trainer.extend(extensions.PrintReport(
        ['epoch', 'main/loss', 'validation/main/loss',
         'main/accuracy', 'validation/main/accuracy',
         'time/main', 'elapsed_time'], out=console.for_print_report()))
    # ProgressBar redraws its status lines in place with escape codes: only
    # on a terminal; in a log file or a pipe they are debris between rows.
    if args.progress and sys.stdout.isatty():
        trainer.extend(extensions.ProgressBar())

    if args.resume is not None:
        chainer.serializers.load_npz(args.resume, trainer)

    trainer.run()

    print('\nPer-link time of the training iterations, whole run:')
    timed.hook.print_report(by='name', mode='train')
    times = plots.link_times(timed)
    # Written whole, never through a link planted at the name (the
    # package's one file writer, as plots.save writes the pictures).
    path = os.path.join(args.out, 'link_times.json')
    _files.write_atomic(path, json.dumps(times, indent=1).encode('utf-8'))
    print('Summary written to {}'.format(path))
    path = os.path.join(args.out, 'link_memory.json')
    _files.write_atomic(path, json.dumps(
        memory.summary(), indent=1).encode('utf-8'))
    print('Memory of the last measured iteration written to {}'.format(path))
    if args.plot and extensions.PlotReport.available():
        draw(args.out, log_report.log, list(timed.summary(by='name')),
             list(memory.summary()), times)
    return 0


if __name__ == '__main__':
    sys.exit(main())

#!/usr/bin/env python
"""Cost of TimedLoop, Timeline and TimedLinks' FLOPs on a training iteration.

A real ``Trainer`` trains a classifier (SGD, batch 32) for
``--iterations`` iterations per run, with a ``LogReport`` as the only
other extension.  ``--model`` picks the classifier:

* ``mlp``: the small MLP of ``bench_timer.py`` (784-100-100-10);
* ``deep``: 100 ``L.Linear`` links (784-10, then 99 of 10-10) with a
  ``relu`` between two, some 400 function calls (forward applications and
  backward steps) per iteration at little arithmetic each: the phase marks
  cost something per function call, and this is where it shows.

Variants, in shuffled order in each round, each on a fresh trainer:

* no extension of ours (twice: the A/A row shows the noise);
* ``TimedLoop()`` (reporting every 100 iterations), and reporting at
  every iteration: its difference to the first is a report's cost;
* ``Timeline(iterations=3)`` whose trigger never fires: the cost outside
  windows;
* ``Timeline(iterations=N)`` fired before the first iteration: every
  iteration inside the window, the file written at the end included;
* ``Timeline(outliers=True)`` whose trigger never fires: every iteration
  recorded (the link spans of ``TimerHook(backward=True)``, the phases)
  and judged, to compare with ``TimedLinks()``, which times the same
  calls without keeping spans; the files of the outliers found (at most
  10) are written, and with a threshold of an hour none is: the recording
  alone;
* ``TimedLinks()`` and ``TimedLinks(flops=True)`` (peaks given, reporting
  every 100 iterations): what counting FLOPs adds to timing the links.
* ``LinkMemory()`` whose trigger (1000 iterations) does not fire: it
  measures the run's first iteration, and the others run no hook
  (``bench_memory.py`` reads this variant's counts);
* the floors of ``TimedLoop``'s cost: an extension doing nothing (an
  entry of the trainer, its trigger included), one registering an empty
  ``chainer.FunctionHook`` for the run (what Chainer's calls of any
  function hook cost: the phase marks need one), and the least phase
  marks (``LeastPhases``): the stand-ins ``TimedLoop`` needs and a flat
  log of clock reads, with nothing added up;
* the floor of ``Timeline(outliers=True)``: ``TimedLinks()`` (the same
  calls timed, added up rather than kept as spans) and the least phase
  marks.

The table gives the median over rounds of each variant's time per
iteration divided by the baseline's of the same round (paired medians
cancel the machine's drifts), and the best time per iteration.  Times are
the process's CPU time of ``trainer.run()``.

``--instructions`` counts instructions instead, free of the timing noise of
a shared machine: each variant but the window one runs in a subprocess
under valgrind's cachegrind (``PYTHONHASHSEED=0``) for N1 and N2
iterations (``--counts``), and (I(N2) - I(N1)) / (N2 - N1) is the count
per iteration, start-up cost cancelled.  Neither the ``LogReport`` nor
``TimedLoop`` reports within 100 iterations: these are warm iterations.
It takes some minutes.

``--report-every N`` makes the ``LogReport`` and every reporting variant
report every N iterations (default 100, none within the counted
iterations): with ``--counts 20 80 --report-every 20`` three reports of
each fall in the counted 60 iterations, the reports' cost counted in.

Run: ``python benchmarks/bench_loop.py [--model mlp|deep] [--rounds 15]
[--iterations 300]`` or ``python benchmarks/bench_loop.py --instructions
[--model mlp|deep] [--counts 20 70] [--variants VARIANT ...]``
"""

import argparse
import gc
import datetime
import os
import random
import shutil
import statistics
import tempfile
import time
import warnings

# One BLAS thread, as bench_timer.py sets it.
for _var in ('OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS', 'MKL_NUM_THREADS'):
    os.environ.setdefault(_var, '1')

import chainer  # NOQA: E402 (after the BLAS settings)
import chainer.functions as F  # NOQA: E402
import chainer.links as L  # NOQA: E402
import numpy  # NOQA: E402
from chainer import training  # NOQA: E402
from chainer.training import extensions  # NOQA: E402

import _cachegrind  # NOQA: E402 (benchmarks/, beside this script)
import bench_timer  # NOQA: E402
import chainer_hookext  # NOQA: E402
from chainer_hookext import _chainer  # NOQA: E402

#: The reporting extensions' trigger (``--report-every``).
REPORT = (100, 'iteration')


class Deep(chainer.ChainList):
    """100 ``L.Linear`` links, 784-10 then 10-10, ``relu`` between two."""

    def __init__(self, n=100, n_in=784, n_units=10):
        super().__init__(L.Linear(n_in, n_units), *[
            L.Linear(n_units, n_units) for _ in range(n - 1)])

    def forward(self, x):
        x = self[0](x)
        for link in self[1:]:
            x = link(F.relu(x))
        return x


MODELS = {'mlp': bench_timer.MLP, 'deep': Deep}


def make_trainer(model, out, iterations, batchsize=32, shape=(784,),
                 log=True):
    """A trainer of ``model``: a name in :data:`MODELS` or a predictor link
    (``shape``: of one example; ``log``: with the ``LogReport``)."""
    model = L.Classifier(MODELS[model]() if isinstance(model, str) else model)
    optimizer = chainer.optimizers.SGD()
    optimizer.setup(model)
    rng = numpy.random.RandomState(0)
    x = rng.rand(batchsize * 8, *shape).astype(numpy.float32)
    t = rng.randint(0, 10, batchsize * 8).astype(numpy.int32)
    it = chainer.iterators.SerialIterator(
        chainer.datasets.TupleDataset(x, t), batchsize)
    updater = training.updaters.StandardUpdater(it, optimizer)
    trainer = training.Trainer(updater, (iterations, 'iteration'), out=out)
    if log:
        trainer.extend(extensions.LogReport(trigger=REPORT,
                                            log_name=None))
    return trainer


class NothingDone(training.Extension):
    """An extension doing nothing: what an extension entry of the trainer
    costs, its trigger included."""

    def __call__(self, trainer):
        pass


class EmptyFunctionHook(NothingDone):
    """An extension registering an empty ``chainer.FunctionHook`` for the
    run: what Chainer's calls of a function hook cost, the floor of any
    phase marking through one (``TimedLoop``'s)."""

    def initialize(self, trainer):
        self.hook = chainer.FunctionHook()
        self.hook.__enter__()

    def finalize(self):
        self.hook.__exit__()


class LeastMarks(chainer.FunctionHook):
    """The least work phase marks on Chainer's hook points can do: the
    floor under ``TimedLoop`` (see :class:`LeastPhases`).

    Appends ``(phase, clock time)`` to :attr:`log` at ``forward`` (the
    update's first function applied) and ``backward`` (its first backward
    step), and reads the clock at every backward step's end, the last of
    which ends ``backward``.
    """

    name = 'LeastMarks'

    def __init__(self):
        self.log = []
        self.watch_forward = self.watch_backward = False
        self.steps = 0  # running backward steps (F.forget's recomputation)
        self.step_end = None

    def forward_preprocess(self, function, in_data):
        if self.watch_forward and not self.steps:
            self.watch_forward = False
            self.log += ('forward', time.perf_counter())

    def backward_preprocess(self, function, in_data, out_grad):
        self.steps += 1
        if self.watch_backward:
            self.watch_backward = False
            self.log += ('backward', time.perf_counter())

    def backward_postprocess(self, function, in_data, out_grad):
        self.steps -= 1
        self.step_end = time.perf_counter()


class _StandIn(object):
    # A trainer's callable (its stop trigger, an entry's trigger) with the
    # marks' work before or after it.

    def __init__(self, marks, callable_, phase=None, first=False):
        self.marks, self.callable, self.phase = marks, callable_, phase
        self.first = first

    def __call__(self, trainer):
        marks = self.marks
        if self.phase is None:  # the stop trigger: other, then data
            marks.log += ('other', time.perf_counter())
            stop = self.callable(trainer)
            marks.watch_forward = marks.watch_backward = True
            marks.log += ('data', time.perf_counter())
            return stop
        if self.first:  # the update's end: optimizer, then the extension
            marks.watch_forward = marks.watch_backward = False
            if marks.step_end is not None:
                marks.log += ('optimizer', marks.step_end)
                marks.step_end = None
        marks.log += (self.phase, time.perf_counter())
        return self.callable(trainer)


class _Scope(object):
    # The reporter's scope of one iteration, seeing an interrupt leave it.

    __slots__ = ('owner', 'scope')

    def __init__(self, owner, scope):
        self.owner, self.scope = owner, scope

    def __enter__(self):
        return self.scope.__enter__()

    def __exit__(self, exc_type, exc, tb):
        suppressed = self.scope.__exit__(exc_type, exc, tb)
        if exc_type is not None and not issubclass(exc_type, Exception):
            self.owner.finalize()
        return suppressed


class LeastPhases(NothingDone):
    """The least a phase timer on Chainer's hook points does per iteration:
    :class:`LeastMarks`, and stand-ins for the stop trigger (``other``,
    then ``data``), each extension entry's trigger (the extension's phase;
    the first also ends ``backward`` at its last step) and the reporter's
    scope (an interrupt seen), as ``TimedLoop`` has them.  No phase is
    added up, no tail, no ``gc``, no second forward and backward told
    apart: a flat log of ``(phase, time)``, a floor rather than a timer.
    """

    def initialize(self, trainer):
        self.trainer = trainer
        self.marks = LeastMarks()
        self.marks.__enter__()
        self.stop_trigger = trainer.stop_trigger
        trainer.stop_trigger = _StandIn(self.marks, self.stop_trigger)
        entries = _chainer.extension_entries(trainer)
        self.triggers = {name: entries[name].trigger for name in entries}
        for i, name in enumerate(sorted(
                entries, key=lambda name: entries[name].priority,
                reverse=True)):
            entries[name].trigger = _StandIn(
                self.marks, entries[name].trigger, name, i == 0)
        reporter = trainer.reporter
        self.scope = reporter.scope
        reporter.scope = lambda observation: _Scope(
            self, self.scope(observation))

    def finalize(self):
        trainer, self.trainer = self.trainer, None
        if trainer is None:
            return
        self.marks.__exit__()
        trainer.stop_trigger = self.stop_trigger
        for name, trigger in self.triggers.items():
            _chainer.extension_entries(trainer)[name].trigger = trigger
        del trainer.reporter.scope


def never(trainer):
    return False


def first(trainer):
    return trainer.updater.iteration == 0


VARIANTS = {
    'no extension': lambda n: [],
    'TimedLoop()': lambda n: [
        (chainer_hookext.TimedLoop(), REPORT)],
    # What a report costs (its keys in the LogReport's summary included):
    # the difference to TimedLoop() over the iterations counted.
    'TimedLoop(), reporting at every iteration': lambda n: [
        (chainer_hookext.TimedLoop(), (1, 'iteration'))],
    'Timeline, outside windows': lambda n: [
        (chainer_hookext.Timeline(iterations=3), never)],
    'Timeline, every iteration in a window': lambda n: [
        (chainer_hookext.Timeline(iterations=n), first)],
    'Timeline(outliers=True), outside windows': lambda n: [
        (chainer_hookext.Timeline(outliers=True), never)],
    'Timeline(outliers=1 hour), nothing written': lambda n: [
        (chainer_hookext.Timeline(outliers=datetime.timedelta(hours=1)),
         never)],
    'TimedLinks()': lambda n: [
        (chainer_hookext.TimedLinks(), REPORT)],
    'TimedLinks(flops=True)': lambda n: [
        (chainer_hookext.TimedLinks(flops=True, peak_flops=1e12,
                                    peak_bandwidth=1e11),
         REPORT)],
    # It measures the run's first iteration only: the others are the
    # unmeasured ones, which run no hook (bench_memory.py).
    'LinkMemory, unmeasured iterations': lambda n: [
        (chainer_hookext.LinkMemory(), (1000, 'iteration'))],
    # Every measuring extension in one trainer (issue: their costs must
    # not add up): TimedLinks(flops=True), TimedLoop, LinkMemory outside its
    # measured iteration, Timeline outside its windows.
    'all four together': lambda n: [
        (chainer_hookext.TimedLinks(flops=True, peak_flops=1e12,
                                    peak_bandwidth=1e11),
         REPORT),
        (chainer_hookext.TimedLoop(), REPORT),
        (chainer_hookext.LinkMemory(), (1000, 'iteration')),
        (chainer_hookext.Timeline(iterations=3), never)],
    # The floors of TimedLoop's cost: an extension entry, and one with an
    # empty function hook registered.
    'an extension doing nothing': lambda n: [
        (NothingDone(), REPORT)],
    'an empty FunctionHook': lambda n: [
        (EmptyFunctionHook(), REPORT)],
    'the least phase marks (a floor, not a timer)': lambda n: [
        (LeastPhases(), REPORT)],
    # The floor of Timeline(outliers=...): TimedLinks' timing and the
    # least phase marks (it records the same calls as spans).
    'TimedLinks() and the least phase marks': lambda n: [
        (chainer_hookext.TimedLinks(), REPORT),
        (LeastPhases(), REPORT)],
    'no extension, again': lambda n: [],
}
#: The variants counted in instructions.
COUNTED = ('no extension', 'TimedLoop()', 'Timeline, outside windows',
           'Timeline(outliers=True), outside windows',
           'Timeline(outliers=1 hour), nothing written', 'TimedLinks()',
           'TimedLinks(flops=True)',
           'LinkMemory, unmeasured iterations', 'all four together',
           'an extension doing nothing', 'an empty FunctionHook',
           'the least phase marks (a floor, not a timer)',
           'TimedLinks() and the least phase marks',
           'no extension, again')


def run(model, variant, iterations, out):
    trainer = make_trainer(model, out, iterations)
    for extension, trigger in VARIANTS[variant](iterations):
        trainer.extend(extension, trigger=trigger, call_before_training=(
            trigger is first))
    # The objects made so far out of the collector's way: a full
    # collection landing in one variant's counted iterations and not in
    # another's (where depends on every allocation, the variant's name in
    # argv included) otherwise moves counts by some 60,000 instructions
    # per iteration (the A/A rows).
    gc.collect()
    gc.freeze()
    start = time.process_time()
    with warnings.catch_warnings():  # max_outliers reached: as designed
        warnings.filterwarnings(
            'ignore', 'Timeline: .* outlier traces are written')
        trainer.run()
    return (time.process_time() - start) / iterations


class CountCalls(chainer.FunctionHook):
    """Counts forward applications and backward steps."""

    name = 'CountCalls'

    def __init__(self):
        self.calls = 0

    def forward_preprocess(self, function, in_data):
        self.calls += 1

    def backward_preprocess(self, function, in_data, out_grad):
        self.calls += 1


def function_calls(model):
    """Function calls (forward and backward) in one iteration of ``model``.
    """
    with tempfile.TemporaryDirectory() as out:
        trainer = make_trainer(model, out, 1)
        with CountCalls() as hook:
            trainer.updater.update()
    return hook.calls


def count_instructions(model, variant, iterations):
    """Instructions of a whole ``--run VARIANT ITERATIONS`` process under
    cachegrind (``PYTHONHASHSEED=0``)."""
    return _cachegrind.instructions(
        __file__, ['--model', model, '--report-every', str(REPORT[0]),
                   '--run', variant, iterations])


def instructions_per_iteration(model, variants, counts, jobs=1):
    """``{variant: (I(N2) - I(N1)) / (N2 - N1)}``, ``jobs`` processes at
    a time."""
    return _cachegrind.per_iteration(
        lambda variant, n: count_instructions(model, variant, n),
        variants, counts, jobs)


def instructions_table(model, counts, variants=COUNTED, jobs=1):
    if shutil.which('valgrind') is None:
        print('valgrind not found')
        return
    n1, n2 = counts
    variants = ('no extension',) + tuple(
        v for v in variants if v != 'no extension')
    per_iteration = instructions_per_iteration(model, variants, counts, jobs)
    calls = function_calls(model)
    bare = per_iteration['no extension']
    print('Instructions per training iteration, model {}, batch 32, {} '
          'function calls per iteration (cachegrind; ({} - {} iterations) '
          '/ {})'.format(model, calls, n2, n1, n2 - n1))
    print('| variant | instructions / iteration | extra | vs no extension '
          '| extra / function call |')
    print('|---|---:|---:|---:|---:|')
    for variant, count in per_iteration.items():
        print('| {} | {:,.0f} | {:+,.0f} | {:+.2f}% | {:+.0f} |'.format(
            variant, count, count - bare, (count / bare - 1) * 100,
            (count - bare) / calls))
    if 'all four together' not in per_iteration:  # a subset (--variants)
        return
    timed = per_iteration['TimedLinks()']
    counted = per_iteration['TimedLinks(flops=True)']
    print('FLOPs counted: {:+,.0f} instructions per iteration, {:+.2f}% over '
          'TimedLinks() (target: +1%)'.format(
              counted - timed, (counted / timed - 1) * 100))
    together = per_iteration['all four together']
    print('All four together: {:+.2f}% over no extension, against {:+.2f}% '
          'for TimedLinks(flops=True) alone (target: at most 1.0 point '
          'more); the sum of each alone: {:+.2f}%'.format(
              (together / bare - 1) * 100, (counted / bare - 1) * 100,
              sum(per_iteration[v] / bare - 1 for v in (
                  'TimedLoop()', 'Timeline, outside windows',
                  'TimedLinks(flops=True)',
                  'LinkMemory, unmeasured iterations')) * 100))


def time_table(model, rounds, iterations):
    times = {v: [] for v in VARIANTS}
    with tempfile.TemporaryDirectory() as out:
        for variant in VARIANTS:  # warm-up
            run(model, variant, 20, os.path.join(out, 'warm'))
        for r in range(rounds):
            order = list(VARIANTS)
            random.shuffle(order)
            for variant in order:
                times[variant].append(run(
                    model, variant, iterations,
                    os.path.join(out, '{}-{}'.format(r, len(times[variant])))))
    bare = times['no extension']
    print('Whole training iteration, model {}, batch 32, {} iterations per '
          'run, {} rounds'.format(model, iterations, rounds))
    print('| variant | us / iteration (best) | vs no extension (median of '
          'paired rounds) |')
    print('|---|---:|---:|')
    for variant, values in times.items():
        paired = statistics.median(v / b for v, b in zip(values, bare))
        print('| {} | {:.1f} | {:+.2f}% |'.format(
            variant, min(values) * 1e6, (paired - 1) * 100))


def main():
    global REPORT
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--model', choices=sorted(MODELS), default='mlp')
    parser.add_argument('--rounds', type=int, default=15)
    parser.add_argument('--iterations', type=int, default=300)
    parser.add_argument('--instructions', action='store_true',
                        help='count instructions per iteration under '
                        'valgrind instead (some minutes)')
    parser.add_argument('--counts', type=int, nargs=2, default=(20, 70),
                        metavar=('N1', 'N2'),
                        help='iterations of the two runs under valgrind')
    parser.add_argument('--variants', nargs='+', choices=[
                            v for v in VARIANTS
                            if v != 'Timeline, every iteration in a window'],
                        default=COUNTED, metavar='VARIANT',
                        help='with --instructions: count these only (and '
                        '"no extension")')
    parser.add_argument('--jobs', type=int, default=1,
                        help='with --instructions: processes at a time (the '
                        'counts do not depend on it)')
    parser.add_argument('--report-every', type=int, default=100,
                        metavar='N', help='the reports\' interval, in '
                        'iterations (default: %(default)s)')
    parser.add_argument('--run', nargs=2, help=argparse.SUPPRESS,
                        metavar=('VARIANT', 'ITERATIONS'))
    args = parser.parse_args()
    REPORT = (args.report_every, 'iteration')
    if args.run:
        with tempfile.TemporaryDirectory() as out:
            run(args.model, args.run[0], int(args.run[1]), out)
    elif args.instructions:
        instructions_table(args.model, args.counts, args.variants,
                           args.jobs)
    else:
        time_table(args.model, args.rounds, args.iterations)


if __name__ == '__main__':
    main()

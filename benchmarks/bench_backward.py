#!/usr/bin/env python
"""Cost of per-link backward timing (``TimerHook(backward=True)``).

A function hook's extra cost per function call is the four calls Chainer
makes to it (forward pre/post in ``FunctionNode.apply``, backward pre/post
in the backward loop, each backward call with two tuples built for it) and
what the hook does in them.  Compared, per function call, with an empty
:class:`chainer.FunctionHook` and Chainer's
``chainer.function_hooks.TimerHook`` (which times every function and keeps
a record per call):

1. Hook calls only: Chainer's calls replayed as Chainer makes them (over
   the values of an ``OrderedDict`` of hooks) on 100 fresh
   ``F.identity`` nodes, forward inside a timed link so that each node is
   tagged.  Without Chainer's own ~20 us per function around them, the
   few hundred nanoseconds at stake are measurable.  A hook that only
   reads the clock around each backward step shows the floor of any
   per-step timing.  "plain tagging" is the same backward timer storing
   and reading the tag with ``setattr`` / ``getattr`` and the attribute
   name in a variable, instead of the attribute compiled into its methods
   (``chainer_hookext/_tagging.py``): it shows what that
   trick saves.
2. The real thing: a link applying 100 ``F.identity``, forward and
   backward, with the link's forward timed in every variant; extra time
   over forward timing alone.  ``--instructions`` counts the same in
   instructions under valgrind's cachegrind, free of the timing noise of a
   shared machine, with the "plain tagging" variant too.
3. Whole training iteration (forward, backward, SGD update) of the MLP
   classifiers of ``bench_timer.py``: no hook, empty link and function
   hooks, Chainer's function ``TimerHook``, and our forward timing without
   and with backward timing, and by function type, set up
   as :class:`~chainer_hookext.TimedLinks` sets them up (reporter names,
   paths from the model, training mode only).

"by function type" (``TimedLinks(functions=True)``) is backward timing plus
two clock reads around each node's forward and the sums by node class.

Variants alternate (shuffled order in each round); tables give the best of
``--rounds``, or the median over rounds of the difference (ratio) to the
baseline's batch of the same round.  Times are the thread's CPU time, but
for the replay (``time.perf_counter`` around a short, gc-free section).

Run: ``python benchmarks/bench_backward.py [--instructions]``
"""

import argparse
import collections
import gc
import os
import random
import shutil
import statistics
import time

# One BLAS thread, as bench_timer.py (imported below) sets it.
for _var in ('OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS', 'MKL_NUM_THREADS'):
    os.environ.setdefault(_var, '1')

import chainer  # NOQA: E402 (after the BLAS settings)
import chainer.functions as F  # NOQA: E402
import chainer.links as L  # NOQA: E402
import numpy  # NOQA: E402
from chainer.function_hooks import timer as chainer_function_timer  # NOQA

import _cachegrind  # NOQA: E402 (benchmarks/, beside this script)
import bench_timer  # NOQA: E402
import chainer_hookext  # NOQA: E402
from chainer_hookext import _tagging  # NOQA: E402
from chainer_hookext.timing import backward  # NOQA: E402


FUNCTIONS = 100
_perf_counter = time.perf_counter


class Functions(chainer.Link):
    """A link applying ``FUNCTIONS`` identity functions."""

    def forward(self, x):
        for _ in range(FUNCTIONS):
            x = F.identity(x)
        return x


class EmptyFunctionHook(chainer.FunctionHook):
    name = 'EmptyFunctionHook'


class ClockReads(chainer.FunctionHook):
    """Only reads the clock around each backward step: the floor of timing."""

    name = 'ClockReads'

    def backward_preprocess(self, function, in_data, out_grad):
        self.start = _perf_counter()

    def backward_postprocess(self, function, in_data, out_grad):
        self.stop = _perf_counter()


class PlainTagTimer(backward.BackwardTimer):
    """Our backward timer with plain tagging: ``setattr`` / ``getattr``.

    The same hook, but the tag is stored and read with the attribute name
    in a variable instead of the name compiled into the methods.  The name
    is the one the compiled timer uses with tag number 0, so that only the
    way of accessing it differs.  Made with ``_tagging.new_tagger`` as
    ``TimerHook`` makes its timer, and only with tag number 0 (with another,
    ``new_tagger``'s class would take the base class's renamed methods).
    """

    def __init__(self, calls, name):
        super().__init__(calls, name)
        self.tag_name = _tagging.TAG

    def forward_preprocess(self, function, in_data):
        rec = self.calls.top
        if rec is self.bottom:
            rec = None if self._running is None else self._tag_in_step(
                function, in_data)
        setattr(function, self.tag_name, rec)

    def backward_postprocess(self, function, in_data, out_grad):
        t = _perf_counter()
        self._running = None
        rec = getattr(function, self.tag_name, None)
        if rec is None:
            rec = self._outside()
            if rec is None:
                self._mark = t
                return
        rec.charged.backward += t - self._mark
        self._mark = t

    def tag_of(self, function):
        return getattr(function, self.tag_name, None)


def new_plain_tag_timer(link_hook):
    """Registers a :class:`PlainTagTimer` on ``link_hook``'s call stack.

    ``link_hook`` is a ``TimerHook(backward=False)``, registered: the
    plain timer takes its place as ``TimerHook.added`` makes its own.
    """
    timer = _tagging.new_tagger(
        PlainTagTimer, link_hook, link_hook.name + '_backward')
    if type(timer) is not PlainTagTimer:
        timer.unregister()
        raise RuntimeError('the plain tagging timer needs tag number 0')
    return timer


class PlainTagging(object):
    """Registers a :class:`PlainTagTimer` for ``link_hook`` in ``with``."""

    def __init__(self, link_hook):
        self.link_hook = link_hook
        self.timer = None

    def __enter__(self):
        self.timer = new_plain_tag_timer(self.link_hook)

    def __exit__(self, *args):
        self.timer.unregister()
        self.timer = None


class Hooks(object):
    """Registers several hooks for the length of a ``with`` block."""

    def __init__(self, *hooks):
        self.hooks = hooks

    def __enter__(self):
        for hook in self.hooks:
            hook.__enter__()

    def __exit__(self, *args):
        for hook in reversed(self.hooks):
            hook.__exit__(*args)


def timed_links_hook(model, backward, functions=False):
    """Our hook configured as ``TimedLinks(backward=..., functions=...)``
    configures it."""
    hook = chainer_hookext.TimerHook(name='TimedLinks', backward=backward,
                                     functions=functions)
    names = {id(link): 'main' if path == '/' else 'main' + path
             for path, link in model.namedlinks()}
    hook.set_scope(names, train=True, eval=False)
    hook.add_root(model)
    return hook


BY_TYPE = 'ours, by function type (TimedLinks(functions=True))'
PER_CALL = ('forward timing only', 'empty FunctionHook',
            'Chainer function TimerHook', 'ours, backward timing', BY_TYPE,
            'forward timing only, again')
PLAIN = 'ours, backward timing, plain tagging (getattr / setattr)'
# The instruction counts: the real thing's variants but the A/A one, and
# the plain tagging variant.
INSTRUCTIONS = PER_CALL[:-1] + (PLAIN,)


def per_call_hooks(variant, model):
    forward_only = timed_links_hook(model, backward=False)
    return {
        'forward timing only': forward_only,
        'empty FunctionHook': Hooks(forward_only, EmptyFunctionHook()),
        'Chainer function TimerHook': Hooks(
            forward_only, chainer_function_timer.TimerHook()),
        'ours, backward timing': timed_links_hook(model, backward=True),
        BY_TYPE: timed_links_hook(model, backward=True, functions=True),
        'forward timing only, again': forward_only,
        PLAIN: Hooks(forward_only, PlainTagging(forward_only)),
    }[variant]


def per_call_step():
    """Returns the model and one step: forward and backward through it."""
    model = Functions()
    x = chainer.Variable(numpy.zeros(1, numpy.float32))
    ones = numpy.ones(1, numpy.float32)

    def step():
        y = model(x)
        y.grad = ones
        y.backward()
    return model, step


def per_call_table(rounds):
    model, step = per_call_step()
    hooks = {key: per_call_hooks(key, model) for key in PER_CALL}
    # Chainer's function TimerHook keeps a record per call: a fresh one
    # for each batch.
    times = {key: [] for key in hooks}
    for _ in range(rounds):
        hooks['Chainer function TimerHook'] = per_call_hooks(
            'Chainer function TimerHook', model)
        for key, values in bench_timer.batch_times(
                step, hooks, 1, 20).items():
            times[key] += values
    bare = times['forward timing only']
    best = {key: min(values) for key, values in times.items()}
    # Extra time: the median over rounds of the difference to the
    # baseline's batch of the same round (pairs cancel drifts).
    extra = {key: statistics.median(v - b for v, b in zip(values, bare))
             for key, values in times.items()}
    print('\nPer function call: forward and backward of {} identity '
          'functions in one timed link, {} rounds (thread CPU time; extra: '
          'median of paired differences)'.format(FUNCTIONS, rounds))
    print_ratios(best, extra, 'ns / function call', 1e9 / FUNCTIONS)


def print_ratios(figures, extra, unit, scale):
    empty = extra['empty FunctionHook']
    print('| hook | {} | extra | extra vs empty FunctionHook |'.format(unit))
    print('|---|---:|---:|---:|')
    for key, value in figures.items():
        ratio = '-' if key == 'forward timing only' else '{:.2f}x'.format(
            extra[key] / empty)
        if key.endswith('again'):
            ratio += ' (noise)'
        print('| {} | {:.0f} | {:.0f} | {} |'.format(
            key, value * scale, extra[key] * scale, ratio))


class Replay(chainer.Link):
    """Calls function hooks in forward as ``FunctionNode.apply`` does."""

    def forward(self, hooks, nodes, in_data):
        for node in nodes:
            for hook in hooks:
                hook.forward_preprocess(node, in_data)
            for hook in hooks:
                hook.forward_postprocess(node, in_data)


def replay_backward(hooks, nodes, in_data, out_grad):
    """Calls function hooks on each node as Chainer's backward does."""
    for node in reversed(nodes):
        for hook in hooks:
            hook.backward_preprocess(node, tuple(in_data), tuple(out_grad))
        for hook in hooks:
            hook.backward_postprocess(node, tuple(in_data), tuple(out_grad))


def dispatch_table(rounds, number=20):
    """Per function call, the hook calls of Chainer replayed, nothing else.

    The extra cost of a function hook per call is these calls (and the
    tuples Chainer builds for the backward ones); replaying them on fresh
    nodes measures it without the ~20 us of Chainer's own work per
    function, whose noise hides a few hundred nanoseconds.
    """
    link = Replay()
    timer = timed_links_hook(link, backward=True)
    # The plain tagging timer runs on a forward-only link hook: the tag
    # tag number 0 is its own.
    forward_only = timed_links_hook(link, backward=False)
    chainer_timer = chainer_function_timer.TimerHook()
    variants = {
        'no function hook': (),
        'empty FunctionHook': (EmptyFunctionHook(),),
        'Chainer function TimerHook': (chainer_timer,),
        'two clock reads per step, nothing else': (ClockReads(),),
        'ours, backward timing': None,  # the timer's, while registered
        PLAIN: None,  # made while its link hook is registered
        'no function hook, again': ()}
    data = (numpy.zeros(1, numpy.float32),)
    times = {key: [] for key in variants}
    order = list(variants)
    for _ in range(rounds):
        random.shuffle(order)
        for key in order:
            total = 0.0
            for _ in range(number):
                x = chainer.Variable(data[0])
                nodes = []
                for _ in range(FUNCTIONS):  # fresh nodes, no hook
                    x = F.identity(x)
                    nodes.append(x.creator)
                chainer_timer.call_history = []
                link_hook = forward_only if key == PLAIN else timer
                plain = None
                with link_hook:  # the nodes are tagged in link
                    hooks = variants[key]
                    if key == PLAIN:
                        plain = new_plain_tag_timer(forward_only)
                        hooks = (plain,)
                    elif hooks is None:
                        hooks = (timer._backward_timer,)
                    # Chainer iterates the values of the thread's
                    # OrderedDict of function hooks.
                    hooks = collections.OrderedDict(
                        (hook.name, hook) for hook in hooks).values()
                    gc.disable()
                    start = _perf_counter()
                    link(hooks, nodes, data)
                    replay_backward(hooks, nodes, data, data)
                    total += _perf_counter() - start
                    gc.enable()
                    if plain is not None:
                        plain.unregister()
            times[key].append(total / number / FUNCTIONS)
    best = {key: min(values) for key, values in times.items()}
    extra = {key: value - best['no function hook']
             for key, value in best.items()}
    print('\nPer function call, hook calls only: Chainer\'s four function '
          'hook calls (forward pre/post, backward pre/post) replayed on {} '
          'fresh nodes in a timed link, best of {} rounds'.format(
              FUNCTIONS, rounds))
    print('| function hook | ns / function call | extra | extra vs empty '
          'FunctionHook |')
    print('|---|---:|---:|---:|')
    empty = extra['empty FunctionHook']
    for key in variants:
        ratio = '-' if key == 'no function hook' else '{:.2f}x'.format(
            extra[key] / empty)
        if key.endswith('again'):
            ratio += ' (noise)'
        print('| {} | {:.0f} | {:.0f} | {} |'.format(
            key, best[key] * 1e9, extra[key] * 1e9, ratio))


def run_steps(variant, steps):
    """Runs ``steps`` steps of the per-call model under one variant.

    Between steps it allocates a few objects of random (seeded) sizes:
    Chainer's backward keeps dicts keyed by objects, whose probing depends
    on where objects lie; varying that from step to step averages it out
    (without it, one variant's count moved by 1,600 instructions per
    function between two runs).
    """
    model, step = per_call_step()
    rng = random.Random(0)
    keep = []
    gc.disable()
    with per_call_hooks(variant, model):
        for _ in range(steps):
            keep.append([None] * rng.randint(1, 200))
            keep.append({rng.random(): None for _ in range(rng.randint(0, 8))})
            del keep[:-64]
            step()


def instructions_table():
    valgrind = shutil.which('valgrind')
    if valgrind is None:
        print('\n(--instructions: valgrind not found, skipped)')
        return
    counts = {}
    for variant in INSTRUCTIONS:
        refs = [_cachegrind.instructions(
            __file__, ['--run-steps', variant, steps]) for steps in (10, 50)]
        counts[variant] = (refs[1] - refs[0]) / 40
    print('\nInstructions per function call (cachegrind; (50 - 10 steps) / '
          '40, {} functions per step)'.format(FUNCTIONS))
    bare = counts['forward timing only']
    print_ratios(counts, {key: value - bare for key, value in counts.items()},
                 'instructions / function call', 1 / FUNCTIONS)


ITERATION = ('no hook', 'empty LinkHook + FunctionHook',
             'Chainer function TimerHook',
             'ours, forward timing (TimedLinks(backward=False))',
             'ours, forward and backward timing (TimedLinks())',
             'ours, by function type (TimedLinks(functions=True))',
             'no hook, again')


def iteration_table(n_units, batchsize, rounds, number):
    model = L.Classifier(bench_timer.MLP(n_units=n_units))
    optimizer = chainer.optimizers.SGD()
    optimizer.setup(model)
    rng = numpy.random.RandomState(0)
    x = rng.rand(batchsize, 784).astype(numpy.float32)
    t = rng.randint(0, 10, batchsize).astype(numpy.int32)

    def iteration():
        optimizer.update(model, x, t)

    hooks = dict(zip(ITERATION, (
        None, Hooks(bench_timer.EmptyHook(), EmptyFunctionHook()),
        chainer_function_timer.TimerHook(),
        timed_links_hook(model, backward=False),
        timed_links_hook(model, backward=True),
        timed_links_hook(model, backward=True, functions=True), None)))
    times = bench_timer.batch_times(iteration, hooks, rounds, number)
    bare = times['no hook']
    best = {key: min(values) for key, values in times.items()}
    paired = {key: statistics.median(v / b for v, b in zip(values, bare))
              for key, values in times.items()}
    print('\nWhole training iteration (forward, backward, SGD update), MLP '
          'classifier 784-{0}-{0}-10, batch {1}, {2} rounds'.format(
              n_units, batchsize, rounds))
    print('| hook | us / iteration (best) | vs no hook (best) '
          '| vs no hook (median of paired rounds) |')
    print('|---|---:|---:|---:|')
    for key in hooks:
        print('| {} | {:.1f} | {:+.2f}% | {:+.2f}% |'.format(
            key, best[key] * 1e6, (best[key] / best['no hook'] - 1) * 100,
            (paired[key] - 1) * 100))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--rounds', type=int, default=100)
    parser.add_argument('--quick', action='store_true',
                        help='fewer rounds, for a smoke test')
    parser.add_argument('--instructions', action='store_true',
                        help='also count instructions per function call '
                        'under valgrind (a minute or two)')
    parser.add_argument('--run-steps', nargs=2, help=argparse.SUPPRESS,
                        metavar=('VARIANT', 'STEPS'))
    args = parser.parse_args()
    if args.run_steps:
        run_steps(args.run_steps[0], int(args.run_steps[1]))
        return
    rounds = 3 if args.quick else args.rounds
    dispatch_table(rounds)
    per_call_table(rounds)
    iteration_table(100, 32, rounds * 2, 5)
    iteration_table(1000, 100, max(rounds // 2, 1), 2)
    if args.instructions:
        instructions_table()


if __name__ == '__main__':
    main()

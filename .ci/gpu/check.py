"""The package on a CUDA device: what ``make gpu-check`` runs after the
``gpu`` tests (``.ci/gpu/check.sh`` sets up the imports).

    python .ci/gpu/check.py --out DIR

1. **No synchronisation.**  A kernel that keeps the device busy for
   ``--spin`` seconds is queued at the end of iteration 10 of a small CNN's
   training; at the end of iteration 14 the default stream must still be
   busy: had anything in iterations 11 to 14 waited for the device, the
   host would have waited for that kernel.  Iterations 11 to 14 hold
   LinkMemory's measured iteration and no report or trace window.  Run
   with no extension of ours (the control), with every extension of ours
   but NonFiniteGuard, with NonFiniteGuard (its docstring says it reads
   its device flags once per iteration), and with an extension that
   synchronises (the method must see it).
2. **A GPU trace.**  The run with every extension writes a Timeline window
   (iterations 16 to 18) with device spans; it is checked with the tests'
   nesting rule (``tests/extensions/test_timeline.py``) and copied to DIR
   for ``.ci/check_traces.sh`` (Perfetto's own trace processor).
3. **The example** ``examples/train_digits.py`` on the device.
4. **The peaks** the roofline uses, measured on the device.
5. **Cost on the device**: the CNN's training iteration (wall time up to
   the device's end, median of rounds run in turn, one model) bare, with
   this package's hooks (every extension's together too), and with
   Chainer's own
   ``chainer.link_hooks.TimerHook``, which waits for the device at every
   link call; at batch 32 (the host is the bottleneck) and 1024 (the
   device is).  Printed, not checked.

Prints one line per check and writes ``DIR/check.json``; exit status 1
when a check failed, 2 when there is no CUDA device.
"""

import argparse
import contextlib
import glob
import gzip
import json
import os
import shutil
import subprocess
import sys
import time

import chainer
import chainer.functions as F
import chainer.links as L
import numpy
from chainer import training
from chainer.backends import cuda
from chainer.training import extensions
from chainer.training import triggers

import chainer_hookext
from chainer_hookext.costs import peaks
from tests.extensions import test_timeline

SPIN_AT = 10  # the spin kernel is queued at this iteration's end
CHECK_AT = 14  # the stream is queried at this iteration's end
STOP = 20
EVERY = 10, 'iteration'  # every report of ours
SPIN_SOURCE = r'''
extern "C" __global__ void spin(unsigned long long ns) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < ns);
}
'''


class CNN(chainer.Chain):

    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.conv = L.Convolution2D(1, 16, 3, pad=1)
            self.bn = L.BatchNormalization(16)
            self.fc1 = L.Linear(16 * 14 * 14, 128)
            self.fc2 = L.Linear(128, 10)

    def forward(self, x):
        h = F.max_pooling_2d(F.relu(self.bn(self.conv(x))), 2)
        return self.fc2(F.relu(self.fc1(h)))


class StreamProbe(object):
    """Queues the spin kernel at :data:`SPIN_AT`, queries the stream at
    :data:`CHECK_AT`; its extensions run last in their iteration."""

    def __init__(self, spin_seconds):
        self.spin_seconds = spin_seconds
        self.kernel = cuda.cupy.RawKernel(SPIN_SOURCE, 'spin')
        self.queued = None
        self.result = None

    def spin(self, trainer):
        self.kernel((1,), (1,), (numpy.uint64(self.spin_seconds * 1e9),))
        self.queued = time.perf_counter()

    def check(self, trainer):
        busy = not cuda.cupy.cuda.Stream.null.done
        self.result = {
            'stream_busy': busy,
            'host_seconds': time.perf_counter() - self.queued}
        cuda.cupy.cuda.Stream.null.synchronize()

    def extend(self, trainer):
        for call, at in ((self.spin, SPIN_AT), (self.check, CHECK_AT)):
            trainer.extend(  # a function: the trainer sets its name
                lambda trainer, call=call: call(trainer),
                name='probe_' + call.__name__, priority=-10 ** 6,
                trigger=triggers.ManualScheduleTrigger(at, 'iteration'))


def synchronise(trainer):
    cuda.cupy.cuda.Stream.null.synchronize()


def every_extension_but_the_guard(trainer):
    trainer.extend(chainer_hookext.TimedLinks(flops=True), trigger=EVERY)
    trainer.extend(chainer_hookext.TimedLoop(), trigger=EVERY)
    trainer.extend(chainer_hookext.LinkMemory(), trigger=EVERY)
    trainer.extend(chainer_hookext.ActivationStatistics(), trigger=EVERY)
    trainer.extend(chainer_hookext.CaptureOutputs(copy=True))
    trainer.extend(chainer_hookext.Timeline(iterations=3),
                   trigger=triggers.ManualScheduleTrigger(15, 'iteration'))
    trainer.extend(chainer_hookext.UnchainVariables())


def the_guard(trainer):
    trainer.extend(chainer_hookext.NonFiniteGuard())


def a_synchronising_extension(trainer):
    trainer.extend(synchronise, name='synchronise')


CASES = (
    ('no extension of ours (control)', None, False),
    ('every extension but NonFiniteGuard', every_extension_but_the_guard,
     False),
    ('NonFiniteGuard', the_guard, None),
    ('an extension that synchronises (control)', a_synchronising_extension,
     True),
)


def train(out, extend, spin_seconds):
    device = chainer.get_device('@cupy:0')
    device.use()
    cupy = cuda.cupy
    model = L.Classifier(CNN())
    model.to_device(device)
    x = cupy.random.rand(640, 1, 28, 28).astype(numpy.float32)
    t = cupy.random.randint(0, 10, 640).astype(numpy.int32)
    iterator = chainer.iterators.SerialIterator(
        chainer.datasets.TupleDataset(x, t), 32)
    optimizer = chainer.optimizers.Adam()
    optimizer.setup(model)
    updater = training.updaters.StandardUpdater(
        iterator, optimizer, device=device)
    trainer = training.Trainer(updater, (STOP, 'iteration'), out=out)
    trainer.extend(extensions.LogReport(trigger=EVERY))
    if extend is not None:
        extend(trainer)
    probe = StreamProbe(spin_seconds)
    probe.extend(trainer)
    trainer.run()
    return probe.result


def check_no_sync(out, spin_seconds, results):
    ok = True
    for name, extend, synchronises in CASES:
        folder = os.path.join(out, 'no_sync', name.split()[0])
        result = train(folder, extend, spin_seconds)
        seen = not result['stream_busy']
        passed = synchronises is None or seen == synchronises
        ok &= passed
        print('{} no-sync, {}: the stream {} after 4 iterations '
              '({:.3f} s on the host, the kernel {:.1f} s){}'.format(
                  'PASS' if passed else 'FAIL', name,
                  'had drained (a synchronisation)' if seen
                  else 'was still busy (none)',
                  result['host_seconds'], spin_seconds,
                  '' if synchronises is not None else ': reported only'))
        results['no_sync'][name] = dict(result, synchronised=seen)
    return ok


def check_trace(out, results):
    files = glob.glob(os.path.join(
        out, 'no_sync', 'every', 'timeline', '*.json.gz'))
    if len(files) != 1:
        print('FAIL trace: expected one Timeline file, found', files)
        return False
    with gzip.open(files[0], 'rt') as f:
        events = json.load(f)['traceEvents']
    threads = {e['args']['name'] for e in events
               if e.get('name') == 'thread_name'}
    device_spans = [e for e in events if e.get('ph') == 'X' and (
        e['tid'] >= 1000)]
    try:
        test_timeline.assert_nested_per_thread(events)
        nested = True
    except AssertionError as e:
        nested = False
        print('nesting broken:', str(e)[:500])
    passed = nested and bool(device_spans)
    target = os.path.join(out, 'gpu_trace.json.gz')
    shutil.copy(files[0], target)
    print('{} trace: {} events, {} device spans, threads {}, nested: {}; '
          'copied to {}'.format('PASS' if passed else 'FAIL', len(events),
                                len(device_spans), sorted(threads), nested,
                                target))
    results['trace'] = {'events': len(events),
                        'device_spans': len(device_spans), 'nested': nested}
    return passed


def check_example(out, results):
    command = [sys.executable, 'examples/train_digits.py', '--device', '0',
               '--iterations', '60', '--noplot', '--no-progress',
               '--out', os.path.join(out, 'example')]
    start = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True,
                              timeout=240)
    except subprocess.TimeoutExpired:
        print('FAIL example: more than 240 s')
        return False
    seconds = time.perf_counter() - start
    with open(os.path.join(out, 'example.log'), 'w') as f:
        f.write(done.stdout + done.stderr)
    passed = done.returncode == 0
    print('{} example: exit {} in {:.1f} s; last lines:'.format(
        'PASS' if passed else 'FAIL', done.returncode, seconds))
    print('\n'.join((done.stdout + done.stderr).splitlines()[-25:]))
    results['example'] = {'exit': done.returncode, 'seconds': seconds}
    return passed


class Rounds(object):
    """One model's training iterations, timed under each hook set in turn.
    """

    def __init__(self, iterations, batch):
        device = chainer.get_device('@cupy:0')
        device.use()
        cupy = cuda.cupy
        self.model = L.Classifier(CNN())
        self.model.to_device(device)
        self.optimizer = chainer.optimizers.Adam()
        self.optimizer.setup(self.model)
        self.x = cupy.random.rand(batch, 1, 28, 28).astype(numpy.float32)
        self.t = cupy.random.randint(0, 10, batch).astype(numpy.int32)
        self.iterations = iterations

    def seconds(self, hooks):
        """Mean seconds per iteration under ``hooks`` (context managers);
        a ``NonFiniteHook`` among them is checked at each iteration's end,
        as ``NonFiniteGuard`` checks it."""
        stream = cuda.cupy.cuda.Stream.null
        checks = [hook.check for hook in hooks
                  if isinstance(hook, chainer_hookext.NonFiniteHook)]
        with contextlib.ExitStack() as stack:
            for hook in hooks:
                stack.enter_context(hook)
            stream.synchronize()
            start = time.perf_counter()
            for _ in range(self.iterations):
                self.optimizer.update(self.model, self.x, self.t)
                for check in checks:
                    check()
            stream.synchronize()
        return (time.perf_counter() - start) / self.iterations


def every_hook(guard):
    """The hooks of every extension that hooks links: TimedLinks(flops=True),
    ActivationStatistics, GradientStatistics, CaptureOutputs(copy=True),
    and NonFiniteGuard's (checked once per iteration) with ``guard``."""
    hooks = (chainer_hookext.TimerHook(backward=True, flops=True),
             chainer_hookext.ActivationStatisticsHook(),
             chainer_hookext.GradientStatisticsHook(),
             chainer_hookext.CaptureOutputsHook(copy=True))
    return hooks + ((chainer_hookext.NonFiniteHook(),) if guard else ())


def report_costs(results, batch, rounds=7, iterations=30):
    from chainer_hookext import TimerHook
    variants = (
        ('bare', lambda: ()),
        ('TimerHook() of this package (TimedLinks)',
         lambda: (TimerHook(backward=True),)),
        ('TimerHook(flops=True), ActivationStatistics, CaptureOutputs',
         lambda: (TimerHook(backward=True, flops=True),
                  chainer_hookext.ActivationStatisticsHook(),
                  chainer_hookext.CaptureOutputsHook(copy=True))),
        ('every extension together but NonFiniteGuard',
         lambda: every_hook(guard=False)),
        ('every extension together',
         lambda: every_hook(guard=True)),
        ("Chainer's chainer.link_hooks.TimerHook",
         lambda: (chainer.link_hooks.TimerHook(),)),
    )
    timed = Rounds(iterations, batch)
    for _, make in variants:  # warm-up: kernels compiled
        timed.seconds(make())
    samples = {name: [] for name, _ in variants}
    for _ in range(rounds):
        for name, make in variants:
            samples[name].append(timed.seconds(make()))
    bare = numpy.median(samples['bare'])
    for name, _ in variants:
        median = numpy.median(samples[name])
        print(f'cost, batch {batch:<5} {name:<62} {median * 1e3:8.3f} ms / '
              f'iteration  {median / bare:5.2f}x bare')
        results['costs'][f'{name}, batch {batch}'] = median


def report_peaks(results):
    cupy = cuda.cupy
    for dtype in (numpy.float32, numpy.float16):
        peak = peaks.measure(cupy, dtype)
        print('peaks, {}: {:.1f} TFLOP/s, {:.0f} GB/s'.format(
            numpy.dtype(dtype).name, peak.flops / 1e12, peak.bandwidth / 1e9))
        results['peaks'][numpy.dtype(dtype).name] = {
            'flops': peak.flops, 'bandwidth': peak.bandwidth}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--out', default='result/gpu-check')
    parser.add_argument('--spin', type=float, default=3.0,
                        help='seconds the device is kept busy')
    args = parser.parse_args()
    if not cuda.available or not cuda.cupy.cuda.runtime.getDeviceCount():
        print('check.py: no CUDA device through Chainer and CuPy',
              file=sys.stderr)
        return 2
    properties = cuda.cupy.cuda.runtime.getDeviceProperties(0)
    print('device: {}; Python {}; NumPy {}; CuPy {}; Chainer {}; '
          'cuDNN in Chainer: {}'.format(
              properties['name'].decode(), sys.version.split()[0],
              numpy.__version__, cuda.cupy.__version__, chainer.__version__,
              cuda.cudnn_enabled))
    results = {'no_sync': {}, 'peaks': {}, 'costs': {}}
    ok = check_no_sync(args.out, args.spin, results)
    ok &= check_trace(args.out, results)
    report_peaks(results)
    for batch in (32, 1024):
        report_costs(results, batch)
    ok &= check_example(args.out, results)
    with open(os.path.join(args.out, 'check.json'), 'w') as f:
        json.dump(results, f, indent=1)
    print('check.py:', 'passed' if ok else 'FAILED')
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())

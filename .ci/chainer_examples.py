"""Chainer's own examples with every extension of this package: a plain run,
Ctrl-C, resume, and resume then Ctrl-C, each checked for anything left
behind.

    python .ci/chainer_examples.py --chainer-repo PATH [--examples mnist ...]

``PATH`` is a clone of github.com/chainer/chainer (its ``examples/``;
Chainer's PyPI sdist has none): the examples are copied to a temporary
folder and run as they are, with ``python train_X.py`` arguments, in a
process each.  In that process, before the example runs:

* the datasets it downloads (``get_mnist``, ``get_cifar10``,
  ``get_ptb_words``) are replaced by small random ones of the same shapes:
  nothing is downloaded;
* every trainer gets, as it is made (before the example loads a snapshot),
  ``TimedLinks(flops=True, functions=True)``, ``TimedLoop``, ``Timeline``
  (with ``outliers=True, functions=True``), ``LinkMemory``,
  ``NonFiniteGuard``, ``ActivationStatistics``, ``GradientStatistics``,
  ``CaptureOutputs``, ``UnchainVariables`` and ``ProfileReport``,
  on the targets of all its optimizers;
* for the Ctrl-C scenarios, a function hook of the user's raises
  ``KeyboardInterrupt`` in the middle of one iteration's forward.

After the run (or the interrupt) the process checks that no hook of ours is
left in the thread's registries or in ``gc.callbacks``, that the trainer's
stop trigger, reporter scope and extension triggers and the optimizers'
hooks are its own again, and that a deep copy of each optimizer's target
holds nothing of ours.  One
line per example and scenario; exit status 1 when one failed.  This is a
developer's check (CI cannot reach GitHub): run it before calling a feature
done.
"""

import argparse
import copy
import gc
import glob
import json
import os
import runpy
import shutil
import subprocess
import sys
import tempfile

EXAMPLES = {
    # name: (folder, script, arguments for a short run, epochs)
    'mnist': ('mnist', 'train_mnist.py',
              ['--batchsize', '20', '--unit', '50', '--frequency', '1'], 3),
    'ptb': ('ptb', 'train_ptb.py',
            ['--batchsize', '4', '--bproplen', '5', '--unit', '20',
             '--test'], 3),
    'cifar': ('cifar', 'train_cifar.py', ['--batchsize', '12'], 3),
    'dcgan': ('dcgan', 'train_dcgan.py',
              ['--batchsize', '10', '--n_hidden', '10',
               '--snapshot_interval', '6', '--display_interval', '3'], 3),
}
SCENARIOS = ('plain', 'interrupt', 'resume', 'resume-interrupt')
INTERRUPT_AT = 2  # the epoch whose first iteration's forward is interrupted


# -- in the example's process ------------------------------------------------

def small_datasets():
    """Replaces Chainer's downloading datasets by small random ones."""
    import chainer
    import numpy

    rng = numpy.random.RandomState(0)

    def images(n, shape, scale, withlabel, labels=10):
        x = (rng.rand(n, *shape) * scale).astype(numpy.float32)
        if not withlabel:
            return x
        t = rng.randint(0, labels, n).astype(numpy.int32)
        return chainer.datasets.TupleDataset(x, t)

    def get_mnist(withlabel=True, ndim=1, scale=1.0, **kwargs):
        shape = (784,) if ndim == 1 else (1, 28, 28)[3 - ndim:]
        return (images(200, shape, scale, withlabel),
                images(40, shape, scale, withlabel))

    def get_cifar(withlabel=True, ndim=3, scale=1.0, labels=10, **kwargs):
        shape = (3, 32, 32) if ndim == 3 else (3072,)
        return (images(60, shape, scale, withlabel, labels),
                images(12, shape, scale, withlabel, labels))

    def get_ptb_words():
        words = rng.randint(0, 50, 600).astype(numpy.int32)
        return words[:400], words[400:500], words[500:]

    datasets = chainer.datasets
    datasets.get_mnist = get_mnist
    datasets.get_cifar10 = get_cifar
    datasets.get_cifar100 = (
        lambda withlabel=True, ndim=3, scale=1.0, **kwargs: get_cifar(
            withlabel, ndim, scale, labels=100))
    datasets.get_ptb_words = get_ptb_words
    datasets.get_ptb_words_vocabulary = lambda: {
        'w{}'.format(i): i for i in range(50)}


def every_extension(trainer):
    """Adds every extension of ours, on all the optimizers' targets."""
    import chainer_hookext
    from chainer.training import triggers

    targets = [o.target for o in
               trainer.updater.get_all_optimizers().values()]
    trainer.extend(chainer_hookext.TimedLinks(targets, flops=True,
                                              functions=True))
    trainer.extend(chainer_hookext.TimedLoop())
    trainer.extend(chainer_hookext.Timeline(iterations=2, outliers=True,
                                            functions=True, memory=True),
                   trigger=triggers.ManualScheduleTrigger(1, 'epoch'))
    trainer.extend(chainer_hookext.LinkMemory(targets))
    trainer.extend(chainer_hookext.NonFiniteGuard(targets))
    trainer.extend(chainer_hookext.ActivationStatistics(targets))
    trainer.extend(chainer_hookext.GradientStatistics(targets))
    trainer.extend(chainer_hookext.CaptureOutputs(targets))
    trainer.extend(chainer_hookext.UnchainVariables())
    trainer.extend(chainer_hookext.ProfileReport())


class Interrupter(object):
    """A user's function hook: Ctrl-C at the fifth function of the first
    training iteration of epoch ``epoch`` (counted from 1)."""

    def __init__(self, epoch):
        import chainer
        self.epoch = epoch
        self.trainer = None
        self.count = 0
        self.hook = type('Interrupt', (chainer.FunctionHook,), {
            'name': 'Interrupt',
            'forward_preprocess': lambda hook, f, x: self.tick()})()

    def tick(self):
        import chainer
        trainer = self.trainer
        if trainer is None or not chainer.config.train:
            return
        # The iterator has fetched the running iteration's batch already.
        if trainer.updater.epoch_detail > self.epoch - 1:
            self.count += 1
            if self.count == 5:
                raise KeyboardInterrupt


def ours_inside(model, ours):
    # The attributes of the model's links and parameters that are ours.
    found = []
    for path, link in model.namedlinks():
        for attr, value in vars(link).items():
            values = value.values() if isinstance(value, dict) else [value]
            found += ['{}.{}'.format(path, attr) for v in values if ours(v)]
    for path, param in model.namedparams():
        found += ['{}.{}'.format(path, attr)
                  for attr, value in vars(param).items() if ours(value)]
    return found


def left_behind(trainers):
    """What of ours is left: a list of sentences, empty when nothing."""
    import chainer

    def ours(value):
        return type(value).__module__.startswith('chainer_hookext')

    found = ['gc.callbacks: {!r}'.format(c) for c in gc.callbacks
             if getattr(c, '__module__', '').startswith('chainer_hookext')
             or ours(getattr(c, '__self__', None))]
    for registry in (chainer._get_link_hooks(),
                     chainer.get_function_hooks()):
        found += ['registered: {}'.format(k) for k in registry
                  if k.startswith('chainer_hookext')]
    from chainer_hookext import _observer
    from chainer_hookext.timing import pauses
    found += ['an observer: {!r}'.format(o.listeners)
              for o in _observer._observers.values()]
    found += ['listening to pauses: {!r}'.format(listener)
              for listener in pauses._listeners()]
    for trainer in trainers:
        if ours(trainer.stop_trigger):
            found.append('trainer.stop_trigger')
        if 'scope' in vars(trainer.reporter):
            found.append('trainer.reporter.scope')
        for name, entry in trainer._extensions.items():
            if ours(entry.trigger):
                found.append('the trigger of {}'.format(name))
        for name, optimizer in trainer.updater.get_all_optimizers().items():
            for timing in ('_pre_update_hooks', '_post_update_hooks'):
                found += ['optimizer {} hook {}'.format(name, k) for k, hook
                          in (getattr(optimizer, timing, None) or {}).items()
                          if ours(hook)]
            copied = copy.deepcopy(optimizer.target)
            found += ['{} in a copy of optimizer {}\'s target'.format(
                where, name) for where in ours_inside(copied, ours)]
    return found


def run_example(script, argv, interrupt_epoch, verdict_file):
    """Runs one example in this process; writes the verdict as JSON."""
    import chainer
    from chainer import training

    small_datasets()
    trainers = []
    interrupter = Interrupter(interrupt_epoch) if interrupt_epoch else None
    init = training.Trainer.__init__

    def trainer_init(trainer, *args, **kwargs):
        init(trainer, *args, **kwargs)
        every_extension(trainer)
        trainers.append(trainer)
        if interrupter is not None:
            interrupter.trainer = trainer

    training.Trainer.__init__ = trainer_init
    sys.argv = [script] + argv
    os.chdir(os.path.dirname(script))
    sys.path.insert(0, os.path.dirname(script))
    outcome = 'ended'
    try:
        if interrupter is not None:
            with interrupter.hook:
                runpy.run_path(script, run_name='__main__')
        else:
            runpy.run_path(script, run_name='__main__')
    except KeyboardInterrupt:
        outcome = 'interrupted'
    finally:
        training.Trainer.__init__ = init
    iterations = [t.updater.iteration for t in trainers]
    with open(verdict_file, 'w') as f:
        json.dump({'outcome': outcome, 'iterations': iterations,
                   'left_behind': left_behind(trainers),
                   'config_train': bool(chainer.config.train)}, f)


# -- the driver ---------------------------------------------------------------

def scenario(name, example, folder, out):
    """Runs one scenario in a process of its own; returns (ok, line)."""
    subfolder, script, args, epochs = EXAMPLES[example]
    script = os.path.join(folder, subfolder, script)
    argv = args + ['--epoch', str(epochs), '--out', out]
    interrupt = 0
    if name in ('interrupt', 'resume-interrupt'):
        interrupt = INTERRUPT_AT + (1 if name == 'resume-interrupt' else 0)
    if name.startswith('resume'):
        # Both resume from the snapshot the interrupted run left.
        start = os.path.join(out, 'resume_from.npz')
        if name == 'resume':
            snapshots = sorted(
                # cifar's are 'snaphot_epoch_N', as Chainer spells them
                glob.glob(os.path.join(out, 'sna*hot_*')),
                key=os.path.getmtime)
            if not snapshots:
                return False, 'no snapshot to resume from in {}'.format(out)
            shutil.copy(snapshots[-1], start)
        argv += ['--resume', start]
    verdict_file = os.path.join(out, 'verdict_{}.json'.format(name))
    os.makedirs(out, exist_ok=True)
    done = subprocess.run(
        [sys.executable, os.path.abspath(__file__), '--run', script,
         str(interrupt), verdict_file, '--'] + argv,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        universal_newlines=True, timeout=900)
    with open(os.path.join(out, 'log_{}.txt'.format(name)), 'w') as f:
        f.write(done.stdout)
    if done.returncode or not os.path.exists(verdict_file):
        return False, 'exit {}: {}'.format(
            done.returncode, done.stdout.strip().splitlines()[-3:])
    with open(verdict_file) as f:
        verdict = json.load(f)
    expected = 'interrupted' if interrupt else 'ended'
    ok = (verdict['outcome'] == expected and not verdict['left_behind']
          and verdict['config_train'])
    return ok, '{}, iterations {}, left behind: {}'.format(
        verdict['outcome'], verdict['iterations'],
        verdict['left_behind'] or 'nothing')


def copy_examples(repo, work):
    # A checkout, or a git folder without one (git archive).
    examples = os.path.join(repo, 'examples')
    if os.path.isdir(examples):
        shutil.copytree(examples, os.path.join(work, 'examples'))
        return
    archive = subprocess.run(
        ['git', '--git-dir', repo, 'archive', 'HEAD', 'examples'],
        stdout=subprocess.PIPE, check=True).stdout
    subprocess.run(['tar', '-x', '-C', work], input=archive, check=True)


def main():
    if '--run' in sys.argv:  # one example, in this process
        at = sys.argv.index('--run')
        script, interrupt, verdict_file = sys.argv[at + 1:at + 4]
        argv = sys.argv[sys.argv.index('--') + 1:]
        run_example(script, argv, int(interrupt), verdict_file)
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--chainer-repo', required=True,
                        help='a clone of github.com/chainer/chainer (or '
                        'its git folder)')
    parser.add_argument('--examples', nargs='+', default=sorted(EXAMPLES),
                        choices=sorted(EXAMPLES))
    parser.add_argument('--keep', help='keep the runs in this folder')
    args = parser.parse_args()
    work = args.keep or tempfile.mkdtemp()
    folder = os.path.join(work, 'examples')
    if not os.path.isdir(folder):
        copy_examples(args.chainer_repo, work)
    failed = 0
    for example in args.examples:
        out = os.path.join(work, 'result_' + example)
        shutil.rmtree(out, ignore_errors=True)
        for name in SCENARIOS:
            ok, line = scenario(name, example, folder, out)
            failed += not ok
            print('{} {} {}: {}'.format(
                'PASS' if ok else 'FAIL', example, name, line), flush=True)
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())

"""ChainerMN's example layout with LinkHookExtension and UnchainVariables.

argv: out.  Rank 0 alone has ``DumpGraph`` (which turns
``keep_graph_on_report`` on for the first iteration) and ``LogReport``, as in
ChainerMN's examples.  Each rank counts its train-mode and eval-mode link
calls with two ``LinkHookExtension``s, keeps every reported ``main/loss``
Variable, and saves what it saw.
"""

import os

import _common

import chainer
from chainer.training import extensions

import chainer_hookext


def _counter(counts):
    def posthook(link, args, kwargs, out):
        name = link.name or '/'
        counts[name] = counts.get(name, 0) + 1
    return posthook


def main():
    comm, out = _common.setup()
    trainer_out = os.path.join(out, 'rank{}'.format(comm.rank))
    trainer, model = _common.make_trainer(comm, trainer_out)
    counts = {'train': {}, 'eval': {}}
    for mode in counts:
        hook = chainer_hookext.CallbackHook(
            posthook=_counter(counts[mode]), name='count_' + mode)
        trainer.extend(chainer_hookext.LinkHookExtension(
            hook, train=mode == 'train', eval=mode == 'eval'))
    losses = []

    @chainer.training.make_extension(trigger=(1, 'iteration'))
    def keep_losses(trainer):
        loss = trainer.observation['main/loss']
        losses.append((loss, loss.creator is not None))

    trainer.extend(keep_losses)
    trainer.extend(chainer_hookext.UnchainVariables())
    if comm.rank == 0:
        trainer.extend(extensions.DumpGraph('main/loss'))
        trainer.extend(extensions.LogReport())
    trainer.run()
    _common.save(comm, out, {
        'counts': counts,
        'hooks_left': _common.hooks_left(model),
        'had_graph': [had for _, had in losses],
        'unchained': [loss.creator is None for loss, _ in losses],
        'loss_finite': [bool(abs(float(loss.array)) < 1e3)
                        for loss, _ in losses],
        'iteration': trainer.updater.iteration,
        'keep_graph_on_report': chainer.config.keep_graph_on_report,
    })


if __name__ == '__main__':
    main()

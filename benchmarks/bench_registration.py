#!/usr/bin/env python
"""Per-call cost of the ways to register a link hook, side by side.

Measures one ``Link.__call__`` of an identity link with no hook, an empty
hook registered globally (``with hook:``), the same hook added to the link
(``link.add_hook``), and an empty plain hook registered by
:class:`chainer_hookext.LinkHookExtension` (behind its scope filter) as
:class:`~chainer_hookext.LinkHookExtension` would: global, filtered to the
model's links.  Prints ns per call and each extra cost as a ratio of the
empty global hook's extra cost.

Run: ``python benchmarks/bench_registration.py``
"""

import argparse
import timeit

import chainer
import numpy

from chainer_hookext.run import scope_filter


class Identity(chainer.Link):

    def forward(self, x):
        return x


class EmptyHook(chainer.LinkHook):
    name = 'EmptyHook'


def per_call_ns(fn, number, repeat):
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e9


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--number', type=int, default=200000)
    parser.add_argument('--repeat', type=int, default=7)
    args = parser.parse_args()

    link = Identity()
    x = numpy.zeros(1, numpy.float32)
    call = lambda: link(x)  # NOQA
    measure = lambda: per_call_ns(call, args.number, args.repeat)  # NOQA

    rows = [('no hook', measure())]
    with EmptyHook():
        rows.append(('empty hook, global (with hook:)', measure()))
    link.add_hook(EmptyHook())
    rows.append(('empty hook, link.add_hook', measure()))
    link.delete_hook('EmptyHook')
    proxy = scope_filter.ScopeFilter(EmptyHook(), 'EmptyHook')
    proxy.set_scope({id(link): 'main'})
    with proxy:
        rows.append(('empty hook, LinkHookExtension (scoped)', measure()))

    bare = rows[0][1]
    empty = rows[1][1] - bare
    print('{:<42} {:>10} {:>10} {:>8}'.format(
        'registration', 'ns/call', 'extra ns', 'ratio'))
    for name, ns in rows:
        extra = ns - bare
        print('{:<42} {:>10.0f} {:>10.0f} {:>8}'.format(
            name, ns, extra,
            '-' if name == 'no hook' else '{:.2f}x'.format(extra / empty)))


if __name__ == '__main__':
    main()

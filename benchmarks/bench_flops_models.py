#!/usr/bin/env python
"""Forward FLOPs of Chainer's vision models against their published counts.

Builds ``L.VGG16Layers``, ``L.ResNet50Layers`` and ``L.GoogLeNet`` with
``pretrained_model=None`` (nothing is downloaded), runs one 224 x 224 image
(batch 1) through each to its ``prob`` layer in
``chainer.using_config('train', False)`` (the published counts are of
inference) and counts every function node with
``chainer_hookext.costs.flops.count``, as ``TimedLinks(flops=True)`` does.

Printed per model: the total forward FLOPs; the multiply-adds of the
convolutions and fully connected layers alone (their FLOPs / 2, bias
additions included); the published multiply-add count; the ratios of the
two to it; and the FLOPs of every other node (ReLU, pooling, LRN,
batch normalization, concatenation, softmax...), which MAC counts leave out.

Published counts (multiply-adds, 224 x 224):

* VGG-16: 15.47 G (Simonyan & Zisserman; the usual fvcore / ptflops figure);
* ResNet-50: 3.86 G for Chainer's variant, whose bottlenecks stride on the
  first 1 x 1 convolution (the original Caffe model); 4.09 G (He et al.
  quote 3.8 G) for torchvision's v1.5, which strides on the 3 x 3;
* GoogLeNet: 1.58 G, the convolutions and the classifier only (Szegedy et
  al. quote 1.5 G).

Run: ``python benchmarks/bench_flops_models.py``
"""

import collections
import time

import chainer
import chainer.links as L
import numpy

from chainer_hookext.costs import flops

#: Multiply-adds published for each model at 224 x 224.
PUBLISHED = collections.OrderedDict([
    ('VGG16Layers', 15.47e9),
    ('ResNet50Layers', 3.86e9),
    ('GoogLeNet', 1.58e9),
])

#: The nodes whose FLOPs are 2 per multiply-add: what MAC counts count.
PRODUCTS = {'Convolution2DFunction', 'LinearFunction'}


class Totals(chainer.FunctionHook):
    """FLOPs per node class of every node applied."""

    name = 'Totals'

    def __init__(self):
        self.flops = collections.Counter()
        self.unknown = set()

    def forward_preprocess(self, function, in_data):
        cost = flops.count(function, in_data)
        if cost is None:
            self.unknown.add(flops.name_of(function))
        else:
            self.flops[flops.name_of(function)] += cost.flops


def measure(name):
    model = getattr(L, name)(pretrained_model=None)
    x = numpy.zeros((1, 3, 224, 224), numpy.float32)
    hook = Totals()
    start = time.perf_counter()
    with chainer.using_config('train', False), \
            chainer.using_config('enable_backprop', False), hook:
        model(x, layers=['prob'])
    return hook, time.perf_counter() - start


def main():
    print('{:<15} {:>10} {:>11} {:>10} {:>8} {:>8} {:>10}'.format(
        'model', 'FLOPs (G)', 'MACs (G)', 'published', 'FLOPs/', 'MACs/',
        'other (G)'))
    print('{:<15} {:>10} {:>11} {:>10} {:>8} {:>8} {:>10}'.format(
        '', '', 'conv + fc', 'MACs (G)', 'publ.', 'publ.', ''))
    others = {}
    for name, published in PUBLISHED.items():
        hook, seconds = measure(name)
        total = sum(hook.flops.values())
        macs = sum(hook.flops[n] for n in PRODUCTS) / 2
        other = total - 2 * macs
        others[name] = (hook, seconds)
        print('{:<15} {:>10.3f} {:>11.3f} {:>10.2f} {:>8.3f} {:>8.3f} '
              '{:>10.3f}'.format(name, total / 1e9, macs / 1e9,
                                 published / 1e9, total / published,
                                 macs / published, other / 1e9))
    print()
    for name, (hook, seconds) in others.items():
        rest = [(n, f) for n, f in hook.flops.most_common()
                if n not in PRODUCTS and f]
        print('{} ({:.1f} s forward): other nodes {}; unknown: {}'.format(
            name, seconds, ', '.join('{} {:.1f} M'.format(n, f / 1e6)
                                     for n, f in rest),
            sorted(hook.unknown) or 'none'))


if __name__ == '__main__':
    main()

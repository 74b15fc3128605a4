import chainer
import chainer.functions as F

from chainer_hookext.memory import tracer as tracer_module

#: Bytes of the float32 loss ``trace`` backpropagates from: the ``F.sum``
#: output, still referenced at the first backward step, created outside
#: every link (``None``).
LOSS = 4


def trace(links, forward):
    """Runs ``F.sum(forward()).backward()`` under a :class:`MemoryTracer`
    scoped to ``links`` (``{name: link}``); returns the tracer."""
    tracer = tracer_module.MemoryTracer()
    tracer.set_scope({id(link): name for name, link in links.items()},
                     train=True, eval=False)
    tracer.model = list(links.values())
    with tracer:
        loss = F.sum(forward())
        loss.backward()
    return tracer


class Nodes(chainer.FunctionHook):
    """The ``(node, tag)`` of each node created, in creation order; ``tag``
    is the attribute's value when the node ran."""

    name = 'Nodes'

    def __init__(self):
        self.tag = None
        self.nodes = []

    def forward_preprocess(self, function, in_data):
        self.nodes.append((function, self.tag))

"""Names for the doctest examples in the package's docstrings.

The examples read like user code: ``trainer`` is a real
:class:`~chainer.training.Trainer` on a tiny ``L.Classifier`` model, and
``model`` its ``main`` optimizer's target; ``numpy``, ``chainer``, ``L``,
``F``, ``training`` and ``extensions`` are imported.
"""

import chainer
import chainer.functions as F
import chainer.links as L
import numpy
import pytest
from chainer import training
from chainer.training import extensions


@pytest.fixture(autouse=True)
def _doctest_names(request, tmp_path):
    if not isinstance(request.node, pytest.DoctestItem):
        return
    from tests import conftest as test_conftest

    trainer = test_conftest.make_trainer(tmp_path / 'result')
    names = request.getfixturevalue('doctest_namespace')
    names.update(
        numpy=numpy, chainer=chainer, F=F, L=L, training=training,
        extensions=extensions, trainer=trainer,
        model=trainer.updater.get_optimizer('main').target)

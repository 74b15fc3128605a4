import pytest

from tests.chainermn import conftest


def test_nothing_missing_runs():
    assert conftest.check_mpi([], {'CHAINER_HOOKEXT_REQUIRE_MPI': '1'}) is None


@pytest.mark.parametrize('environ', [
    {}, {'CHAINER_HOOKEXT_REQUIRE_MPI': '0'}])
def test_missing_skips_with_reason(environ):
    with pytest.raises(pytest.skip.Exception,
                       match=r'missing mpi4py.*make mpi'):
        conftest.check_mpi(['mpi4py'], environ)


def test_missing_fails_when_asked_for():
    with pytest.raises(pytest.fail.Exception,
                       match=r'missing mpiexec.*REQUIRE_MPI=1'):
        conftest.check_mpi(['mpiexec'], {'CHAINER_HOOKEXT_REQUIRE_MPI': '1'})

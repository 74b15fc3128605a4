"""LinkHookExtension and UnchainVariables under ChainerMN (2 ranks)."""


def test_link_hook_extension_and_unchain_variables(mpirun):
    results = mpirun('train_hooks.py')
    for rank, result in enumerate(results):
        # 4 iterations; links named by Link.name ('/' for the root).
        assert result['counts']['train'] == {
            '/': 4, 'predictor': 4, 'l1': 4, 'l2': 4}, rank
        # The multi-node evaluator: 4 test examples per rank, one batch.
        assert result['counts']['eval'] == {
            '/': 1, 'predictor': 1, 'l1': 1, 'l2': 1}, rank
        assert result['hooks_left'] == [], rank
        assert result['iteration'] == 4
        assert result['unchained'] == [True] * 4, rank
        assert all(result['loss_finite']), rank
    # DumpGraph on rank 0 kept the first iteration's graph until
    # UnchainVariables ran; rank 1's reporter never kept one.
    assert results[0]['had_graph'] == [True, False, False, False]
    assert results[1]['had_graph'] == [False] * 4

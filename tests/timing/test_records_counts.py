"""Counted figures of a call record: one line of COUNTS to an Entry."""

from chainer_hookext.timing import records


def labels(name):
    return records.Labels(name, '/' + name, 'Link')


def test_every_count_gives_named_entry_fields():
    for count in records.COUNTS:
        assert count.inclusive in records.FIELDS
        assert count.own is None or count.own in records.FIELDS
        assert (count.inclusive in records.COST_FIELDS) == count.cost
    assert records.COST_FIELDS == (
        'flops', 'self_flops', 'backward_flops', 'backward_self_flops',
        'bytes', 'backward_bytes')
    assert records.FUNCTION_FIELDS == (
        'time', 'backward_time', 'occurrence', 'flops', 'backward_flops')


def test_entries_sum_each_count_inclusive_and_own():
    live = records.CallRecord()
    parent = live.children['p'] = records.CallRecord(
        'p', live, labels('p'))
    child = parent.children['c'] = records.CallRecord(
        'c', parent, labels('c'))
    for n, count in enumerate(records.COUNTS):
        setattr(parent, count.attribute, count.zero + n + 1)
        setattr(child, count.attribute, count.zero + 10 * (n + 1))
    stored = records.CallRecord()
    records.merge(live, stored)
    rows = {e.key: e for e in records.entries(stored, 'name')}
    for n, count in enumerate(records.COUNTS):
        assert getattr(rows['p'], count.inclusive) == 11 * (n + 1)
        assert getattr(rows['c'], count.inclusive) == 10 * (n + 1)
        if count.own is not None:
            assert getattr(rows['p'], count.own) == n + 1


def test_an_entry_field_has_a_default_but_its_key():
    entry = records.Entry('main', None, 1.0, 0.5, 2)
    assert entry.backward_time == 0.0 and entry.bytes == 0

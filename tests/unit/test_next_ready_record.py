"""``PartitionGroup.nextReadyRecord(now)`` (one pass over the queues when all have a head) picks
what ``readyToProcess(now)`` then ``nextRecord()`` pick: the smallest head timestamp, the first
queue's on ties, global queues' updates not moving stream time (T-12, T-13), and idling per
``max.task.idle.ms`` when a queue is empty (T-14), an empty global queue passed over when the
task does not idle on global partitions (``idleOnGlobal`` False: the continuous host)."""

import copy

from hypothesis import given, settings
from hypothesis import strategies as st

from kspark.runtime.record_queue import PartitionGroup


class Head:
    def __init__(self, timestamp):
        self.timestamp = timestamp


class Queue:
    """A RecordQueue's part PartitionGroup reads: head, lag, isGlobal, poll()."""

    def __init__(self, timestamps, lag, isGlobal):
        self.pending, self.lag, self.isGlobal = list(timestamps), lag, isGlobal
        self.head = Head(self.pending.pop(0)) if self.pending else None

    def poll(self):
        record, self.head = self.head, Head(self.pending.pop(0)) if self.pending else None
        return record


queues = st.lists(st.tuples(st.lists(st.integers(0, 5), max_size=4), st.sampled_from([0, 1, None]), st.booleans()),
                  min_size=1, max_size=4)


@settings(max_examples=600, deadline=None, derandomize=True)
@given(queues=queues, idleMs=st.sampled_from([-1, 0, 5]), clock=st.lists(st.integers(0, 4), min_size=1, max_size=12),
       idleOnGlobal=st.booleans())
def test_next_ready_record_is_ready_then_next(queues, idleMs, clock, idleOnGlobal):
    one = PartitionGroup([Queue(*q) for q in queues], idleMs)
    one.idleOnGlobal = idleOnGlobal
    other = copy.deepcopy(one)
    now = 0
    for step in clock:
        now += step
        record, queue = one.nextReadyRecord(now)
        expected, expectedQueue = other.nextRecord() if other.readyToProcess(now) else (None, None)
        assert (record is None) == (expected is None)
        if record is not None:
            assert record.timestamp == expected.timestamp
            assert one.queues.index(queue) == other.queues.index(expectedQueue)
        assert one.streamTime == other.streamTime
        assert one._idleStart == other._idleStart


def test_ties_go_to_the_first_queue_and_global_updates_keep_stream_time():
    group = PartitionGroup([Queue([3], 0, True), Queue([3, 4], 0, False), Queue([3], 0, False)], 0)
    picked = [group.nextReadyRecord(0) for _ in range(2)]
    assert [group.queues.index(q) for _, q in picked] == [0, 1]
    assert group.streamTime == 3
    assert PartitionGroup([Queue([9], 0, True)], 0).streamTime == -1

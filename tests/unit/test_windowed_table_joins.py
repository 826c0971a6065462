"""Joins of windowed KTables by their ``Windowed`` keys (issue 36 item 3): a windowed aggregation's
table is read by ``windowStore.fetch(key, window start)`` (time and sliding windows, Kafka
``KStreamWindowAggregateValueGetter``) or ``fetchSession(key, start, end)`` with the session end as
timestamp (``KTableSessionWindowValueGetter``); a windowed cogroup's table cannot be read (Kafka's
``KTablePassThrough`` getter needs a key-value store: the task fails to start). Every expected
record is Kafka 4.3.1's (conformance ``wtable.*.fixed``, ``wtable.cogroup.join``; the sliding join of
``KStreamSlidingWindowAggregateTest.testJoin`` is in test_sliding_windows.py)."""

from datetime import timedelta

import pytest

from kspark import (KeyValue, SessionWindows, Serdes, StreamsBuilder, StreamsException, TimeWindows)
from kspark.errors import InvalidStateStoreException
from kspark.testing import TopologyTestDriver

PROPS = {"default.key.serde": Serdes.String(), "default.value.serde": Serdes.String()}


def ms(v):
    return timedelta(milliseconds=v)


def orDash(v):
    return "-" if v is None else str(v)


def wk(w):
    return f"{w.key()}@{w.window().start()}/{w.window().end()}"


def run(build, records, cache):
    b = StreamsBuilder()
    build(b)
    with TopologyTestDriver(b.build(), {**PROPS, "statestore.cache.max.bytes": cache}) as d:
        inputs, out, steps = {}, d.createOutputTopic("out"), []
        for topic, k, v, ts in records:
            if topic not in inputs:
                inputs[topic] = d.createInputTopic(topic)
            inputs[topic].pipeInput(k, v, ts)
            steps.append([(r.key(), r.value(), r.timestamp()) for r in out.readRecordsToList()])
        return steps


@pytest.mark.parametrize("cache", [0, 10 << 20])
def test_session_tables_outer_join_sees_merged_away_sessions_with_their_old_value(cache):
    """A record that merges a session away forwards its tombstone with the old aggregate when a
    downstream outer join needs old values (``Change(null, sendOldValues ? oldAgg : null)``), so the
    join updates the result of the session that is gone (Kafka's ``KTableKTableOuterJoin``)."""
    def build(b):
        windows = SessionWindows.ofInactivityGapAndGrace(ms(500), ms(300))
        t1 = b.stream("in1").groupByKey().windowedBy(windows).count()
        t2 = b.stream("in2").groupByKey().windowedBy(windows).count()
        t1.outerJoin(t2, lambda a, c: orDash(a) + "/" + orDash(c)).toStream() \
            .map(lambda w, v: KeyValue.pair(wk(w), v)).to("out")

    records = [("in1", "a", "x", 100), ("in2", "a", "y", 100), ("in1", "a", "x", 400), ("in2", "b", "y", 500),
               ("in2", "a", "y", 450), ("in1", "b", "x", 2000)]
    assert run(build, records, cache) == [
        [("a@100/100", "1/-", 100)], [("a@100/100", "1/1", 100)],
        [("a@100/100", "-/1", 100), ("a@100/400", "2/-", 400)], [("b@500/500", "-/1", 500)],
        [("a@100/100", None, 100), ("a@100/450", "-/2", 450)], [("b@2000/2000", "1/-", 2000)]]


@pytest.mark.parametrize("cache", [0, 10 << 20])
def test_hopping_tables_left_join_per_window(cache):
    """Each hopping window of the left table is joined with the same window of the right one."""
    def build(b):
        windows = TimeWindows.ofSizeAndGrace(ms(1000), ms(500)).advanceBy(ms(500))
        t1 = b.stream("in1").groupByKey().windowedBy(windows).count()
        t2 = b.stream("in2").groupByKey().windowedBy(windows).reduce(lambda a, v: a + orDash(v))
        t1.leftJoin(t2, lambda c, r: str(c) + "/" + orDash(r)).toStream() \
            .map(lambda w, v: KeyValue.pair(wk(w), v)).to("out")

    records = [("in1", "a", "x", 100), ("in2", "a", "p", 200), ("in1", "a", "x", 700), ("in2", "b", "q", 900),
               ("in2", "a", None, 950), ("in1", "b", "x", 1200)]
    # the reducer's "p" + null: window a@500/1500 gets a null aggregate, which deletes it; cached,
    # the delete of a window the store never held is not forwarded
    nullStep = [("a@0/1000", "2/p-", 950)] + ([] if cache else [("a@500/1500", "1/-", 950)])
    assert run(build, records, cache) == [
        [("a@0/1000", "1/-", 100)], [("a@0/1000", "1/p", 200)],
        [("a@0/1000", "2/p", 700), ("a@500/1500", "1/-", 700)], [], nullStep,
        [("b@500/1500", "1/q", 1200), ("b@1000/2000", "1/-", 1200)]]


def test_a_windowed_cogroup_table_cannot_be_joined():
    b = StreamsBuilder()
    windows = TimeWindows.ofSizeWithNoGrace(ms(1000))
    cogrouped = b.stream("in1").groupByKey().cogroup(lambda k, v, a: a + v).windowedBy(windows).aggregate(lambda: "")
    counts = b.stream("in2").groupByKey().windowedBy(windows).count()
    cogrouped.join(counts, lambda a, c: a + "/" + str(c)).toStream().to("out")
    with pytest.raises(StreamsException, match="failed to initialize processor KTABLE-JOINOTHER-0000000009") as e:
        TopologyTestDriver(b.build(), PROPS)
    assert isinstance(e.value.__cause__, InvalidStateStoreException)
    assert str(e.value.__cause__) == (
        "KTable source state store must implement either TimestampedKeyValueStoreWithHeaders, or "
        "VersionedKeyValueStore. Got: org.apache.kafka.streams.processor.internals."
        "AbstractReadWriteDecorator$TimestampedWindowStoreReadWriteDecorator")

"""Interactive queries on Spark (issue 23): KafkaStreams.store(StoreQueryParameters) reads a
store (key-value, session, window: the tasks' persistent stores) as of the last committed
micro-batch while a continuous run goes on, and sees it advance as batches commit; Kafka's
exceptions for unknown stores, wrong types and a stopped instance."""

import time

import pytest

from kspark import (
    InvalidStateStoreException, KafkaStreams, Materialized, QueryableStoreTypes, Serdes, SessionWindow, SessionWindows,
    StoreQueryParameters, StreamsBuilder, TimeWindow, TimeWindows, UnknownStateStoreException, ValueAndTimestamp,
    Windowed,
)
from kspark.runtime.partitioner import partitionForKey
from kspark.topics import LocalTopics


def produce(topics, records):
    key, value = Serdes.String(), Serdes.JSON()
    topics.produce("clicks", [(key.serialize("clicks", k), value.serialize("clicks", v), ts) for k, v, ts in records],
                   partitioner=partitionForKey)


def waitFor(read, want, seconds=120):
    deadline = time.time() + seconds
    got = read()
    while got != want and time.time() < deadline:
        time.sleep(0.5)
        got = read()
    return got


def test_session_store_read_while_a_continuous_run_advances(spark, tmp_path):
    topics = LocalTopics(tmp_path / "topics")
    topics.createTopic("clicks", 2)
    b = StreamsBuilder()
    grouped = b.stream("clicks").groupByKey()
    grouped.windowedBy(SessionWindows.ofInactivityGapWithNoGrace(10_000)).count(
        materialized=Materialized.as_("sessions").withRetention(3_600_000))  # no session expires in this test
    grouped.count(materialized=Materialized.as_("totals"))
    grouped.windowedBy(TimeWindows.ofSizeWithNoGrace(10_000)).count(
        materialized=Materialized.as_("windows").withRetention(3_600_000))
    produce(topics, [("alice", 1, 1_000), ("bob", 1, 1_500), ("alice", 1, 2_000)])
    streams = KafkaStreams(b.build(), {
        "application.id": "interactive", "kspark.topics.dir": str(tmp_path / "topics"),
        "state.dir": str(tmp_path / "state"), "kspark.trigger": "500 milliseconds",
    }, spark=spark)
    with pytest.raises(InvalidStateStoreException, match=r"^KafkaStreams is not running\. State is CREATED\.$"):
        streams.store(StoreQueryParameters.fromNameAndType("sessions", QueryableStoreTypes.sessionStore()))
    streams.start()
    try:
        sessions = streams.store(StoreQueryParameters.fromNameAndType("sessions", QueryableStoreTypes.sessionStore()))
        totals = streams.store(StoreQueryParameters.fromNameAndType("totals", QueryableStoreTypes.keyValueStore()))

        def aliceSessions():
            return [(kv.key.window().start(), kv.key.window().end(), kv.value) for kv in sessions.fetch("alice")]

        assert waitFor(aliceSessions, [(1_000, 2_000, 2)]) == [(1_000, 2_000, 2)]
        assert sessions.fetchSession("bob", 1_500, 1_500) == 1
        produce(topics, [("alice", 1, 5_000), ("bob", 1, 20_000)])
        # the same handle sees the next committed batches: alice's session extended, bob's second one
        assert waitFor(aliceSessions, [(1_000, 5_000, 3)]) == [(1_000, 5_000, 3)]
        assert waitFor(lambda: totals.get("alice"), 3) == 3  # a KTable store's plain value (keyValueStore())
        assert all(q.isActive for q in streams.queries())  # read without stopping the queries
        assert [kv for kv in sessions.fetch("bob")] == [
            (Windowed("bob", SessionWindow(1_500, 1_500)), 1), (Windowed("bob", SessionWindow(20_000, 20_000)), 1)]

        windows = streams.store(StoreQueryParameters.fromNameAndType("windows", QueryableStoreTypes.windowStore()))
        assert windows.fetch("alice", 0) == 3 and windows.fetch("alice", 10_000) is None
        assert list(windows.fetch("bob", 0, 60_000)) == [(0, 1), (20_000, 1)]
        assert list(windows.backwardFetch("bob", 0, 60_000)) == [(20_000, 1), (0, 1)]
        assert list(windows.fetchAll(0, 10_000)) == [(Windowed("alice", TimeWindow(0, 10_000)), 3),
                                                     (Windowed("bob", TimeWindow(0, 10_000)), 1)]
        assert [kv.key for kv in windows.all()] == [Windowed("alice", TimeWindow(0, 10_000)),
                                                     Windowed("bob", TimeWindow(0, 10_000)),
                                                     Windowed("bob", TimeWindow(20_000, 30_000))]
        stampedWindows = streams.store(StoreQueryParameters.fromNameAndType(
            "windows", QueryableStoreTypes.timestampedWindowStore()))
        assert stampedWindows.fetch("alice", 0) == ValueAndTimestamp(3, 5_000)

        stamped = streams.store(StoreQueryParameters.fromNameAndType("totals", QueryableStoreTypes.timestampedKeyValueStore()))
        assert tuple(stamped.get("alice")) == (3, 5_000)
        alicePartition = partitionForKey(Serdes.String().serialize("clicks", "alice"), 2)
        own = streams.store(StoreQueryParameters.fromNameAndType("totals", QueryableStoreTypes.keyValueStore())
                            .withPartition(alicePartition))
        other = streams.store(StoreQueryParameters.fromNameAndType("totals", QueryableStoreTypes.keyValueStore())
                              .withPartition(1 - alicePartition))
        assert own.get("alice") == 3 and other.get("alice") is None

        with pytest.raises(UnknownStateStoreException,
                           match=r"^Cannot get state store nope because no such store is registered in the topology\.$"):
            streams.store(StoreQueryParameters.fromNameAndType("nope", QueryableStoreTypes.keyValueStore()))
        with pytest.raises(InvalidStateStoreException, match=r"^Cannot get state store totals because the queryable "
                           r"store type \[QueryableStoreTypes\.sessionStore\(\)\] does not accept the actual store type "
                           r"\[TimestampedKeyValueStore\]\.$"):
            streams.store(StoreQueryParameters.fromNameAndType("totals", QueryableStoreTypes.sessionStore()))
    finally:
        streams.close()
    with pytest.raises(InvalidStateStoreException, match=r"^KafkaStreams is not running\. State is NOT_RUNNING\.$"):
        streams.store(StoreQueryParameters.fromNameAndType("sessions", QueryableStoreTypes.sessionStore()))

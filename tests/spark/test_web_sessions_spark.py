"""Session windows with emit-on-close, and session and hopping windows with every update, on
Spark equal TopologyTestDriver's, on real logs (rules SA-4..SA-9, SA-11, T-18), and the session
store is readable from the checkpoint."""

import sys
from datetime import timedelta
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))

import web_sessions as ws  # noqa: E402


def test_apache_log_sessions_with_grace_are_the_same_on_spark(spark, tmp_path):
    requests = ws.apacheRequests()[:3_000]   # out of order by up to 59 s inside each minute
    expected = ws.onDriver(requests, timedelta(minutes=1))
    got = ws.onSpark(requests, timedelta(minutes=1), tmp_path, spark=spark)
    assert len(expected) > 500
    assert got == expected

    from kspark import KafkaStreams
    from kspark.testing import TopologyTestDriver

    with TopologyTestDriver(ws.buildTopology(timedelta(minutes=1))) as d:
        i = d.createInputTopic("requests")
        for host, ts in ws.flush(requests):
            i.pipeInput(host, None, ts)
        driverStore = list(d.getSessionStore("sessions").findSessionsByEnd(0, 1 << 50))
    streams = KafkaStreams(ws.buildTopology(timedelta(minutes=1)), {
        "application.id": "web-sessions", "kspark.topics.dir": str(tmp_path / "topics"),
        "state.dir": str(tmp_path / "state")}, spark=spark)
    sparkStore = streams.checkpointedStore("sessions")  # the session store, read from the checkpoint
    assert list(sparkStore.findSessionsByEnd(0, 1 << 50)) == driverStore


@pytest.mark.parametrize("windows", ["session", "hopping"])
def test_windowed_updates_and_tombstones_are_the_same_on_spark(spark, tmp_path, windows):
    """Emit on update with the cache off, as the fused record loops run it on both hosts: every
    session update and tombstone (SA-8, SA-9), or every hopping-window update with its aggregate
    timestamp (T-18) and late drops, equal the driver's."""
    from kspark import (KafkaStreams, Materialized, Produced, Serdes, SessionWindows, StreamsBuilder, TimeWindows,
                        WindowedSerdes)
    from kspark.runtime.partitioner import partitionForKey
    from kspark.testing import TopologyTestDriver
    from kspark.topics import LocalTopics

    if windows == "session":
        serde = WindowedSerdes.sessionWindowedSerdeFrom(Serdes.String())
        spec = SessionWindows.ofInactivityGapAndGrace(timedelta(minutes=5), timedelta(minutes=1))
    else:
        serde = WindowedSerdes.timeWindowedSerdeFrom(Serdes.String(), 600_000)
        spec = TimeWindows.ofSizeAndGrace(timedelta(minutes=10), timedelta(seconds=20)).advanceBy(timedelta(minutes=5))

    def topology():
        b = StreamsBuilder()
        (b.stream("requests").groupByKey().windowedBy(spec)
         .count(materialized=Materialized.as_("s")).toStream().to("updates", Produced.with_(serde, Serdes.Long())))
        return b.build()

    requests = ws.apacheRequests()[:2_000]
    with TopologyTestDriver(topology(), {"statestore.cache.max.bytes": 0}) as d:
        i = d.createInputTopic("requests")
        for host, ts in requests:
            i.pipeInput(host, None, ts)
        expected = [(r.key(), r.value(), r.timestamp()) for r in d.createOutputTopic("updates", serde, Serdes.Long()).readRecordsToList()]

    topics = LocalTopics(tmp_path / "topics")
    topics.createTopic("requests", 1)
    topics.createTopic("updates", 1)
    topics.produce("requests", [(h.encode(), None, ts) for h, ts in requests], partitioner=partitionForKey)
    streams = KafkaStreams(topology(), {"application.id": "session-updates", "kspark.topics.dir": str(tmp_path / "topics"),
                                        "state.dir": str(tmp_path / "state"), "statestore.cache.max.bytes": 0,
                                        "kspark.max.records.per.trigger": 700}, spark=spark)
    streams.start()
    streams.awaitTermination()
    streams.close()
    t = topics.read("updates", 0, 0, topics.endOffset("updates", 0))
    got = [(serde.deserialize("u", k), None if v is None else Serdes.Long().deserialize("u", v), ts)
           for k, v, ts in zip(t.column("key").to_pylist(), t.column("value").to_pylist(), t.column("timestamp").to_pylist())]
    if windows == "session":
        assert any(v is None for _, v, _ in expected)  # merges happened: tombstones are part of the comparison
    else:  # windows updated more than once, with the latest record's timestamp
        assert any(v > 1 for _, v, _ in expected)
    assert got == expected

"""Joins of windowed KTables on Spark (issue 36 item 3): a hopping-window left join and a
session outer join, their stores in the tasks' RocksDB, give per partition TopologyTestDriver's
records (the driver's are checked against Kafka 4.3.1 in tests/unit/test_windowed_table_joins.py
and the conformance catalogue's ``wtable.*``), in micro-batches of 40. Both tables come from one
topic (values "1..." and "2..."), so a task reads its records in offset order on both hosts."""

import random
from datetime import timedelta

import pytest

from kspark import (KafkaStreams, Produced, Serdes, SessionWindows, StreamsBuilder, TimeWindows, WindowedSerdes)
from kspark.runtime.partitioner import partitionForKey
from kspark.testing import TopologyTestDriver
from kspark.topics import LocalTopics

PARTITIONS = 2
CONFIG = {"default.key.serde": Serdes.String(), "default.value.serde": Serdes.String(), "statestore.cache.max.bytes": 0}
rng, ts = random.Random(36), 0
RECORDS = []
for i in range(160):
    ts += rng.choice([0, 40, 150, 400])
    RECORDS.append((rng.choice("abcd"), f"{rng.choice('12')}v{i}", max(0, ts - rng.choice([0, 0, 300]))))


def orDash(v):
    return "-" if v is None else str(v)


def tables(b, windows):
    s = b.stream("in")
    return (s.filter(lambda k, v: v[0] == "1").groupByKey().windowedBy(windows),
            s.filter(lambda k, v: v[0] == "2").groupByKey().windowedBy(windows))


def hopping(b):
    windows = TimeWindows.ofSizeAndGrace(timedelta(milliseconds=1000), timedelta(milliseconds=500)) \
        .advanceBy(timedelta(milliseconds=500))
    w1, w2 = tables(b, windows)
    t1, t2 = w1.count(), w2.reduce(lambda a, v: a + v)
    t1.leftJoin(t2, lambda c, r: f"{c}/{orDash(r)}").toStream().to(
        "out", Produced.with_(WindowedSerdes.timeWindowedSerdeFrom(Serdes.String(), 1000), Serdes.String()))


def sessions(b):
    windows = SessionWindows.ofInactivityGapAndGrace(timedelta(milliseconds=300), timedelta(milliseconds=200))
    w1, w2 = tables(b, windows)
    t1, t2 = w1.count(), w2.count()
    t1.outerJoin(t2, lambda a, c: f"{orDash(a)}/{orDash(c)}").toStream().to(
        "out", Produced.with_(WindowedSerdes.sessionWindowedSerdeFrom(Serdes.String()), Serdes.String()))


def topology(build):
    b = StreamsBuilder()
    build(b)
    return b.build()


@pytest.mark.parametrize("build,keySerde", [
    (hopping, WindowedSerdes.timeWindowedSerdeFrom(Serdes.String(), 1000)),
    (sessions, WindowedSerdes.sessionWindowedSerdeFrom(Serdes.String()))], ids=["hopping", "sessions"])
def test_windowed_table_join_on_spark_matches_the_driver_per_partition(spark, tmp_path, build, keySerde):
    key = Serdes.String()

    def row(k, v, t):
        return (k.key(), k.window().start(), k.window().end(), v, t)

    expected = []
    for p in range(PARTITIONS):
        with TopologyTestDriver(topology(build), CONFIG) as d:
            inp = d.createInputTopic("in")
            for k, v, t in RECORDS:
                if partitionForKey(key.serialize("in", k), PARTITIONS) == p:
                    inp.pipeInput(k, v, t)
            expected.append([row(r.key(), r.value(), r.timestamp())
                             for r in d.createOutputTopic("out", keySerde, Serdes.String()).readRecordsToList()])
    assert sum(map(len, expected)) > 60

    topics = LocalTopics(tmp_path / "topics")
    for t in ("in", "out"):
        topics.createTopic(t, PARTITIONS)
    topics.produce("in", [(key.serialize("in", k), key.serialize("in", v), t) for k, v, t in RECORDS],
                   partitioner=partitionForKey)
    props = {"application.id": "wjoin", "kspark.topics.dir": str(tmp_path / "topics"),
             "state.dir": str(tmp_path / "state"), "kspark.max.records.per.trigger": 40, **CONFIG}
    streams = KafkaStreams(topology(build), props, spark=spark)
    streams.start()
    streams.awaitTermination()
    streams.close()
    got = []
    for p in range(PARTITIONS):
        t = topics.read("out", p, 0, topics.endOffset("out", p))
        got.append([row(keySerde.deserialize("out", k), None if v is None else v.decode(), ts_) for k, v, ts_ in
                    zip(t.column("key").to_pylist(), t.column("value").to_pylist(), t.column("timestamp").to_pylist())])
    assert got == expected

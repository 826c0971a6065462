"""A windowed cogroup on Spark, one input re-keyed through a repartition topic, the record cache
on (shared by the two aggregations, kept in the checkpoint across micro-batches): every window's
final aggregate is TopologyTestDriver's (issue 20 item 3; RP-1). With the cache on, Spark forwards
once per micro-batch where the driver forwards per record, so the updates in between differ and
the last one per window is compared."""

import random

from kspark import (Consumed, KafkaStreams, KeyValue, Materialized, Produced, Serdes, StreamsBuilder, TimeWindows,
                    WindowedSerdes)
from kspark.runtime.partitioner import partitionForKey
from kspark.testing import TopologyTestDriver
from kspark.topics import LocalTopics

PARTITIONS = 2
CONFIG = {"default.key.serde": Serdes.String(), "default.value.serde": Serdes.String()}
rng = random.Random(5)
# clicks are keyed by user; views carry the user in the value and are re-keyed by it
CLICKS = [(rng.choice("uvwxyz"), f"c{i}", 10 * i) for i in range(120)]
VIEWS = [(f"page{i % 7}", rng.choice("uvwxyz"), 10 * i + 5) for i in range(120)]
SERDE = WindowedSerdes.timeWindowedSerdeFrom(Serdes.String(), 200)


def topology():
    b = StreamsBuilder()
    s = Consumed.with_(Serdes.String(), Serdes.String())
    clicks = b.stream("clicks", s).groupByKey()
    views = b.stream("views", s).map(lambda page, user: KeyValue(user, page)).groupByKey()
    (clicks.cogroup(lambda k, v, agg: agg + 1).cogroup(views, lambda k, v, agg: agg + 100)
     .windowedBy(TimeWindows.ofSizeAndGrace(200, 10_000))
     .aggregate(lambda: 0, Materialized.with_(Serdes.String(), Serdes.Long()))
     .toStream().to("activity", Produced.with_(SERDE, Serdes.Long())))
    return b.build()


def finals(records):
    """The last value per (user, window start), records in order."""
    out = {}
    for key, value in records:
        out[(key.key(), key.window().start())] = value
    return out


def test_windowed_cogroup_with_a_repartitioned_input_on_spark(spark, tmp_path):
    with TopologyTestDriver(topology(), CONFIG) as d:
        clicks, views = d.createInputTopic("clicks"), d.createInputTopic("views")
        for i in range(len(CLICKS)):
            clicks.pipeInput(*CLICKS[i])
            views.pipeInput(*VIEWS[i])
        expected = finals((r.key(), r.value()) for r in d.createOutputTopic("activity").readRecordsToList())
    assert len(expected) > 30 and max(expected.values()) > 100

    topics = LocalTopics(tmp_path / "topics")
    for name in ("clicks", "views", "activity"):
        topics.createTopic(name, PARTITIONS)
    key = Serdes.String()
    for name, rows in (("clicks", CLICKS), ("views", VIEWS)):
        topics.produce(name, [(key.serialize(name, k), key.serialize(name, v), t) for k, v, t in rows],
                       partitioner=partitionForKey)
    props = {"application.id": "cogroup", "kspark.topics.dir": str(tmp_path / "topics"),
             "state.dir": str(tmp_path / "state"), "kspark.max.records.per.trigger": 50, **CONFIG}
    streams = KafkaStreams(topology(), props, spark=spark)
    streams.start()
    streams.awaitTermination()
    streams.close()
    got = []
    for p in range(PARTITIONS):
        t = topics.read("activity", p, 0, topics.endOffset("activity", p))
        got += [(SERDE.deserialize("activity", k), Serdes.Long().deserialize("activity", v))
                for k, v in zip(t.column("key").to_pylist(), t.column("value").to_pylist())]
    assert finals(got) == expected

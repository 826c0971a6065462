"""groupBy + count on Spark: repartition by the new key, per-task stores, and the same final
counts and timestamps as TopologyTestDriver (rules RP-1, RP-2, T-17)."""

from kspark import KafkaStreams, Materialized, Produced, Serdes, StreamsBuilder
from kspark.runtime.partitioner import partitionForKey
from kspark.testing import TopologyTestDriver
from kspark.topics import LocalTopics

RECORDS = [(f"user-{i % 11}", ["alpha", "beta", "gamma", "delta"][i % 4] if i % 13 else None, 1_000 + i)
           for i in range(400)]


def topology():
    b = StreamsBuilder()
    (b.stream("clicks").groupBy(lambda k, v: v).count(materialized=Materialized.as_("per-page"))
     .toStream().to("counts", Produced.with_(Serdes.String(), Serdes.Long())))
    return b.build()


def test_group_by_count_on_spark_matches_the_driver(spark, tmp_path):
    with TopologyTestDriver(topology()) as d:
        i = d.createInputTopic("clicks")
        for k, v, ts in RECORDS:
            i.pipeInput(k, v, ts)
        expectedStore = list(d.getTimestampedKeyValueStore("per-page").all())
        expectedUpdates = sorted(d.createOutputTopic("counts").readKeyValuesToList())

    topics = LocalTopics(tmp_path / "topics")
    topics.createTopic("clicks", 3)
    topics.createTopic("counts", 2)
    key, value = Serdes.String(), Serdes.JSON()
    topics.produce("clicks", [(key.serialize("c", k), value.serialize("c", v), ts) for k, v, ts in RECORDS],
                   partitioner=partitionForKey)
    def runOnSpark(appId, cacheBytes):
        props = {"application.id": appId, "kspark.topics.dir": str(tmp_path / "topics"),
                 "state.dir": str(tmp_path / "state"), "kspark.max.records.per.trigger": 150,
                 "statestore.cache.max.bytes": cacheBytes}
        before = topics.endOffsets("counts")
        streams = KafkaStreams(topology(), props, spark=spark)
        streams.start()
        streams.awaitTermination()
        streams.close()
        updates = []
        for p in range(2):
            t = topics.read("counts", p, before[p], topics.endOffset("counts", p))
            updates += [(k.decode(), Serdes.Long().deserialize("c", v)) for k, v in
                        zip(t.column("key").to_pylist(), t.column("value").to_pylist())]
        return streams, sorted(updates)

    uncached, updates = runOnSpark("clicks", 0)
    assert list(uncached.checkpointedStore("per-page").all()) == expectedStore
    assert updates == expectedUpdates                                  # every update, as the driver
    assert topics.partitionsFor("clicks-per-page-repartition") == 3    # RP-4: max of the upstream sources

    cached, cachedUpdates = runOnSpark("clicks-cached", 10 * 1024 * 1024)   # Kafka's default cache
    assert list(cached.checkpointedStore("per-page").all()) == expectedStore
    assert set(cachedUpdates) < set(updates)                           # SA-10/E-5: one update per key and commit
    finals = {}
    for page, n in cachedUpdates:
        finals[page] = max(finals.get(page, 0), n)
    assert finals == {kv.key: kv.value.value for kv in expectedStore}

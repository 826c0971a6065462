"""merge() of two topics with different partition counts in one sub-topology on Spark: as in
Kafka, the sub-topology has max(2, 3) = 3 tasks, task 0_2 reads only the larger topic, and no
co-partitioning is required (merge is not key-dependent); the merged stream, re-keyed, is then
repartitioned for the aggregation (rules RP-1, RP-4)."""

from kspark import KafkaStreams, Produced, Serdes, StreamsBuilder
from kspark.runtime.partitioner import partitionForKey
from kspark.testing import TopologyTestDriver
from kspark.topics import LocalTopics

A = [(f"a{i}", f"k{i % 4}", 1_000 + i) for i in range(20)]
B = [(f"b{i}", f"k{i % 5}", 1_010 + i) for i in range(25)]


def topology():
    b = StreamsBuilder()
    merged = b.stream("a").merge(b.stream("b"))
    (merged.selectKey(lambda k, v: v).groupByKey().count().toStream()
     .to("counts", Produced.with_(Serdes.String(), Serdes.Long())))
    return b.build()


def test_merge_of_differently_partitioned_topics_on_spark(spark, tmp_path):
    with TopologyTestDriver(topology()) as d:
        ia, ib = d.createInputTopic("a"), d.createInputTopic("b")
        for k, v, ts in A:
            ia.pipeInput(k, v, ts)
        for k, v, ts in B:
            ib.pipeInput(k, v, ts)
        expected = d.createOutputTopic("counts").readKeyValuesToMap()
    assert expected == {"k0": 10, "k1": 10, "k2": 10, "k3": 10, "k4": 5}

    topics = LocalTopics(tmp_path / "topics")
    topics.createTopic("a", 2)
    topics.createTopic("b", 3)
    topics.createTopic("counts", 1)
    key, value = Serdes.String(), Serdes.JSON()
    for name, records in (("a", A), ("b", B)):
        topics.produce(name, [(key.serialize(name, k), value.serialize(name, v), ts) for k, v, ts in records],
                       partitioner=partitionForKey)
    props = {"application.id": "merge", "kspark.topics.dir": str(tmp_path / "topics"),
             "state.dir": str(tmp_path / "state")}
    streams = KafkaStreams(topology(), props, spark=spark)
    streams.start()
    streams.awaitTermination()
    streams.close()
    t = topics.read("counts", 0, 0, topics.endOffset("counts", 0))
    finals = {}
    for k, v in zip(t.column("key").to_pylist(), t.column("value").to_pylist()):
        finals[k.decode()] = Serdes.Long().deserialize("counts", v)
    assert finals == expected
    assert topics.partitionsFor("merge-KSTREAM-AGGREGATE-STATE-STORE-0000000004-repartition") == 3  # RP-4

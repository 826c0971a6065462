"""KTable groupBy + aggregate (adder and subtractor through a repartition topic carrying
ChangedSerializer bytes) joined with a source KTable, on Spark: the same updates, timestamps and
stores as TopologyTestDriver (rules RP-1, RP-4, RP-5, J-6, T-17, T-19)."""

from kspark import KafkaStreams, Materialized, Produced, Serdes, StreamsBuilder
from kspark.runtime.partitioner import partitionForKey
from kspark.testing import TopologyTestDriver
from kspark.topics import LocalTopics

USERS = [(f"u{i}", {"name": f"user-{i}", "tier": "gold" if i % 2 else "basic"}, 1_000 + i) for i in range(6)]
# orders are re-priced and cancelled (tombstones) so the subtractor runs, across and within users
ORDERS = [(f"o{i % 40}", None if i % 17 == 16 else {"user": f"u{(i * 7) % 6}", "amount": 1 + i % 9}, 2_000 + i)
          for i in range(120)]


def topology():
    b = StreamsBuilder()
    users = b.table("users")
    spend = (b.table("orders")
             .groupBy(lambda k, o: (o["user"], o["amount"]))
             .aggregate(lambda: 0, lambda k, v, agg: agg + v, lambda k, v, agg: agg - v,
                        materialized=Materialized.as_("spend-per-user")))
    (spend.join(users, lambda total, u: {"name": u["name"], "tier": u["tier"], "spend": total},
                materialized=Materialized.as_("spend-with-user"))
     .toStream().to("enriched", Produced.with_(Serdes.String(), Serdes.JSON())))
    return b.build()


def test_ktable_groupby_aggregate_and_table_join_on_spark_match_the_driver(spark, tmp_path):
    with TopologyTestDriver(topology(), {"statestore.cache.max.bytes": 0}) as d:
        users, orders = d.createInputTopic("users"), d.createInputTopic("orders")
        for k, v, ts in USERS:
            users.pipeInput(k, v, ts)
        for k, v, ts in ORDERS:
            orders.pipeInput(k, v, ts)
        expected = sorted((r.key(), r.timestamp(), str(r.value())) for r in d.createOutputTopic("enriched").readRecordsToList())
        expectedSpend = list(d.getTimestampedKeyValueStore("spend-per-user").all())
        expectedJoin = list(d.getTimestampedKeyValueStore("spend-with-user").all())
    assert len(expected) > 60

    topics = LocalTopics(tmp_path / "topics")
    # One orders partition: one upstream task writes the repartition topic, so each key's changes
    # arrive in the driver's order (with several upstream tasks Kafka, too, interleaves them
    # arbitrarily and only the final aggregates are fixed).
    topics.createTopic("orders", 1)
    for name in ("users", "enriched"):
        topics.createTopic(name, 3)
    key, value = Serdes.String(), Serdes.JSON()
    for name, rows in (("users", USERS), ("orders", ORDERS)):
        topics.produce(name, [(key.serialize(name, k), value.serialize(name, v), ts) for k, v, ts in rows],
                       partitioner=partitionForKey)
    props = {"application.id": "ktable-spark", "kspark.topics.dir": str(tmp_path / "topics"),
             "state.dir": str(tmp_path / "state"), "statestore.cache.max.bytes": 0}
    streams = KafkaStreams(topology(), props, spark=spark)
    streams.start()
    streams.awaitTermination()
    streams.close()

    got = []
    for p in range(3):
        t = topics.read("enriched", p, 0, topics.endOffset("enriched", p))
        got += [(k.decode(), ts, str(value.deserialize("enriched", v))) for k, v, ts in
                zip(t.column("key").to_pylist(), t.column("value").to_pylist(), t.column("timestamp").to_pylist())]
    assert sorted(got) == expected
    assert list(streams.checkpointedStore("spend-per-user").all()) == expectedSpend
    assert list(streams.checkpointedStore("spend-with-user").all()) == expectedJoin
    # RP-4 would give it 1 (its writer reads one partition); RP-5 co-partitions it with users
    assert topics.partitionsFor("ktable-spark-spend-per-user-repartition") == 3

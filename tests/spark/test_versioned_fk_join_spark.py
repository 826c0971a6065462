"""Issue 20's last two joins on Spark, with concrete records that TopologyTestDriver gives too:

- a stream-table left join over a versioned table with a grace period (J-2, J-5, E-4): each order
  is held until stream time passes it by the grace period, then joined with the price valid at its
  own timestamp, so a late price update (300 after 400) is still seen; the versioned store and the
  join buffer live in the task's checkpointed state across micro-batches;
- a foreign-key left join (KIP-213) with two partitions: subscriptions and responses go through
  their repartition topics to the partition of the foreign key and back.
"""

from datetime import timedelta

from kspark import Joined, KafkaStreams, Materialized, Serdes, StreamsBuilder, Stores
from kspark.runtime.partitioner import partitionForKey
from kspark.testing import TopologyTestDriver
from kspark.topics import LocalTopics

CONFIG = {"default.key.serde": Serdes.String(), "default.value.serde": Serdes.String()}
KEY = Serdes.String()

# (topic, key, value, timestamp) in the order a task processes them: the partition whose head
# record has the smaller timestamp first (T-12); prices have even timestamps, orders odd
VERSIONED_INPUT = [
    ("prices", "A", "10", 100), ("orders", "A", "o1", 151), ("prices", "B", "20", 200), ("orders", "A", "o2", 351),
    ("orders", "B", "o3", 251), ("prices", "A", "11", 400), ("prices", "A", "9", 300),  # out of order: 300 after 400
    ("orders", "A", "o4", 451), ("prices", "B", None, 600), ("orders", "B", "o5", 701), ("prices", "A", "12", 1000),
    ("orders", "A", "o6", 1201), ("orders", "C", "o7", 1301), ("orders", "D", "o8", 2001),
]
# joined once stream time (orders only) reaches timestamp + 500, in timestamp order; o2 sees the
# late price 9 (valid 300..400), o5 the tombstone at 600; o8 is still buffered at the end
VERSIONED_EXPECTED = [
    ("A", "o1:10", 151),       # evicted by o5@701
    ("B", "o3:20", 251),       # evicted by o6@1201, with o2, o4, o5
    ("A", "o2:9", 351),
    ("A", "o4:11", 451),
    ("B", "o5:None", 701),
    ("A", "o6:12", 1201),      # evicted by o8@2001, with o7
    ("C", "o7:None", 1301),
]


def versionedJoinTopology():
    b = StreamsBuilder()
    prices = b.table("prices", Materialized.as_(Stores.persistentVersionedKeyValueStore("prices-v", timedelta(seconds=10))))
    (b.stream("orders")
     .leftJoin(prices, lambda order, price: f"{order}:{price}",
               Joined.with_(Serdes.String(), Serdes.String(), Serdes.String()).withGracePeriod(timedelta(milliseconds=500)))
     .to("priced"))
    return b.build()


# items (item -> "stock:qty") joined with companies (stock -> name) by the stock in the item's value
COMPANIES = [("A", "Acme", 10), ("B", "Bolt", 20), ("A", "Acme Corp", 30), ("C", "Cog", 40), ("C", None, 50)]
ITEMS = [("i1", "A:5", 100), ("i2", "B:1", 110), ("i3", "C:2", 120), ("i4", "Z:9", 130), ("i5", "-:3", 140)]
FK_EXPECTED = sorted([
    ("i1", "5 of Acme Corp", 100), ("i2", "1 of Bolt", 110), ("i3", "2 of None", 120), ("i4", "9 of None", 130),
    ("i5", "3 of None", 140),  # a null foreign key: a left join still gives its result
])


def fkJoinTopology():
    b = StreamsBuilder()
    companies = b.table("companies")
    (b.table("items")
     .leftJoin(companies, lambda v: None if v.startswith("-") else v.split(":")[0],
               lambda item, company: f"{item.split(':')[1]} of {company}")
     .toStream().to("stocked"))
    return b.build()


def runOnSpark(spark, tmp_path, appId, topology, inputs, output, partitions, perTrigger):
    topics = LocalTopics(tmp_path / "topics")
    for name in [*inputs, output]:
        topics.createTopic(name, partitions)
    for name, rows in inputs.items():
        topics.produce(name, [(KEY.serialize(name, k), None if v is None else KEY.serialize(name, v), ts)
                              for k, v, ts in rows], partitioner=partitionForKey)
    props = {"application.id": appId, "kspark.topics.dir": str(tmp_path / "topics"),
             "state.dir": str(tmp_path / "state"), "kspark.max.records.per.trigger": perTrigger, **CONFIG}
    streams = KafkaStreams(topology, props, spark=spark)
    streams.start()
    streams.awaitTermination()
    streams.close()
    got = []
    for p in range(partitions):
        t = topics.read(output, p, 0, topics.endOffset(output, p))
        got += [(k.decode(), v.decode(), ts) for k, v, ts in
                zip(t.column("key").to_pylist(), t.column("value").to_pylist(), t.column("timestamp").to_pylist())]
    return got


def test_versioned_stream_table_join_with_grace_on_spark(spark, tmp_path):
    with TopologyTestDriver(versionedJoinTopology(), CONFIG) as d:
        inputs = {"prices": d.createInputTopic("prices"), "orders": d.createInputTopic("orders")}
        for topic, k, v, ts in VERSIONED_INPUT:
            inputs[topic].pipeInput(k, v, ts)
        driven = [(r.key(), r.value(), r.timestamp()) for r in d.createOutputTopic("priced").readRecordsToList()]
        store = d.getVersionedKeyValueStore("prices-v")
        assert (store.get("A", 350).value(), store.get("A", 350).timestamp()) == ("9", 300)
        assert store.get("B", 250).value() == "20" and store.get("B", 700) is None and store.get("B") is None
    assert driven == VERSIONED_EXPECTED

    rows = {t: [(k, v, ts) for topic, k, v, ts in VERSIONED_INPUT if topic == t] for t in ("prices", "orders")}
    got = runOnSpark(spark, tmp_path, "versioned-join", versionedJoinTopology(), rows, "priced", 1, 3)
    assert got == VERSIONED_EXPECTED


def test_foreign_key_left_join_on_spark(spark, tmp_path):
    with TopologyTestDriver(fkJoinTopology(), CONFIG) as d:
        companies, items = d.createInputTopic("companies"), d.createInputTopic("items")
        for k, v, ts in COMPANIES:
            companies.pipeInput(k, v, ts)
        for k, v, ts in ITEMS:
            items.pipeInput(k, v, ts)
        driven = sorted((r.key(), r.value(), r.timestamp()) for r in d.createOutputTopic("stocked").readRecordsToList())
    assert driven == FK_EXPECTED

    # the companies are all read in the first micro-batch, before any subscription reaches them
    got = runOnSpark(spark, tmp_path, "fk-join", fkJoinTopology(), {"companies": COMPANIES, "items": ITEMS},
                     "stocked", 2, 100)
    assert sorted(got) == FK_EXPECTED

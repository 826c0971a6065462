"""A groupBy on dict (and list) keys with the JSON serde on Spark: the repartition topic, the
per-task stores and the record cache key by the serialized key (issue 32), and the counts equal
TopologyTestDriver's (rules RP-1, DP-1, T-17, E-5).

Several records per micro-batch make one commit, so the cache holds updates of several keys at
once: keys equal in Python but other as bytes (``1`` / ``1.0`` / ``True``, dicts in another item
order) must stay apart, and a tuple and a list with the same bytes must be one key."""

from kspark import Grouped, KafkaStreams, Materialized, Produced, Serdes, StreamsBuilder
from kspark.runtime.partitioner import partitionForKey
from kspark.testing import TopologyTestDriver
from kspark.topics import LocalTopics

J, LONG, BYTES = Serdes.JSON(), Serdes.Long(), Serdes.ByteArray()
ODD_KEYS = [1, 1.0, True, {"a": 1, "b": 2}, {"b": 2, "a": 1}, [1, 2], (1, 2)]


def article(i: int):
    """A page view's grouping key: an article record, or one of the keys equal in Python but
    other as bytes (or the reverse)."""
    if i % 5 == 0:
        return ODD_KEYS[(i // 5) % len(ODD_KEYS)]
    return {"page": f"p{i % 7}", "industry": ["eng", "fin", "ops"][i % 3]}


RECORDS = [(f"user-{i % 11}", {"n": i}, 1_000 + i) for i in range(400)]


def topology():
    b = StreamsBuilder()
    (b.stream("views").groupBy(lambda k, v: article(v["n"]), Grouped.with_(J, J))
     .count(materialized=Materialized.as_("per-article")).toStream().to("counts", Produced.with_(J, LONG)))
    return b.build()


def test_dict_key_group_by_count_on_spark_matches_the_driver(spark, tmp_path):
    config = {"default.key.serde": Serdes.String(), "default.value.serde": J}
    with TopologyTestDriver(topology(), config) as d:
        i = d.createInputTopic("views")
        for k, v, ts in RECORDS:
            i.pipeInput(k, v, ts)
        expectedStore = sorted((J.serialize("c", kv.key), kv.value.value, kv.value.timestamp)
                               for kv in d.getTimestampedKeyValueStore("per-article").all())
        # (key, count) pairs: every count of a key is emitted once whatever the record order (an
        # update's timestamp depends on the order the partitions interleave, the final one not)
        expectedUpdates = sorted((r.key(), r.value())
                                 for r in d.createOutputTopic("counts", BYTES, LONG).readRecordsToList())
    # 1, 1.0 and true, the two dict orders are apart; (1, 2) and [1, 2] are one key
    counts = {k: n for k, n, _ in expectedStore}
    assert {b"1", b"1.0", b"true", b'{"a":1,"b":2}', b'{"b":2,"a":1}', b"[1,2]"} <= set(counts)
    assert counts[b"[1,2]"] == sum(1 for i in range(0, 400, 5) if (i // 5) % len(ODD_KEYS) >= 5)
    assert counts[b"1"] == sum(1 for i in range(0, 400, 5) if (i // 5) % len(ODD_KEYS) == 0)

    topics = LocalTopics(tmp_path / "topics")
    topics.createTopic("views", 3)
    topics.createTopic("counts", 2)
    key = Serdes.String()
    topics.produce("views", [(key.serialize("c", k), J.serialize("c", v), ts) for k, v, ts in RECORDS],
                   partitioner=partitionForKey)

    def runOnSpark(appId, cacheBytes):
        props = {"application.id": appId, "kspark.topics.dir": str(tmp_path / "topics"),
                 "state.dir": str(tmp_path / "state"), "kspark.max.records.per.trigger": 150,
                 "statestore.cache.max.bytes": cacheBytes, **config}
        before = topics.endOffsets("counts")
        streams = KafkaStreams(topology(), props, spark=spark)
        streams.start()
        streams.awaitTermination()
        streams.close()
        updates = []
        for p in range(2):
            t = topics.read("counts", p, before[p], topics.endOffset("counts", p))
            updates += [(k, LONG.deserialize("c", v)) for k, v in
                        zip(t.column("key").to_pylist(), t.column("value").to_pylist())]
        store = sorted((J.serialize("c", kv.key), kv.value.value, kv.value.timestamp)
                       for kv in streams.checkpointedStore("per-article").all())
        return store, sorted(updates)

    store, updates = runOnSpark("views", 0)
    assert store == expectedStore
    assert updates == expectedUpdates                                  # every update, as the driver

    cachedStore, cachedUpdates = runOnSpark("views-cached", 10 * 1024 * 1024)   # Kafka's default cache
    assert cachedStore == expectedStore
    assert set(cachedUpdates) < set(updates)                           # E-5: one update per key and commit
    finals = {}
    for k, n in cachedUpdates:
        finals[k] = max(finals.get(k, 0), n)
    assert finals == {k: n for k, n, _ in expectedStore}

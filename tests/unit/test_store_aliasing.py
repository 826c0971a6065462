"""Issue 19 item 3: stored values are not aliased by what is forwarded (Kafka's stores hold
bytes). Expected values checked on Kafka 4.3.1's TopologyTestDriver with the same topology
(a list aggregate changed in place by its aggregator and by a downstream mapValues)."""

import pytest

from kspark import Grouped, Materialized, Serdes, StreamsBuilder, ValueAndTimestamp
from kspark.testing import TopologyTestDriver


def append(key, value, agg):
    agg.append(value)  # the Java habit: change the aggregate in place and return it
    return agg


@pytest.mark.parametrize("cacheBytes, totals", [(10_000_000, [1, 2]), (0, [1, 1])])
def test_in_place_aggregates_and_downstream_mutation(cacheBytes, totals):
    # cached, the flush reads the old value from the store's bytes: the subtractor gets ["x"];
    # uncached, Kafka forwards the object the aggregator changed: old == new == ["x", "y"]
    b = StreamsBuilder()
    lists = b.stream("in").groupByKey().aggregate(list, append, Materialized.as_("lists"))
    (lists.groupBy(lambda k, v: ("total", v), Grouped.with_(Serdes.String(), Serdes.JSON()))
     .aggregate(lambda: 0, lambda k, v, agg: agg + len(v), lambda k, v, agg: agg - len(v)).toStream().to("total"))
    lists.toStream().mapValues(lambda v: v.append("MUTATED") or len(v)).to("sizes")
    with TopologyTestDriver(b.build(), {"statestore.cache.max.bytes": cacheBytes}) as d:
        d.createInputTopic("in").pipeKeyValueList([("a", "x"), ("a", "y")], 1, 1)
        assert d.createOutputTopic("total").readValuesToList() == totals
        assert d.createOutputTopic("sizes").readValuesToList() == [2, 3]
        assert d.getKeyValueStore("lists").get("a") == ["x", "y"]


def test_table_source_store_is_not_changed_through_the_forwarded_value():
    b = StreamsBuilder()
    b.table("t", Materialized.as_("t-store")).toStream().foreach(lambda k, v: v.update(seen=True))
    with TopologyTestDriver(b.build()) as d:
        d.createInputTopic("t").pipeInput("k", {"n": 1}, 5)
        assert d.getTimestampedKeyValueStore("t-store").get("k") == ValueAndTimestamp({"n": 1}, 5)


def test_processor_api_store_keeps_what_was_put():
    from kspark import Stores

    store = Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore("s")).build()
    value = {"items": [1]}
    store.put("k", value)
    value["items"].append(2)
    read = store.get("k")
    read["items"].append(3)
    assert store.get("k") == {"items": [1]} and store.get("k") is not store.get("k")


def test_serdes_read_stored_values_from_plain_bytes(monkeypatch):
    """A stored value reaches its serde as ``bytes``, as a record from a topic does (rule E-2:
    Kafka's stores hold serialized bytes, and its deserializers get a ``byte[]``). Before, it came as the store's bytes subclass, which orjson refuses: every
    read of a JSON value raised inside the JSON serde and took ``json.loads`` (≈ 2.4× the
    example's per-price task time in P2)."""
    import kspark.serialization as serialization
    from kspark import Stores
    from kspark.serialization import Serde

    seen = []

    class Recording(Serde):
        def serialize(self, topic, data):
            return serialization.Serdes.JSON().serialize(topic, data)

        def deserialize(self, topic, data):
            seen.append(type(data))
            return serialization.Serdes.JSON().deserialize(topic, data)

    store = Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore("s"), Serdes.String(), Recording()).build()
    store.put("k", {"per": 7.5})
    assert store.get("k") == {"per": 7.5}
    assert seen == [bytes]

    fallbacks = []
    realLoads = serialization.json.loads
    monkeypatch.setattr(serialization.json, "loads", lambda data: fallbacks.append(data) or realLoads(data))
    b = StreamsBuilder()
    table = b.table("valuations", Materialized.as_("in-force"))
    b.stream("prices").join(table, lambda p, v: p["close"] / v["eps"]).to("per")
    with TopologyTestDriver(b.build(), {"default.value.serde": Serdes.JSON()}) as d:
        d.createInputTopic("valuations").pipeInput("A", {"eps": 4.0}, 1)
        d.createInputTopic("prices").pipeInput("A", {"close": 30.0}, 2)
        assert d.createOutputTopic("per").readValuesToList() == [7.5]
    assert fallbacks == []  # orjson read the table's value (and the records)

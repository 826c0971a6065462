"""Processor API, stores and the seed's dedup pattern (rules E-1..E-3, T-15)."""

import pytest

from kspark import (
    ContextualProcessor, KeyValue, Record, Serdes, StreamsBuilder, StreamsException, Stores, Topology,
)
from kspark.testing import TestRecord, TopologyTestDriver


class Dedup(ContextualProcessor):
    """Forward a record only the first time its key is seen on its day (E-3)."""

    def init(self, context):
        super().init(context)
        self.store = context.getStateStore("seen")

    def process(self, record):
        day = record.value()["day"]
        if self.store.get(record.key()) != day:
            self.store.put(record.key(), day)
            self.context().forward(record.withValue(f"{record.key()}@{day}"))


def dedupTopology(storeNames=("seen",)):
    b = StreamsBuilder()
    b.addStateStore(Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore("seen"), Serdes.String(), Serdes.String()))
    b.stream("in").process(Dedup, *storeNames).to("out")
    return b.build()


def test_e3_dedup_forwards_once_per_key_and_day():
    with TopologyTestDriver(dedupTopology()) as d:
        i = d.createInputTopic("in")
        for k, day, ts in [("A", "d1", 1), ("A", "d1", 2), ("B", "d1", 3), ("A", "d2", 4), ("A", "d2", 5)]:
            i.pipeInput(k, {"day": day}, ts)
        assert d.createOutputTopic("out").readRecordsToList() == [
            TestRecord("A", "A@d1", 1), TestRecord("B", "B@d1", 3), TestRecord("A", "A@d2", 4)
        ]
        assert list(d.getKeyValueStore("seen").all()) == [KeyValue("A", "d2"), KeyValue("B", "d1")]


def test_e1_store_not_connected_fails_with_kafkas_message():
    with pytest.raises(StreamsException, match="^failed to initialize processor ") as failure:  # Kafka's ProcessorNode.init
        TopologyTestDriver(dedupTopology(storeNames=()))
    assert "has no access to StateStore seen as the store is not connected" in str(failure.value.__cause__)


def test_process_with_unknown_store_is_a_topology_error():
    b = StreamsBuilder()
    with pytest.raises(Exception, match="StateStore nope is not added yet"):
        b.stream("in").process(Dedup, "nope")


def test_e2_key_value_store_contract():
    store = Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore("s"), Serdes.String(), Serdes.Long()).build(
        Serdes.String(), Serdes.JSON())
    assert store.get("x") is None
    store.put("gamma", 3)
    store.put("alpha", 1)
    store.put("beta", 2)
    assert store.putIfAbsent("alpha", 9) == 1 and store.get("alpha") == 1
    assert store.putIfAbsent("delta", 4) is None
    assert list(store.all()) == [("alpha", 1), ("beta", 2), ("delta", 4), ("gamma", 3)]
    assert list(store.range("b", "e")) == [("beta", 2), ("delta", 4)]
    assert list(store.range("z", "a")) == []
    assert store.delete("beta") == 2 and store.delete("beta") is None
    store.put("gamma", None)
    assert [kv.key for kv in store.all()] == ["alpha", "delta"]
    assert store.approximateNumEntries() == 2 and store.persistent()
    with pytest.raises(TypeError):
        store.put(None, 1)


def test_store_orders_by_serialized_key_bytes():
    store = Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore("s"), Serdes.Integer(), Serdes.Long()).build(
        Serdes.String(), Serdes.JSON())
    for k in (256, -1, 1):
        store.put(k, k)
    assert [kv.key for kv in store.all()] == [1, 256, -1]  # big-endian two's complement bytes


class Stamp(ContextualProcessor):
    def process(self, record):
        meta = self.context().recordMetadata()
        self.context().forward(record.withValue([meta.topic(), meta.partition(), meta.offset(),
                                                 self.context().currentStreamTimeMs()]))
        self.context().forward(Record("extra", None, record.timestamp() + 1000))


def test_processor_context_metadata_stream_time_and_forward_of_new_records():
    t = Topology().addSource("src", "in").addProcessor("stamp", Stamp, "src").addSink("sink", "out", "stamp")
    with TopologyTestDriver(t) as d:
        i = d.createInputTopic("in")
        i.pipeInput("a", 1, 50)
        i.pipeInput("b", 1, 20)
        assert d.createOutputTopic("out").readRecordsToList() == [
            TestRecord("a", ["in", 0, 0, 50], 50), TestRecord("extra", None, 1050),
            TestRecord("b", ["in", 0, 1, 50], 20), TestRecord("extra", None, 1020),
        ]


def test_record_with_methods_return_copies():
    r = Record("k", 1, 5, (("h", b"x"),))
    assert r.withKey("j").key() == "j" and r.key() == "k"
    assert r.withValue(2).value() == 2 and r.withTimestamp(9).timestamp() == 9
    assert r.headers() == (("h", b"x"),)
    with pytest.raises(ValueError):
        Record("k", 1, -1)

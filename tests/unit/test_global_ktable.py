"""GlobalKTable and KStream-GlobalKTable joins on TopologyTestDriver (rules J-7, J-8, TTD-4, E-1),
ported from Kafka's KStreamGlobalKTableJoinTest, KStreamGlobalKTableLeftJoinTest and
RelaxedNullKeyRequirementJoinTest, plus seed 004's race (a valuation update 60 ms before a price)."""

import pytest

from kspark import (
    Consumed, ContextualProcessor, GlobalKTable, Materialized, Named, Produced, Serdes, StreamsBuilder, Stores,
    StreamsException, TopologyException, ValueAndTimestamp,
)
from kspark.runtime.metrics import MetricName
from kspark.testing import TestRecord, TopologyTestDriver

EXPECTED_KEYS = [0, 1, 2, 3]


def keyMapper(key, value):
    tokens = value.split(",")  # "X0,FKey0": the second token is the global table key
    return tokens[1] if len(tokens) > 1 else None


class Harness:
    """Kafka's test fixture: stream <Integer, String>, global table <String, String>."""

    def __init__(self, leftJoin: bool):
        self.builder = StreamsBuilder()
        stream = self.builder.stream("streamTopic", Consumed.with_(Serdes.Integer(), Serdes.String()))
        self.table = self.builder.globalTable("globalTableTopic", Consumed.with_(Serdes.String(), Serdes.String()))
        joiner = lambda v1, v2: f"{v1}+{v2}"  # MockValueJoiner.TOSTRING_JOINER  # noqa: E731
        joined = stream.leftJoin(self.table, keyMapper, joiner) if leftJoin else stream.join(self.table, keyMapper, joiner)
        joined.to("out", Produced.with_(Serdes.Integer(), Serdes.String()))
        self.driver = TopologyTestDriver(self.builder.build())
        self.stream = self.driver.createInputTopic("streamTopic", Serdes.Integer(), Serdes.String(), 0, 1)
        self.global_ = self.driver.createInputTopic("globalTableTopic", Serdes.String(), Serdes.String())
        self.out = self.driver.createOutputTopic("out", Serdes.Integer(), Serdes.String())

    def pushToStream(self, n, prefix, includeForeignKey, includeNullKey=False):
        for i in range(n):
            value = f"{prefix}{EXPECTED_KEYS[i]}" + (f",FKey{EXPECTED_KEYS[i]}" if includeForeignKey else "")
            self.stream.pipeInput(None if includeNullKey and i == 0 else EXPECTED_KEYS[i], value)

    def pushToGlobalTable(self, n, prefix):
        for i in range(n):
            self.global_.pipeInput(f"FKey{EXPECTED_KEYS[i]}", f"{prefix}{EXPECTED_KEYS[i]}")

    def pushNullValueToGlobalTable(self, n):
        for i in range(n):
            self.global_.pipeInput(f"FKey{EXPECTED_KEYS[i]}", None)

    def results(self):
        return [(r.key(), r.value(), r.timestamp()) for r in self.out.readRecordsToList()]


@pytest.fixture(params=[False, True], ids=["join", "leftJoin"])
def h(request):
    harness = Harness(request.param)
    harness.leftJoin = request.param
    yield harness
    harness.driver.close()


def test_global_table_join_needs_no_copartitioning_J7(h):
    assert h.builder.build().copartitionGroups() == []


def test_no_join_with_empty_global_table_and_global_updates_emit_nothing_J7(h):
    h.pushToStream(2, "X", True)
    assert h.results() == ([(0, "X0,FKey0+None", 0), (1, "X1,FKey1+None", 1)] if h.leftJoin else [])
    h.pushToGlobalTable(2, "Y")
    assert h.results() == []
    h.pushToStream(4, "X", True)
    expected = [(0, "X0,FKey0+Y0", 2), (1, "X1,FKey1+Y1", 3)]
    if h.leftJoin:
        expected += [(2, "X2,FKey2+None", 4), (3, "X3,FKey3+None", 5)]
    assert h.results() == expected
    h.pushToGlobalTable(4, "YY")
    assert h.results() == []
    h.pushToStream(4, "X", True)
    assert h.results() == [(0, "X0,FKey0+YY0", 6), (1, "X1,FKey1+YY1", 7), (2, "X2,FKey2+YY2", 8), (3, "X3,FKey3+YY3", 9)]


def test_global_tombstone_clears_the_entry_J7(h):
    h.pushToGlobalTable(4, "Y")
    h.pushToStream(4, "X", True)
    assert h.results() == [(0, "X0,FKey0+Y0", 0), (1, "X1,FKey1+Y1", 1), (2, "X2,FKey2+Y2", 2), (3, "X3,FKey3+Y3", 3)]
    h.pushNullValueToGlobalTable(2)
    h.pushToStream(4, "XX", True)
    expected = [(2, "XX2,FKey2+Y2", 6), (3, "XX3,FKey3+Y3", 7)]
    if h.leftJoin:
        expected = [(0, "XX0,FKey0+None", 4), (1, "XX1,FKey1+None", 5)] + expected
    assert h.results() == expected


def test_null_key_mapper_value_is_dropped_and_counted_in_both_joins_J8(h):
    h.pushToGlobalTable(4, "Y")
    h.pushToStream(4, "XXX", False)
    assert h.results() == []
    dropped = MetricName("dropped-records-total", "stream-task-metrics", (("thread-id", "main"), ("task-id", "0_0")))
    assert h.driver.metrics()[dropped] == 4


def test_null_stream_key_with_mapped_key_joins_in_both_joins_J8(h):
    h.pushToGlobalTable(2, "Y")
    h.pushToStream(4, "X", True, includeNullKey=True)
    expected = [(None, "X0,FKey0+Y0", 0), (1, "X1,FKey1+Y1", 1)]
    if h.leftJoin:
        expected += [(2, "X2,FKey2+None", 2), (3, "X3,FKey3+None", 3)]
    assert h.results() == expected


def test_relaxed_left_join_null_key_and_null_mapped_key_joins_with_null_J8():
    # RelaxedNullKeyRequirementJoinTest.testRelaxedLeftStreamGlobalTableJoin
    builder = StreamsBuilder()
    glob = builder.globalTable("global")
    builder.stream("left").leftJoin(glob, lambda k, v: None, lambda v1, v2: f"{v1}|{v2}").to("out")
    with TopologyTestDriver(builder.build(), {"default.key.serde": Serdes.String(), "default.value.serde": Serdes.String()}) as d:
        d.createInputTopic("left").pipeInput(None, "leftValue", 1)
        assert [(kv.key, kv.value) for kv in d.createOutputTopic("out").readKeyValuesToList()] == [(None, "leftValue|None")]


def test_inner_join_null_key_and_null_mapped_key_and_null_value_are_dropped_J8():
    builder = StreamsBuilder()
    glob = builder.globalTable("global")
    s = builder.stream("left")
    s.join(glob, lambda k, v: None, lambda v1, v2: "inner").to("out")
    s.leftJoin(glob, lambda k, v: "g", lambda k, v1, v2: f"left:{k}:{v1}:{v2}").to("out")
    with TopologyTestDriver(builder.build(), {"default.key.serde": Serdes.String(), "default.value.serde": Serdes.String()}) as d:
        d.createInputTopic("global").pipeInput("g", "G", 0)
        left = d.createInputTopic("left")
        left.pipeInput(None, "v", 5)   # inner: mapped key null -> dropped; left: joins "G"
        left.pipeInput("k", None, 6)   # null value: dropped by both
        assert d.createOutputTopic("out").readRecordsToList() == [TestRecord(None, "left:None:v:G", 5)]


def test_global_store_is_updated_synchronously_and_readable_TTD4():
    builder = StreamsBuilder()
    builder.globalTable("g", Consumed.with_(Serdes.String(), Serdes.Long()), Materialized.as_("g-store"))
    with TopologyTestDriver(builder.build()) as d:
        topic = d.createInputTopic("g")
        topic.pipeInput("a", 1, 10)
        topic.pipeInput("b", 2, 20)
        topic.pipeInput("a", 3, 5)  # out of order: still applied (latest offset wins), as KTableSource
        topic.pipeInput("b", None, 30)
        assert list(d.getKeyValueStore("g-store").all()) == [("a", 3)]
        assert d.getTimestampedKeyValueStore("g-store").get("a") == ValueAndTimestamp(3, 5)


def test_naming_and_describe_as_kafka():
    builder = StreamsBuilder()
    table = builder.globalTable("weather-stations")
    assert isinstance(table, GlobalKTable) and table.queryableStoreName() is None
    (builder.stream("temperature.values")
     .leftJoin(table, lambda k, v: k, lambda v1, v2: v1)
     .to("out"))
    # expected string from Kafka's TopologyDescription.toString (InternalTopologyBuilder): "Topologies:\n "
    # then "  " before each part, so only the first one is indented by three spaces
    assert str(builder.build().describe()) == """Topologies:
   Sub-topology: 0 for global store (will not generate tasks)
    Source: KSTREAM-SOURCE-0000000001 (topics: [weather-stations])
      --> KTABLE-SOURCE-0000000002
    Processor: KTABLE-SOURCE-0000000002 (stores: [weather-stations-STATE-STORE-0000000000])
      --> none
      <-- KSTREAM-SOURCE-0000000001
  Sub-topology: 1
    Source: KSTREAM-SOURCE-0000000003 (topics: [temperature.values])
      --> KSTREAM-LEFTJOIN-0000000004
    Processor: KSTREAM-LEFTJOIN-0000000004 (stores: [])
      --> KSTREAM-SINK-0000000005
      <-- KSTREAM-SOURCE-0000000003
    Sink: KSTREAM-SINK-0000000005 (topic: out)
      <-- KSTREAM-LEFTJOIN-0000000004

"""
    topology = builder.build()
    assert [s.id for s in topology.subtopologies()] == [1]
    assert topology.globalTopics() == ["weather-stations"] and topology.sourceTopics() == ["temperature.values"]


def test_named_global_table_and_inner_join_use_kafka_names():
    builder = StreamsBuilder()
    table = builder.globalTable("INPUT_TOPIC", Consumed.with_(Serdes.String(), Serdes.String()).withName("master"),
                                Materialized.as_("myStore"))
    assert table.queryableStoreName() == "myStore"
    builder.stream("s").join(table, lambda k, v: k, lambda v1, v2: v1, named=Named.as_("enrich")).to("out")
    text = str(builder.build().describe())
    # node groups are numbered in the order their first node was added (KAFKA-9020): the global first
    assert text.startswith("Topologies:\n   Sub-topology: 0 for global store (will not generate tasks)\n"
                           "    Source: master-source (topics: [INPUT_TOPIC])\n      --> master\n"
                           "    Processor: master (stores: [myStore])\n      --> none\n      <-- master-source\n"
                           "  Sub-topology: 1\n")
    assert "Processor: master (stores: [myStore])" in text and "Processor: enrich (stores: [])" in text
    unnamed = StreamsBuilder()
    g = unnamed.globalTable("t", Materialized.as_("myStore"))
    unnamed.stream("s").join(g, lambda k, v: k, lambda v1, v2: v1).to("out")
    # Kafka names the inner GlobalKTable join KSTREAM-LEFTJOIN too (KStreamImpl.globalTableJoin)
    assert "Processor: KSTREAM-LEFTJOIN-0000000003 (stores: [])" in str(unnamed.build().describe())


def test_add_global_store_processor_api_and_read_only_access_without_connection_E1():
    class Update(ContextualProcessor):
        def init(self, context):
            super().init(context)
            self.store = context.getStateStore("rates")

        def process(self, record):
            self.store.put(record.key(), record.value())

    class Convert(ContextualProcessor):
        def init(self, context):
            super().init(context)
            self.rates = context.getStateStore("rates")  # global: no connection needed

        def process(self, record):
            if record.key() == "write":
                self.rates.put("EUR", 0)  # E-1: read-only to this processor -> processing error
            self.context().forward(record.withValue(record.value() * (self.rates.get(record.key()) or 0)))

    builder = StreamsBuilder()
    builder.addGlobalStore(Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore("rates"), Serdes.String(), Serdes.Long()),
                           "rates-topic", Consumed.with_(Serdes.String(), Serdes.Long()), Update)
    builder.stream("amounts", Consumed.with_(Serdes.String(), Serdes.Long())).process(Convert).to("out")
    topology = builder.build()
    assert str(topology.describe()).startswith(
        "Topologies:\n   Sub-topology: 0 for global store (will not generate tasks)\n"
        "    Source: KSTREAM-SOURCE-0000000000 (topics: [rates-topic])\n      --> KTABLE-SOURCE-0000000001\n"
        "    Processor: KTABLE-SOURCE-0000000001 (stores: [rates])\n")
    with TopologyTestDriver(topology, {"default.key.serde": Serdes.String(), "default.value.serde": Serdes.Long()}) as d:
        d.createInputTopic("rates-topic").pipeInput("EUR", 3, 0)
        d.createInputTopic("amounts").pipeInput("EUR", 5, 1)
        assert d.createOutputTopic("out").readValuesToList() == [15]
        with pytest.raises(StreamsException, match="processor=KSTREAM-PROCESSOR-0000000003.*NotImplementedError: Global store is read only"):
            d.createInputTopic("amounts").pipeInput("write", 1, 2)
        assert d.getKeyValueStore("rates").get("EUR") == 3


def test_global_table_topic_cannot_also_be_a_stream_source():
    builder = StreamsBuilder()
    builder.globalTable("t")
    with pytest.raises(TopologyException, match="Topic t has already been registered by another source."):
        builder.stream("t")


# ---------------------------------------------------------------------- seed 004's race
def valuationPriceTopology():
    """Seed 004's fix: prices (5 partitions) joined with the valuation master as a GlobalKTable."""
    builder = StreamsBuilder()
    valuations = builder.globalTable("valuations", Consumed.with_(Serdes.String(), Serdes.JSON()),
                                     Materialized.as_("valuations-global"))
    (builder.stream("prices", Consumed.with_(Serdes.String(), Serdes.JSON()))
     .join(valuations, lambda code, price: price["code"],
           lambda code, price, v: {"code": code, "close": price["close"], "per_basis": v["per"]})
     .to("joined"))
    return builder.build()


T = 1_773_000_000_000  # a valuation update at T; the price 60 ms later


def test_seed_004_price_60ms_after_valuation_update_sees_the_update_on_the_driver():
    with TopologyTestDriver(valuationPriceTopology(), {"default.key.serde": Serdes.String(),
                                                       "default.value.serde": Serdes.JSON()}) as d:
        vals, prices = d.createInputTopic("valuations"), d.createInputTopic("prices")
        out = d.createOutputTopic("joined")
        vals.pipeInput("005930", {"per": 30.0}, T - 86_400_000)
        prices.pipeInput("005930", {"code": "005930", "close": 100}, T - 1)
        vals.pipeInput("005930", {"per": 28.0}, T)
        prices.pipeInput("005930", {"code": "005930", "close": 101}, T + 60)
        assert out.readRecordsToList() == [
            TestRecord("005930", {"code": "005930", "close": 100, "per_basis": 30.0}, T - 1),
            TestRecord("005930", {"code": "005930", "close": 101, "per_basis": 28.0}, T + 60),
        ]


def test_task_interleaves_global_partitions_by_timestamp_waits_for_a_lagging_one_and_survives_restore():
    """The Spark host's engine path (kspark.runtime.global_state): a task with a 2-partition
    global topic applies global records in timestamp order with its stream records (T-12),
    waits while a global partition has known lag (T-14), keeps stream time to its own records,
    and resumes from its checkpoint with the same global store and queues."""
    from kspark.config import StreamsConfig
    from kspark.runtime.record_queue import RawRecord
    from kspark.runtime.stream_task import StreamTask
    from kspark.topology import Subtopology

    topology = valuationPriceTopology()
    [sub], [glob] = topology.subtopologies(), topology.globalSubtopologies()
    merged = Subtopology(sub.id, sub.nodes + glob.nodes, sub.stores + glob.stores)
    config = StreamsConfig({"application.id": "app"})
    counts = {"valuations": 2, "prices": 1, "joined": 1}

    def newTask():
        task = StreamTask("1_0", merged, topology.storeBuilders(), config, 0, lambda t: t, counts.__getitem__)
        task.initialize()
        return task

    def raw(topic, offset, ts, key, value):
        return RawRecord(offset, ts, Serdes.String().serialize(topic, key), Serdes.JSON().serialize(topic, value))

    task = newTask()
    task.addRecords("prices", [raw("prices", 0, T - 1, "005930", {"code": "005930", "close": 100}),
                               raw("prices", 1, T + 60, "005930", {"code": "005930", "close": 101})], lag=0)
    task.addRecords("valuations@0", [raw("valuations", 0, T - 86_400_000, "005930", {"per": 30.0})], lag=0)
    task.addRecords("valuations@1", [], lag=1)  # the update at T exists but was not fetched yet
    assert task.processAll(0) == 0  # the task waits for global partition 1, as for any input (T-14)
    assert task.partitionGroup.streamTime == -1 and task.drainProduced() == []

    restored = newTask()
    restored.restore(task.checkpoint())
    restored.addRecords("valuations@1", [raw("valuations", 0, T, "005930", {"per": 28.0})], lag=0)
    restored.addRecords("valuations@0", [], lag=0)  # the Spark host's marker rows: caught up
    restored.addRecords("prices", [], lag=0)
    assert restored.processAll(0) == 4  # v1 (T-1d), price T-1, v2 (T), price T+60
    assert [(r.timestamp, Serdes.JSON().deserialize("joined", r.value)["per_basis"]) for r in restored.drainProduced()] == [
        (T - 1, 30.0), (T + 60, 28.0)]
    assert restored.partitionGroup.streamTime == T + 60
    assert restored.stores["valuations-global"].get("005930") == ValueAndTimestamp({"per": 28.0}, T)


def test_global_join_after_key_change_does_not_repartition_but_keeps_the_flag_J7():
    builder = StreamsBuilder()
    glob = builder.globalTable("g")
    joined = builder.stream("s").selectKey(lambda k, v: v).join(glob, lambda k, v: k, lambda v1, v2: v2)
    assert builder.build().internalTopics() == {}  # J-7: no repartition before a global-table join
    joined.groupByKey().count()  # KStreamImpl.globalTableJoin passes repartitionRequired on
    assert list(builder.build().internalTopics()) == ["KSTREAM-AGGREGATE-STATE-STORE-0000000006-repartition"]


@pytest.mark.parametrize("idleOnGlobal, processed", [(True, 0), (False, 2)])
def test_an_empty_global_partition_idles_the_task_unless_the_host_reads_it_live(idleOnGlobal, processed):
    """max.task.idle.ms 5000 (rule T-14) with a caught-up, empty global partition: the micro-batch
    host's task idles on it as on any input (``idleOnGlobal``, the default); the continuous host's
    (``kspark.spark._stream_threads``) does not, as Kafka's tasks never wait for a global topic."""
    from kspark.config import StreamsConfig
    from kspark.runtime.record_queue import RawRecord
    from kspark.runtime.stream_task import StreamTask
    from kspark.topology import Subtopology

    topology = valuationPriceTopology()
    [sub], [glob] = topology.subtopologies(), topology.globalSubtopologies()
    merged = Subtopology(sub.id, sub.nodes + glob.nodes, sub.stores + glob.stores)
    config = StreamsConfig({"application.id": "app", "max.task.idle.ms": 5000})
    counts = {"valuations": 1, "prices": 1, "joined": 1}
    task = StreamTask("1_0", merged, topology.storeBuilders(), config, 0, lambda t: t, counts.__getitem__)
    task.initialize()
    task.partitionGroup.idleOnGlobal = idleOnGlobal
    price = lambda offset, close: RawRecord(offset, T + offset, Serdes.String().serialize("prices", "005930"),  # noqa: E731
                                            Serdes.JSON().serialize("prices", {"code": "005930", "close": close}))
    task.addRecords("prices", [price(0, 100), price(1, 101)], lag=0)
    task.addRecords("valuations@0", [], lag=0)
    assert task.processAll(0) == processed
    assert task.processAll(5_000) == 2 - processed  # max.task.idle.ms passed: the rest is processed

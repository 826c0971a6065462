"""FINDINGS F11 and F12: generated names and error texts as Kafka 4.3.1 has them (each expected
text was printed by Kafka 4.3.1's TopologyTestDriver or StreamsBuilder for the same topology)."""

import pytest

from kspark import (Consumed, ContextualProcessor, Grouped, KeyValue, Named, Produced, Serdes, Stores,
                    StreamsBuilder, StreamsException, Suppressed, TopologyException)
from kspark.errors import LogAndContinueProcessingExceptionHandler
from kspark.serialization import SerializationException
from kspark.testing import TopologyTestDriver

CCE_VALUE = ("ClassCastException while producing data to topic out. The value serializer "
             "org.apache.kafka.common.serialization.StringSerializer is not compatible to the actual value type: {}. "
             "Change the default value serde in StreamConfig or provide the correct value serde via method parameters "
             "(for example if using the DSL, `#to(String topic, Produced<K, V> produced)` with "
             "`Produced.valueSerde(WindowedSerdes.timeWindowedSerdeFrom(String.class))`).")
STRINGS = {"default.key.serde": Serdes.String(), "default.value.serde": Serdes.String()}


def failure(builder, config=None, pipes=(("k", "abc", 5),)):
    with TopologyTestDriver(builder.build(), {**STRINGS, **(config or {})}) as d:
        topic = d.createInputTopic("in")
        with pytest.raises(Exception) as caught:
            for key, value, ts in pipes:
                topic.pipeInput(key, value, ts)
    chain, e = [], caught.value
    while e is not None:
        chain.append((type(e).__name__, str(e)))
        e = e.__cause__
    return chain


def test_a_sinks_wrong_value_type_is_kafkas_class_cast_text_handled_at_the_forwarding_node():
    b = StreamsBuilder()
    b.stream("in").mapValues(lambda v: len(v)).to("out")
    chain = failure(b)
    assert chain[0][0] == "StreamsException"
    assert chain[0][1].startswith("Exception caught in process. taskId=0_0, processor=KSTREAM-MAPVALUES-0000000001, "
                                  "topic=in, partition=0, offset=0")
    assert chain[1] == ("StreamsException", CCE_VALUE.format("java.lang.Long"))
    assert chain[2][1].startswith("class java.lang.Long cannot be cast to class java.lang.String (java.lang.Long and "
                                  "java.lang.String are in module java.base of loader 'bootstrap')")


def test_a_sink_right_after_its_source_raises_the_class_cast_text_unwrapped():
    b = StreamsBuilder()
    b.stream("in", Consumed.with_(Serdes.String(), Serdes.ByteArray())).to("out", Produced.valueSerde(Serdes.String()))
    chain = failure(b, pipes=(("k", b"abc", 5),))
    assert chain[0] == ("StreamsException", CCE_VALUE.format("[B"))


def test_a_sinks_error_goes_through_the_processing_handler_of_the_node_that_forwarded():
    """Kafka 4.3: a sink has no handler of its own; with LogAndContinue the record is dropped at the
    forwarding node and a sibling branch still gets it."""
    b = StreamsBuilder(STRINGS)
    s = b.stream("in")
    s.mapValues(lambda v: len(v)).to("out")
    s.to("out2")
    with TopologyTestDriver(b.build(), {**STRINGS,
                                        "processing.exception.handler": LogAndContinueProcessingExceptionHandler}) as d:
        d.createInputTopic("in").pipeKeyValueList([("k", "abc"), ("k", "de")], 5, 1)
        assert d.createOutputTopic("out2").readKeyValuesToList() == [("k", "abc"), ("k", "de")]
        dropped = {m.tag("processor-node-id"): v for m, v in d.metrics().items() if m.group == "kspark-dropped-records"}
    assert dropped == {"KSTREAM-MAPVALUES-0000000001": 2}


def test_a_serializer_error_is_kafkas_unable_to_serialize_text():
    def fail(topic, data):
        raise SerializationException("nope " + data)

    b = StreamsBuilder()
    b.stream("in").mapValues(lambda v: v).to("out", Produced.valueSerde(Serdes.serdeFrom(fail, lambda t, d: d)))
    chain = failure(b)
    assert chain[1] == ("StreamsException", "Unable to serialize record. ProducerRecord(topic=[out], partition=[null], "
                                            "timestamp=[5]")
    assert chain[2] == ("SerializationException", "nope abc")


def test_e1_a_store_not_connected_fails_init_with_kafkas_texts():
    class UsesCounts(ContextualProcessor):
        def init(self, context):
            context.getStateStore("counts")

        def process(self, record):
            pass

    b = StreamsBuilder()
    b.addStateStore(Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore("counts"), Serdes.String(), Serdes.Long()))
    b.stream("in").process(UsesCounts)
    with pytest.raises(StreamsException, match="^failed to initialize processor KSTREAM-PROCESSOR-0000000001$") as e:
        TopologyTestDriver(b.build())
    assert str(e.value.__cause__).startswith(
        "Processor KSTREAM-PROCESSOR-0000000001 has no access to StateStore counts as the store is not connected to "
        "the processor. If you add stores manually via '.addStateStore()' make sure to connect the added store to the "
        "processor by providing the processor name to '.addStateStore()' or connect them via "
        "'.connectProcessorAndStateStores()'. DSL users need to provide the store name to '.process()', "
        "'.processValues()', or '.transformValues()' to connect the store to the corresponding operator")


@pytest.mark.parametrize("table, chain", [
    (lambda b: b.table("in"), "root->KTABLE-SOURCE-0000000002"),
    (lambda b: b.table("in").filter(lambda k, v: True).mapValues(lambda v: v),
     "root->KTABLE-SOURCE-0000000002->KTABLE-FILTER-0000000003->KTABLE-MAPVALUES-0000000004"),
    (lambda b: b.stream("in").groupByKey().count(), "root->KSTREAM-SOURCE-0000000000->KSTREAM-AGGREGATE-0000000002"),
    (lambda b: b.stream("in").groupBy(lambda k, v: v).count(),
     "root->KSTREAM-SOURCE-0000000000->KSTREAM-KEY-SELECT-0000000001->KSTREAM-SOURCE-0000000006->"
     "KSTREAM-AGGREGATE-0000000003"),
    (lambda b: b.stream("in").groupBy(lambda k, v: v, Grouped.as_("g")).count(),
     "root->KSTREAM-SOURCE-0000000000->g->g-repartition-source->KSTREAM-AGGREGATE-0000000003"),
    (lambda b: b.table("in").join(b.table("in2"), lambda x, y: x + y), "root->KTABLE-SOURCE-0000000002->KTABLE-MERGE-0000000006"),
    (lambda b: b.stream("in").toTable(), "root->KSTREAM-SOURCE-0000000000->KSTREAM-TOTABLE-0000000001"),
    (lambda b: b.table("in").groupBy(lambda k, v: KeyValue.pair(v, v)).count(),
     "root->KTABLE-SOURCE-0000000002->KTABLE-SELECT-0000000003->KSTREAM-SOURCE-0000000006->KTABLE-AGGREGATE-0000000007"),
])
def test_su1_until_window_closes_on_a_table_names_kafkas_graph_chain(table, chain):
    b = StreamsBuilder()
    with pytest.raises(TopologyException, match=r"^Invalid topology: Window close time is only defined for windowed "
                                                r"computations\. Got \[" + chain.replace("-", r"\-") + r"\]\.$"):
        table(b).suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded()))


def test_table_source_named_by_consumed_is_kafka_43s():
    b = StreamsBuilder()
    b.table("in", Consumed.as_("src")).toStream().to("out")
    text = str(b.build().describe())
    assert "Source: src-source (topics: [in])\n      --> src\n" in text
    assert "Sink: KSTREAM-SINK-0000000004 (topic: out)" in text


def test_a_named_global_table_join_still_burns_an_index():
    b = StreamsBuilder()
    g = b.globalTable("g")
    b.stream("in").join(g, lambda k, v: k, lambda v, gv: v, Named.as_("gj")).to("out")
    assert "Sink: KSTREAM-SINK-0000000005 (topic: out)" in str(b.build().describe())

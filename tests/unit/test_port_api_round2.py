"""Issue 36 items 6-10: the API that ported Kafka Streams tests use (serde halves, closing serdes,
Java's 5-argument ConsumerRecord, bootstrap.servers checked late, the driver's clock at now)."""

import struct
import time
from datetime import timedelta
from pathlib import Path

import pytest

from _java_programs import runJavaProgram

from kspark import (ConfigException, Consumed, ConsumerRecord, Deserializer, FailOnInvalidTimestamp, KeyValue,
                    Produced, PunctuationType, Record, Serde, Serdes, Serializer, StreamsBuilder, StreamsConfig,
                    TimestampExtractor, TimeWindows, Topology, WindowedSerdes)
from kspark.errors import StreamsException
from kspark.testing import TopologyTestDriver

BUILT_IN = {
    "String": ("a", b"a"), "Long": (7, struct.pack(">q", 7)), "Integer": (7, struct.pack(">i", 7)),
    "Short": (7, struct.pack(">h", 7)), "Double": (1.5, struct.pack(">d", 1.5)), "Float": (1.5, struct.pack(">f", 1.5)),
    "Boolean": (True, b"\x01"), "ByteArray": (b"\x00\x01", b"\x00\x01"), "Bytes": (b"x", b"x"),
    "ByteBuffer": (b"x", b"x"), "Void": (None, None), "JSON": ({"a": 1}, b'{"a":1}'), "UUID": (
        __import__("uuid").UUID(int=1), b"00000000-0000-0000-0000-000000000001"),
}


# ------------------------------------------------------------------ item 6: serializer()/deserializer()
@pytest.mark.parametrize("name", sorted(BUILT_IN))
def test_every_built_in_serde_has_kafkas_serializer_and_deserializer(name):
    value, encoded = BUILT_IN[name]
    serde = getattr(Serdes, name)()
    serializer, deserializer = serde.serializer(), serde.deserializer()
    assert isinstance(serializer, Serializer) and isinstance(deserializer, Deserializer)
    assert serializer.serialize("t", value) == encoded
    assert serializer.serialize("t", (), value) == encoded  # serialize(topic, headers, data)
    assert deserializer.deserialize("t", encoded) == value
    assert deserializer.deserialize("t", (), encoded) == value
    assert serializer.serialize("t", None) is None and deserializer.deserialize("t", None) is None


def test_windowed_list_and_serde_from_serdes_have_both_halves():
    windowed = WindowedSerdes.timeWindowedSerdeFrom(str, 10)
    key = windowed.deserializer().deserialize("t", b"k" + struct.pack(">q", 20))
    assert (key.key(), key.window().start(), key.window().end()) == ("k", 20, 30)
    assert windowed.serializer().serialize("t", key) == b"k" + struct.pack(">q", 20)
    session = WindowedSerdes.sessionWindowedSerdeFrom(str)
    assert session.serializer().serialize("t", session.deserializer().deserialize("t", b"k" + struct.pack(">qq", 9, 3))) \
        == b"k" + struct.pack(">qq", 9, 3)
    listed = Serdes.ListSerde(list, Serdes.Integer())
    assert listed.deserializer().deserialize("t", listed.serializer().serialize("t", [1, None, 3])) == [1, None, 3]

    class Upper(Serializer):
        def serialize(self, topic, data, *headersForm):
            return data.upper().encode()

    class Lower(Deserializer):
        def deserialize(self, topic, data, *headersForm):
            return data.decode().lower()

    upper, lower = Upper(), Lower()
    serde = Serdes.serdeFrom(upper, lower)
    assert serde.serializer() is upper and serde.deserializer() is lower  # Kafka's WrapperSerde hands them back
    assert serde.serialize("t", "Ab") == b"AB" and serde.deserialize("t", b"Ab") == "ab"
    functions = Serdes.serdeFrom(lambda t, d: d.encode(), lambda t, b: b.decode())
    assert functions.serializer().serialize("t", "x") == b"x" and functions.deserializer().deserialize("t", b"x") == "x"


def test_a_user_serde_subclass_gets_both_halves():
    class Reversed(Serde):
        def serialize(self, topic, data):
            return data[::-1].encode()

        def deserialize(self, topic, data):
            return data.decode()[::-1]

    assert Reversed().serializer().serialize("t", "ab") == b"ba"
    assert Reversed().deserializer().deserialize("t", b"ba") == "ab"


def test_a_ported_tutorial_test_pipes_through_serializers_and_reads_through_deserializers():
    # the shape of Confluent's tutorial tests: Serdes.String().serializer() into createInputTopic,
    # a windowed count read with WindowedSerdes...deserializer() and Serdes.Long().deserializer()
    builder = StreamsBuilder()
    (builder.stream("in", Consumed.with_(Serdes.String(), Serdes.String())).groupByKey()
     .windowedBy(TimeWindows.ofSizeWithNoGrace(10)).count().toStream()
     .to("out", Produced.with_(WindowedSerdes.timeWindowedSerdeFrom(str, 10), Serdes.Long())))
    stringSerde = Serdes.String()
    with TopologyTestDriver(builder.build()) as driver:
        inputTopic = driver.createInputTopic("in", stringSerde.serializer(), stringSerde.serializer())
        outputTopic = driver.createOutputTopic("out", WindowedSerdes.timeWindowedSerdeFrom(str, 10).deserializer(),
                                               Serdes.Long().deserializer())
        inputTopic.pipeInput("a", "x", 1)
        inputTopic.pipeInput("a", "y", 5)
        inputTopic.pipeInput("b", "z", 12)
        got = [(r.key().key(), r.key().window().start(), r.value(), r.timestamp()) for r in outputTopic.readRecordsToList()]
    assert got == [("a", 0, 1, 1), ("a", 0, 2, 5), ("b", 10, 1, 12)]


# ------------------------------------------------------------------ item 7: close() and with
def test_serdes_serializers_and_deserializers_close_and_work_as_context_managers():
    with Serdes.String() as serde:  # Java: try (Serde<String> serde = Serdes.String()) {...}
        with serde.serializer() as serializer, serde.deserializer() as deserializer:
            assert deserializer.deserialize("t", serializer.serialize("t", "é")) == "é"
    serde.close()
    serde.close()  # idempotent, as Kafka's
    assert serde.serialize("t", "a") == b"a"  # Kafka's built-in serdes keep working after close()

    closed = []

    class Tracked(Serializer):
        def serialize(self, topic, data, *headersForm):
            return data

        def close(self):
            closed.append("serializer")

    class TrackedDeserializer(Deserializer):
        def deserialize(self, topic, data, *headersForm):
            return data

        def close(self):
            closed.append("deserializer")

    with Serdes.serdeFrom(Tracked(), TrackedDeserializer()):  # Kafka's WrapperSerde.close closes both
        pass
    assert closed == ["serializer", "deserializer"]
    with pytest.raises(ZeroDivisionError):  # `with` closes on an exception too and lets it through
        with Tracked():
            1 / 0
    assert closed[-1] == "serializer"


# ------------------------------------------------------------------ item 8: ConsumerRecord(topic, partition, offset, key, value)
def test_consumer_record_has_javas_five_argument_constructor():
    # Kafka: ConsumerRecord(topic, partition, offset, key, value) has NO_TIMESTAMP (-1) and no headers
    record = ConsumerRecord("topic", 1, 42, "k", {"ts": 99})
    assert (record.topic(), record.partition(), record.offset(), record.key(), record.value(), record.timestamp(),
            record.headers()) == ("topic", 1, 42, "k", {"ts": 99}, -1, ())
    keywords = ConsumerRecord("topic", 1, 42, key="k", value=None)
    assert (keywords.key(), keywords.value(), keywords.timestamp()) == ("k", None, -1)
    six = ConsumerRecord("topic", 1, 42, 7, "k", "v")  # kspark's own form, with a timestamp
    assert (six.timestamp(), six.key(), six.value()) == (7, "k", "v")
    with pytest.raises(TypeError, match=r"\(topic, partition, offset, key, value\)"):
        ConsumerRecord("topic", 1, 42, "k")


def test_extractors_get_records_built_as_tests_build_them():
    class PayloadTime(TimestampExtractor):
        def extract(self, record, partitionTime):
            return record.value()["ts"]

    assert PayloadTime().extract(ConsumerRecord("topic", 0, 0, "k", {"ts": 1234}), -1) == 1234
    # T-4: the default extractor fails on the record's NO_TIMESTAMP (-1), as Kafka's does
    with pytest.raises(StreamsException, match="has invalid \\(negative\\) timestamp"):
        FailOnInvalidTimestamp().extract(ConsumerRecord("topic", 0, 0, "k", "v"), -1)


# ------------------------------------------------------------------ items 9 and 10, against Kafka Streams 4.3
JAVA_SOURCES = Path(__file__).parent / "java" / "portapi"


@pytest.fixture(scope="module")
def kafka() -> dict:
    """``java/portapi/PortApi.java`` run on Kafka Streams 4.3's jars (~3 s; compiled once per
    source version): what StreamsConfig, TopologyTestDriver and KafkaStreams do with odd
    bootstrap.servers values, and the driver's clocks when the test gives none."""
    return runJavaProgram(JAVA_SOURCES, "portapi.PortApi")


def _upper():
    builder = StreamsBuilder()
    builder.stream("in", Consumed.with_(Serdes.String(), Serdes.String())).mapValues(str.upper).to(
        "out", Produced.with_(Serdes.String(), Serdes.String()))
    return builder.build()


@pytest.mark.parametrize("servers", ["dummy config", "dummy:1234", "localhost:99999"])
def test_bootstrap_servers_is_checked_when_a_client_is_created_not_before(kafka, servers, tmp_path):
    """Kafka's StreamsConfig and TopologyTestDriver take any address; its clients check them when
    KafkaStreams is constructed (KafkaException "Failed to create new KafkaAdminClient" caused by
    the ConfigException; kspark raises the ConfigException with the same text)."""
    props = {"application.id": "portapi", "bootstrap.servers": servers}
    assert kafka[f"streamsConfig {servers}"] == "ok"
    StreamsConfig(props)
    assert kafka[f"driver {servers}"] == "[KeyValue(k, V)]"
    with TopologyTestDriver(_upper(), props) as driver:
        driver.createInputTopic("in", Serdes.String().serializer(), Serdes.String().serializer()).pipeInput("k", "v", 5)
        assert driver.createOutputTopic("out").readKeyValuesToList() == [KeyValue("k", "V")]
    if servers == "dummy:1234":
        return  # a valid address: Kafka's client would go on to connect
    expected = kafka[f"kafkaStreams {servers}"]
    assert (expected["class"], expected["rootClass"]) == ("KafkaException", "ConfigException")
    from kspark import KafkaStreams

    with pytest.raises(ConfigException) as raised:
        KafkaStreams(_upper(), {**props, "state.dir": str(tmp_path)})
    assert str(raised.value) == expected["rootMessage"]
    assert str(raised.value) == {"dummy config": "Invalid url in bootstrap.servers: dummy config",
                                 "localhost:99999": "Invalid port in bootstrap.servers: localhost:99999"}[servers]


def test_an_empty_bootstrap_servers_entry_fails_as_in_kafka(kafka):
    expected = kafka["streamsConfig a:1,,b:2"]
    with pytest.raises(ConfigException) as raised:
        StreamsConfig({"bootstrap.servers": "a:1,,b:2"})
    assert (type(raised.value).__name__, str(raised.value)) == (expected["class"], expected["message"])


class _Clocks:
    """Forwards (key, currentSystemTimeMs) and, on a 1 s wall-clock punctuation, ("tick", ts):
    PortApi.java's clocks() processor."""

    def init(self, context):
        self.context = context
        context.schedule(timedelta(seconds=1), PunctuationType.WALL_CLOCK_TIME,
                         lambda ts: context.forward(Record("tick", str(ts), ts)))

    def process(self, record):
        self.context.forward(record.withValue(str(self.context.currentSystemTimeMs())))

    def close(self):
        pass


def test_the_drivers_wall_clock_and_an_input_topics_start_time_default_to_now(kafka):
    """TTD-3: without initialWallClockTime the mock wall clock starts at the machine's clock when
    the driver is created; createInputTopic without a start time stamps records with the
    machine's clock when the topic is created (Kafka's Instant.now()), not with 0. Kafka's own
    run shows the same relations: the record's time and the processor's wall clock between the
    instants before the driver and after the topic were created, the first wall-clock
    punctuation exactly one interval after the driver's start."""
    java = kafka["clock"]
    [(_, javaNow, javaTs), (tick, javaTick, javaTickTs)] = java["records"]
    assert java["before"] <= javaNow <= java["created"] and java["before"] <= javaTs <= java["created"]
    assert (tick, javaTick - javaNow, javaTickTs) == ("tick", 1000, javaTick)

    topology = Topology().addSource("src", "in").addProcessor("clock", _Clocks, "src").addSink("sink", "out", "clock")
    before = time.time_ns() // 1_000_000
    with TopologyTestDriver(topology, {"default.key.serde": Serdes.String(), "default.value.serde": Serdes.String()}) as d:
        inp = d.createInputTopic("in", Serdes.String().serializer(), Serdes.String().serializer())
        out = d.createOutputTopic("out", Serdes.String().deserializer(), Serdes.String().deserializer())
        created = time.time_ns() // 1_000_000
        inp.pipeInput("k", "v")
        d.advanceWallClockTime(timedelta(seconds=1))
        [record, tick] = out.readRecordsToList()
    now = int(record.value())
    assert before <= now <= created and before <= record.timestamp() <= created
    assert (tick.key(), int(tick.value()) - now, tick.timestamp()) == ("tick", 1000, int(tick.value()))


def test_an_explicit_start_still_wins():
    topology = Topology().addSource("src", "in").addProcessor("clock", _Clocks, "src").addSink("sink", "out", "clock")
    config = {"default.key.serde": Serdes.String(), "default.value.serde": Serdes.String()}
    with TopologyTestDriver(topology, config, initialWallClockTime=5_000) as d:
        d.createInputTopic("in", None, None, 70, 3).pipeValueList(["a", "b"])
        d.advanceWallClockTime(1000)
        assert [(r.key(), r.value(), r.timestamp()) for r in d.createOutputTopic("out").readRecordsToList()] == [
            (None, "5000", 70), (None, "5000", 73), ("tick", "6000", 6000)]


def test_a_global_store_passed_to_a_processor_is_refused_as_kafka_refuses_it(kafka):
    """Rule E-1: any processor reads a global store without being connected to it, and naming one
    is a ``TopologyException`` with Kafka's text (``InternalTopologyBuilder
    .connectProcessorAndStateStore``; PortApi.java gets it from Kafka Streams itself, at
    ``build()``; kspark raises it at the ``process()`` call), through ``KStream.process`` and
    ``Topology.connectProcessorAndStateStores`` alike."""
    from kspark import Consumed, Serdes, StreamsBuilder, TopologyException
    from kspark.state import Stores

    class Noop:
        def init(self, context):
            pass

        def process(self, record):
            pass

        def close(self):
            pass

    text = ("Invalid topology: Global StateStore seen can be used by a Processor without being specified; it should "
            "not be explicitly passed.")
    assert kafka["globalStorePassed"]["class"] == "TopologyException"
    assert kafka["globalStorePassed"]["message"] == text
    b = StreamsBuilder()
    b.addGlobalStore(Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore("seen"), Serdes.String(), Serdes.Long())
                     .withLoggingDisabled(), "global", Consumed.with_(Serdes.String(), Serdes.String()), Noop)
    stream = b.stream("orders")
    with pytest.raises(TopologyException) as e:
        stream.process(Noop, "seen")
    assert str(e.value) == text
    stream.process(Noop)  # without naming it: accepted
    topology = b.build()
    topology.addProcessor("own", Noop, "KSTREAM-SOURCE-0000000002")
    with pytest.raises(TopologyException) as e:
        topology.connectProcessorAndStateStores("own", "seen")
    assert str(e.value) == text

"""FINDINGS F3, F10, F16: Kafka's static factories (``Produced.keySerde``, ``Grouped.valueSerde``,
``Repartitioned.numberOfPartitions``, ...), ``WindowedSerdes.*From`` taking the key's class, and
Kafka 4.3's ``SessionWindows`` validation (a zero gap is valid). Expected bytes and texts are
Kafka 4.3.1's."""

import struct
from datetime import timedelta

import pytest

from kspark import (Grouped, Joined, KeyValue, Produced, Repartitioned, Serdes, SessionWindows, StreamsBuilder,
                    TimeWindows, WindowedSerdes)
from kspark.dsl import Windowed
from kspark.dsl._windows import TimeWindow
from kspark.testing import TopologyTestDriver

RAW = (Serdes.ByteArray(), Serdes.ByteArray())


def run(builder, pipes, topic="out"):
    with TopologyTestDriver(builder.build()) as d:
        t = d.createInputTopic("in")
        for key, value, ts in pipes:
            t.pipeInput(key, value, ts)
        return [(r.key(), r.value(), r.timestamp()) for r in d.createOutputTopic(topic, *RAW).readRecordsToList()]


def test_static_factories_start_from_the_defaults():
    assert Produced.keySerde(Serdes.Long()).keySerde == Serdes.Long()
    assert Produced.valueSerde(Serdes.Long()).keySerde is None
    assert Grouped.keySerde(Serdes.Long()).keySerde == Serdes.Long()
    assert Grouped.valueSerde(Serdes.Long()).valueSerde == Serdes.Long()
    assert Repartitioned.numberOfPartitions(3).numberOfPartitions == 3
    assert Joined.otherValueSerde(Serdes.Long()).otherValueSerde == Serdes.Long()
    # a static factory's result is configured further with the withX forms
    assert Produced.keySerde(Serdes.String()).withValueSerde(Serdes.Long()).valueSerde == Serdes.Long()
    with pytest.raises(TypeError, match="keySerde must be Serde"):
        Produced.keySerde("not a serde")


def test_produced_value_serde_factory_writes_with_that_serde():
    b = StreamsBuilder()
    b.stream("in").mapValues(lambda v: len(v)).to("out", Produced.valueSerde(Serdes.Long()))
    assert run(b, [("a", "xyz", 5)]) == [(b"a", struct.pack(">q", 3), 5)]


def test_grouped_value_serde_factory_serializes_the_repartition_topic():
    b = StreamsBuilder({"default.value.serde": Serdes.String()})
    b.stream("in").groupBy(lambda k, v: v, Grouped.valueSerde(Serdes.String())).count().toStream().to("out")
    assert run(b, [("a", "x", 1), ("b", "x", 2)]) == [(b"x", struct.pack(">q", 1), 1), (b"x", struct.pack(">q", 2), 2)]


def test_repartitioned_number_of_partitions_factory_names_and_sizes_the_topic():
    b = StreamsBuilder()
    b.stream("in").repartition(Repartitioned.numberOfPartitions(1).withName("rp")).to("out")
    assert b.build().internalTopics() == {"rp-repartition": 1}  # RP-3: an enforced count
    assert run(b, [("a", "x", 1)]) == [(b"a", b'"x"', 1)]


def test_windowed_serdes_take_the_key_class_as_kafka_does():
    # Kafka: WindowedSerdes.timeWindowedSerdeFrom(String.class, 1000) writes key bytes + 8-byte start
    serde = WindowedSerdes.timeWindowedSerdeFrom(str, 1000)
    key = Windowed("d", TimeWindow(0, 1000))
    assert serde.serialize("t", key) == bytes.fromhex("640000000000000000")
    assert serde.deserialize("t", bytes.fromhex("640000000000000000")) == key
    session = WindowedSerdes.sessionWindowedSerdeFrom(int)  # Kafka: Long.class
    assert session.inner == Serdes.Long()
    assert WindowedSerdes.timeWindowedSerdeFrom(Serdes.String(), 1000).inner == Serdes.String()
    with pytest.raises(ValueError, match="^Unknown class for built-in serializer. Supported types are"):
        WindowedSerdes.timeWindowedSerdeFrom(dict, 1000)
    with pytest.raises(TypeError, match="must be a class"):
        WindowedSerdes.sessionWindowedSerdeFrom("String")


def test_windowed_count_written_with_a_windowed_serde_from_a_class():
    b = StreamsBuilder()
    (b.stream("in").groupByKey().windowedBy(TimeWindows.ofSizeWithNoGrace(1000)).count().toStream()
     .to("out", Produced.with_(WindowedSerdes.timeWindowedSerdeFrom(str, 1000), Serdes.Long())))
    assert run(b, [("d", "x", 999)]) == [(bytes.fromhex("640000000000000000"), struct.pack(">q", 1), 999)]


def test_sw3_kafka43_accepts_a_zero_gap_and_refuses_negative_ones():
    with pytest.raises(ValueError, match=r"^Gap time cannot be negative\.$"):
        SessionWindows.ofInactivityGapWithNoGrace(timedelta(milliseconds=-1))
    with pytest.raises(ValueError, match=r"^Grace period cannot be negative\.$"):
        SessionWindows.ofInactivityGapAndGrace(1, -1)
    # gap 0: a session holds the records of one timestamp (SA-5 with gap 0); Kafka 4.3.1's output
    b = StreamsBuilder()
    (b.stream("in").groupByKey().windowedBy(SessionWindows.ofInactivityGapWithNoGrace(timedelta(0))).count()
     .toStream().map(lambda w, c: KeyValue.pair(f"{w.key()}@{w.window().start()}/{w.window().end()}", c))
     .to("out", Produced.valueSerde(Serdes.Long())))
    assert run(b, [("a", "x", 5), ("a", "y", 5), ("a", "z", 6)]) == [
        (b"a@5/5", struct.pack(">q", 1), 5), (b"a@5/5", struct.pack(">q", 2), 5), (b"a@6/6", struct.pack(">q", 1), 6)]


def test_time_windows_advance_error_is_kafkas_text():
    with pytest.raises(ValueError, match=r"^Window advancement interval should be more than zero and less than window "
                                         r"duration which is 10 ms, but given advancement interval is: 11 ms$"):
        TimeWindows.ofSizeWithNoGrace(10).advanceBy(11)

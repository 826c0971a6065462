"""FINDINGS F8, F13, F14: the suppress buffer as Kafka 4.3.1 keeps it: its own store in
``describe()``, old values turned on upstream (a source table materialized for it), Kafka's
record sizes, and its serdes (a windowed key without a key serde fails as in Kafka). Every
expected number and text is Kafka 4.3.1's for the same topology (rules SU-2..SU-5)."""

from datetime import timedelta

import pytest

from kspark import (Consumed, Materialized, Produced, Serdes, SessionWindows, StreamsBuilder, StreamsException, Suppressed,
                    TimeWindows)
from kspark.errors import ProcessorStateException
from kspark.testing import TopologyTestDriver

STRINGS = {"default.key.serde": Serdes.String(), "default.value.serde": Serdes.String()}
DAY = timedelta(days=1)


def bufferBytes(table, keys, cached):
    """``table(stream).suppress(untilTimeLimit(1 day, maxRecords(1).shutDownWhenFull()))`` fed
    ``keys`` (value "x", timestamps 1, 2, ...): the byte count of the "buffer exceeded" error."""
    b = StreamsBuilder()
    (table(b.stream("in"))
     .suppress(Suppressed.untilTimeLimit(DAY, Suppressed.BufferConfig.maxRecords(1).shutDownWhenFull()))
     .toStream().to("out"))
    config = dict(STRINGS) if cached else {**STRINGS, "statestore.cache.max.bytes": 0}
    with TopologyTestDriver(b.build(), config) as d:
        with pytest.raises(StreamsException) as failure:
            d.createInputTopic("in").pipeKeyValueList([(k, "x") for k in keys], 1, 1)
    e = failure.value
    while e is not None and "buffer exceeded" not in str(e):
        e = e.__cause__
    return int(str(e).split("records and [")[1].split("/")[0])


LONGS = Materialized.with_(Serdes.String(), Serdes.Long())
WINDOWS = TimeWindows.ofSizeWithNoGrace(timedelta(seconds=10))


@pytest.mark.parametrize("name, table, keys, cached, uncached", [
    # 8 + key + prior + old (unless it is the prior) + new + 8 + 8 + 4 + topic "in" (2)
    ("count", lambda s: s.groupByKey().count(LONGS), "ab", 78, 94),         # 39 each; uncached old = 0 (initializer)
    ("count update", lambda s: s.groupByKey().count(LONGS), "aab", 86, 102),  # a's update: prior + old 1
    ("reduce", lambda s: s.groupByKey().reduce(lambda x, y: x + y), "ab", 64, 64),  # no initializer: no old
    ("aggregate", lambda s: s.groupByKey().aggregate(lambda: "i", lambda k, v, agg: agg + v), "ab", 66, 68),
    ("windowed count", lambda s: s.groupByKey().windowedBy(WINDOWS).count(LONGS), "ab", 94, 110),  # key + 8 start
    ("windowed update", lambda s: s.groupByKey().windowedBy(WINDOWS).count(LONGS), "aab", 102, 118),
    ("session count", lambda s: s.groupByKey().windowedBy(SessionWindows.ofInactivityGapWithNoGrace(10_000))
     .count(LONGS), "ab", 110, 110),                                          # key + 16: sessions send no old value
])
def test_su4_buffer_sizes_are_kafkas(name, table, keys, cached, uncached):
    assert (bufferBytes(table, keys, True), bufferBytes(table, keys, False)) == (cached, uncached)


def test_suppress_store_in_describe_and_its_source_table_materialized():
    b = StreamsBuilder()
    b.table("in").suppress(Suppressed.untilTimeLimit(DAY, Suppressed.BufferConfig.unbounded())).toStream().to("out")
    text = str(b.build().describe())
    assert "Processor: KTABLE-SOURCE-0000000002 (stores: [in-STATE-STORE-0000000000])" in text
    assert "Processor: KTABLE-SUPPRESS-0000000003 (stores: [KTABLE-SUPPRESS-STATE-STORE-0000000004])" in text
    assert "Sink: KSTREAM-SINK-0000000006 (topic: out)" in text
    b = StreamsBuilder()
    (b.table("in").suppress(Suppressed.untilTimeLimit(DAY, Suppressed.BufferConfig.unbounded()).withName("sup"))
     .toStream().to("out"))
    text = str(b.build().describe())
    assert "Processor: sup (stores: [sup-store])" in text and "Sink: KSTREAM-SINK-0000000004 (topic: out)" in text


def test_a_cached_source_table_under_suppress_forwards_no_delete_of_an_absent_key():
    """The source table is materialized (and cached) for the suppress: a delete of a key it never
    held reaches nothing, so the buffer does not hold it and a@1 leaves on its own."""
    b = StreamsBuilder()
    (b.table("in").suppress(Suppressed.untilTimeLimit(timedelta(milliseconds=10), Suppressed.BufferConfig.unbounded()))
     .toStream().to("out"))
    with TopologyTestDriver(b.build(), STRINGS) as d:
        i = d.createInputTopic("in")
        i.pipeInput("z", None, 0)
        i.pipeInput("a", "x", 1)
        i.pipeInput("b", "y", 11)
        assert [(r.key(), r.value(), r.timestamp()) for r in d.createOutputTopic("out").readRecordsToList()] == [
            ("a", "x", 1)]


@pytest.mark.parametrize("cached", [False, True])
def test_a_windowed_key_without_key_serde_fails_in_the_suppress_buffer(cached):
    """FINDINGS F13: the windowed count's table has no key serde, so the buffer serializes its
    Windowed keys with default.key.serde (String), as Kafka's setSerdesIfNull, and fails."""
    b = StreamsBuilder()
    (b.stream("in").groupByKey().windowedBy(TimeWindows.ofSizeAndGrace(timedelta(seconds=1), timedelta(milliseconds=500)))
     .count().suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded())).toStream().to("out"))
    config = dict(STRINGS) if cached else {**STRINGS, "statestore.cache.max.bytes": 0}
    with TopologyTestDriver(b.build(), config) as d:
        with pytest.raises(StreamsException) as failure:
            d.createInputTopic("in").pipeInput("a", "x", 5)
    e = failure.value
    assert not isinstance(e, ProcessorStateException)
    if not cached:  # handled (LogAndFail) at the aggregation, the suppress's parent
        assert str(e).startswith("Exception caught in process. taskId=0_0, processor=KSTREAM-AGGREGATE-0000000002")
        e = e.__cause__
    assert str(e).startswith(
        "ClassCastException invoking processor: KTABLE-SUPPRESS-0000000003. Do the Processor's input types match the "
        "deserialized types? Check the Serde setup and change the default Serdes in StreamConfig or provide correct "
        "Serdes via method parameters. Make sure the Processor can accept the deserialized input of type key: "
        "org.apache.kafka.streams.kstream.Windowed, and value: org.apache.kafka.streams.kstream.internals.Change.\n")
    assert str(e.__cause__).startswith(
        "class org.apache.kafka.streams.kstream.Windowed cannot be cast to class java.lang.String "
        "(org.apache.kafka.streams.kstream.Windowed is in unnamed module of loader 'app'; java.lang.String is in "
        "module java.base of loader 'bootstrap')")
    # with the key's serde known, the same topology runs
    b = StreamsBuilder()
    (b.stream("in", Consumed.with_(Serdes.String(), Serdes.String())).groupByKey()
     .windowedBy(TimeWindows.ofSizeAndGrace(timedelta(seconds=1), timedelta(milliseconds=500))).count()
     .suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded())).toStream()
     .map(lambda w, c: (w.key(), c)).to("out", Produced.valueSerde(Serdes.Long())))
    with TopologyTestDriver(b.build(), config) as d:
        d.createInputTopic("in").pipeKeyValueList([("a", "x"), ("b", "x")], 5, 1495)
        assert d.createOutputTopic("out", Serdes.String(), Serdes.Long()).readKeyValuesToList() == [("a", 1)]

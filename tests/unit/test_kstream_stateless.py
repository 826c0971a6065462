"""KStream stateless operations through TopologyTestDriver (rules T-15, RP-1, TTD-1)."""

import pytest

from kspark import Consumed, KeyValue, Produced, Serdes, StreamsBuilder
from kspark.testing import TestRecord, TopologyTestDriver


def run(build, inputs, output="out", outSerdes=(None, None)):
    b = StreamsBuilder()
    build(b.stream("in"))
    with TopologyTestDriver(b.build()) as driver:
        topic = driver.createInputTopic("in")
        for k, v, ts in inputs:
            topic.pipeInput(k, v, ts)
        return driver.createOutputTopic(output, *outSerdes).readRecordsToList()


INPUT = [("a", 1, 10), ("b", 2, 20), ("c", 3, 15)]


def test_filter_keeps_matching_records_with_their_timestamps():
    assert run(lambda s: s.filter(lambda k, v: v % 2 == 1).to("out"), INPUT) == [
        TestRecord("a", 1, 10), TestRecord("c", 3, 15)
    ]


def test_filterNot_keeps_the_others():
    assert run(lambda s: s.filterNot(lambda k, v: v % 2 == 1).to("out"), INPUT) == [TestRecord("b", 2, 20)]


def test_mapValues_with_value_and_with_key_and_value():
    assert run(lambda s: s.mapValues(lambda v: v * 10).to("out"), INPUT) == [
        TestRecord("a", 10, 10), TestRecord("b", 20, 20), TestRecord("c", 30, 15)
    ]
    assert run(lambda s: s.mapValues(lambda k, v: f"{k}{v}").to("out"), INPUT[:1]) == [TestRecord("a", "a1", 10)]


def test_map_changes_key_and_value_and_keeps_timestamp():
    assert run(lambda s: s.map(lambda k, v: KeyValue(v, k)).to("out", Produced.with_(Serdes.Long(), Serdes.String())),
               INPUT) == [TestRecord(1, "a", 10), TestRecord(2, "b", 20), TestRecord(3, "c", 15)]


def test_map_must_return_a_pair():
    with pytest.raises(Exception, match="must return a KeyValue"):
        run(lambda s: s.map(lambda k, v: v).to("out"), INPUT[:1])


def test_selectKey_sets_a_new_key():
    assert run(lambda s: s.selectKey(lambda k, v: k.upper()).to("out"), INPUT[:2]) == [
        TestRecord("A", 1, 10), TestRecord("B", 2, 20)
    ]


def test_peek_sees_every_record_and_forwards_it_unchanged():
    seen = []
    out = run(lambda s: s.peek(lambda k, v: seen.append((k, v))).to("out"), INPUT)
    assert seen == [("a", 1), ("b", 2), ("c", 3)]
    assert out == [TestRecord("a", 1, 10), TestRecord("b", 2, 20), TestRecord("c", 3, 15)]


def test_null_key_and_null_value_flow_through_stateless_ops():
    assert run(lambda s: s.mapValues(lambda v: v).to("out"), [(None, None, 5)]) == [TestRecord(None, None, 5)]


def test_one_stream_to_two_sinks_in_topology_order():
    def build(s):
        s.to("out")
        s.mapValues(lambda v: -v).to("out")
    assert run(build, INPUT[:1]) == [TestRecord("a", 1, 10), TestRecord("a", -1, 10)]


def test_consumed_serdes_decode_the_input_topic():
    b = StreamsBuilder()
    b.stream("in", Consumed.with_(Serdes.Long(), Serdes.String())).mapValues(str.upper).to(
        "out", Produced.with_(Serdes.Long(), Serdes.String()))
    with TopologyTestDriver(b.build()) as driver:
        driver.createInputTopic("in").pipeInput(7, "x", 1)
        assert driver.createOutputTopic("out").readKeyValuesToList() == [KeyValue(7, "X")]


def test_wrong_key_type_for_the_serde_is_a_clear_error():
    b = StreamsBuilder()
    b.stream("in").to("out")
    with TopologyTestDriver(b.build()) as driver:
        with pytest.raises(Exception, match="cannot serialize a int .* expected str"):
            driver.createInputTopic("in").pipeInput(5, 1, 1)


def test_pipeInput_rejects_negative_int_timestamp():
    b = StreamsBuilder()
    b.stream("in").to("out")
    with TopologyTestDriver(b.build()) as driver:
        with pytest.raises(ValueError, match="negative"):
            driver.createInputTopic("in").pipeInput("a", 1, -1)


def test_user_code_error_names_task_node_topic_partition_offset():
    b = StreamsBuilder()
    b.stream("in").mapValues(lambda v: 1 // v, named="divide").to("out")
    from kspark import StreamsException

    with TopologyTestDriver(b.build()) as driver:
        topic = driver.createInputTopic("in")
        topic.pipeInput("a", 1, 1)
        with pytest.raises(StreamsException, match=r"taskId=0_0, processor=divide, topic=in, partition=0, offset=1"):
            topic.pipeInput("a", 0, 2)

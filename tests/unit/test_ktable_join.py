"""KTables and KStream-KTable joins through TopologyTestDriver (rules J-1..J-4, J-6, RP-1..RP-3)."""

import pytest

from kspark import KeyValue, Materialized, Produced, Repartitioned, StreamsBuilder
from kspark.runtime.metrics import MetricName
from kspark.testing import TestRecord, TopologyTestDriver


def joinTopology(left: bool, viaToTable: bool = False):
    b = StreamsBuilder()
    if viaToTable:
        table = b.stream("tbl").toTable(materialized=Materialized.as_("table-store"))
    else:
        table = b.table("tbl", materialized=Materialized.as_("table-store"))
    stream = b.stream("str")
    joiner = lambda v, t: f"{v}+{t}"  # noqa: E731
    (stream.leftJoin(table, joiner) if left else stream.join(table, joiner)).to("out")
    return b.build()


def dropped(driver):
    return driver.metrics().get(MetricName("dropped-records-total", "stream-task-metrics", (("thread-id", "main"), ("task-id", "0_0"))), 0)


@pytest.mark.parametrize("viaToTable", [False, True])
def test_j1_j4_inner_join_only_stream_side_triggers_and_uses_current_table_value(viaToTable):
    with TopologyTestDriver(joinTopology(False, viaToTable)) as d:
        tbl, st, out = d.createInputTopic("tbl"), d.createInputTopic("str"), d.createOutputTopic("out")
        st.pipeInput("k", "s0", 1)      # no table value yet: no output
        tbl.pipeInput("k", "t1", 2)     # table update: no output (J-1)
        st.pipeInput("k", "s1", 3)
        tbl.pipeInput("k", "t2", 4)
        st.pipeInput("k", "s2", 5)
        tbl.pipeInput("k", None, 6)     # tombstone deletes
        st.pipeInput("k", "s3", 7)
        assert out.readRecordsToList() == [TestRecord("k", "s1+t1", 3), TestRecord("k", "s2+t2", 5)]
        assert d.getKeyValueStore("table-store").get("k") is None


def test_j4_left_join_emits_with_null_table_value():
    with TopologyTestDriver(joinTopology(True)) as d:
        tbl, st, out = d.createInputTopic("tbl"), d.createInputTopic("str"), d.createOutputTopic("out")
        st.pipeInput("k", "s0", 1)
        tbl.pipeInput("k", "t1", 2)
        st.pipeInput("k", "s1", 3)
        assert out.readRecordsToList() == [TestRecord("k", "s0+None", 1), TestRecord("k", "s1+t1", 3)]


def test_j3_inner_join_drops_null_key_and_null_value_and_counts_them():
    with TopologyTestDriver(joinTopology(False)) as d:
        tbl, st, out = d.createInputTopic("tbl"), d.createInputTopic("str"), d.createOutputTopic("out")
        tbl.pipeInput("k", "t", 1)
        st.pipeInput(None, "s", 2)
        st.pipeInput("k", None, 3)
        assert out.readRecordsToList() == []
        assert dropped(d) == 2


def test_j3_left_join_keeps_null_key_with_value_but_drops_null_value():
    with TopologyTestDriver(joinTopology(True)) as d:
        st, out = d.createInputTopic("str"), d.createOutputTopic("out")
        st.pipeInput(None, "s", 2)
        st.pipeInput("k", None, 3)
        assert out.readRecordsToList() == [TestRecord(None, "s+None", 2)]
        assert dropped(d) == 1


def test_table_source_skips_null_keys_and_counts_them():
    with TopologyTestDriver(joinTopology(False)) as d:
        d.createInputTopic("tbl").pipeInput(None, "t", 1)
        assert dropped(d) == 1
        assert list(d.getKeyValueStore("table-store").all()) == []


def test_table_store_keeps_value_and_timestamp():
    with TopologyTestDriver(joinTopology(False)) as d:
        tbl = d.createInputTopic("tbl")
        tbl.pipeInput("b", "x", 5)
        tbl.pipeInput("a", "y", 7)
        assert list(d.getKeyValueStore("table-store").all()) == [KeyValue("a", "y"), KeyValue("b", "x")]
        assert d.getTimestampedKeyValueStore("table-store").get("b") == ("x", 5)


def test_joiner_with_key_takes_three_arguments():
    b = StreamsBuilder()
    table = b.table("tbl")
    b.stream("str").join(table, lambda k, v, t: [k, v, t]).to("out")
    with TopologyTestDriver(b.build()) as d:
        d.createInputTopic("tbl").pipeInput("k", 1, 1)
        d.createInputTopic("str").pipeInput("k", 2, 2)
        assert d.createOutputTopic("out").readValuesToList() == [["k", 2, 1]]


def test_rp1_rp2_join_after_selectKey_repartitions_by_the_new_key():
    b = StreamsBuilder()
    table = b.table("tbl")
    b.stream("str").selectKey(lambda k, v: v["code"]).join(table, lambda v, t: t).to("out")
    topology = b.build()
    assert topology.internalTopics() == {"KSTREAM-KEY-SELECT-0000000004-repartition": None}
    with TopologyTestDriver(topology) as d:
        d.createInputTopic("tbl").pipeInput("A", "valA", 1)
        st = d.createInputTopic("str")
        st.pipeInput("x", {"code": "A"}, 2)
        st.pipeInput("y", {"code": None}, 3)   # null new key: dropped before the repartition topic
        assert d.createOutputTopic("out").readRecordsToList() == [TestRecord("A", "valA", 2)]
        assert d.metrics()[MetricName(
            "dropped-records-total", "kspark-dropped-records",
            (("thread-id", "main"), ("task-id", "0_0"), ("processor-node-id", "KSTREAM-FILTER-0000000006"),
             ("reason", "null key before repartition")))] == 1


def test_rp3_repartition_names_the_topic_and_enforces_partitions():
    b = StreamsBuilder()
    b.stream("in").repartition(Repartitioned.as_("by-code").withNumberOfPartitions(5)).to("out")
    topology = b.build()
    assert topology.internalTopics() == {"by-code-repartition": 5}
    with TopologyTestDriver(topology, {"application.id": "app"}) as d:
        d.createInputTopic("in").pipeInput("k", 1, 9)
        assert d.createOutputTopic("out").readRecordsToList() == [TestRecord("k", 1, 9)]
        assert d.producedTopicNames() == {"out"}


def test_j6_joined_names_the_join_and_its_repartition_topic_and_serializes_it():
    """``Joined.with_(keySerde, valueSerde, otherValueSerde, name)``: the re-keyed stream goes
    through ``<name>-repartition`` written with the Joined serdes (int keys here, which the
    default String serde could not write), and the join node is named ``<name>`` (Kafka
    ``KStreamImpl.join(KTable, ValueJoiner, Joined)``)."""
    from kspark import Consumed, Joined, Serdes

    b = StreamsBuilder()
    table = b.table("tbl", Consumed.with_(Serdes.Integer(), Serdes.String()))
    (b.stream("str")
     .selectKey(lambda k, v: v["id"])
     .join(table, lambda v, t: f"{v['px']}@{t}", Joined.with_(Serdes.Integer(), Serdes.JSON(), Serdes.String(), "by-id"))
     .to("out", Produced.with_(Serdes.Integer(), Serdes.String())))
    topology = b.build()
    description = str(topology.describe())
    assert "Sink: by-id-repartition-sink (topic: by-id-repartition)" in description
    assert "Processor: by-id (stores: [tbl-STATE-STORE-0000000000])" in description
    with TopologyTestDriver(topology) as d:
        d.createInputTopic("tbl", Serdes.Integer(), Serdes.String()).pipeInput(7, "samsung", 1)
        d.createInputTopic("str").pipeInput("x", {"id": 7, "px": 100}, 2)
        out = d.createOutputTopic("out", Serdes.Integer(), Serdes.String())
        assert out.readRecordsToList() == [TestRecord(7, "100@samsung", 2)]


def test_j5_joined_grace_period_needs_a_versioned_table():
    from kspark import Joined

    b = StreamsBuilder()
    table = b.table("tbl")
    with pytest.raises(ValueError, match=r"^KTable must be versioned to use a grace period in a stream table join\.$"):
        b.stream("str").join(table, lambda v, t: v, Joined.as_("j").withGracePeriod(1000))

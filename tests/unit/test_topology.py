"""Topology description, sub-topologies and co-partitioning (rules J-6, RP-4, RP-5)."""

import pytest

from kspark import ConfigException, Repartitioned, StreamsBuilder, StreamsConfig, TopologyException
from kspark.topology import resolvePartitionCounts


def signalTopology(repartition: bool, partitions: int | None = 5):
    b = StreamsBuilder()
    valuations = b.stream("valuations")
    if repartition:
        r = Repartitioned.as_("valuations-by-code")
        valuations = valuations.repartition(r.withNumberOfPartitions(partitions) if partitions else r)
    table = valuations.toTable()
    b.stream("prices").join(table, lambda p, v: p).to("signals")
    return b.build()


def test_j6_rp5_join_without_repartition_is_rejected_as_not_copartitioned():
    with pytest.raises(TopologyException) as e:
        resolvePartitionCounts(signalTopology(False), {"prices": 5, "valuations": 1, "signals": 5})
    assert str(e.value) == "Invalid topology: Topics not co-partitioned: [{prices=5, valuations=1}]"


def test_rp3_rp5_repartition_to_the_stream_partition_count_is_accepted():
    counts = resolvePartitionCounts(signalTopology(True), {"prices": 5, "valuations": 1, "signals": 5})
    assert counts == {"prices": 5, "valuations": 1, "signals": 5, "valuations-by-code-repartition": 5}


def test_rp4_rp5_unenforced_repartition_takes_the_copartitioned_count():
    counts = resolvePartitionCounts(signalTopology(True, None), {"prices": 5, "valuations": 1, "signals": 5})
    assert counts["valuations-by-code-repartition"] == 5


def test_rp5_enforced_count_that_differs_is_rejected():
    with pytest.raises(TopologyException, match=r"Invalid topology: Number of partitions \[3\] of repartition topic "
                                                r"\[valuations-by-code-repartition\] doesn't match number of partitions \[5\]"):
        resolvePartitionCounts(signalTopology(True, 3), {"prices": 5, "valuations": 1, "signals": 5})


def test_rp4_repartition_topic_count_is_max_of_the_writing_subtopology_sources():
    b = StreamsBuilder()
    b.stream(["x", "y"]).repartition().to("out")
    counts = resolvePartitionCounts(b.build(), {"x": 2, "y": 7, "out": 1})
    assert counts["KSTREAM-REPARTITION-0000000001-repartition"] == 7


def test_missing_source_topic_is_reported():
    with pytest.raises(Exception, match=r"^Missing source topics. \[prices\]$"):
        resolvePartitionCounts(signalTopology(True), {"prices": None, "valuations": 1})


def test_describe_prints_subtopologies_sources_processors_stores_sinks():
    assert str(signalTopology(True).describe()) == """Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [valuations])
      --> valuations-by-code-repartition-filter
    Processor: valuations-by-code-repartition-filter (stores: [])
      --> valuations-by-code-repartition-sink
      <-- KSTREAM-SOURCE-0000000000
    Sink: valuations-by-code-repartition-sink (topic: valuations-by-code-repartition)
      <-- valuations-by-code-repartition-filter

  Sub-topology: 1
    Source: KSTREAM-SOURCE-0000000006 (topics: [prices])
      --> KSTREAM-JOIN-0000000007
    Processor: KSTREAM-JOIN-0000000007 (stores: [KSTREAM-TOTABLE-STATE-STORE-0000000005])
      --> KSTREAM-SINK-0000000008
      <-- KSTREAM-SOURCE-0000000006
    Source: valuations-by-code-repartition-source (topics: [valuations-by-code-repartition])
      --> KSTREAM-TOTABLE-0000000004
    Sink: KSTREAM-SINK-0000000008 (topic: signals)
      <-- KSTREAM-JOIN-0000000007
    Processor: KSTREAM-TOTABLE-0000000004 (stores: [KSTREAM-TOTABLE-STATE-STORE-0000000005])
      --> none
      <-- valuations-by-code-repartition-source

"""


def test_unknown_config_key_is_a_config_exception():
    with pytest.raises(ConfigException, match="Unknown configuration 'max.task.idle'"):
        StreamsConfig({"max.task.idle": 5})
    with pytest.raises(ConfigException, match="Invalid value 5x for configuration max.task.idle.ms: Not a number of type LONG"):
        StreamsConfig({"max.task.idle.ms": "5x"})  # "5" is 5, as in Kafka (test_config.py)


"""Non-windowed aggregations: count, reduce, aggregate (rules T-17, RP-1, RP-2, SA-12 repartition naming)."""

from kspark import Grouped, Materialized, Produced, Serdes, StreamsBuilder
from kspark.runtime.metrics import MetricName
from kspark.testing import TestRecord, TopologyTestDriver


def run(build, inputs, outSerde=Serdes.Long()):
    b = StreamsBuilder()
    build(b.stream("in")).toStream().to("out", Produced.with_(Serdes.String(), outSerde))
    topology = b.build()
    with TopologyTestDriver(topology) as d:
        i = d.createInputTopic("in")
        for k, v, ts in inputs:
            i.pipeInput(k, v, ts)
        return topology, d, d.createOutputTopic("out").readRecordsToList()


def test_t17_count_timestamp_is_max_of_inputs_so_far():
    # Kafka KGroupedStreamImplTest: inputs at 5, 3, 10 for key "1" -> count 3 at ts 10
    _, _, out = run(lambda s: s.groupByKey().count(), [("1", "a", 5), ("1", "b", 3), ("2", "c", 4), ("1", "d", 10)])
    assert out == [TestRecord("1", 1, 5), TestRecord("1", 2, 5), TestRecord("2", 1, 4), TestRecord("1", 3, 10)]


def test_aggregations_skip_and_count_null_keys_and_values():
    _, d, out = run(lambda s: s.groupByKey().count(materialized=Materialized.as_("counts")),
                    [(None, "a", 1), ("k", None, 2), ("k", "b", 3)])
    assert out == [TestRecord("k", 1, 3)]
    assert d.metrics()[MetricName("dropped-records-total", "stream-task-metrics", (("task-id", "0_0"),))] == 2
    assert list(d.getKeyValueStore("counts").all()) == [("k", 1)]


def test_reduce_starts_from_the_first_value():
    _, _, out = run(lambda s: s.groupByKey().reduce(lambda agg, v: agg + v),
                    [("k", "a", 1), ("k", "b", 2), ("j", "c", 3)], Serdes.String())
    assert out == [TestRecord("k", "a", 1), TestRecord("k", "ab", 2), TestRecord("j", "c", 3)]


def test_aggregate_with_initializer_and_key():
    _, _, out = run(lambda s: s.groupByKey().aggregate(lambda: "0", lambda k, v, agg: f"{agg}+{k}{v}"),
                    [("k", 1, 1), ("k", 2, 2)], Serdes.String())
    assert out == [TestRecord("k", "0+k1", 1), TestRecord("k", "0+k1+k2", 2)]


def test_rp1_group_by_repartitions_through_a_topic_named_after_the_store():
    topology, _, out = run(lambda s: s.groupBy(lambda k, v: v[0]).count(materialized=Materialized.as_("by-letter")),
                           [("x", "apple", 1), ("y", "avocado", 2), ("z", "banana", 3)])
    assert topology.internalTopics() == {"by-letter-repartition": None}
    assert out == [TestRecord("a", 1, 1), TestRecord("a", 2, 2), TestRecord("b", 1, 3)]


def test_grouped_name_names_the_repartition_topic():
    b = StreamsBuilder()
    b.stream("in").selectKey(lambda k, v: v).groupByKey(Grouped.as_("regrouped")).count()
    assert list(b.build().internalTopics()) == ["regrouped-repartition"]

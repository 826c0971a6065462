"""Non-windowed aggregations: count, reduce, aggregate (rules T-17, RP-1, RP-2, SA-12 repartition naming)."""

import pytest

from kspark import Grouped, KeyValue, Materialized, Produced, Serdes, StreamsBuilder
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
    assert d.metrics()[MetricName("dropped-records-total", "stream-task-metrics", (("thread-id", "main"), ("task-id", "0_0")))] == 2
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


@pytest.mark.parametrize("cached", [False, True])
def test_t17_uncached_aggregation_sends_the_initial_value_as_a_new_keys_old_value(cached):
    """Kafka's KStreamAggregate forwards Change(newAgg, sendOldValues ? oldAgg : null) with oldAgg
    = initializer() for a new key; a KTable groupBy downstream (which enables old values)
    subtracts it. Cached, the flush reads the old value from the store: none. Kafka 4.3.1's
    records for a@1, b@2, a@3 (FINDINGS F8, whose buffer sizes count that old value)."""
    b = StreamsBuilder()
    (b.stream("in").groupByKey().count(materialized=Materialized.with_(Serdes.String(), Serdes.Long()))
     .groupBy(lambda k, v: KeyValue.pair("all", str(v)))
     .aggregate(lambda: "", lambda k, v, agg: agg + "+" + v, lambda k, v, agg: agg + "-" + v)
     .toStream().to("out"))
    config = {"default.key.serde": Serdes.String(), "default.value.serde": Serdes.String()}
    if not cached:
        config["statestore.cache.max.bytes"] = 0
    with TopologyTestDriver(b.build(), config) as d:
        d.createInputTopic("in").pipeKeyValueList([("a", "x"), ("b", "x"), ("a", "x")], 1, 1)
        out = [(r.value(), r.timestamp()) for r in d.createOutputTopic("out").readRecordsToList()]
    assert out == ([("+1", 1), ("+1+1", 2), ("+1+1-1+2", 3)] if cached else
                   [("+1", 1), ("+1-0+1", 2), ("+1-0+1-1+2", 3)])

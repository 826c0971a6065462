"""Store-level metrics (issue 34 section 2: ``put-rate``, ``get-rate``...) at
``metrics.recording.level`` DEBUG, against Kafka Streams 4.3.1's own TopologyTestDriver.

Kafka's ``StateStoreMetrics`` (``MeteredKeyValueStore``/``MeteredWindowStore``/
``MeteredSessionStore``): group ``stream-state-metrics``, tags ``thread-id``, ``task-id``,
``<metricsScope>-state-id``; ``<op>-rate`` per second, ``<op>-latency-avg``/``-max`` in ns; all of
them DEBUG-level sensors. The proposed rule (not yet in kafka-streams-semantics.md, which is
read-only here): **MT-1** a store's operation sensors count each call a processor (or the test
driver) makes on the metered store, one per outer call (``putAll`` is one ``put-all``), recorded
only when ``metrics.recording.level`` is DEBUG or TRACE.

``java/storemetrics/StoreMetrics.java`` runs the same two topologies and input through Kafka's
TopologyTestDriver and prints its ``stream-state-metrics``; compiled and run at test time (~5 s),
skipped only when the JVM artifacts of ``make jvm`` or a JDK are missing. No Spark.
"""

from __future__ import annotations

import math
from datetime import timedelta
from pathlib import Path

import pytest

from _java_programs import runJavaProgram

from kspark import (Consumed, ContextualProcessor, KeyValue, Materialized, Serdes, SessionWindows, Stores,
                    StreamsBuilder, TimeWindows)
from kspark.runtime.metrics import MetricName
from kspark.spark._metrics import HostMetrics, prometheusName
from kspark.testing import TopologyTestDriver

JAVA_SOURCES = Path(__file__).parent / "java" / "storemetrics"
NOW = 1_000_000
S = Serdes.String()
INPUT = (("a", "1", 5), ("b", "x", 20), ("a", "2", 30), ("c", "3", 40), ("a", "4", 35))
# what Kafka reports for a store and kspark does not (RocksDB statistics, gauges, the commit,
# flush, restore, iterator and TRACE e2e sensors): the names kspark leaves out, by prefix
NOT_METERED = ("background-errors", "block-cache-", "bytes-", "compaction-", "cur-size-", "estimate-",
               "live-sst-", "mem-table-", "memtable-", "num-", "number-", "size-all-", "total-sst-",
               "write-stall-", "commit-", "flush-", "restore-", "iterator-duration-", "oldest-iterator-",
               "record-e2e-latency-")


class StoreUser(ContextualProcessor):
    """The Java program's processor: get "st" for every record, put it unless the value is "x",
    put every record in "mem"; "x" also calls delete, putIfAbsent, putAll, range, all, prefixScan."""

    def init(self, context):
        super().init(context)
        self.st, self.mem = context.getStateStore("st"), context.getStateStore("mem")

    def process(self, record):
        key, value = record.key(), record.value()
        self.st.get(key)
        if value != "x":
            self.st.put(key, value)
        self.mem.put(key, value)
        if value == "x":
            self.mem.delete("a")
            self.mem.putIfAbsent("z", "x")
            self.st.putAll([KeyValue("p", "1"), KeyValue("q", "2")])
            for it in (self.st.range("a", "c"), self.st.all(), self.st.prefixScan("p", S.serializer())):
                with it:
                    list(it)


def processorTopology():
    b = StreamsBuilder()
    b.addStateStore(Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore("st"), S, S))
    b.addStateStore(Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore("mem"), S, S))
    b.stream("in", Consumed.with_(S, S)).process(StoreUser, "st", "mem")
    return b.build()


def countTopology():
    b = StreamsBuilder()
    grouped = b.stream("in", Consumed.with_(S, S)).groupByKey()
    grouped.count(Materialized.as_("counts"))
    grouped.windowedBy(TimeWindows.ofSizeAndGrace(timedelta(milliseconds=10), timedelta(milliseconds=100))) \
        .count(Materialized.as_("wcounts"))
    grouped.windowedBy(SessionWindows.ofInactivityGapAndGrace(timedelta(milliseconds=10), timedelta(milliseconds=100))) \
        .count(Materialized.as_("scounts"))
    return b.build()


def driverStoreMetrics(topology, level: str, caching: bool = True) -> dict[MetricName, float]:
    config = {"application.id": "sm", "metrics.recording.level": level}
    if not caching:
        config["statestore.cache.max.bytes"] = 0
    with TopologyTestDriver(topology, config, initialWallClockTime=NOW) as d:
        i = d.createInputTopic("in", S, S)
        for key, value, ts in INPUT:
            i.pipeInput(key, value, ts)
        return {k: v for k, v in d.metrics().items() if k.group == "stream-state-metrics"}


def store(op: str, stateId: str, name: str) -> MetricName:
    return MetricName(op, "stream-state-metrics", (("thread-id", "main"), ("task-id", "0_0"), (stateId, name)))


@pytest.fixture(scope="module")
def kafka() -> dict:
    out = runJavaProgram(JAVA_SOURCES, "storemetrics.StoreMetrics")
    return {level: {scenario: {MetricName(m["name"], "stream-state-metrics", tuple(map(tuple, m["tags"]))):
                               float(m["value"]) for m in metrics}
                    for scenario, metrics in scenarios.items()} for level, scenarios in out.items()}


@pytest.mark.parametrize("scenario, topology", [("processor", processorTopology), ("count", countTopology),
                                                ("count-nocache", countTopology)])
def test_debug_store_metrics_have_kafka_streams_names_tags_and_rates(kafka, scenario, topology):
    """MT-1. Kafka's DEBUG metrics of the same stores after the same input: every metric kspark
    reports has Kafka's name, group and tags (the store's <metricsScope>-state-id: rocksdb,
    in-memory, rocksdb-window, rocksdb-session); every rate is Kafka's (calls over 30 s on the
    mock clock); a latency is NaN exactly where Kafka's is (no call); and what Kafka has and
    kspark does not is only the unmetered list (RocksDB statistics, commit/flush/restore...).
    "count-nocache" (statestore.cache.max.bytes 0 on both sides): the same counts as with the
    record cache (Kafka's metered store sits above its caching layer)."""
    java, ours = kafka["DEBUG"][scenario], driverStoreMetrics(topology(), "DEBUG", scenario != "count-nocache")
    assert ours and set(ours) <= set(java)
    missing = {m.name for m in set(java) - set(ours)}
    assert all(n.startswith(NOT_METERED) for n in missing), sorted(n for n in missing if not n.startswith(NOT_METERED))
    for name, value in ours.items():
        if name.name.endswith("-rate"):
            assert value == java[name], name
        else:
            assert math.isnan(value) == math.isnan(java[name]), name
            assert math.isnan(value) or value > 0, name
    # the store types Kafka names, and the figures: calls x 30 s
    calls = {(m.name, m.tags[2]): round(v * 30) for m, v in ours.items() if m.name.endswith("-rate") and v}
    expected = {
        "processor": {("get-rate", ("rocksdb-state-id", "st")): 5, ("put-rate", ("rocksdb-state-id", "st")): 4,
                      ("put-all-rate", ("rocksdb-state-id", "st")): 1, ("range-rate", ("rocksdb-state-id", "st")): 1,
                      ("all-rate", ("rocksdb-state-id", "st")): 1, ("prefix-scan-rate", ("rocksdb-state-id", "st")): 1,
                      ("put-rate", ("in-memory-state-id", "mem")): 5, ("delete-rate", ("in-memory-state-id", "mem")): 1,
                      ("put-if-absent-rate", ("in-memory-state-id", "mem")): 1},
        "count": {("get-rate", ("rocksdb-state-id", "counts")): 5, ("put-rate", ("rocksdb-state-id", "counts")): 5,
                  ("fetch-rate", ("rocksdb-window-state-id", "wcounts")): 5,
                  ("put-rate", ("rocksdb-window-state-id", "wcounts")): 5,
                  ("fetch-rate", ("rocksdb-session-state-id", "scounts")): 5,
                  ("put-rate", ("rocksdb-session-state-id", "scounts")): 5,
                  ("remove-rate", ("rocksdb-session-state-id", "scounts")): 1},
    }[scenario.split("-")[0]]
    assert calls == expected


def test_debug_takes_the_per_node_path_where_a_fused_windowed_loop_would_skip_the_store_calls():
    """A windowed count -> toStream().to() without record cache runs in a fused loop at INFO
    (kspark.dsl._internals.fast_paths), which calls no store method; at DEBUG the task keeps the
    per-node path: the same output, and one fetch and one put per record (Kafka's
    KStreamWindowAggregate: fetch(key, windowStart), then put), 4 records -> 4 / 30 s."""
    b = StreamsBuilder()
    b.stream("in", Consumed.with_(S, S)).groupByKey() \
        .windowedBy(TimeWindows.ofSizeAndGrace(timedelta(milliseconds=10), timedelta(milliseconds=100))) \
        .count(Materialized.as_("wcounts")).toStream().to("out")
    outputs = {}
    for level in ("INFO", "DEBUG"):
        config = {"metrics.recording.level": level, "statestore.cache.max.bytes": 0}
        with TopologyTestDriver(b.build(), config, initialWallClockTime=NOW) as d:
            assert (d._task._fastPath is None) == (level == "DEBUG")
            i = d.createInputTopic("in", S, S)
            for key, value, ts in INPUT[:4]:
                i.pipeInput(key, value, ts)
            out = d.createOutputTopic("out", Serdes.ByteArray(), Serdes.Long())
            outputs[level] = out.readRecordsToList()
            m = d.metrics()
        if level == "DEBUG":
            assert m[store("fetch-rate", "rocksdb-window-state-id", "wcounts")] == 4 / 30
            assert m[store("put-rate", "rocksdb-window-state-id", "wcounts")] == 4 / 30
        else:
            assert not [k for k in m if k.group == "stream-state-metrics"]
    assert len(outputs["DEBUG"]) == 4 and outputs["DEBUG"] == outputs["INFO"]


def test_info_level_records_no_store_metrics():
    """MT-1: DEBUG sensors; at the default INFO kspark wraps no store and reports none (Kafka
    registers them and leaves them at 0)."""
    assert driverStoreMetrics(processorTopology(), "INFO") == {}
    assert driverStoreMetrics(countTopology(), "INFO") == {}


def test_put_and_get_rates_follow_the_calls_and_the_mock_clock_windows():
    """N puts and M gets on "st" (plus the driver's own get through getKeyValueStore, which Kafka's
    metered store counts too): put-rate N / 30 s, get-rate (M + 1) / 30 s; latencies in ns > 0;
    after 2 windows without calls the rates are 0 and the latencies NaN."""
    with TopologyTestDriver(processorTopology(), {"metrics.recording.level": "DEBUG"}, initialWallClockTime=NOW) as d:
        i = d.createInputTopic("in", S, S)
        for n in range(7):  # 7 gets, 7 puts on st (no "x")
            i.pipeInput(f"k{n % 3}", str(n), n)
        assert d.getKeyValueStore("st").get("k1") == "4"
        m = d.metrics()
        assert m[store("put-rate", "rocksdb-state-id", "st")] == 7 / 30
        assert m[store("get-rate", "rocksdb-state-id", "st")] == 8 / 30
        assert m[store("put-rate", "in-memory-state-id", "mem")] == 7 / 30
        assert m[store("get-rate", "in-memory-state-id", "mem")] == 0.0
        putMax, putAvg = (m[store(f"put-latency-{s}", "rocksdb-state-id", "st")] for s in ("max", "avg"))
        assert putMax >= putAvg > 0
        assert math.isnan(m[store("get-latency-avg", "in-memory-state-id", "mem")])
        d.advanceWallClockTime(60_000)
        m = d.metrics()
        assert m[store("put-rate", "rocksdb-state-id", "st")] == 0.0
        assert math.isnan(m[store("put-latency-avg", "rocksdb-state-id", "st")])


def test_spark_host_store_calls_of_a_batch_become_kafka_s_rates_and_prometheus_names():
    """The Spark host: a task's metrics row (Metrics.encoded, what a Spark task returns with its
    batch) carries <op>-calls / -latency-sum / -latency-max per store; the driver turns a batch's
    rows into <op>-rate and <op>-latency-avg/-max (ns) with the thread-id of the sub-topology's
    query, and Prometheus names them kafka_streams_stream_state_metrics_<op>_rate."""
    with TopologyTestDriver(processorTopology(), {"metrics.recording.level": "DEBUG"}) as d:
        i = d.createInputTopic("in", S, S)
        for n in range(6):  # st: 6 gets, 6 puts; mem: 6 puts
            i.pipeInput(f"k{n % 2}", str(n), n)
        row = d._task.metrics.encoded()
    st = "task-id=0_0|rocksdb-state-id=st"
    assert {k: v for k, v in row.items() if k.endswith(st) and "-calls|" in k} \
        == {f"get-calls|stream-state-metrics|{st}": 6, f"put-calls|stream-state-metrics|{st}": 6}
    h = HostMetrics("app", 30_000, 2, clock=lambda: 100.0)
    h.addBatch(0, "q", 0, row)
    m = h.present({}, {})

    def metric(name: str, stateId: str = "rocksdb-state-id", store: str = "st") -> float:
        tags = (("thread-id", "app-StreamThread-1"), ("task-id", "0_0"), (stateId, store))
        return m[MetricName(name, "stream-state-metrics", tags)]

    assert metric("put-rate") == metric("get-rate") == 6 / 30
    assert metric("put-rate", "in-memory-state-id", "mem") == 6 / 30
    for op in ("put", "get"):
        assert metric(f"{op}-latency-avg") == row[f"{op}-latency-sum|stream-state-metrics|{st}"] / 6
        assert metric(f"{op}-latency-max") == row[f"{op}-latency-max|stream-state-metrics|{st}"] >= metric(f"{op}-latency-avg")
    assert not [k for k in m if k.name.endswith(("-calls", "-latency-sum"))]
    assert prometheusName(MetricName("put-rate", "stream-state-metrics", ())) == "kafka_streams_stream_state_metrics_put_rate"

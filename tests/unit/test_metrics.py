"""Metrics under Kafka Streams' names (issue 34 section 2): TopologyTestDriver.metrics() against
what Kafka Streams 4.3.1's own TopologyTestDriver reports for the same topology and input
(ProcessorNodeMetrics' record-e2e-latency of source and terminal nodes, TaskMetrics, tags
thread-id "main" and task-id "0_0"), the windowed rates and stats (Kafka's SampledStat), the
Spark host's aggregation of per-task rows, and the Prometheus names."""

import math
from datetime import timedelta

from kspark import (Consumed, ContextualProcessor, PunctuationType, Serdes, Stores, StreamsBuilder, TimeWindows)
from kspark.runtime.metrics import MetricName, SampledMetrics, addSample, mergeEncoded, percentileMs
from kspark.spark._metrics import HostMetrics, PrometheusExporter, prometheusName
from kspark.testing import TopologyTestDriver

NOW = 1_000_000  # the driver's mock wall clock (ms)
S = Serdes.String()


class StoreAndForward(ContextualProcessor):
    """Reads and writes store "st", forwards records with a key; a stream-time punctuator every 10 ms."""

    def init(self, context):
        super().init(context)
        self.store = context.getStateStore("st")
        context.schedule(timedelta(milliseconds=10), PunctuationType.STREAM_TIME, lambda t: None)

    def process(self, record):
        if record.key() is None:
            return
        self.store.get(record.key())
        self.store.put(record.key(), record.value())
        self.context().forward(record)


def topology():
    """The Java program's topology: in -> filter -> process(st) -> out; in2 -> windowed count."""
    b = StreamsBuilder()
    b.addStateStore(Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore("st"), S, S))
    b.stream("in", Consumed.with_(S, S)).filter(lambda k, v: v != "x").process(StoreAndForward, "st").to("out")
    b.stream("in2", Consumed.with_(S, S)).groupByKey().windowedBy(
        TimeWindows.ofSizeAndGrace(timedelta(milliseconds=10), timedelta(0))).count()
    return b.build()


def node(name: str, node: str) -> MetricName:
    return MetricName(name, "stream-processor-node-metrics", (("thread-id", "main"), ("task-id", "0_0"),
                                                              ("processor-node-id", node)))


def task(name: str) -> MetricName:
    return MetricName(name, "stream-task-metrics", (("thread-id", "main"), ("task-id", "0_0")))


def test_driver_metrics_are_kafka_streams_own_for_the_same_topology_and_input():
    """Kafka Streams 4.3.1's TopologyTestDriver (metrics.recording.level=DEBUG) reported for this
    topology and input: record-e2e-latency at the sources and the terminal nodes (the sink and the
    windowed count, which has no downstream), none at the filter and the processor; source
    process-total 3 and 2, rates over 30 s; task process-total 5, punctuate-total 4,
    dropped-records-total 1 (the late window record)."""
    with TopologyTestDriver(topology(), {"application.id": "app"}, initialWallClockTime=NOW) as d:
        i, i2 = d.createInputTopic("in", S, S), d.createInputTopic("in2", S, S)
        i.pipeInput("a", "1", 5)
        i.pipeInput("b", "x", 20)
        i.pipeInput(None, "2", 30)
        i2.pipeInput("a", "1", 100)
        i2.pipeInput("a", "1", 5)  # window [0, 10) closed at stream time 100: dropped (Kafka: expired window)
        m = d.metrics()
    src, src2, sink, agg = "KSTREAM-SOURCE-0000000000", "KSTREAM-SOURCE-0000000004", "KSTREAM-SINK-0000000003", \
        "KSTREAM-AGGREGATE-0000000006"
    e2e = {n: tuple(m[node(f"record-e2e-latency-{s}", n)] for s in ("avg", "min", "max")) for n in (src, src2, sink, agg)}
    assert e2e == {src: (NOW - 55 / 3, NOW - 30, NOW - 5), sink: (NOW - 5, NOW - 5, NOW - 5),
                   src2: (NOW - 52.5, NOW - 100, NOW - 5), agg: (NOW - 52.5, NOW - 100, NOW - 5)}
    assert not [k for k in m if k.name.startswith("record-e2e") and k.tag("processor-node-id") not in e2e]
    assert m[node("process-total", src)] == 3 and m[node("process-total", src2)] == 2
    assert m[node("process-rate", src)] == 3 / 30 and m[node("process-rate", src2)] == 2 / 30
    assert m[task("process-total")] == 5 and m[task("process-rate")] == 5 / 30
    assert m[task("dropped-records-total")] == 1 and m[task("dropped-records-rate")] == 1 / 30
    assert m[task("punctuate-total")] == 4


def test_driver_rates_and_latencies_follow_the_mock_clock_windows():
    """Kafka's Rate: what the live windows hold over at least (samples - 1) windows; a sample
    expires samples x window after it started; an e2e latency with no live sample is NaN."""
    with TopologyTestDriver(topology(), {"metrics.sample.window.ms": 1_000}, initialWallClockTime=NOW) as d:
        i = d.createInputTopic("in", S, S)
        for n in range(4):
            i.pipeInput("a", str(n), 0)
        d.advanceWallClockTime(500)
        assert d.metrics()[task("process-rate")] == 4 / 1.5  # elapsed 0.5 s + 1 window: at least (2 - 1) full
        i.pipeInput("a", "4", 0)
        d.advanceWallClockTime(1_000)  # the first window started at NOW: live until NOW + 2 s
        m = d.metrics()
        assert m[task("process-rate")] == 5 / 1.5 and m[task("process-total")] == 5
        assert m[node("record-e2e-latency-max", "KSTREAM-SOURCE-0000000000")] == NOW + 500
        d.advanceWallClockTime(2_000)
        m = d.metrics()
        assert m[task("process-rate")] == 0.0 and m[task("process-total")] == 5
        assert math.isnan(m[node("record-e2e-latency-avg", "KSTREAM-SOURCE-0000000000")])


def test_sampled_stats_keep_min_max_avg_of_live_samples():
    s = SampledMetrics(windowMs=100, numSamples=2)
    e2e = MetricName("record-e2e-latency", "g", ())
    s.record(e2e, "stat", 0, 30.0, 3, 5.0, 15.0)  # 3 records: sum 30, min 5, max 15
    s.record(e2e, "stat", 150, 10.0, 1)
    values = s.values(150)
    assert [values[MetricName(f"record-e2e-latency-{x}", "g", ())] for x in ("avg", "min", "max")] == [10.0, 5.0, 15.0]
    values = s.values(200)  # the first sample (started at 0) expired
    assert [values[MetricName(f"record-e2e-latency-{x}", "g", ())] for x in ("avg", "min", "max")] == [10.0, 10.0, 10.0]


def test_task_rows_merge_min_max_and_sum_and_percentiles_read_the_histogram():
    total = {}
    mergeEncoded(total, {"a-total|g": 2, "e-min|g": 5, "e-max|g": 9})
    mergeEncoded(total, {"a-total|g": 3, "e-min|g": 4, "e-max|g": 7})
    assert total == {"a-total|g": 5, "e-min|g": 4, "e-max|g": 9}
    # buckets 9 % apart: bucket 81 ends at 2^(81/8) ms; 0 holds latencies under 1 ms
    histogram = {0: 10, 81: 80, 97: 10}
    assert percentileMs(histogram, 0.5) == 2 ** (81 / 8) and percentileMs(histogram, 0.95) == 2 ** (97 / 8)
    assert percentileMs({}, 0.5) is None


def test_host_metrics_of_a_batch_name_threads_tasks_and_lags_as_kafka_does():
    """A sub-topology's query is a stream thread (thread-id <client.id>-StreamThread-<n + 1>), its
    micro-batch a commit; a task's timings are ns (TaskMetrics), the thread's ms (ThreadMetrics)."""
    clock = [100.0]
    h = HostMetrics("app", 30_000, 2, clock=lambda: clock[0])
    row = {"process-total|stream-task-metrics|task-id=1_0": 6, "dropped-records-total|stream-task-metrics|task-id=1_0": 1,
           "record-e2e-latency-count|stream-processor-node-metrics|task-id=1_0|processor-node-id=src": 6,
           "record-e2e-latency-sum|stream-processor-node-metrics|task-id=1_0|processor-node-id=src": 600,
           "record-e2e-latency-min|stream-processor-node-metrics|task-id=1_0|processor-node-id=src": 50,
           "record-e2e-latency-max|stream-processor-node-metrics|task-id=1_0|processor-node-id=src": 150,
           h.commitCounter(1): 1}
    addSample(row, "process-latency", "1_0", 20_000)
    addSample(row, "commit-latency", "1_0", 3e6)
    h.addBatch(1, "q", 0, row)
    h.addBatch(1, "q", 0, row)  # the same batch reported twice: once
    totals = {MetricName.decode(k): v for k, v in row.items() if k.split("|")[0].endswith("-total")}
    m = h.present(totals, {1: {("in", 0): 7}})
    thread = (("thread-id", "app-StreamThread-2"),)
    t = thread + (("task-id", "1_0"),)
    assert m[MetricName("process-total", "stream-thread-metrics", thread)] == 6
    assert m[MetricName("process-rate", "stream-thread-metrics", thread)] == 6 / 30
    assert m[MetricName("commit-total", "stream-thread-metrics", thread)] == 1
    assert m[MetricName("commit-rate", "stream-thread-metrics", thread)] == 1 / 30
    assert m[MetricName("commit-latency-avg", "stream-thread-metrics", thread)] == 3.0  # ms
    assert m[MetricName("process-latency-max", "stream-thread-metrics", thread)] == 0.02  # ms per record
    assert m[MetricName("process-latency-avg", "stream-task-metrics", t)] == 20_000  # ns per record
    assert m[MetricName("dropped-records-total", "stream-task-metrics", t)] == 1
    assert m[MetricName("dropped-records-rate", "stream-task-metrics", t)] == 1 / 30
    src = t + (("processor-node-id", "src"),)
    assert [m[MetricName(f"record-e2e-latency-{s}", "stream-processor-node-metrics", src)] for s in ("avg", "min", "max")] \
        == [100, 50, 150]
    assert m[MetricName("records-lag", "consumer-fetch-manager-metrics",
                        (("client-id", "app-StreamThread-2-consumer"), ("topic", "in"), ("partition", "0")))] == 7


def test_a_stream_thread_s_commits_merged_into_one_row_keep_their_timings_average_and_max():
    """A continuous run's stream thread sends the rows of its commits of the last second merged
    (``mergeEncoded``): the timings' samples (``addSample``) still give Kafka's per-commit
    ``commit-latency-avg``/``-max`` (ms) and the task's ``process-latency-avg``/``-max`` (ns)."""
    h = HostMetrics("app", 30_000, 2, clock=lambda: 100.0)
    merged: dict[str, float] = {}
    for commitNs, perRecordNs in ((2e6, 10_000), (6e6, 30_000), (1e6, 20_000)):
        row = {"process-total|stream-task-metrics|task-id=0_1": 5}
        addSample(row, "commit-latency", "0_1", commitNs)
        addSample(row, "process-latency", "0_1", perRecordNs)
        mergeEncoded(merged, row)
    h.addBatch(0, "thread-0", 1, merged)
    m = h.present({}, {})
    thread = (("thread-id", "app-StreamThread-1"),)
    assert m[MetricName("commit-latency-avg", "stream-thread-metrics", thread)] == 3.0
    assert m[MetricName("commit-latency-max", "stream-thread-metrics", thread)] == 6.0
    task = thread + (("task-id", "0_1"),)
    assert m[MetricName("process-latency-avg", "stream-task-metrics", task)] == 20_000
    assert m[MetricName("process-latency-max", "stream-task-metrics", task)] == 30_000
    assert m[MetricName("process-rate", "stream-thread-metrics", thread)] == 15 / 30
    assert MetricName("commit-latency-avg", "stream-task-metrics", task) not in m  # Kafka's tasks have none


def test_prometheus_names_follow_the_jmx_exporter_convention_and_the_endpoint_serves_them():
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families

    assert prometheusName(MetricName("dropped-records-total", "stream-task-metrics", ())) \
        == "kafka_streams_stream_task_metrics_dropped_records_total"
    assert prometheusName(MetricName("records-lag", "consumer-fetch-manager-metrics", ())) \
        == "kafka_consumer_consumer_fetch_manager_metrics_records_lag"
    assert prometheusName(MetricName("dropped-records-total", "kspark-dropped-records", ())) \
        == "kspark_dropped_records_dropped_records_total"
    metrics = {MetricName("process-total", "stream-task-metrics", (("thread-id", "t-1"), ("task-id", "0_0"))): 5,
               MetricName("record-e2e-latency-avg", "stream-processor-node-metrics",
                          (("thread-id", "t-1"), ("task-id", "0_0"), ("processor-node-id", "n"))): math.nan}
    exporter = PrometheusExporter(lambda: metrics, 0, "127.0.0.1")
    try:
        text = urllib.request.urlopen(f"http://127.0.0.1:{exporter.port}/metrics", timeout=10).read().decode()
    finally:
        exporter.close()
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for f in text_string_to_metric_families(text) for s in f.samples}
    assert samples[("kafka_streams_stream_task_metrics_process_total", (("task_id", "0_0"), ("thread_id", "t-1")))] == 5
    assert math.isnan(samples[("kafka_streams_stream_processor_node_metrics_record_e2e_latency_avg",
                               (("processor_node_id", "n"), ("task_id", "0_0"), ("thread_id", "t-1")))])

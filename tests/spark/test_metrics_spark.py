"""KafkaStreams.metrics() under Kafka Streams' names, scraped from the Prometheus endpoint
(``kspark.metrics.prometheus.port``) of a real Spark-host run on local topics (issue 34 section 2).

Kafka's names, groups and tags as Kafka Streams 4.3.1 reports them (ThreadMetrics, TaskMetrics,
ProcessorNodeMetrics: ``stream-thread-metrics``/``stream-task-metrics``/
``stream-processor-node-metrics``, tags ``thread-id``, ``task-id``, ``processor-node-id``); the
consumer's ``records-lag`` (``consumer-fetch-manager-metrics``, ``client-id``, ``topic``,
``partition``). Dropped records: rule T-8 (a record that does not deserialize is skipped and counted).
With ``metrics.recording.level`` DEBUG, the count's store has Kafka's StateStoreMetrics
(``stream-state-metrics``, tag ``rocksdb-state-id``: ``put-rate``, ``get-rate``, latencies in ns),
rule MT-1 of tests/unit/test_store_metrics.py."""

import socket
import time
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from kspark import (Consumed, Grouped, KafkaStreams, LogAndContinueExceptionHandler, Materialized, Produced, Serdes,
                    StreamsBuilder)
from kspark.runtime.metrics import MetricName
from kspark.runtime.partitioner import partitionForKey
from kspark.topics import LocalTopics

THREAD = "metrics-app-StreamThread-1"


def freePort() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape(port: int) -> dict[tuple, float]:
    """``{(sample name, sorted labels): value}`` of the endpoint's text, parsed by prometheus_client."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_metrics_scraped_from_prometheus_have_kafka_names_and_the_run_s_values(spark, tmp_path, capsys):
    topics = LocalTopics(tmp_path / "topics")
    for name in ("in", "out"):
        topics.createTopic(name, 2)
    timestamp = int(time.time() * 1000) - 5_000  # every record 5 s old when the run starts
    good = [(f"k{i}".encode(), i.to_bytes(8, "big"), timestamp) for i in range(7)]
    poison = [(b"k1", b"not-a-long", timestamp), (b"k4", b"\x01", timestamp), (b"k5", b"\x02", timestamp)]
    topics.produce("in", good + poison, partitioner=partitionForKey)
    perTask = {p: sum(1 for k, _, _ in good if partitionForKey(k, 2) == p) for p in (0, 1)}
    droppedPerTask = {p: sum(1 for k, _, _ in poison if partitionForKey(k, 2) == p) for p in (0, 1)}
    assert all(perTask.values()) and sum(droppedPerTask.values()) == 3

    b = StreamsBuilder()
    source = b.stream("in", Consumed.with_(Serdes.String(), Serdes.Long()).withName("src"))
    source.mapValues(lambda v: v * 10, named="times-ten").to(
        "out", Produced.with_(Serdes.String(), Serdes.Long()).withName("sink"))
    # a get and a put on the store "counts" per record
    source.groupByKey(Grouped.with_(Serdes.String(), Serdes.Long())).count(Materialized.as_("counts"))
    port = freePort()
    streams = KafkaStreams(b.build(), {
        "application.id": "metrics-app", "kspark.topics.dir": str(tmp_path / "topics"),
        "state.dir": str(tmp_path / "state"), "kspark.progress": "plain",
        "deserialization.exception.handler": LogAndContinueExceptionHandler,
        "kspark.metrics.prometheus.port": port, "metrics.recording.level": "DEBUG",
    }, spark=spark)
    started = time.time() * 1000
    streams.start()
    assert streams.prometheusPort() == port
    streams.awaitTermination()
    ended = time.time() * 1000
    metrics = streams.metrics()
    scraped = scrape(port)
    streams.close()

    def value(name: str, **labels) -> float:
        return scraped[(name, tuple(sorted(labels.items())))]

    # records processed: per task (Kafka's source-node sensor's parent), per source node, per thread
    for p, n in perTask.items():
        task = f"0_{p}"
        assert value("kafka_streams_stream_task_metrics_process_total", thread_id=THREAD, task_id=task) == n
        assert value("kafka_streams_stream_processor_node_metrics_process_total", thread_id=THREAD, task_id=task,
                     processor_node_id="src") == n
        assert value("kafka_streams_stream_task_metrics_dropped_records_total", thread_id=THREAD,
                     task_id=task) == droppedPerTask[p]
        assert value("kspark_dropped_records_dropped_records_total", thread_id=THREAD, task_id=task,
                     processor_node_id="src", reason="deserialization error") == droppedPerTask[p]
        # the input partition's lag after the run: caught up
        assert value("kafka_consumer_consumer_fetch_manager_metrics_records_lag", client_id=f"{THREAD}-consumer",
                     topic="in", partition=str(p)) == 0
        # record-e2e-latency (ms) of the source and the terminal sink, between the run's bounds
        for node in ("src", "sink"):
            lo, avg, hi = (value(f"kafka_streams_stream_processor_node_metrics_record_e2e_latency_{s}",
                                 thread_id=THREAD, task_id=task, processor_node_id=node) for s in ("min", "avg", "max"))
            assert started - timestamp <= lo <= avg <= hi <= ended - timestamp
        # no e2e latency at a node that is neither a source nor terminal
        assert ("kafka_streams_stream_processor_node_metrics_record_e2e_latency_avg",
                tuple(sorted({"thread_id": THREAD, "task_id": task, "processor_node_id": "times-ten"}.items()))) \
            not in scraped
        # DEBUG's store metrics of the count's store (RocksDB on the Spark host): a get and a put
        # per record of the task, per second over the live windows (at least 30 s); ns per call
        for op in ("get", "put"):
            store = {"thread_id": THREAD, "task_id": task, "rocksdb_state_id": "counts"}
            assert 0 < value(f"kafka_streams_stream_state_metrics_{op}_rate", **store) <= n / 30
            assert 0 < value(f"kafka_streams_stream_state_metrics_{op}_latency_avg", **store) \
                <= value(f"kafka_streams_stream_state_metrics_{op}_latency_max", **store)
        # a task's process latency per record (ns) of its batches
        assert value("kafka_streams_stream_task_metrics_process_latency_avg", thread_id=THREAD, task_id=task) > 0
    assert value("kafka_streams_stream_thread_metrics_process_total", thread_id=THREAD) == len(good)
    batches = value("kafka_streams_stream_thread_metrics_commit_total", thread_id=THREAD)
    assert batches >= 1
    # rates per second over the live windows (2 of 30 s: at least 30 s of elapsed time)
    assert 0 < value("kafka_streams_stream_thread_metrics_process_rate", thread_id=THREAD) <= len(good) / 30
    assert 0 < value("kafka_streams_stream_thread_metrics_commit_rate", thread_id=THREAD) <= batches / 30
    assert 0 < value("kafka_streams_stream_task_metrics_dropped_records_rate", thread_id=THREAD, task_id="0_0") \
        <= droppedPerTask[0] / 30
    assert 0 < value("kafka_streams_stream_thread_metrics_commit_latency_avg", thread_id=THREAD) \
        <= value("kafka_streams_stream_thread_metrics_commit_latency_max", thread_id=THREAD)

    # metrics() holds the same values under Kafka's MetricNames
    assert metrics[MetricName("process-total", "stream-task-metrics",
                              (("thread-id", THREAD), ("task-id", "0_0")))] == perTask[0]
    assert metrics[MetricName("process-total", "stream-thread-metrics", (("thread-id", THREAD),))] == len(good)
    assert 0 < metrics[MetricName("put-rate", "stream-state-metrics",
                              (("thread-id", THREAD), ("task-id", "0_1"), ("rocksdb-state-id", "counts")))] \
        <= perTask[1] / 30  # a rate's elapsed time runs on the clock: each read differs a little
    assert metrics[MetricName("records-lag", "consumer-fetch-manager-metrics",
                              (("client-id", f"{THREAD}-consumer"), ("topic", "in"), ("partition", "1")))] == 0

    # the plain progress lines and the summary show the output records' e2e latency p50/p95
    out = capsys.readouterr().out
    summary = [line for line in out.splitlines() if line.startswith("end-to-end latency of output records: p50 ")]
    assert len(summary) == 1
    p50, p95 = (float(part.split()[1].replace(",", "")) for part in summary[0].split(": ", 1)[1].split(", "))
    assert started - timestamp <= p50 <= p95 <= (ended - timestamp) * 1.1  # bucket bounds 9 % apart
    assert ", e2e p50 " in out

"""The Spark host's metrics under Kafka Streams' names, and their Prometheus endpoint.

Each task returns one small row of figures with its micro-batch (``Metrics.encoded``: counters,
``record-e2e-latency`` count/sum/min/max per source and terminal node, an output latency
histogram, the batch's process/commit/punctuate timings as ``addSample``'s sum/count/max);
Spark's ``observe`` brings the rows to the driver with the batch's progress event (no records
travel). The driver keeps the
``-total`` counters in ``state.dir`` (``KafkaStreams.metrics()`` sums every run) and
:class:`HostMetrics` the windowed rates and latencies of this run (``metrics.num.samples``
windows of ``metrics.sample.window.ms``, as Kafka's sensors).

Kafka Streams' names, groups and tags (checked against Kafka Streams 4.3.1's own metrics):

- a *stream thread* is one sub-topology's query, ``thread-id`` =
  ``<client.id or application.id>-StreamThread-<sub-topology + 1>``; its *commit* is a
  micro-batch (in a continuous run, ``kspark.spark._stream_threads``, the thread-id is the
  sub-topology's too, and a commit is each commit of a stream thread holding one of its tasks,
  fed second by second): ``stream-thread-metrics`` ``process-rate``/``-total`` (records),
  ``process-latency-avg``/``-max`` (ms per record of a task's batch), ``commit-rate``/``-total``
  (micro-batches), ``commit-latency-avg``/``-max`` (ms a task takes to commit its batch: record
  caches, stores, changelogs, checkpoint), ``punctuate-rate``/``-total``/``-latency-avg``/``-max``;
- ``stream-task-metrics`` (``thread-id``, ``task-id``): ``process-rate``/``-total``,
  ``process-latency-avg``/``-max`` (ns per record of a batch), ``dropped-records-rate``/``-total``,
  ``punctuate-rate``/``-total``/``-latency-avg``/``-max`` (ns);
- ``stream-processor-node-metrics`` (``thread-id``, ``task-id``, ``processor-node-id``):
  ``record-e2e-latency-avg``/``-min``/``-max`` (ms) of source nodes (at the wall-clock time the
  task's batch starts) and terminal nodes (when it has processed its records), and
  ``process-rate``/``-total`` (Kafka counts source nodes only; kspark every node);
- ``stream-state-metrics`` (``thread-id``, ``task-id``, ``<store type>-state-id``), with
  ``metrics.recording.level`` ``DEBUG`` only (Kafka's level for them): ``<op>-rate`` and
  ``<op>-latency-avg``/``-max`` (ns per call) of the operations on a task's stores
  (``put``, ``get``, ``fetch``...: ``kspark.runtime.store_metrics``), from the calls and ns
  each task counted in its batch; a store operation not called in this run is not shown;
- ``consumer-fetch-manager-metrics`` ``records-lag`` (``client-id`` =
  ``<thread-id>-consumer``, ``topic``, ``partition``): the input partition's lag as the last
  micro-batch left it.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections import defaultdict
from typing import Callable

from ..runtime.metrics import (CONSUMER_GROUP, E2E, E2E_HISTOGRAM_GROUP, NODE_GROUP, SAMPLE_NAMES, STATE_GROUP,
                               STORE_CALL_SUFFIXES, TASK_GROUP, THREAD_GROUP, MetricName, SampledMetrics, rateName,
                               withThreadId)

__all__ = ["HostMetrics", "PrometheusExporter", "prometheusName", "threadId"]

log = logging.getLogger("kspark.metrics")

_THREAD_TOTALS = ("process-total", "punctuate-total")  # a thread's: its tasks' summed


def threadId(clientId: str, subtopology: int) -> str:
    """Kafka's ``thread-id`` of a sub-topology's query: ``<clientId>-StreamThread-<n + 1>``."""
    return f"{clientId}-StreamThread-{subtopology + 1}"


def persisted(counters: dict[str, float]) -> dict[str, float]:
    """The counters of a batch that ``state.dir`` sums over runs: the ``-total`` ones."""
    return {k: v for k, v in counters.items() if k.split("|", 1)[0].endswith("-total")}


class HostMetrics:
    """What the driver knows of this run's metrics beyond ``state.dir``'s totals (thread-safe):
    the windowed rates and latencies, fed one micro-batch at a time."""

    def __init__(self, clientId: str, windowMs: int, numSamples: int, clock: Callable[[], float] = time.time) -> None:
        self.clientId = clientId
        self._sampled = SampledMetrics(windowMs, numSamples)
        self._clock = clock
        self._lock = threading.Lock()
        self._lastBatch: dict[tuple[int, str], int] = {}  # (sub-topology, checkpoint) -> last batch recorded

    def threadOfTask(self, taskId: str | None) -> str | None:
        head = (taskId or "").split("_", 1)[0]
        return threadId(self.clientId, int(head)) if head.isdigit() else None

    def commitCounter(self, subtopology: int) -> str:
        """The encoded name of a thread's ``commit-total`` (one per micro-batch, kept in ``state.dir``)."""
        return MetricName("commit-total", THREAD_GROUP, (("thread-id", threadId(self.clientId, subtopology)),)).encode()

    def addBatch(self, subtopology: int, checkpointId: str, batchId: int, counters: dict[str, float]) -> None:
        """Record one micro-batch's figures (its tasks' rows merged, ``mergeEncoded``), once
        (Spark may report a batch's progress twice)."""
        with self._lock:
            if self._lastBatch.get((subtopology, checkpointId), -1) >= batchId:
                return
            self._lastBatch[(subtopology, checkpointId)] = batchId
        now = int(self._clock() * 1000)
        thread = threadId(self.clientId, subtopology)
        threadTags = (("thread-id", thread),)
        record = self._sampled.record
        summaries: dict[tuple, dict[str, float]] = defaultdict(dict)
        samples: dict[str, dict[tuple, dict[str, float]]] = defaultdict(dict)
        threadTotals: dict[str, float] = defaultdict(float)
        storeCalls: dict[tuple, dict[str, float]] = defaultdict(dict)
        with self._lock:
            for key, value in counters.items():
                name = MetricName.decode(key)
                if name.name.endswith("-total"):
                    rate = rateName(name)
                    if rate is not None and value:
                        record(withThreadId(rate, thread), "rate", now, value)
                    if name.group == TASK_GROUP and name.name in _THREAD_TOTALS:
                        threadTotals[name.name] += value
                elif name.group == NODE_GROUP and name.name.startswith(E2E + "-"):
                    summaries[name.tags][name.name[len(E2E) + 1:]] = value
                elif name.name.rpartition("-")[0] in SAMPLE_NAMES:  # addSample's -sum, -count, -max
                    sample, _, stat = name.name.rpartition("-")
                    samples[sample].setdefault(name.tags, {})[stat] = value
                elif name.group == STATE_GROUP:  # <op>-calls, <op>-latency-sum, <op>-latency-max
                    for suffix in STORE_CALL_SUFFIXES:
                        if name.name.endswith(suffix):
                            storeCalls[(name.name[: -len(suffix)], name.tags)][suffix] = value
                            break
            for (op, tags), s in storeCalls.items():
                if s.get("-calls"):  # Kafka's StateStoreMetrics: <op>-rate, <op>-latency-avg/-max (ns)
                    record(withThreadId(MetricName(f"{op}-rate", STATE_GROUP, tags), thread), "rate", now, s["-calls"])
                    hi = s.get("-latency-max", 0.0)
                    record(withThreadId(MetricName(f"{op}-latency", STATE_GROUP, tags), thread), "stat", now,
                           s.get("-latency-sum", 0.0), int(s["-calls"]), hi, hi)
            for tags, s in summaries.items():
                if s.get("count"):
                    record(withThreadId(MetricName(E2E, NODE_GROUP, tags), thread), "stat", now, s["sum"],
                           int(s["count"]), s["min"], s["max"])
            for total, value in threadTotals.items():
                if value:
                    record(MetricName(total[: -len("-total")] + "-rate", THREAD_GROUP, threadTags), "rate", now, value)
            for sample, byTask in samples.items():
                for tags, s in byTask.items():
                    n, ns, hi = int(s.get("count", 0)), s.get("sum", 0.0), s.get("max", 0.0)
                    if not n:
                        continue
                    # the task's figures in ns (Kafka's task-level sensors), the thread's in ms
                    if sample != "commit-latency":  # Kafka's tasks have commit-rate/-total only
                        record(withThreadId(MetricName(sample, TASK_GROUP, tags), thread), "stat", now, ns, n, hi, hi)
                    record(MetricName(sample, THREAD_GROUP, threadTags), "stat", now, ns / 1e6, n, hi / 1e6, hi / 1e6)

    def present(self, totals: dict[MetricName, float], lags: dict[int, dict[tuple[str, int], int]]) -> dict[MetricName, float]:
        """Kafka's metrics: ``totals`` (``state.dir``'s counters, by name without ``thread-id``)
        with their ``thread-id``, the threads' totals, every rate and windowed latency, and the
        input partitions' ``records-lag`` (``lags``: sub-topology -> {(topic, partition): lag})."""
        out: dict[MetricName, float] = {}
        for name, value in totals.items():
            thread = self.threadOfTask(name.tag("task-id"))
            if thread is not None:
                name = withThreadId(name, thread)
                if name.group == TASK_GROUP and name.name in _THREAD_TOTALS:
                    key = MetricName(name.name, THREAD_GROUP, (("thread-id", thread),))
                    out[key] = out.get(key, 0) + value
            out[name] = out.get(name, 0) + value
        for name in list(out):  # a total without events in the live windows has rate 0
            rate = rateName(name)
            if rate is not None:
                out.setdefault(rate, 0.0)
        with self._lock:
            out.update(self._sampled.values(int(self._clock() * 1000)))
        for sub, partitions in lags.items():
            client = threadId(self.clientId, sub) + "-consumer"
            for (topic, partition), lag in partitions.items():
                out[MetricName("records-lag", CONSUMER_GROUP,
                               (("client-id", client), ("topic", topic), ("partition", str(partition))))] = float(lag)
        return out


# ---------------------------------------------------------------------------- Prometheus
_INVALID = re.compile(r"[^a-zA-Z0-9_]")


def prometheusName(metric: MetricName) -> str:
    """The Prometheus name of a metric, as the JMX exporter's usual Kafka rules name the MBean
    ``<domain>:type=<group>,...`` attribute ``<name>``: ``kafka_streams_<group>_<name>`` for
    Streams' groups, ``kafka_consumer_<group>_<name>`` for the consumer's, ``kspark_<group
    without "kspark-">_<name>`` for kspark's own; characters other than letters, digits and
    ``_`` become ``_`` (``stream-task-metrics`` ``dropped-records-total`` ->
    ``kafka_streams_stream_task_metrics_dropped_records_total``)."""
    group = metric.group
    if group.startswith("kspark-"):
        domain, group = "kspark", group[len("kspark-"):]
    elif group.startswith("consumer-"):
        domain = "kafka_consumer"
    else:
        domain = "kafka_streams"
    return _INVALID.sub("_", f"{domain}_{group}_{metric.name}")


def _labels(metric: MetricName) -> dict[str, str]:
    return {_INVALID.sub("_", k): v for k, v in metric.tags}


class PrometheusExporter:
    """Serves ``collect()``'s metrics on ``port`` (HTTP ``/metrics``, Prometheus' text format)
    with prometheus-client: each scrape reads them anew. ``-total`` metrics are counters, the
    others gauges; one metric family per Prometheus name, the tags as labels. kspark's output
    latency histogram (``kspark-record-e2e-latency``, the progress view's p50/p95) is left out."""

    def __init__(self, collect: Callable[[], dict[MetricName, float]], port: int, host: str = "0.0.0.0") -> None:
        from prometheus_client import CollectorRegistry, start_http_server

        self._collect = collect
        self._registry = CollectorRegistry(auto_describe=False)
        self._registry.register(self)
        self._server, self._thread = start_http_server(port, host, registry=self._registry)
        self.port = self._server.server_address[1]
        log.info("Prometheus metrics on port %d", self.port)

    def describe(self):  # no descriptions up front: the names depend on the run
        return []

    def collect(self):
        from prometheus_client.core import Metric

        families: dict[str, Metric] = {}
        try:
            metrics = self._collect()
        except Exception:  # noqa: BLE001 - a scrape must not kill the endpoint; say why it is empty
            log.warning("The metrics could not be read for a Prometheus scrape", exc_info=True)
            return []
        for metric, value in sorted(metrics.items(), key=lambda item: (prometheusName(item[0]), item[0].tags)):
            if metric.group == E2E_HISTOGRAM_GROUP:
                continue
            name = prometheusName(metric)
            counter = metric.name.endswith("-total")
            family = families.get(name)
            if family is None:
                base = name[: -len("_total")] if counter else name
                family = families[name] = Metric(base, f"Kafka Streams' {metric.group} {metric.name}",
                                                 "counter" if counter else "gauge")
            family.add_sample(name, _labels(metric), float(value))
        return list(families.values())

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

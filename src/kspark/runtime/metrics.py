"""The runtime's metrics, named like Kafka Streams' (group, name, tags).

A ``MetricName`` is (name, group, tags). A task keeps :class:`Metrics`: monotonic counters
(``process-total`` per processor node, ``dropped-records-total``, ``punctuate-total``...), the
timestamps of the records its source and terminal nodes processed (turned into
``record-e2e-latency`` summaries by :meth:`Metrics.recordLatencies`). The hosts present them: ``TopologyTestDriver.metrics()`` and
``KafkaStreams.metrics()`` add Kafka's ``thread-id`` tag, the windowed rates and averages
(:class:`SampledMetrics`, Kafka's ``SampledStat`` over ``metrics.num.samples`` windows of
``metrics.sample.window.ms``), and the thread-level figures.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import NamedTuple

__all__ = ["MetricName", "Metrics", "SampledMetrics", "addSample"]

STORE_CALL_SUFFIXES = ("-calls", "-latency-sum", "-latency-max")
"""The figures of a store operation in a task's metrics row (:meth:`Metrics.encoded`)."""

THREAD_GROUP = "stream-thread-metrics"
TASK_GROUP = "stream-task-metrics"
NODE_GROUP = "stream-processor-node-metrics"
CONSUMER_GROUP = "consumer-fetch-manager-metrics"
DROP_REASON_GROUP = "kspark-dropped-records"
STATE_GROUP = "stream-state-metrics"
E2E_HISTOGRAM_GROUP = "kspark-record-e2e-latency"
"""kspark's histogram of the end-to-end latency (ms) of the records written to output topics
(sinks to topics other than internal ones), for the progress view's p50/p95: counts per
:func:`latencyBucket`, summed over tasks."""

E2E = "record-e2e-latency"
# a task's timings (ns) in its metrics row, as <sample>-sum, -count and -max (addSample)
SAMPLE_NAMES = ("process-latency", "commit-latency", "punctuate-latency")
# Kafka's per-thread and per-task names that carry a thread-id tag
_THREADED_GROUPS = (TASK_GROUP, NODE_GROUP, STATE_GROUP, DROP_REASON_GROUP)
_BUCKETS_PER_OCTAVE = 8


class MetricName(NamedTuple):
    name: str
    group: str
    tags: tuple[tuple[str, str], ...]

    def tag(self, key: str) -> str | None:
        return dict(self.tags).get(key)

    def encode(self) -> str:
        return "|".join([self.name, self.group] + [f"{k}={v}" for k, v in self.tags])

    @staticmethod
    def decode(text: str) -> "MetricName":
        name, group, *tags = text.split("|")
        return MetricName(name, group, tuple(tuple(t.split("=", 1)) for t in tags))  # type: ignore[misc]


def withThreadId(name: MetricName, threadId: str) -> MetricName:
    """``name`` with Kafka's ``thread-id`` tag first, for task-, node- and store-level names
    that have none (the engine's tasks do not know their host's threads)."""
    if name.group in _THREADED_GROUPS and not any(k == "thread-id" for k, _ in name.tags):
        return MetricName(name.name, name.group, (("thread-id", threadId),) + name.tags)
    return name


def latencyBucket(ms: float) -> int:
    """The histogram bucket of a latency of ``ms``: 0 for < 1 ms, else ``floor(log2(ms) * 8) + 1``
    (8 buckets per doubling: a bucket's bounds are 9 % apart)."""
    return 0 if ms < 1 else int(math.log2(ms) * _BUCKETS_PER_OCTAVE) + 1


def bucketUpperMs(bucket: int) -> float:
    """The upper bound (ms) of :func:`latencyBucket`'s ``bucket``."""
    return 1.0 if bucket <= 0 else 2 ** (bucket / _BUCKETS_PER_OCTAVE)


def percentileMs(histogram: dict[int, float], q: float) -> float | None:
    """The ``q``-quantile (0..1) of a latency histogram ``{bucket: count}`` as its bucket's upper
    bound (ms), or None when it is empty."""
    total = sum(histogram.values())
    if total <= 0:
        return None
    rank, seen = q * total, 0.0
    for bucket in sorted(histogram):
        seen += histogram[bucket]
        if seen >= rank:
            return bucketUpperMs(bucket)
    return bucketUpperMs(max(histogram))


class Metrics:
    """The metrics of one task (or one driver): monotonic counters and end-to-end latencies."""

    def __init__(self) -> None:
        self.counters: defaultdict[MetricName, float] = defaultdict(float)
        # hot counters kept as plain int attributes of their owners (a processor node's
        # ``processed``), read here: no MetricName hashing per record
        self._sources: list = []
        # the task's process-total: the processed counts of its (non-global) source nodes
        self._taskProcess: MetricName | None = None
        self._inputNodes: list = []
        # (node, source?, output sink?, name prefix tags): nodes whose records' timestamps are
        # kept in ``node.stamps`` (ints) and ``node.stampArrays`` (numpy arrays) until recordLatencies
        self._latencyNodes: list = []
        self.latencies: dict[tuple, list] = {}  # tags -> [count, sum, min, max] (ms)
        self.histogram: defaultdict[int, int] = defaultdict(int)  # output e2e latency buckets
        # metrics.recording.level DEBUG: [calls, ns, max ns] of each metered store operation, by
        # its name without suffix (``put``, ``stream-state-metrics``, task and store tags); the
        # store's wrappers (kspark.runtime.store_metrics) add to the lists in place
        self.storeOps: dict[MetricName, list] = {}

    def addSource(self, owner) -> None:
        """Count ``owner.processed`` as metric ``owner.processCounter`` (kspark internal)."""
        self._sources.append(owner)

    def addInputNode(self, owner, taskId: str) -> None:
        """``owner`` (a source node) counts in the task's ``process-total``."""
        self._inputNodes.append(owner)
        self._taskProcess = MetricName("process-total", TASK_GROUP, (("task-id", taskId),))

    def addLatencyNode(self, owner, taskId: str, source: bool, output: bool) -> None:
        """Keep ``record-e2e-latency`` of ``owner`` (a source or terminal node, Kafka's
        ``ProcessorNodeMetrics.e2ELatencySensor``): its code appends the timestamp of each record
        it processes to ``owner.stamps`` (or a numpy array of them to ``owner.stampArrays``);
        ``output``: a sink to a topic that is not internal (counted in :data:`E2E_HISTOGRAM_GROUP`)."""
        owner.stamps, owner.stampArrays = [], []
        self._latencyNodes.append((owner, source, output, (("task-id", taskId), ("processor-node-id", owner.name))))

    def recordLatencies(self, sourceNow: int, terminalNow: int) -> None:
        """Turn the timestamps kept since the last call into latency summaries: a source node's
        records at wall-clock time ``sourceNow`` (ms), a terminal node's at ``terminalNow``
        (Kafka: ``now - record.timestamp`` with the wall-clock time of the process call)."""
        import numpy as np

        for node, source, output, tags in self._latencyNodes:
            stamps, arrays = node.stamps, node.stampArrays
            if not stamps and not arrays:
                continue
            parts = ([np.array(stamps, np.int64)] if stamps else []) + arrays
            ts = parts[0] if len(parts) == 1 else np.concatenate(parts)
            stamps.clear()
            arrays.clear()
            lat = (sourceNow if source else terminalNow) - ts
            n, total, lo, hi = len(lat), float(lat.sum()), float(lat.min()), float(lat.max())
            current = self.latencies.get(tags)
            if current is None:
                self.latencies[tags] = [n, total, lo, hi]
            else:
                current[0] += n
                current[1] += total
                current[2] = min(current[2], lo)
                current[3] = max(current[3], hi)
            if output:
                positive = lat[lat >= 1].astype(np.float64)
                below = n - len(positive)
                if below:
                    self.histogram[0] += below
                if len(positive):
                    buckets = (np.log2(positive) * _BUCKETS_PER_OCTAVE).astype(np.int64) + 1
                    for bucket, count in zip(*np.unique(buckets, return_counts=True)):
                        self.histogram[int(bucket)] += int(count)

    def all(self) -> dict[MetricName, float]:
        """Every counter with a value, as ``MetricName -> value``."""
        out = dict(self.counters)
        for s in self._sources:
            if s.processed:
                out[s.processCounter] = out.get(s.processCounter, 0) + s.processed
        if self._taskProcess is not None:
            processed = sum(s.processed for s in self._inputNodes)
            if processed:
                out[self._taskProcess] = out.get(self._taskProcess, 0) + processed
        return out

    def latencySummaries(self) -> dict[MetricName, tuple[int, float, float, float]]:
        """``record-e2e-latency`` (count, sum, min, max in ms) per node since the last clear."""
        return {MetricName(E2E, NODE_GROUP, tags): tuple(v) for tags, v in self.latencies.items()}

    def clear(self) -> None:
        """Reset every counter to zero (the Spark host reports per-batch deltas)."""
        self.counters.clear()
        for s in self._sources:
            s.processed = 0
        self.latencies.clear()
        self.histogram.clear()
        for op in self.storeOps.values():
            op[0] = op[1] = op[2] = 0

    def add(self, name: MetricName, amount: float = 1) -> None:
        self.counters[name] += amount

    def recordDropped(self, taskId: str, node: str | None, reason: str) -> None:
        """Kafka's task-level ``dropped-records-total`` plus kspark's per-node, per-reason breakdown."""
        self.counters[MetricName("dropped-records-total", TASK_GROUP, (("task-id", taskId),))] += 1
        tags = (("task-id", taskId), ("processor-node-id", node or ""), ("reason", reason))
        self.counters[MetricName("dropped-records-total", DROP_REASON_GROUP, tags)] += 1

    def recordSkipped(self, taskId: str, node: str | None, reason: str) -> None:
        """A record an operator skips silently in Kafka (a versioned table's out-of-order update
        below ``groupBy``): kspark's per-node, per-reason breakdown only, so it is visible without
        changing Kafka's task-level ``dropped-records-total``."""
        tags = (("task-id", taskId), ("processor-node-id", node or ""), ("reason", reason))
        self.counters[MetricName("dropped-records-total", DROP_REASON_GROUP, tags)] += 1

    def encoded(self) -> dict[str, float]:
        """The counters, latency summaries (``record-e2e-latency-count``/``-sum``/``-min``/``-max``)
        and output latency histogram as one flat ``{encoded name: number}`` (a Spark task's
        metrics row; :func:`mergeEncoded` combines rows)."""
        out = {k.encode(): v for k, v in self.all().items()}
        for tags, (n, total, lo, hi) in self.latencies.items():
            for stat, value in (("count", n), ("sum", total), ("min", lo), ("max", hi)):
                out[MetricName(f"{E2E}-{stat}", NODE_GROUP, tags).encode()] = value
        for bucket, count in self.histogram.items():
            out[MetricName(f"{E2E}-bucket", E2E_HISTOGRAM_GROUP, (("bucket", str(bucket)),)).encode()] = count
        for op, (calls, ns, maxNs) in self.storeOps.items():
            if calls:  # a store operation's calls and latency (ns) this batch: <op>-calls, -latency-sum, -max
                for stat, value in (("calls", calls), ("latency-sum", ns), ("latency-max", maxNs)):
                    out[MetricName(f"{op.name}-{stat}", STATE_GROUP, op.tags).encode()] = value
        return out


def mergeEncoded(total: dict[str, float], row: dict[str, float]) -> None:
    """Add a metrics row (:meth:`Metrics.encoded`) to ``total``: ``-min`` names keep the
    minimum, ``-max`` names the maximum, every other is summed."""
    for name, value in row.items():
        current = total.get(name)
        if current is None:
            total[name] = value
            continue
        stat = name.split("|", 1)[0]
        if stat.endswith("-min"):
            total[name] = min(current, value)
        elif stat.endswith("-max"):
            total[name] = max(current, value)
        else:
            total[name] = current + value


def addSample(row: dict[str, float], sample: str, taskId: str, value: float) -> None:
    """Add one ``value`` (ns) of task ``taskId``'s timing ``sample`` (one of :data:`SAMPLE_NAMES`)
    to a metrics row as ``<sample>-sum``, ``-count`` and ``-max`` (group ``stream-task-metrics``):
    rows merged by :func:`mergeEncoded` (a stream thread's commits over a second) keep what
    the average and the maximum need."""
    tags = f"|{TASK_GROUP}|task-id={taskId}"
    total, count, hi = f"{sample}-sum{tags}", f"{sample}-count{tags}", f"{sample}-max{tags}"
    row[total] = row.get(total, 0) + value
    row[count] = row.get(count, 0) + 1
    row[hi] = max(row.get(hi, value), value)


class _Window:
    """Kafka's ``SampledStat``: samples of ``windowMs`` each, the last ``numSamples`` kept
    (older ones purged); a sample holds events, their sum, min and max."""

    __slots__ = ("samples",)

    def __init__(self) -> None:
        self.samples: list[list] = []  # [start ms, events, sum, min, max]

    def record(self, now: int, windowMs: int, value: float, events: int = 1, lo: float | None = None,
               hi: float | None = None) -> None:
        lo = value if lo is None else lo
        hi = value if hi is None else hi
        samples = self.samples
        if not samples or now - samples[-1][0] >= windowMs:
            samples.append([now, 0, 0.0, lo, hi])
        s = samples[-1]
        s[1] += events
        s[2] += value
        s[3] = min(s[3], lo)
        s[4] = max(s[4], hi)

    def live(self, now: int, windowMs: int, numSamples: int) -> list[list]:
        expireAge = numSamples * windowMs
        self.samples = [s for s in self.samples if now - s[0] < expireAge]
        return self.samples


class SampledMetrics:
    """Windowed rates, averages, minima and maxima of what a host records (Kafka's ``Rate``,
    ``Avg``, ``Min``, ``Max`` over ``metrics.num.samples`` windows of ``metrics.sample.window.ms``).

    A rate is the sum of what was recorded in the live windows divided by their elapsed time,
    at least ``(numSamples - 1)`` windows (Kafka's ``Rate.windowSize``); an average, minimum or
    maximum with nothing recorded in the live windows is NaN, as in Kafka."""

    def __init__(self, windowMs: int = 30_000, numSamples: int = 2) -> None:
        self.windowMs, self.numSamples = max(1, int(windowMs)), max(1, int(numSamples))
        self._windows: dict[tuple[MetricName, str], _Window] = {}

    def record(self, name: MetricName, kind: str, now: int, value: float, events: int = 1,
               lo: float | None = None, hi: float | None = None) -> None:
        """Record ``value`` (``events`` events, with their ``lo``/``hi``) for metric ``name`` as a
        ``kind`` ("rate": ``name`` is the rate's name; "stat": ``name``'s ``-avg``/``-min``/``-max``)."""
        window = self._windows.get((name, kind))
        if window is None:
            window = self._windows[(name, kind)] = _Window()
        window.record(now, self.windowMs, value, events, lo, hi)

    def values(self, now: int) -> dict[MetricName, float]:
        """Every recorded metric's windowed value at ``now`` (ms): a rate by its name; a stat as
        ``<name>-avg`` and ``-max`` (``record-e2e-latency``: ``-avg``, ``-min`` and ``-max``)."""
        out: dict[MetricName, float] = {}
        for (name, kind), window in self._windows.items():
            samples = window.live(now, self.windowMs, self.numSamples)
            if kind == "rate":
                total = sum(s[2] for s in samples)
                if samples:
                    elapsed = now - samples[0][0]
                    full = elapsed // self.windowMs
                    if full < self.numSamples - 1:
                        elapsed += (self.numSamples - 1 - full) * self.windowMs
                    out[name] = total / max(elapsed, 1) * 1000
                else:
                    out[name] = 0.0
                continue
            events = sum(s[1] for s in samples)
            stats = ("avg", "min", "max") if name.name == E2E else ("avg", "max")
            for stat in stats:
                metric = MetricName(f"{name.name}-{stat}", name.group, name.tags)
                if not events:
                    out[metric] = math.nan
                elif stat == "avg":
                    out[metric] = sum(s[2] for s in samples) / events
                elif stat == "min":
                    out[metric] = min(s[3] for s in samples if s[1])
                else:
                    out[metric] = max(s[4] for s in samples if s[1])
        return out


def rateName(total: MetricName) -> MetricName | None:
    """``<x>-rate`` for a Kafka ``<x>-total`` counter (kspark's own groups have no rates)."""
    if not total.name.endswith("-total") or total.group.startswith("kspark"):
        return None
    return MetricName(total.name[: -len("-total")] + "-rate", total.group, total.tags)

"""What a kspark run shows while it runs and when it ends: a live progress view in a terminal
(rich), one plain line per micro-batch otherwise, and a summary at the end.

Everything comes from Spark's query progress events (a ``StreamingQueryListener``), which
carry the batch's counters too (the tasks' metrics rows, collected by ``observe`` as
:data:`OBSERVED_METRICS`); the listener also hands each batch's counters to ``KafkaStreams``,
which sums them in ``state.dir`` for ``metrics()``. A continuous run (``kspark.trigger``
``continuous``) has no micro-batches: its stream threads' commits of each second feed the same
model (:class:`ContinuousView`), its plain view prints a line per sub-topology every 10 s, and
its summary counts commits:

- records read per input topic: the tasks' ``records-consumed-total``, else the source's start
  and end offsets of each batch
  (kspark-topics' ``{"<topic>/<partition>": next}``, or Spark's Kafka source's
  ``{"<topic>": {"<partition>": next}}``); Spark's ``numInputRows`` counts chunk rows, not records;
- lag per input partition: the source's latest offset (else the ``@logEnd`` the batch was
  planned with) minus the batch's end offset (continuous: the stream threads' ``records-lag``);
- records written per topic: ``process-total`` of the sink nodes; dropped records by node and
  reason (``kspark-dropped-records``); punctuations (``punctuate-total``);
- the end-to-end latency of the records written to output topics, p50 and p95 (ms from a
  record's timestamp to the time its task had processed it; the tasks' histograms, group
  ``kspark-record-e2e-latency``, buckets 9 % apart), per batch and for the run.

``kspark.progress`` (else the ``KSPARK_PROGRESS`` environment variable) chooses the view:
``auto`` (default: rich when stdout is a terminal, plain lines otherwise), ``rich``, ``plain``
or ``none`` (no view and no summary).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql.streaming import StreamingQueryListener

from ..runtime.metrics import E2E_HISTOGRAM_GROUP, mergeEncoded, percentileMs

__all__ = ["OBSERVED_METRICS", "PROGRESS_CONFIG", "ContinuousView", "ProgressListener", "RunProgress", "batchCounters",
           "progressMode"]

log = logging.getLogger("kspark.progress")

PROGRESS_CONFIG = "kspark.progress"
OBSERVED_METRICS = "kspark"
"""Name of the observed metric (``collect_list`` of the tasks' metrics rows, JSON objects of counters)."""
_MODES = ("auto", "rich", "plain", "none")
_LATEST = "@logEnd"
_CONSUMED = "records-consumed-total|consumer-fetch-manager-metrics|topic="


def progressMode(config) -> str:
    """``kspark.progress`` of ``config`` (else ``$KSPARK_PROGRESS``, else ``auto``) resolved to
    ``rich``, ``plain`` or ``none`` (``auto``: rich when stdout is a terminal). Read with a
    default while the key is not a known one.

    Raises
    ------
    ValueError
        For a value other than auto, rich, plain or none.
    """
    try:
        mode = config.get(PROGRESS_CONFIG)
    except (KeyError, ValueError):  # ConfigException: not a known key yet
        mode = None
    mode = str(mode or os.environ.get("KSPARK_PROGRESS") or "auto").strip().lower()
    if mode not in _MODES:
        raise ValueError(f"Invalid value {mode!r} for configuration {PROGRESS_CONFIG}: expected one of {', '.join(_MODES)}")
    if mode == "auto":
        return "rich" if sys.stdout.isatty() else "plain"
    return mode


@dataclass
class QueryStats:
    """One sub-topology's query, as its progress events told it (this run only)."""

    name: str
    label: str
    subtopology: int
    state: str = "waiting"  # waiting | running | done | failed | stopped
    batches: int = 0
    records: int = 0
    lastBatch: int | None = None
    lastRecords: int = 0
    lastSeconds: float = 0.0
    lags: dict[tuple[str, int], int] = field(default_factory=dict)
    read: Counter = field(default_factory=Counter)  # topic -> records read
    written: Counter = field(default_factory=Counter)  # topic -> records written
    dropped: Counter = field(default_factory=Counter)  # (node, reason) -> records
    punctuations: int = 0
    latency: Counter = field(default_factory=Counter)  # output e2e latency histogram bucket -> records
    lastLatency: Counter = field(default_factory=Counter)  # the last batch's
    pendingRecords: int = 0  # continuous: since the last line
    pendingLatency: Counter = field(default_factory=Counter)

    @property
    def rate(self) -> float:
        return self.lastRecords / self.lastSeconds if self.lastSeconds else 0.0


class RunProgress:
    """The model behind the views: per-query counters of the current run (thread-safe).

    Parameters
    ----------
    applicationId : str
    plans : list of dict
        ``KafkaStreams._plan()``'s query plans: ``subtopology``, ``sources`` (physical topic
        names), ``globalSources``, ``topicName`` (raw -> physical).
    continuous : bool
        A continuous run: its commits are counted (:meth:`onInterval`), not micro-batches.
    """

    def __init__(self, applicationId: str, plans: list[dict], continuous: bool = False) -> None:
        from ..topology._topology import SinkNodeSpec

        self.applicationId = applicationId
        self.continuous = continuous
        self._lock = threading.Lock()
        self.queries: dict[str, QueryStats] = {}
        self._sinkTopic: dict[str, str] = {}
        self.globalTopics: set[str] = set()
        self.sourceTopics: list[str] = []
        self.sinkTopics: list[str] = []
        for plan in plans:
            sub = plan["subtopology"]
            name = f"{applicationId}-subtopology-{sub.id}"
            self.queries[name] = QueryStats(name, f"sub-topology {sub.id}", sub.id)
            self.globalTopics.update(plan.get("globalSources", ()))
            for topic in plan["sources"]:
                if topic not in self.sourceTopics:
                    self.sourceTopics.append(topic)
            for node in sub.nodes:
                if isinstance(node, SinkNodeSpec):
                    topic = plan["topicName"].get(node.topic, node.topic)
                    self._sinkTopic[node.name] = topic
                    if topic not in self.sinkTopics:
                        self.sinkTopics.append(topic)
        self._names: dict[str, str] = {}  # query id -> name
        self.startedAt = time.time()
        self.endedAt: float | None = None
        self._lastTermination: float | None = None

    # -- events
    def onStarted(self, queryId: str, name: str | None) -> None:
        with self._lock:
            if name in self.queries:
                self._names[queryId] = name
                self.queries[name].state = "running"

    def onProgress(self, progress: dict) -> QueryStats | None:
        """Add one ``StreamingQueryProgress`` (as parsed JSON); returns the query's stats, or
        ``None`` for a query of another application (or a repeated batch)."""
        stats = self.queries.get(progress.get("name") or "")
        if stats is None:
            return None
        batchId = progress["batchId"]
        counters = batchCounters(progress)
        with self._lock:
            if stats.lastBatch is not None and batchId <= stats.lastBatch:
                return None
            stats.state = "running" if stats.state == "waiting" else stats.state
            stats.lastBatch = batchId
            stats.batches += 1
            # records read: the tasks' records-consumed-total per topic (Kafka topics' offsets also
            # count transaction markers), else the source's offsets
            consumed = Counter()
            for name, value in counters.items():
                if name.startswith(_CONSUMED):
                    consumed[name[len(_CONSUMED):]] += int(value)
            records = 0
            for source in progress.get("sources", ()):
                start, end = _offsets(source.get("startOffset")), _offsets(source.get("endOffset"))
                latest = _offsets(source.get("latestOffset"))
                planned = _offsets(source.get("endOffset"), _LATEST)
                for key, next_ in end.items():
                    if not consumed:
                        n = next_ - start.get(key, 0)
                        stats.read[key[0]] += n
                        records += n
                    logEnd = latest.get(key, planned.get(key))
                    if logEnd is not None:
                        stats.lags[key] = max(0, logEnd - next_)
            for topic, n in consumed.items():
                stats.read[topic] += n
                records += n
            stats.records += records
            stats.lastRecords = records

            stats.lastSeconds = progress.get("batchDuration", 0) / 1000
            stats.lastLatency = self._addCounters(stats, counters)
        return stats

    def onInterval(self, subtopology: int, commits: int, counters: dict[str, float]) -> None:
        """Add a continuous run's commits of sub-topology ``subtopology`` (a stream thread's
        second: ``commits`` and their merged metrics rows, ``counters``)."""
        stats = next((s for s in self.queries.values() if s.subtopology == subtopology), None)
        if stats is None:
            return
        with self._lock:
            stats.state = "running"
            stats.batches += commits
            for name, value in counters.items():
                if name.startswith(_CONSUMED):
                    stats.read[name[len(_CONSUMED):]] += int(value)
                    stats.records += int(value)
                    stats.pendingRecords += int(value)
            stats.pendingLatency.update(self._addCounters(stats, counters))

    def setLags(self, lags: dict[int, dict[tuple[str, int], int]]) -> None:
        """A continuous run's input lags: sub-topology -> {(topic, partition): records-lag}."""
        with self._lock:
            for stats in self.queries.values():
                if stats.subtopology in lags:
                    stats.lags = dict(lags[stats.subtopology])

    def closeLine(self, seconds: float) -> list[QueryStats]:
        """A continuous run's line: each running query's records and output latencies of the last
        ``seconds`` become its last ones (:meth:`batchLine`); returns those queries."""
        with self._lock:
            running = [s for s in self.queries.values() if s.state == "running"]
            for stats in running:
                stats.lastRecords, stats.lastSeconds = stats.pendingRecords, seconds
                stats.lastLatency, stats.lastBatch = stats.pendingLatency, stats.batches
                stats.pendingRecords, stats.pendingLatency = 0, Counter()
            return running

    def _addCounters(self, stats: QueryStats, counters: dict[str, float]) -> Counter:
        """Add a batch's (or a second's) counters to ``stats``; return their output latency histogram."""
        latency = Counter()
        for name, value in counters.items():
            metric, group, *tags = name.split("|")
            tag = dict(t.split("=", 1) for t in tags)
            if group == E2E_HISTOGRAM_GROUP:
                latency[int(tag["bucket"])] += int(value)
            elif group == "kspark-dropped-records":
                stats.dropped[(tag.get("processor-node-id", ""), tag.get("reason", ""))] += int(value)
            elif metric == "punctuate-total":
                stats.punctuations += int(value)
            elif metric == "process-total" and tag.get("processor-node-id") in self._sinkTopic:
                stats.written[self._sinkTopic[tag["processor-node-id"]]] += int(value)
        stats.latency.update(latency)
        return latency

    def onTerminated(self, queryId: str, failed: bool) -> None:
        with self._lock:
            name = self._names.get(queryId)
            if name is not None:
                self.queries[name].state = "failed" if failed else "done"
                self._lastTermination = time.time()

    # -- totals
    def seenBatch(self, name: str) -> int | None:
        stats = self.queries.get(name)
        return None if stats is None else stats.lastBatch

    def finish(self) -> None:
        """The run is over: its wall time ends when its last query terminated (a run caught up
        under ``availableNow``) or now (``close()`` of a continuous run)."""
        with self._lock:
            if self.endedAt is None:
                allDone = all(s.state in ("done", "failed") for s in self.queries.values())
                self.endedAt = self._lastTermination if allDone and self._lastTermination else time.time()
            for stats in self.queries.values():
                if stats.state == "running":
                    stats.state = "stopped"

    def wallSeconds(self) -> float:
        return (self.endedAt or time.time()) - self.startedAt

    def totals(self) -> dict[str, Any]:
        """``read``/``written`` per topic (a global topic, read by every query, counted once),
        ``dropped`` per (node, reason), ``punctuations``, ``batches``, ``records`` (input)."""
        with self._lock:
            read: Counter = Counter()
            for stats in self.queries.values():
                for topic, n in stats.read.items():
                    if topic in self.globalTopics:
                        read[topic] = max(read[topic], n)
                    else:
                        read[topic] += n
            written: Counter = sum((s.written for s in self.queries.values()), Counter())
            dropped: Counter = sum((s.dropped for s in self.queries.values()), Counter())
            latency: Counter = sum((s.latency for s in self.queries.values()), Counter())
            return {
                "read": read, "written": written, "dropped": dropped, "latency": latency,
                "punctuations": sum(s.punctuations for s in self.queries.values()),
                "batches": sum(s.batches for s in self.queries.values()),
                "records": sum(read.values()),
            }

    # -- text
    def batchLine(self, stats: QueryStats) -> str:
        """The plain view's line for the last batch of ``stats``."""
        dropped = sum(stats.dropped.values())
        latency = _latencyText(stats.lastLatency)
        which = f"commit {stats.lastBatch:,}" if self.continuous else f"batch {stats.lastBatch}"
        return (f"{self.applicationId} {stats.label} {which}: {stats.lastRecords:,} records in "
                f"{stats.lastSeconds:.1f} s ({stats.rate:,.0f} records/s), lag {sum(stats.lags.values()):,}, "
                f"{dropped:,} dropped, {stats.punctuations:,} punctuations" + (f", e2e {latency}" if latency else ""))

    def summaryLines(self) -> list[str]:
        """The run's summary: wall time, records per topic, drops by reason, punctuations."""
        t = self.totals()
        wall = self.wallSeconds()
        lines = [f"== {self.applicationId}: summary ==",
                 f"wall time {wall:.1f} s, {t['batches']:,} {'commits' if self.continuous else 'micro-batches'}, "
                 f"{t['records']:,} records read "
                 f"({t['records'] / wall if wall else 0:,.0f} records/s)"]
        # inputs, then topics the run both writes and reads (repartition), then outputs
        topics = ([x for x in self.sourceTopics if x not in self.sinkTopics]
                  + [x for x in self.sourceTopics if x in self.sinkTopics]
                  + [x for x in self.sinkTopics if x not in self.sourceTopics])
        width = max([len(x) + 9 for x in topics] + [5])
        lines.append(f"{'topic':<{width}} {'read':>11} {'written':>11}")
        for topic in topics:
            label = topic + (" (global)" if topic in self.globalTopics else "")
            r = f"{t['read'][topic]:,}" if topic in self.sourceTopics else "-"
            w = f"{t['written'][topic]:,}" if topic in self.sinkTopics else "-"
            lines.append(f"{label:<{width}} {r:>11} {w:>11}")
        dropped = t["dropped"]
        lines.append(f"records dropped: {sum(dropped.values()):,}")
        for (node, reason), n in sorted(dropped.items()):
            lines.append(f"  {reason} at {node}: {n:,}")
        lines.append(f"punctuations: {t['punctuations']:,}")
        latency = _latencyText(t["latency"])
        if latency:
            lines.append(f"end-to-end latency of output records: {latency}")
        return lines

    def renderable(self):
        """The live view (a rich renderable): one row per query, the lag of every input partition
        per topic, then drops by reason and punctuations."""
        from rich.console import Group
        from rich.table import Table
        from rich.text import Text

        style = {"running": "green", "done": "blue", "failed": "red", "stopped": "yellow"}
        with self._lock:
            table = Table(title=f"kspark · {self.applicationId} · {self.wallSeconds():.0f} s", title_justify="left")
            columns = [("query", "left"), ("state", "left"), ("commits" if self.continuous else "batches", "right"),
                       ("records", "right"), ("records/s", "right"), ("last batch", "right"), ("lag", "right"),
                       ("e2e p50 / p95", "right")]
            if self.continuous:  # no batches: the rate is over the last line's seconds
                del columns[5]
            for column, justify in columns:
                table.add_column(column, justify=justify, no_wrap=True)
            lags = Table.grid(padding=(0, 2))
            for stats in self.queries.values():
                cells = [stats.label, Text(stats.state, style=style.get(stats.state, "dim")), f"{stats.batches:,}",
                         f"{stats.records:,}", f"{stats.rate:,.0f}", f"{stats.lastSeconds:.1f} s" if stats.batches else "",
                         f"{sum(stats.lags.values()):,}" if stats.lags else "", _latencyText(stats.latency, short=True)]
                if self.continuous:
                    del cells[5]
                table.add_row(*cells)
                for topic, text in _lagsPerTopic(stats.lags, f"{self.applicationId}-"):
                    lags.add_row(Text(stats.label, style="dim"), topic, text)
            dropped = sum((s.dropped for s in self.queries.values()), Counter())
            punctuations = sum(s.punctuations for s in self.queries.values())
        reasons = ", ".join(f"{reason} at {node}: {n:,}" for (node, reason), n in sorted(dropped.items()))
        footer = Text(f"dropped {sum(dropped.values()):,}" + (f" ({reasons})" if reasons else "")
                      + f" · punctuations {punctuations:,}")
        parts = [table]
        if lags.row_count:
            parts += [Text("lag per input partition", style="bold"), lags]
        return Group(*parts, footer)


def _latencyText(histogram: Counter, short: bool = False) -> str:
    """``"p50 120 ms, p95 480 ms"`` of an e2e latency histogram (``"120 / 480 ms"`` if
    ``short``), or ``""`` when it has no records."""
    p50, p95 = percentileMs(histogram, 0.5), percentileMs(histogram, 0.95)
    if p50 is None:
        return ""
    return f"{p50:,.0f} / {p95:,.0f} ms" if short else f"p50 {p50:,.0f} ms, p95 {p95:,.0f} ms"


def _lagsPerTopic(lags: dict[tuple[str, int], int], internalPrefix: str) -> list[tuple[str, str]]:
    """``(topic, lags in partition order)``; internal topics without the ``<application.id>-``
    prefix; more than 8 partitions as total and max."""
    topics: dict[str, list[int]] = {}
    for (topic, _), lag in sorted(lags.items()):
        topics.setdefault(topic.removeprefix(internalPrefix), []).append(lag)
    return [(topic, " ".join(f"{lag:,}" for lag in values) if len(values) <= 8
             else f"{len(values)} partitions: total {sum(values):,}, max {max(values):,}")
            for topic, values in topics.items()]


def _offsets(value, suffix: str = "") -> dict[tuple[str, int], int]:
    """``{(topic, partition): offset}`` of a source offset (JSON text or parsed): kspark-topics'
    flat ``"<topic>/<partition>"`` keys (with ``suffix``, e.g. ``@logEnd``, those keys instead)
    or Spark Kafka source's ``{"<topic>": {"<partition>": offset}}``."""
    try:
        offsets = json.loads(value) if isinstance(value, str) else value
    except ValueError:
        return {}
    out: dict[tuple[str, int], int] = {}
    if not isinstance(offsets, dict):
        return out
    for key, v in offsets.items():
        if isinstance(v, dict) and not suffix:  # Spark's Kafka source
            for p, o in v.items():
                if isinstance(o, int) and str(p).lstrip("-").isdigit():
                    out[(key, int(p))] = o
            continue
        if not isinstance(v, int) or "/" not in key:
            continue
        if suffix:
            if not key.endswith(suffix):
                continue
            key = key[: -len(suffix)]
        elif "@" in key:
            continue
        topic, _, partition = key.rpartition("/")
        if partition.isdigit():
            out[(topic, int(partition))] = v
    return out


def batchCounters(progress: dict) -> dict[str, float]:
    """The counters of a batch (its tasks' metrics rows summed) from its progress (parsed JSON)."""
    rows = ((progress.get("observedMetrics") or {}).get(OBSERVED_METRICS) or {}).get("metrics") or ()
    total: dict[str, float] = {}
    for text in rows:
        mergeEncoded(total, json.loads(text))
    return total


def _recordsRead(start, end) -> int:
    """Records a batch read, from the source's start and end offsets (JSON text or parsed)."""
    starts = _offsets(start)
    return sum(next_ - starts.get(key, 0) for key, next_ in _offsets(end).items())


class ProgressView:
    """A :class:`RunProgress`'s view (``rich``: live in the terminal, ``plain`` or ``none``) and
    its summary at the end (:meth:`finish`)."""

    def __init__(self, progress: RunProgress, mode: str = "none") -> None:
        self.progress = progress
        self.mode = mode
        self._live = None
        if mode == "rich":
            from rich.live import Live

            self._live = Live(get_renderable=progress.renderable, refresh_per_second=2, transient=False)
            self._live.start()

    def finish(self, printSummary: bool = True) -> None:
        """Stop the live view and print the summary (unless the mode is ``none``)."""
        self.progress.finish()
        if self._live is not None:
            self._live.refresh()
            self._live.stop()
            self._live = None
        if self.mode == "none" or not printSummary:
            return
        lines = self.progress.summaryLines()
        if self.mode == "rich":
            from rich.console import Console

            console = Console()
            console.print(lines[0], style="bold", markup=False, highlight=False)
            for line in lines[1:]:
                console.print(line, markup=False, highlight=False)
        else:
            print("\n".join(lines), flush=True)


class ContinuousView(ProgressView):
    """The view of a continuous run (``kspark.spark._stream_threads``), fed by the driver's
    poll of the stream threads' metrics: :meth:`onInterval` per thread and second,
    :meth:`tick` after each poll (a plain line per running sub-topology every ``lineS``
    seconds: its records, rate, lag and output e2e latency p50/p95 over them)."""

    def __init__(self, progress: RunProgress, mode: str = "none", lineS: float = 10.0) -> None:
        super().__init__(progress, mode)
        self.lineS = lineS
        self._lineAt = time.monotonic()

    def onInterval(self, subtopology: int, commits: int, counters: dict[str, float]) -> None:
        self.progress.onInterval(subtopology, commits, counters)

    def tick(self, lags: dict[int, dict[tuple[str, int], int]]) -> None:
        """After a poll, with the threads' ``records-lag`` by sub-topology."""
        self.progress.setLags(lags)
        now = time.monotonic()
        if now - self._lineAt < self.lineS:
            return
        for stats in self.progress.closeLine(now - self._lineAt):
            if self.mode == "plain":
                print(self.progress.batchLine(stats), flush=True)
        self._lineAt = now


class ProgressListener(ProgressView, StreamingQueryListener):
    """Feeds a :class:`RunProgress` and its view (``rich``, ``plain`` or ``none``).

    Spark's Python listener bridge turns every progress event into Python objects field by
    field (dozens of Py4J round trips per event, several of them class-name lookups that scan
    every jar on the JVM's class path: ≈ 15 % of the JVM's samples in the P1 benchmark). This
    listener registers its own bridge object instead, which reads an event's progress as one
    JSON string (``StreamingQueryProgress.json()``).
    """

    def __init__(self, progress: RunProgress, mode: str = "none", onBatch=None) -> None:
        super().__init__(progress, mode)
        self._onBatch = onBatch

    @property
    def _jlistener(self):  # what StreamingQueryManager.addListener/removeListener register
        if not hasattr(self, "_jlistenerobj"):
            from pyspark import SparkContext

            self._jlistenerobj = SparkContext._jvm.PythonStreamingQueryListenerWrapper(_JsonBridge(self))
        return self._jlistenerobj

    def onQueryStarted(self, event) -> None:
        self.progress.onStarted(str(event.id), event.name)

    def onQueryProgress(self, event) -> None:
        """``event``: pyspark's ``QueryProgressEvent`` (when registered some other way)."""
        self._onProgress(json.loads(event.progress.json))

    def _onProgress(self, progress: dict) -> None:
        # the counters are in state.dir before the batch counts as seen (waitFor, metrics())
        stats = self.progress.queries.get(progress.get("name") or "")
        if stats is not None and self._onBatch is not None:
            try:
                self._onBatch(stats.subtopology, progress["id"], progress["batchId"], batchCounters(progress))
            except Exception:  # noqa: BLE001 - Spark's listener bus must go on; say what is missing
                log.error("The counters of %s batch %d could not be added to state.dir (metrics() will miss them)",
                          stats.name, progress["batchId"], exc_info=True)
        stats = self.progress.onProgress(progress)
        if stats is not None and self.mode == "plain":
            print(self.progress.batchLine(stats), flush=True)

    def onQueryIdle(self, event) -> None:
        pass

    def onQueryTerminated(self, event) -> None:
        self.progress.onTerminated(str(event.id), event.exception is not None)

    def waitFor(self, lastBatches: dict[str, int], timeout: float = 10.0) -> None:
        """Wait (at most ``timeout`` s) until the events of batches ``{query name: batch id}``
        have arrived: Spark delivers them to listeners asynchronously."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all((self.progress.seenBatch(n) if self.progress.seenBatch(n) is not None else -1) >= b
                   for n, b in lastBatches.items()):
                return
            time.sleep(0.05)

    def close(self, queries: list) -> None:
        """After the queries stopped: wait for the progress events of their last executed
        batches (:meth:`waitForQueries`), stop the live view, print the summary."""
        self.waitForQueries(queries)
        self.finish()

    def waitForQueries(self, queries: list) -> None:
        """Wait for the progress events of the last batch each of ``queries`` executed.

        A query that executed no batch in this run (resumed with nothing new) has the progress
        of its no-data trigger as ``lastProgress`` (no ``addBatch`` duration), which Spark does
        not post to listeners: waiting for it held every such run's close, and
        ``KafkaStreams.metrics()``, for ``waitFor``'s whole timeout (10 s)."""
        last = {}
        for q in queries:
            try:
                p = q.lastProgress
            except Exception:  # noqa: BLE001 - a query that failed to start has no progress
                p = None
            if p is not None and "addBatch" in (p.durationMs or {}):
                last[q.name] = p.batchId
        self.waitFor(last)


class _JsonBridge:
    """The Py4J object Spark calls (``PythonStreamingQueryListener``): one or two Py4J calls per
    event instead of pyspark's field-by-field conversion."""

    def __init__(self, listener: ProgressListener) -> None:
        self._listener = listener

    def onQueryStarted(self, jevent) -> None:
        self._listener.progress.onStarted(jevent.id().toString(), jevent.name())

    def onQueryProgress(self, jevent) -> None:
        self._listener._onProgress(json.loads(jevent.progress().json()))

    def onQueryIdle(self, jevent) -> None:
        pass

    def onQueryTerminated(self, jevent) -> None:
        exception = jevent.exception()
        if exception.isDefined():
            from . import _quiet

            text = exception.get()
            if not _quiet.reportingFailures:  # kspark run prints the failure once itself
                log.error("query %s failed: %s", jevent.id().toString(), _quiet.failureHeadline(text) or text)
            log.debug("query %s failed: %s", jevent.id().toString(), text)
        self._listener.progress.onTerminated(jevent.id().toString(), exception.isDefined())

    class Java:
        implements = ["org.apache.spark.sql.streaming.PythonStreamingQueryListener"]

"""One progress line per micro-batch of a kspark application (a ``StreamingQueryListener``)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from pyspark.sql.streaming import StreamingQueryListener

log = logging.getLogger("kspark.progress")


class ProgressListener(StreamingQueryListener):
    """Logs, at INFO on ``kspark.progress``, for each batch of the application's queries:
    records read, batch time, records/s, and the records the batch dropped (all reasons).

    Spark's Python listener bridge turns every progress event into Python objects field by
    field (dozens of Py4J round trips per event, several of them class-name lookups that scan
    every jar on the JVM's class path: ≈ 15 % of the JVM's samples in the P1 benchmark). This
    listener registers its own bridge object instead, which reads an event's progress as one
    JSON string (``StreamingQueryProgress.json()``), and does nothing else unless
    ``kspark.progress`` logs at INFO.
    """

    def __init__(self, applicationId: str, metricsDir: Path) -> None:
        self._prefix = f"{applicationId}-subtopology-"
        self._metricsDir = metricsDir

    @property
    def _jlistener(self):  # what StreamingQueryManager.addListener/removeListener register
        if not hasattr(self, "_jlistenerobj"):
            from pyspark import SparkContext

            self._jlistenerobj = SparkContext._jvm.PythonStreamingQueryListenerWrapper(_JsonBridge(self))
        return self._jlistenerobj

    def onQueryStarted(self, event) -> None:
        pass

    def onQueryProgress(self, event) -> None:
        """``event``: pyspark's ``QueryProgressEvent`` (when registered some other way)."""
        self._logProgress(json.loads(event.progress.json))

    def _logProgress(self, progress: dict) -> None:
        name = progress.get("name") or ""
        if not name.startswith(self._prefix):
            return
        sub = name[len(self._prefix):]
        batchId = progress["batchId"]
        path = self._metricsDir / f"subtopology-{sub}" / f"{batchId:020d}.json"
        dropped = 0
        if path.exists():
            counters = json.loads(path.read_text())
            dropped = int(sum(v for k, v in counters.items() if k.startswith("dropped-records-total|stream-task-metrics")))
        seconds = progress.get("batchDuration", 0) / 1000
        records = sum(_recordsRead(s.get("startOffset"), s.get("endOffset")) for s in progress.get("sources", ()))
        rate = records / seconds if seconds else 0.0
        log.info("%s batch %d: %d records in %.1f s (%.0f records/s), %d dropped",
                 name, batchId, records, seconds, rate, dropped)

    def onQueryIdle(self, event) -> None:
        pass

    def onQueryTerminated(self, event) -> None:
        if event.exception:
            log.error("query %s failed: %s", event.id, event.exception)


class _JsonBridge:
    """The Py4J object Spark calls (``PythonStreamingQueryListener``): one or two Py4J calls per
    event instead of pyspark's field-by-field conversion."""

    def __init__(self, listener: ProgressListener) -> None:
        self._listener = listener

    def onQueryStarted(self, jevent) -> None:
        pass

    def onQueryProgress(self, jevent) -> None:
        if log.isEnabledFor(logging.INFO):
            self._listener._logProgress(json.loads(jevent.progress().json()))

    def onQueryIdle(self, jevent) -> None:
        pass

    def onQueryTerminated(self, jevent) -> None:
        exception = jevent.exception()
        if exception.isDefined():
            log.error("query %s failed: %s", jevent.id().toString(), exception.get())

    class Java:
        implements = ["org.apache.spark.sql.streaming.PythonStreamingQueryListener"]


def _recordsRead(start, end) -> int:
    """Records a batch read, from the kspark-topics offsets (``{"<topic>/<partition>": next, ...}``,
    as JSON text or already parsed): Spark's ``numInputRows`` counts the source's chunk rows,
    not records."""
    try:
        startOffsets = (json.loads(start) if isinstance(start, str) else start) or {}
        endOffsets = (json.loads(end) if isinstance(end, str) else end) or {}
    except (TypeError, ValueError):
        return 0
    if not isinstance(endOffsets, dict) or not isinstance(startOffsets, dict):
        return 0
    return sum(next - startOffsets.get(key, 0) for key, next in endOffsets.items()
               if "@" not in key and isinstance(next, int))

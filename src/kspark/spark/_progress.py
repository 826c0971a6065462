"""One progress line per micro-batch of a kspark application (a ``StreamingQueryListener``)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from pyspark.sql.streaming import StreamingQueryListener

log = logging.getLogger("kspark.progress")


class ProgressListener(StreamingQueryListener):
    """Logs, at INFO on ``kspark.progress``, for each batch of the application's queries:
    records read, batch time, records/s, and the records the batch dropped (all reasons)."""

    def __init__(self, applicationId: str, metricsDir: Path) -> None:
        self._prefix = f"{applicationId}-subtopology-"
        self._metricsDir = metricsDir

    def onQueryStarted(self, event) -> None:
        pass

    def onQueryProgress(self, event) -> None:
        p = event.progress
        if not (p.name or "").startswith(self._prefix):
            return
        sub = p.name[len(self._prefix):]
        path = self._metricsDir / f"subtopology-{sub}" / f"{p.batchId:020d}.json"
        dropped = 0
        if path.exists():
            counters = json.loads(path.read_text())
            dropped = int(sum(v for k, v in counters.items() if k.startswith("dropped-records-total|stream-task-metrics")))
        seconds = p.batchDuration / 1000
        records = sum(_recordsRead(s.startOffset, s.endOffset) for s in p.sources)
        rate = records / seconds if seconds else 0.0
        log.info("%s batch %d: %d records in %.1f s (%.0f records/s), %d dropped",
                 p.name, p.batchId, records, seconds, rate, dropped)

    def onQueryIdle(self, event) -> None:
        pass

    def onQueryTerminated(self, event) -> None:
        if event.exception:
            log.error("query %s failed: %s", event.id, event.exception)


def _recordsRead(start, end) -> int:
    """Records a batch read, from the kspark-topics offsets (``{"<topic>/<partition>": next, ...}``,
    JSON): Spark's ``numInputRows`` counts the source's chunk rows, not records."""
    try:
        startOffsets = json.loads(start) if start else {}
        endOffsets = json.loads(end) if end else {}
    except (TypeError, ValueError):
        return 0
    if not isinstance(endOffsets, dict):
        return 0
    return sum(next - startOffsets.get(key, 0) for key, next in endOffsets.items()
               if "@" not in key and isinstance(next, int))

"""``KSPARK_TIMELINE=<file>``: every process of a run (the driver's source planner and sink
committer, the executors' read, task and sink workers) appends one JSON line per step of a
micro-batch to ``<file>``: ``{"t": epoch seconds, "pid", "event", "batch", ...}``.

For measuring where a micro-batch's time goes (``bench/timeline.py`` joins the lines with Spark's
event log and progress events); unset, :func:`mark` does nothing. Read at import, so set it
before the SparkSession starts (its Python workers inherit it)."""

from __future__ import annotations

import json
import os
import time

PATH = os.environ.get("KSPARK_TIMELINE") or None


def batchOfTask() -> int | None:
    """The micro-batch id of the running Spark task (None outside one)."""
    from pyspark import TaskContext

    context = TaskContext.get()
    batch = context.getLocalProperty("streaming.sql.batchId") if context is not None else None
    return int(batch) if batch is not None else None


def mark(event: str, **fields) -> None:
    """Append ``event`` with the time now (and ``fields``) to ``KSPARK_TIMELINE``'s file."""
    if PATH is None:
        return
    line = json.dumps({"t": round(time.time(), 4), "pid": os.getpid(), "event": event, **fields})
    with open(PATH, "a") as f:
        f.write(line + "\n")

"""Executor side of the Spark host: one ``StreamTask`` per group of ``transformWithStateInPandas``.

Rows of one kspark task (all its input partitions, one micro-batch) arrive in one call. The
task's checkpointable state (stream time, partition times, unprocessed records, stores) is one
pickled blob in Spark's state store: one read when the worker has no up-to-date copy, one
write per batch, never a state call per record (spark-stateful-measurements.md).
"""

from __future__ import annotations

import json
import os
import pickle
import time
import uuid
from itertools import repeat
from typing import Iterator

import pandas as pd
from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle
from pyspark.sql.types import BinaryType, StringType, StructField, StructType

from ..runtime.record_queue import RawRecord
from ..runtime.stream_task import StreamTask, decodeHeaders, encodeHeaders
from ._datasource import SINK_SCHEMA

OUTPUT_SCHEMA = SINK_SCHEMA  # task output rows go straight to the kspark-topics sink
_OUTPUT_COLUMNS = [f.name for f in OUTPUT_SCHEMA.fields]
_tupleNew = tuple.__new__
_TIMINGS = os.environ.get("KSPARK_TASK_TIMINGS")
_STATE_SCHEMA = StructType([StructField("version", StringType()), StructField("blob", BinaryType())])

# Tasks kept alive in this Python worker between micro-batches, keyed by task id. Every state
# write gets a fresh random version; a cached task is used only if its version is the one in
# Spark's committed state (otherwise: another worker ran the task, a batch was retried, or this
# is another run or checkpoint), else the task is rebuilt from the state.
_LIVE_TASKS: dict[tuple, tuple[str, StreamTask]] = {}


class TaskStatefulProcessor(StatefulProcessor):
    """Runs kspark tasks of one sub-topology; the grouping key is a task's balanced int key."""

    def __init__(self, plan: dict) -> None:
        # plan: applicationId, subtopology, storeBuilders, config, taskOfKey, topicName map, partition counts
        self.plan = plan

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.state = handle.getValueState("task", _STATE_SCHEMA)

    def handleInputRows(self, key, rows: Iterator[pd.DataFrame], timerValues) -> Iterator[pd.DataFrame]:
        plan = self.plan
        now = int(time.time() * 1000)
        partition = plan["taskOfKey"][int(key[0])]
        taskId = f"{plan['subtopology'].id}_{partition}"
        cacheKey = (plan["applicationId"], taskId)
        stored = self.state.get() if self.state.exists() else None
        version = stored[0] if stored else None
        cached = _LIVE_TASKS.get(cacheKey)
        if cached is not None and version is not None and cached[0] == version:
            task = cached[1]
        else:
            task = self._newTask(taskId, partition)
            if stored:
                task.restore(pickle.loads(stored[1]))
            task.wallClockTime = now
            task.initialize()

        started = time.perf_counter()
        pdf = pd.concat(list(rows), ignore_index=True)
        for topic, group in pdf.groupby("topic", sort=False):
            markers = group[group["offset"] < 0]
            data = group[group["offset"] >= 0].sort_values("offset", kind="stable")
            timestamps = data["timestamp"].to_numpy()
            # Built-in extractors on valid timestamps: taken in bulk, no extractor call per record
            bulk = task.queueOf[topic].extractsMetadataTimestamp() and bool((timestamps >= 0).all())
            # Column-wise: one list per column, then tuple.__new__ (no NamedTuple __new__ per row)
            tsList = timestamps.tolist()
            rawHeaders = data["headers"]
            headers = (repeat((), len(data)) if not rawHeaders.notna().any()
                       else map(decodeHeaders, rawHeaders.tolist()))
            raws = list(map(
                _tupleNew, repeat(RawRecord),
                zip(data["offset"].tolist(), tsList, data["key"].tolist(), data["value"].tolist(), headers,
                    tsList if bulk else repeat(None)),
            ))
            lag = int(markers["lag"].max()) if len(markers) else None
            task.addRecords(topic, raws, lag=lag)

        converted = time.perf_counter()
        task.processAll(now)  # stream-time punctuation after every record, as in the driver
        task.maybePunctuateSystemTime(now)  # wall-clock punctuation once per batch ("poll loop")
        task.commit()  # a micro-batch is a commit: the DSL record caches flush here
        produced = task.drainProduced()
        metrics = task.metrics.encoded()
        task.metrics.clear()

        processed = time.perf_counter()
        version = uuid.uuid4().hex
        blob = pickle.dumps(task.checkpoint(), protocol=5)
        pickled = time.perf_counter()
        self.state.update((version, blob))
        _LIVE_TASKS[cacheKey] = (version, task)
        stored = time.perf_counter()

        out = pd.DataFrame(
            {
                "topic": [r.topic for r in produced] + [None],
                "partition": pd.array([r.partition for r in produced] + [None], dtype="Int32"),
                "timestamp": pd.array([r.timestamp for r in produced] + [None], dtype="Int64"),
                "key": [r.key for r in produced] + [None],
                "value": [r.value for r in produced] + [None],
                "headers": [encodeHeaders(r.headers) for r in produced] + [None],
                "metrics": [None] * len(produced) + [json.dumps(metrics)],
            },
            columns=_OUTPUT_COLUMNS,
        )
        if _TIMINGS:  # KSPARK_TASK_TIMINGS=<file>: one JSON line per task call (bench/README.md)
            with open(_TIMINGS, "a") as f:
                f.write(json.dumps({
                    "task": taskId, "rows": len(pdf), "produced": len(produced), "stateBytes": len(blob),
                    "inputSeconds": round(converted - started, 4), "processSeconds": round(processed - converted, 4),
                    "pickleSeconds": round(pickled - processed, 4), "stateWriteSeconds": round(stored - pickled, 4),
                    "outputSeconds": round(time.perf_counter() - stored, 4)}) + "\n")
        yield out

    def _newTask(self, taskId: str, partition: int) -> StreamTask:
        plan = self.plan
        topicName = plan["topicName"]
        counts = plan["partitionCounts"]
        return StreamTask(
            taskId, plan["subtopology"], plan["storeBuilders"], plan["config"], partition,
            lambda t: topicName.get(t, t), lambda t: counts[t],
        )

    def close(self) -> None:
        pass

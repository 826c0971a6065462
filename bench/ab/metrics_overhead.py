"""Engine records/s of one Spark-host task (``StreamTask.processAll`` then ``commit`` over
``RawRecordColumns``, as ``kspark.spark._task_processor`` runs it), to compare two versions of
kspark on the same input: ``PYTHONPATH=<version>/src python bench/ab/metrics_overhead.py``.

Two topologies: ``stateless`` (source -> mapValues -> filter -> to) and ``count``
(source -> groupByKey().count() -> toStream() -> to), 200,000 String records each, best of 7.
Prints one JSON line per topology (records/s). Issue 34 section 2 measured the metrics' cost with it."""

import gc
import json
import sys
import time

import numpy as np
import pyarrow as pa

from kspark import Consumed, Produced, Serdes, StreamsBuilder
from kspark.config import StreamsConfig
from kspark.runtime.record_queue import RawRecordColumns
from kspark.runtime.stream_task import StreamTask

N = 200_000


def topology(kind: str):
    b = StreamsBuilder()
    s = b.stream("in", Consumed.with_(Serdes.String(), Serdes.String()))
    if kind == "stateless":
        s.mapValues(lambda v: v + "!").filter(lambda k, v: k != "k7").to("out", Produced.with_(Serdes.String(), Serdes.String()))
    else:
        s.groupByKey().count().toStream().to("out", Produced.with_(Serdes.String(), Serdes.Long()))
    return b.build()


def columns() -> RawRecordColumns:
    keys = pa.array([f"k{i % 1000}".encode() for i in range(N)], pa.binary())
    values = pa.array([f"v{i}".encode() for i in range(N)], pa.binary())
    return RawRecordColumns(np.arange(N, dtype=np.int64), np.arange(N, dtype=np.int64) + 1_700_000_000_000, keys, values,
                            pa.nulls(N, pa.binary()), True)


def once(kind: str, cols: RawRecordColumns) -> float:
    t = topology(kind)
    sub = t.subtopologies()[0]
    task = StreamTask("0_0", sub, t.storeBuilders(), StreamsConfig({"application.id": "bench"}), 0,
                      lambda name: name if name in ("in", "out") else f"bench-{name}", lambda name: 1)
    task.initialize()
    task.addRecordColumns("in", cols, lag=0)
    gc.collect()
    started = time.perf_counter()
    now = int(time.time() * 1000)
    task.processAll(now)
    task.commit()
    record = getattr(task.metrics, "recordLatencies", None)  # the version with e2e latencies
    if record is not None:
        record(now, int(time.time() * 1000))
    task.metrics.encoded()
    return time.perf_counter() - started


if __name__ == "__main__":
    cols = columns()
    for kind in ("stateless", "count"):
        best = min(once(kind, cols) for _ in range(7))
        print(json.dumps({"topology": kind, "records": N, "records_per_s": round(N / best), "kspark": sys.modules["kspark"].__file__}))

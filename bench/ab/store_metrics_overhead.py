"""The cost of DEBUG's store-level metrics (``kspark.runtime.store_metrics``): records/s of a
``groupByKey().count()`` and a ``groupByKey().aggregate()`` topology at ``metrics.recording.level``
INFO (no store wrapped), DEBUG (every store call counted and timed with ``perf_counter_ns``) and
DEBUG with the timer replaced by a constant (the counting alone), on two hosts' paths:

- ``driver``: TopologyTestDriver, 20,000 records piped one list at a time (in-memory stores);
- ``engine``: one Spark-host task's ``StreamTask.processAll`` + ``commit`` over 200,000 records
  of ``RawRecordColumns``, as ``bench/ab/metrics_overhead.py`` runs it.

Best of 7, interleaved. ``PYTHONPATH=src python bench/ab/store_metrics_overhead.py``; one JSON
line per (host, topology, mode)."""

import gc
import json
import time

import numpy as np
import pyarrow as pa

from kspark import Consumed, Materialized, Produced, Serdes, StreamsBuilder
from kspark.config import StreamsConfig
from kspark.runtime import store_metrics
from kspark.runtime.record_queue import RawRecordColumns
from kspark.runtime.stream_task import StreamTask
from kspark.testing import TopologyTestDriver

S = Serdes.String()
DRIVER_N, ENGINE_N = 20_000, 200_000


def topology(kind: str):
    b = StreamsBuilder()
    grouped = b.stream("in", Consumed.with_(S, S)).groupByKey()
    if kind == "count":
        table = grouped.count()
    else:
        table = grouped.aggregate(lambda: 0, lambda k, v, agg: agg + len(v), Materialized.with_(S, Serdes.Long()))
    table.toStream().to("out", Produced.with_(S, Serdes.Long()))
    return b.build()


def driverOnce(kind: str, level: str) -> float:
    from kspark.keyvalue import KeyValue

    records = [KeyValue(f"k{i % 1000}", f"v{i}") for i in range(DRIVER_N)]
    with TopologyTestDriver(topology(kind), {"metrics.recording.level": level}) as d:
        i = d.createInputTopic("in", S, S)
        gc.collect()
        started = time.perf_counter()
        i.pipeKeyValueList(records)
        d.metrics()
        return time.perf_counter() - started


def columns() -> RawRecordColumns:
    keys = pa.array([f"k{i % 1000}".encode() for i in range(ENGINE_N)], pa.binary())
    values = pa.array([f"v{i}".encode() for i in range(ENGINE_N)], pa.binary())
    return RawRecordColumns(np.arange(ENGINE_N, dtype=np.int64), np.arange(ENGINE_N, dtype=np.int64) + 1_700_000_000_000,
                            keys, values, pa.nulls(ENGINE_N, pa.binary()), True)


def engineOnce(kind: str, level: str, cols: RawRecordColumns) -> float:
    t = topology(kind)
    task = StreamTask("0_0", t.subtopologies()[0], t.storeBuilders(),
                      StreamsConfig({"application.id": "bench", "metrics.recording.level": level}), 0,
                      lambda name: name if name in ("in", "out") else f"bench-{name}", lambda name: 1)
    task.initialize()
    task.addRecordColumns("in", cols, lag=0)
    gc.collect()
    started = time.perf_counter()
    now = int(time.time() * 1000)
    task.processAll(now)
    task.commit()
    task.metrics.recordLatencies(now, int(time.time() * 1000))
    task.metrics.encoded()
    return time.perf_counter() - started


MODES = ("INFO", "DEBUG", "DEBUG-untimed")


def run(host: str, kind: str, mode: str, cols) -> float:
    timer = store_metrics.perf_counter_ns
    if mode == "DEBUG-untimed":
        store_metrics.perf_counter_ns = int  # int() == 0: the wrappers count, the clock is not read
    try:
        level = mode.split("-")[0]
        return driverOnce(kind, level) if host == "driver" else engineOnce(kind, level, cols)
    finally:
        store_metrics.perf_counter_ns = timer


if __name__ == "__main__":
    cols = columns()
    for host, n in (("driver", DRIVER_N), ("engine", ENGINE_N)):
        for kind in ("count", "aggregate"):
            best = {mode: float("inf") for mode in MODES}
            for _ in range(7):
                for mode in MODES:
                    best[mode] = min(best[mode], run(host, kind, mode, cols))
            for mode in MODES:
                print(json.dumps({"host": host, "topology": kind, "mode": mode, "records": n,
                                  "records_per_s": round(n / best[mode]),
                                  "vs_info": round(best["INFO"] / best[mode], 3)}), flush=True)

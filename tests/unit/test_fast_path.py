"""The fused record loops of ``source -> session / time-window aggregate -> toStream() -> to()``
(issue 7) give the same output records, headers, metrics, drops, errors and store contents as the
per-node path they replace (rules SA-1..SA-9, ST-6/ST-7 store expiry, T-18 time windows and
their aggregate timestamps, T-12 stream time, DP-1 windowed partitioning, KIP-1033 handler),
record at a time (TopologyTestDriver) and per batch (the Spark host's ``processAll``).

The per-node path is forced by clearing the task's ``_fastPath``; each test first checks that
the fused loop was really built for the topology, so a shape change cannot make it vacuous.
"""

from contextlib import contextmanager
from datetime import datetime, timedelta, timezone

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kspark import (Consumed, FailOnInvalidTimestamp, LogAndContinueExceptionHandler, LogAndFailExceptionHandler,
                    LogAndSkipOnInvalidTimestamp, Materialized, Produced, Serdes, SessionWindows, StreamsBuilder,
                    TimeWindows, UsePartitionTimeOnInvalidTimestamp, WindowedSerdes)
from kspark.state import SessionStore
from kspark.config import StreamsConfig
from kspark.errors import LogAndContinueProcessingExceptionHandler, StreamsException
from kspark.runtime.record_queue import RawRecord, RawRecordColumns
from kspark.runtime.stream_task import ProducedColumns, StreamTask, encodeHeaders
from kspark.testing import TestRecord, TopologyTestDriver

KEY_SERDE = WindowedSerdes.sessionWindowedSerdeFrom(Serdes.String())
KEY_SERDES = {
    "string": (Serdes.String(), KEY_SERDE),  # specialised: one UTF-8 encode per record
    "json": (Serdes.JSON(), WindowedSerdes.sessionWindowedSerdeFrom(Serdes.JSON())),
    # a user serde (not the built-in windowed one): the sink's generic write with a Windowed key
    "custom": (Serdes.String(), type("MyWindowedSerde", (type(KEY_SERDE),), {})(Serdes.String())),
}


def failOnX(key, value, agg):
    if value == "x":
        raise ValueError("bad value x")
    return agg + "+" + value


def uncached(kind, retention):
    """``Materialized.as_("s")``, caching off, with ``retention`` ms (None: the default) and the value serde."""
    materialized = Materialized.as_("s")
    if retention is not None:
        materialized = materialized.withRetention(timedelta(milliseconds=retention))
    valueSerde = Serdes.Long() if kind == "count" else Serdes.String()
    return materialized.withValueSerde(valueSerde).withCachingDisabled(), valueSerde


def topology(gap, grace, kind, retention=None, keys="string"):
    keySerde, windowedSerde = KEY_SERDES[keys]
    b = StreamsBuilder()
    windows = SessionWindows.ofInactivityGapAndGrace(timedelta(milliseconds=gap), timedelta(milliseconds=grace))
    grouped = b.stream("in", Consumed.with_(keySerde, Serdes.String())).groupByKey().windowedBy(windows)
    materialized, valueSerde = uncached(kind, retention)
    table = (grouped.count(materialized=materialized) if kind == "count" else
             grouped.aggregate(lambda: "", failOnX, lambda k, a, b: a + b, materialized=materialized))
    table.toStream().to("out", Produced.with_(windowedSerde, valueSerde))
    return b.build()


def storeContents(store):
    if not isinstance(store, SessionStore):  # a window store: every (start, key bytes) entry
        return sorted(store._data.items())
    return [(kv.key.key(), kv.key.window().start(), kv.key.window().end(), kv.value)
            for key in sorted(store._sessions) for kv in store.fetch(store._keySerde.deserialize("s", key))]


def onDriver(records, topo, fused, keySerde=Serdes.String(), handler=LogAndContinueProcessingExceptionHandler):
    config = {"processing.exception.handler": handler}
    with TopologyTestDriver(topo, config, initialWallClockTime=0) as d:
        assert d._task._fastPath is not None
        if not fused:
            d._task._fastPath = None
        i = d.createInputTopic("in", keySerde, Serdes.String())
        for k, v, ts, headers in records:
            i.pipeInput(k, v, ts, headers=headers)
        out = [(key, value, timestamp, partition, headers)
               for partition, timestamp, key, value, headers in d._outputs.get("out", ())]
        return out, d.metrics(), storeContents(d.getStateStore("s"))


def onBatches(records, topo, fused, batch, keySerde=Serdes.String()):
    """As the Spark host runs a task: raw records added per micro-batch, then processAll + commit."""
    config = StreamsConfig({"application.id": "fast-path",
                            "processing.exception.handler": LogAndContinueProcessingExceptionHandler})
    sub = topo.subtopologies()[0]
    task = StreamTask("0_0", sub, topo.storeBuilders(), config, 0, lambda t: t, lambda t: 3)
    task.initialize()
    assert task._fastPath is not None
    if not fused:
        task._fastPath = None
    raws = [RawRecord(n, ts, keySerde.serialize("in", k), Serdes.String().serialize("in", v), headers, ts)
            for n, (k, v, ts, headers) in enumerate(records)]
    out = []
    for i in range(0, len(raws), batch):
        task.addRecords("in", raws[i:i + batch], lag=0)
        task.processAll(0)
        task.commit()
        out += [(r.key, r.value, r.timestamp, r.partition, r.headers) for r in task.drainProduced()]
    return out, withLatencies(task), storeContents(task.stores["s"])


@st.composite
def inputs(draw):
    steps = draw(st.lists(st.tuples(st.sampled_from(["a", "b", "c", None]),
                                    st.sampled_from([0, 1, 2, 5, 9, 20, 45, 70_000, -3, -8, -25, -70]),
                                    st.sampled_from(["v", "v", "v", "x"]),
                                    st.sampled_from([(), (), (("h", b"1"),)])),
                          min_size=1, max_size=60))
    ts, records = 200, []
    for key, step, value, headers in steps:
        ts = max(0, ts + step)
        records.append((key, value, ts, headers))
    return records


@settings(max_examples=200, deadline=None, derandomize=True)
@given(records=inputs(), gap=st.integers(1, 25), grace=st.integers(0, 30),
       kind=st.sampled_from(["count", "aggregate"]), retention=st.sampled_from([None, 200, 150_000]),
       batch=st.sampled_from([1, 7, 1000]), keys=st.sampled_from(sorted(KEY_SERDES)))
def test_fused_loop_equals_the_per_node_path(records, gap, grace, kind, retention, batch, keys):
    """Null keys, late records (SA-6), out-of-order merges (SA-4/SA-5), tombstones, headers, an
    aggregator failing on "x" under LogAndContinue (KIP-1033), expired segments (ST-6: steps of
    70 s jump stream time past a 60 s segment), partitions of the windowed key (DP-1); String,
    JSON and user-defined windowed key serdes."""
    topo = topology(gap, grace, kind, None if retention is None else max(retention, gap + grace), keys)
    keySerde = KEY_SERDES[keys][0]
    assert onDriver(records, topo, True, keySerde) == onDriver(records, topo, False, keySerde)
    assert onBatches(records, topo, True, batch, keySerde) == onBatches(records, topo, False, batch, keySerde)


def test_fused_loop_concrete_records_and_counters():
    """SA-4/SA-5 by hand: "a"@10 opens [10,10]; "a"@15 merges it (tombstone for [10,10] at 10,
    then [10,15]=2 at 15); null key and the late "a"@0 (end 0 < close 30 - 5 - 5) are dropped
    and counted; "b"@30 opens its own session."""
    topo = topology(5, 5, "count")
    records = [("a", "v", 10, ()), ("a", "v", 15, ()), (None, "v", 16, ()), ("b", "v", 30, ()), ("a", "v", 0, ())]
    out, metrics, store = onDriver(records, topo, fused=True)
    long = Serdes.Long()
    decoded = [(KEY_SERDE.deserialize("out", k), None if v is None else long.deserialize("out", v), ts)
               for k, v, ts, _, _ in out]
    assert [(w.key(), w.window().start(), w.window().end(), v, ts) for w, v, ts in decoded] == [
        ("a", 10, 10, 1, 10), ("a", 10, 10, None, 10), ("a", 10, 15, 2, 15), ("b", 30, 30, 1, 30)]
    reasons = {m.tag("reason"): v for m, v in metrics.items() if m.group == "kspark-dropped-records"}
    assert reasons == {"null key": 1, "expired window": 1}
    processed = {m.tag("processor-node-id"): v for m, v in metrics.items()
                 if m.name == "process-total" and m.group == "stream-processor-node-metrics"}
    assert processed == {"KSTREAM-SOURCE-0000000000": 5, "KSTREAM-AGGREGATE-0000000001": 5,
                         "KTABLE-TOSTREAM-0000000002": 4, "KSTREAM-SINK-0000000003": 4}
    # ST-6: with retention gap + grace = 10, key lookups hide [10,15] once a session ends at 30
    assert store == [("b", 30, 30, 1)]


def test_fused_loop_fails_like_the_per_node_path_without_a_handler():
    topo = topology(5, 5, "aggregate")
    for fused in (True, False):
        with TopologyTestDriver(topo, initialWallClockTime=0) as d:
            if not fused:
                d._task._fastPath = None
            i = d.createInputTopic("in", Serdes.String(), Serdes.String())
            i.pipeInput("a", "v", 1)
            with pytest.raises(StreamsException, match=r"processor=KSTREAM-AGGREGATE-0000000001, topic=in, "
                                                       r"partition=0, offset=1, stacktrace=ValueError: bad value x"):
                i.pipeInput("a", "x", 2)


def test_other_shapes_keep_the_per_node_path():
    """Caching on, a mapped toStream, or a key serde other than the session-windowed one."""
    b = StreamsBuilder()
    (b.stream("in").groupByKey().windowedBy(SessionWindows.ofInactivityGapWithNoGrace(timedelta(milliseconds=5)))
     .count().toStream().to("out", Produced.with_(KEY_SERDE, Serdes.Long())))
    with TopologyTestDriver(b.build()) as d:  # record cache on by default
        assert d._task._fastPath is None
    b = StreamsBuilder()
    (b.stream("in").groupByKey().windowedBy(SessionWindows.ofInactivityGapWithNoGrace(timedelta(milliseconds=5)))
     .count(materialized=Materialized.as_("s").withCachingDisabled()).toStream().mapValues(str).to("out"))
    with TopologyTestDriver(b.build()) as d:
        assert d._task._fastPath is None


TIME_KEY_SERDES = {
    "string": (Serdes.String(), lambda size: WindowedSerdes.timeWindowedSerdeFrom(Serdes.String(), size)),
    "json": (Serdes.JSON(), lambda size: WindowedSerdes.timeWindowedSerdeFrom(Serdes.JSON(), size)),
    "custom": (Serdes.String(), lambda size: type("MyWindowedSerde", (type(WindowedSerdes.timeWindowedSerdeFrom(
        Serdes.String(), size)),), {})(Serdes.String(), size)),
}


def timeTopology(size, advance, grace, kind, retention=None, keys="string"):
    keySerde, windowedSerde = TIME_KEY_SERDES[keys]
    b = StreamsBuilder()
    windows = TimeWindows.ofSizeAndGrace(timedelta(milliseconds=size), timedelta(milliseconds=grace))
    windows = windows.advanceBy(timedelta(milliseconds=advance))
    grouped = b.stream("in", Consumed.with_(keySerde, Serdes.String())).groupByKey().windowedBy(windows)
    materialized, valueSerde = uncached(kind, retention)
    if kind == "count":
        table = grouped.count(materialized=materialized)
    elif kind == "reduce":
        table = grouped.reduce(lambda a, v: failOnX(None, v, a), materialized=materialized)
    else:
        table = grouped.aggregate(lambda: "", failOnX, materialized=materialized)
    table.toStream().to("out", Produced.with_(windowedSerde(size), valueSerde))
    return b.build()


@settings(max_examples=200, deadline=None, derandomize=True)
@given(records=inputs(), size=st.integers(1, 25), hop=st.sampled_from([None, 1, 3, 7]), grace=st.integers(0, 30),
       kind=st.sampled_from(["count", "aggregate", "reduce"]), retention=st.sampled_from([None, 60, 150_000]),
       batch=st.sampled_from([1, 7, 1000]), keys=st.sampled_from(sorted(TIME_KEY_SERDES)))
def test_fused_time_window_loop_equals_the_per_node_path(records, size, hop, grace, kind, retention, batch, keys):
    """T-18, tumbling and hopping windows: null keys, records too late for some or all of their windows
    (dropped per window and counted), aggregate timestamps (T-18: max of the window's records),
    headers, an aggregator failing on "x" under LogAndContinue (KIP-1033), retention expiry,
    partitions of the windowed key (DP-1); String, JSON and user-defined windowed key serdes."""
    advance = size if hop is None else min(hop, size)
    topo = timeTopology(size, advance, grace, kind, None if retention is None else max(retention, size + grace), keys)
    keySerde = TIME_KEY_SERDES[keys][0]
    assert onDriver(records, topo, True, keySerde) == onDriver(records, topo, False, keySerde)
    assert onBatches(records, topo, True, batch, keySerde) == onBatches(records, topo, False, batch, keySerde)


def test_fused_time_window_loop_concrete_records_and_counters():
    """T-18 by hand. Hopping windows of 10 ms every 5 ms, grace 0: "a"@7 updates [0,10) and [5,15) (two records
    at 7); "a"@12 updates [5,15) (count 2, timestamp 12) and opens [10,20); "b"@21 closes [5,15) and
    [10,20) for later records; the late "a"@14 is dropped for both its windows (counted twice)."""
    topo = timeTopology(10, 5, 0, "count")
    records = [("a", "v", 7, ()), ("a", "v", 12, ()), ("b", "v", 21, ()), ("a", "v", 14, ())]
    out, metrics, _ = onDriver(records, topo, fused=True)
    serde, long = WindowedSerdes.timeWindowedSerdeFrom(Serdes.String(), 10), Serdes.Long()
    decoded = [(serde.deserialize("out", k), long.deserialize("out", v), ts) for k, v, ts, _, _ in out]
    assert [(w.key(), w.window().start(), w.window().end(), v, ts) for w, v, ts in decoded] == [
        ("a", 0, 10, 1, 7), ("a", 5, 15, 1, 7), ("a", 5, 15, 2, 12), ("a", 10, 20, 1, 12),
        ("b", 15, 25, 1, 21), ("b", 20, 30, 1, 21)]
    reasons = {m.tag("reason"): v for m, v in metrics.items() if m.group == "kspark-dropped-records"}
    assert reasons == {"expired window": 2}


# ---------------------------------------------------------------- column-at-a-time session count runs
@contextmanager
def runsOf(minRun, maxRun):
    """The column-at-a-time runs (``session_count_batch``, and the count runs that share its sizes)
    with other run sizes; (None, None): off.
    Queues convert column rows to tuples two at a time, so runs meet both."""
    from kspark.dsl._internals import session_count_batch as batches
    from kspark.runtime import record_queue

    saved = batches.MIN_RUN, batches.MAX_RUN, batches.SCALAR_AFTER_SHORT_RUN, record_queue.MATERIALIZE_ROWS
    record_queue.MATERIALIZE_ROWS = 2
    if minRun is None:
        batches.MIN_RUN = 1 << 62
    else:
        batches.MIN_RUN, batches.MAX_RUN, batches.SCALAR_AFTER_SHORT_RUN = minRun, maxRun, 3
    try:
        yield
    finally:
        batches.MIN_RUN, batches.MAX_RUN, batches.SCALAR_AFTER_SHORT_RUN, record_queue.MATERIALIZE_ROWS = saved


def rawBatches(raws, topo, batch, config=None, onTask=None, asColumns=False, handOff=False):
    """``onBatches`` on raw records (serialized key, serialized value, timestamp, headers), with the
    whole task checkpoint (store segments and observed time, stream and partition times, node
    states, records left) besides outputs and counters; ``asColumns``: each batch added as
    ``RawRecordColumns``, as the Spark host adds it; ``handOff``: a ``producedListener`` takes
    records off the task while it runs, as the Spark host's staging does."""
    config = StreamsConfig({"application.id": "fast-path",
                            "processing.exception.handler": LogAndContinueProcessingExceptionHandler,
                            "default.deserialization.exception.handler": LogAndContinueExceptionHandler,
                            "default.timestamp.extractor": LogAndSkipOnInvalidTimestamp(), **(config or {})})
    task = StreamTask("0_0", topo.subtopologies()[0], topo.storeBuilders(), config, 0, lambda t: t, lambda t: 3)
    task.initialize()
    assert task._fastPath.__qualname__.startswith("batchRunner")  # the session-count runs were built
    if onTask is not None:
        onTask(task)
    out = feedBatches(task, raws, batch, asColumns, handOff)
    return out, withLatencies(task), task.checkpoint()


def feedBatches(task, raws, batch, asColumns=False, handOff=False, afterCommit=None) -> list:
    """Add ``raws`` (serialized key, serialized value, timestamp, headers) to the initialized
    ``task``'s "in" queue ``batch`` records at a time, each batch processed and committed as the
    Spark hosts do (``asColumns``, ``handOff``: see ``rawBatches``; ``afterCommit(n)`` after batch
    ``n``'s commit); returns the records written as (key, value, timestamp, partition, headers)."""
    handed: list = []
    if handOff:
        task.producedListener = handed.extend
    out = []
    records = [RawRecord(n, ts, k, v, headers, ts if ts >= 0 else None) for n, (k, v, ts, headers) in enumerate(raws)]
    for n, i in enumerate(range(0, len(records), batch)):
        if asColumns:
            task.addRecordColumns("in", columnsOf(records[i:i + batch]), lag=0)
        else:
            task.addRecords("in", records[i:i + batch], lag=0)
        task.processAll(0)
        task.commit()
        produced = [r for chunk in handed + task.drainProducedChunks()
                    for r in (chunk.records() if type(chunk) is ProducedColumns else [chunk])]
        handed.clear()
        out += [(r.key, r.value, r.timestamp, r.partition, r.headers) for r in produced]
        if afterCommit is not None:
            afterCommit(n)
    return out


def columnsOf(records):
    """``RawRecord``s as ``RawRecordColumns`` (bulk timestamps when all are valid, as the Spark host)."""
    timestamps = np.array([r.timestamp for r in records], np.int64)
    return RawRecordColumns(np.array([r.offset for r in records], np.int64), timestamps,
                            pa.array([r.key for r in records], pa.binary()), pa.array([r.value for r in records], pa.binary()),
                            pa.array([encodeHeaders(r.headers) if r.headers else None for r in records], pa.binary()),
                            bool((timestamps >= 0).all()))


@st.composite
def rawInputs(draw):
    """Mostly in-order records per key (long runs) with, at a drawn rate, disorder, null keys, a key
    and a value that are not UTF-8, negative timestamps; duplicate timestamps, sessions across a segment
    boundary, gaps past the 60 s segment."""
    rare = draw(st.sampled_from([0, 1, 3]))  # problems per 40 records, roughly
    keys = [b"a", b"b", b"c", b"d", b"e"] * 8 + [None, b"\xff"] * rare
    steps = [0, 1, 2, 3, 5, 9, 20, 45, 1, 2, 3, 1, 0, 2] * 3 + [70_000] + [-3, -6, -25] * rare
    records = draw(st.lists(st.tuples(st.sampled_from(keys), st.sampled_from(steps),
                                      st.sampled_from([b"v", b"v", b"v", None] * 10 + [b"\xff"] * rare),
                                      st.sampled_from([(), (), (("h", b"1"),)]),
                                      st.sampled_from([False] * 40 + [True] * rare)), min_size=30, max_size=200))
    ts, out = draw(st.sampled_from([200, 59_990])), []  # or just before a segment boundary
    for key, step, value, headers, invalid in records:
        ts = max(0, ts + step)
        out.append((key, value, -1 if invalid else ts, headers))
    return out


@settings(max_examples=300, deadline=None, derandomize=True)
@given(raws=rawInputs(), gap=st.integers(1, 25), grace=st.integers(0, 30), retention=st.sampled_from([None, 150_000]),
       batch=st.sampled_from([5, 40, 1000]), runs=st.sampled_from([(1, 1000), (2, 7), (1, 3)]),
       asColumns=st.booleans())
def test_session_count_runs_equal_the_scalar_loop(raws, gap, grace, retention, batch, runs, asColumns):
    """The vectorised session-count runs against the scalar fused loop: same records, partitions,
    headers, counters and whole task checkpoint, records added as tuples or as columns (SA-1..SA-9, SA-12, ST-6 store expiry,
    T-9..T-12 times, T-3 invalid timestamps skipped, keys that are not UTF-8 read as U+FFFD)."""
    b = StreamsBuilder()
    windows = SessionWindows.ofInactivityGapAndGrace(timedelta(milliseconds=gap), timedelta(milliseconds=grace))
    materialized = uncached("count", retention and max(retention, gap + grace))[0]
    (b.stream("in", Consumed.with_(Serdes.String(), Serdes.String())).groupByKey().windowedBy(windows)
     .count(materialized=materialized.withCachingDisabled())
     .toStream().to("out", Produced.with_(KEY_SERDE, Serdes.Long())))
    topo = b.build()
    with runsOf(*runs):
        vectorised = rawBatches(raws, topo, batch, asColumns=asColumns, handOff=asColumns)
    with runsOf(None, None):
        scalar = rawBatches(raws, topo, batch, asColumns=not asColumns)
    assert vectorised == scalar


def test_session_count_runs_concrete_records():
    """SA-4/SA-5/SA-12 by hand through one vectorised run: "a"@10, "b"@11, "a"@12 (merges [10,10]:
    tombstone at 10, [10,12]=2 at 12), "a"@12 again (tombstone of [10,12], [10,12]=3), "a"@30
    (gap 5 exceeded: new [30,30]=1), "b"@14 (merges [11,11])."""
    raws = [(b"a", None, 10, ()), (b"b", None, 11, ()), (b"a", None, 12, ()), (b"a", None, 12, ()),
            (b"a", None, 30, ()), (b"b", None, 14, ())]
    topo = topology(5, 100, "count")
    handed = []

    def listen(task):  # what a listener gets is the run's output, taken off the task
        task.producedListener = lambda chunk: handed.append((chunk, list(task.produced)))

    with runsOf(1, 1000):
        out, metrics, checkpoint = rawBatches(raws, topo, 1000)
        assert rawBatches(raws, topo, 1000, handOff=True) == (out, metrics, checkpoint)
        rawBatches(raws, topo, 1000, onTask=listen)
    assert [(len(chunk), type(chunk[0]).__name__, left) for chunk, left in handed] == [(1, "ProducedColumns", [])]
    assert [(r.key, r.value, r.timestamp) for r in handed[0][0][0].records()] == [(k, v, ts) for k, v, ts, _, _ in out]
    long = Serdes.Long()
    decoded = [(KEY_SERDE.deserialize("out", k), None if v is None else long.deserialize("out", v), ts)
               for k, v, ts, _, _ in out]
    assert [(w.key(), w.window().start(), w.window().end(), v, ts) for w, v, ts in decoded] == [
        ("a", 10, 10, 1, 10), ("b", 11, 11, 1, 11), ("a", 10, 10, None, 10), ("a", 10, 12, 2, 12),
        ("a", 10, 12, None, 12), ("a", 10, 12, 3, 12), ("a", 30, 30, 1, 30), ("b", 11, 11, None, 11),
        ("b", 11, 14, 2, 14)]
    sessions = checkpoint["stores"]["s"]["sessions"]
    assert sessions == {b"a": [(12, 10, "a", 3), (30, 30, "a", 1)], b"b": [(14, 11, "b", 2)]}
    assert checkpoint["stores"]["s"]["observed"] == 30 and checkpoint["streamTime"] == 30


def test_session_count_runs_fail_where_the_scalar_loop_fails():
    """T-3 (FailOnInvalidTimestamp): the queue reads record 3 when it polls record 2, so the task
    fails with records 0 and 1 processed and 2 not, in a run as in the scalar loop."""
    raws = [(b"a", b"v", 10, ()), (b"b", b"v", 11, ()), (b"a", b"v", 12, ()), (b"c", b"v", -1, ()),
            (b"a", b"v", 14, ())]
    config = {"default.deserialization.exception.handler": LogAndFailExceptionHandler,
              "default.timestamp.extractor": FailOnInvalidTimestamp()}
    results = []
    for runs in ((1, 1000), (None, None)):
        with runsOf(*runs), pytest.raises(StreamsException):
            rawBatches(raws, topology(5, 100, "count"), 1000, config, results.append)
    vectorised, scalar = results
    produced = vectorised.drainProduced()
    assert [r.key[:1] for r in produced] == [b"a", b"b"]
    assert produced == scalar.drainProduced()
    assert vectorised.stores["s"].snapshot() == scalar.stores["s"].snapshot()


def test_session_count_runs_leave_invalid_utf8_keys_to_the_scalar_loop():
    """FINDINGS F5: Kafka's StringDeserializer reads key b"\\xff" as U+FFFD, whose serialized bytes
    differ from the raw ones; the runs (which key sessions by raw bytes) stop before it and the
    scalar loop counts it under "\\ufffd", with the same records and store as without runs."""
    raws = [(b"a", b"v", 10, ()), (b"\xff", b"v", 11, ()), (b"\xef\xbf\xbd", b"\xff", 12, ()), (b"a", b"v", 13, ())]
    results = []
    for runs in ((1, 1000), (None, None)):
        with runsOf(*runs):
            results.append(rawBatches(raws, topology(5, 100, "count"), 1000)[0])
    vectorised, scalar = results
    assert vectorised == scalar
    assert [(KEY_SERDE.deserialize("out", k).key(), Serdes.Long().deserialize("out", v), ts)
            for k, v, ts, _, _ in vectorised] == [
        ("a", 1, 10), ("\ufffd", 1, 11), ("\ufffd", None, 11), ("\ufffd", 2, 12), ("a", None, 10), ("a", 2, 13)]


def pipedToDriver(raws, topo, config, asList, alone=True):
    """``raws`` (key bytes, value bytes, timestamp, headers) piped as bytes, one by one or as one
    ``pipeRecordList``; (outputs, counters, store snapshot, next input offset, error text).
    ``alone=False``: a record piped one by one is always queued (no ``RecordQueue.pollAlone``)."""
    with TopologyTestDriver(topo, config, initialWallClockTime=0) as d:
        queue = d._task.queueOf["in"]
        assert queue._pollsAlone
        queue._pollsAlone = alone
        i = d.createInputTopic("in", Serdes.ByteArray(), Serdes.ByteArray())
        records = [TestRecord(k, v, ts if ts >= 0 else datetime(1969, 12, 31, tzinfo=timezone.utc), h)
                   for k, v, ts, h in raws]
        error = None
        try:
            if asList:
                i.pipeRecordList(records)
            else:
                for r in records:
                    i.pipeInput(r)
        except StreamsException as e:
            error = str(e)
        out = [(key, value, timestamp, partition, headers)
               for partition, timestamp, key, value, headers in d._outputs.get("out", ())]
        return out, d.metrics(), d._task.checkpoint(), d._offsets.get("in"), error


@settings(max_examples=200, deadline=None, derandomize=True)
@given(raws=rawInputs(), fail=st.booleans(), kind=st.sampled_from(["count", "aggregate"]))
def test_pipe_record_list_equals_piping_one_by_one(raws, fail, kind):
    """TTD-1: ``pipeRecordList`` on a fused task queues the records and processes them at once (the
    session-count runs); outputs, counters, store and input offsets equal ``pipeInput`` one by
    one, with keys or values that do not deserialize and timestamps before the epoch skipped
    (LogAndContinue, LogAndSkipOnInvalidTimestamp) or failing the driver (LogAndFail,
    FailOnInvalidTimestamp) at the same record; an aggregator failing on a null value (KIP-1033,
    no handler) fails the driver at that record and the records after it are not piped."""
    if fail:
        config = {"default.deserialization.exception.handler": LogAndFailExceptionHandler,
                  "default.timestamp.extractor": FailOnInvalidTimestamp()}
    else:
        config = {"default.deserialization.exception.handler": LogAndContinueExceptionHandler,
                  "default.timestamp.extractor": LogAndSkipOnInvalidTimestamp()}
    topo = topology(5, 10, kind)
    with runsOf(1, 7):
        assert pipedToDriver(raws, topo, config, True) == pipedToDriver(raws, topo, config, False)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(raws=rawInputs(), extractor=st.sampled_from([LogAndSkipOnInvalidTimestamp, UsePartitionTimeOnInvalidTimestamp]),
       kind=st.sampled_from(["count", "aggregate"]))
def test_a_record_piped_alone_skips_the_queue_as_if_queued(raws, extractor, kind):
    """TTD-1 record at a time on a fused task: a record with a valid timestamp piped into an empty
    queue with built-in deserializers is deserialized and processed without being queued
    (``RecordQueue.pollAlone``); outputs, counters, the whole task checkpoint (partition and stream
    times, store) and the input offsets equal queueing it, around records that do not deserialize
    (skipped, LogAndContinue) and timestamps before the epoch: skipped, or given the partition time
    the records piped alone advanced (T-3, ``UsePartitionTimeOnInvalidTimestamp``)."""
    config = {"default.deserialization.exception.handler": LogAndContinueExceptionHandler,
              "default.timestamp.extractor": extractor()}
    topo = topology(5, 10, kind)
    assert pipedToDriver(raws, topo, config, False) == pipedToDriver(raws, topo, config, False, alone=False)


def test_partition_time_of_records_piped_alone():
    """T-3 by hand: "a"@100 and "a"@50 piped alone advance the partition time to 100, so a record
    with a timestamp before the epoch gets 100 under ``UsePartitionTimeOnInvalidTimestamp`` and
    extends session [50, 100] to a count of 3 (SA-4)."""
    with TopologyTestDriver(topology(60, 100, "count"), {"default.timestamp.extractor": UsePartitionTimeOnInvalidTimestamp()}) as d:
        i = d.createInputTopic("in", Serdes.String(), Serdes.String())
        i.pipeInput("a", "v", 100)
        i.pipeInput("a", "v", 50)
        i.pipeInput("a", "v", datetime(1969, 12, 31, tzinfo=timezone.utc))
        out = d.createOutputTopic("out", KEY_SERDE, Serdes.Long()).readRecordsToList()
    assert [(r.key().window().start(), r.key().window().end(), r.value(), r.timestamp()) for r in out] == [
        (100, 100, 1, 100), (100, 100, None, 100), (50, 100, 2, 100), (50, 100, None, 100), (50, 100, 3, 100)]


def _wrongSinkSerde(kind, keyErrors):
    """A windowed count (caching off) into a sink whose value serde (String) cannot take a count,
    or, with ``keyErrors``, a key serde whose inner serde fails on key "b"."""
    def failOnB(topic, key):
        if key == "b":
            raise ValueError("no b")
        return key.encode()

    b = StreamsBuilder()
    windows = (SessionWindows.ofInactivityGapWithNoGrace(timedelta(milliseconds=5)) if kind == "session"
               else TimeWindows.ofSizeWithNoGrace(timedelta(milliseconds=10)))
    inner = Serdes.serdeFrom(failOnB, lambda t, data: data.decode()) if keyErrors else Serdes.String()
    keySerde = (WindowedSerdes.sessionWindowedSerdeFrom(inner) if kind == "session"
                else WindowedSerdes.timeWindowedSerdeFrom(inner, 10))
    (b.stream("in", Consumed.with_(Serdes.String(), Serdes.String())).groupByKey().windowedBy(windows)
     .count(materialized=Materialized.as_("s").withCachingDisabled())
     .toStream().to("out", Produced.with_(keySerde, Serdes.Long() if keyErrors else Serdes.String())))
    return b.build()


@pytest.mark.parametrize("kind", ["session", "time"])
@pytest.mark.parametrize("keyErrors", [False, True])
def test_a_sink_error_in_the_fused_loop_is_handled_at_tostream_as_per_node(kind, keyErrors):
    """FINDINGS F12: the sink's serialization error reaches toStream()'s processing handler in
    both paths (LogAndContinue: dropped there, counted per node; the store still updated)."""
    records = [("a", "v", 1, ()), ("b", "v", 2, ()), ("a", "v", 3, ())]
    fused, perNode = (onDriver(records, _wrongSinkSerde(kind, keyErrors), f) for f in (True, False))
    assert fused == perNode
    out, metrics, store = fused
    dropped = {(m.tag("processor-node-id"), m.tag("reason")): v for m, v in metrics.items()
               if m.group == "kspark-dropped-records"}
    # each update of "b" fails (keyErrors), or each non-null count (the String serializer writes
    # the session's tombstone of [1,1] when a@3 merges it)
    assert dropped == {("KTABLE-TOSTREAM-0000000002", "processing error: StreamsException"): 1 if keyErrors else 3}
    assert len(out) == {(True, "session"): 3, (True, "time"): 2, (False, "session"): 1, (False, "time"): 0}[
        keyErrors, kind]


@pytest.mark.parametrize("kind", ["session", "time"])
def test_a_sink_error_in_the_fused_loop_writes_the_dead_letters_of_the_per_node_path(kind):
    """KIP-1034 with ``errors.dead.letter.queue.topic.name``: a key serializer failing on "b" makes
    the production handler write a dead-letter record of the input record (its raw bytes, topic,
    partition, offset), then toStream()'s processing handler another, in both paths. The fused
    loop wrote only the second before (its serde call skipped the production handler)."""
    out = []
    for fused in (True, False):
        config = {"processing.exception.handler": LogAndContinueProcessingExceptionHandler,
                  "errors.dead.letter.queue.topic.name": "dlq"}
        with TopologyTestDriver(_wrongSinkSerde(kind, True), config, initialWallClockTime=0) as d:
            if not fused:
                d._task._fastPath = None
            i = d.createInputTopic("in", Serdes.String(), Serdes.String())
            for k, ts in (("a", 1), ("b", 2), ("a", 3)):
                i.pipeInput(k, "v", ts)
            # the stack trace header names each path's own frames
            out.append([(partition, ts, key, value, [(h, v) for h, v in headers if h != "__streams.errors.stacktrace"])
                        for partition, ts, key, value, headers in d._outputs.get("dlq", ())])
    assert out[0] == out[1]
    assert [(key, value, dict(headers)["__streams.errors.exception"], dict(headers)["__streams.errors.offset"])
            for _, _, key, value, headers in out[0]] == [
        (b"b", b"v", b"ValueError", b"1"), (b"b", b"v", b"kspark.errors.StreamsException", b"1")]


def test_a_sink_error_in_the_fused_loop_fails_as_per_node():
    records = [("a", "v", 1, ())]
    errors = []
    for fused in (True, False):
        with TopologyTestDriver(_wrongSinkSerde("time", False)) as d:
            if not fused:
                d._task._fastPath = None
            with pytest.raises(StreamsException) as failure:
                d.createInputTopic("in", Serdes.String(), Serdes.String()).pipeInput("a", "v", 1)
            errors.append((str(failure.value), str(failure.value.__cause__)))
    assert errors[0] == errors[1]
    assert errors[0][0].startswith("Exception caught in process. taskId=0_0, processor=KTABLE-TOSTREAM-0000000002")
    assert errors[0][1].startswith("ClassCastException while producing data to topic out. The value serializer "
                                   "org.apache.kafka.common.serialization.StringSerializer")


def test_windowed_reduce_with_null_values_in_the_fused_loop_equals_per_node():
    """FINDINGS F15 on both paths: a null first value makes a null aggregate (no window stored,
    a tombstone forwarded), the next value starts the window again."""
    b = StreamsBuilder()
    (b.stream("in", Consumed.with_(Serdes.String(), Serdes.String())).groupByKey()
     .windowedBy(TimeWindows.ofSizeWithNoGrace(timedelta(milliseconds=1000)))
     .reduce(lambda a, v: f"{a}+{v}", materialized=Materialized.as_("s").withCachingDisabled())
     .toStream().to("out", Produced.with_(WindowedSerdes.timeWindowedSerdeFrom(Serdes.String(), 1000), Serdes.String())))
    records = [("a", None, 100, ()), ("a", "x", 200, ()), ("b", "y", 250, ()), ("a", None, 300, ())]
    fused, perNode = (onDriver(records, b.build(), f) for f in (True, False))
    assert fused == perNode
    assert [(k[:1], v, ts) for k, v, ts, _, _ in fused[0]] == [
        (b"a", None, 100), (b"a", b"x", 200), (b"b", b"y", 250), (b"a", b"x+None", 300)]


def test_the_per_node_path_hands_off_its_output_every_65536_records():
    """A host's ``producedListener`` takes the produced records off the task every 65,536
    processed records of the per-node loop; what is left is drained after ``processAll``."""
    b = StreamsBuilder()
    b.stream("in", Consumed.with_(Serdes.String(), Serdes.String())).mapValues(str.upper).to("out", Produced.with_(Serdes.String(), Serdes.String()))
    topo = b.build()
    task = StreamTask("0_0", topo.subtopologies()[0], topo.storeBuilders(), StreamsConfig({"application.id": "h"}), 0,
                      lambda t: t, lambda t: 1)
    task.initialize()
    handed = []
    task.producedListener = lambda chunk: handed.append((len(chunk), chunk[0].value, chunk[-1].value, task.produced[:]))
    n = 65536 * 2 + 3
    task.addRecords("in", [RawRecord(i, i, b"k", b"v%d" % i, ()) for i in range(n)], lag=0)
    assert task.processAll(0) == n
    assert handed == [(65536, b"V0", b"V65535", []), (65536, b"V65536", b"V131071", [])]
    assert [r.value for r in task.drainProduced()] == [b"V131072", b"V131073", b"V131074"]


def withLatencies(task) -> dict:
    """The task's counters, and the e2e latency summaries and output histogram of its source and
    terminal nodes at fixed wall-clock times (both paths must keep the same record timestamps)."""
    task.metrics.recordLatencies(1_000_000, 2_000_000)
    return {**task.metrics.all(), **task.metrics.latencySummaries(), "histogram": dict(task.metrics.histogram)}

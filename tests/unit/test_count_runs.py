"""The column-at-a-time runs of the fused count (``count_batch.countRunner``) give the scalar fused
loop's records, partitions, headers, counters, stream and partition times, store contents and
changelog (T-17: a count's timestamp is the max of its records'; T-3 invalid timestamps
skipped; null keys and values dropped and counted; DP-2 partitions of the key's bytes; keys that
are not UTF-8 read as Java reads them), records added as tuples or as columns, over in-memory
stores and the Spark hosts' persistent stores. The scalar loop is itself checked against the
per-node path (``test_fast_path_aggregate.py``)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kspark import (Consumed, FailOnInvalidTimestamp, LogAndContinueExceptionHandler, LogAndFailExceptionHandler,
                    LogAndSkipOnInvalidTimestamp, Materialized, Produced, Serdes, StreamsBuilder)
from kspark.config import StreamsConfig
from kspark.errors import LogAndContinueProcessingExceptionHandler, StreamsException
from kspark.runtime.stream_task import StreamTask
from kspark.state._changelog import ChangelogRecord
from kspark.state._persistent import PersistentTaskState, makePersistent
# tests/unit: pytest's rootdir import; runsOf sets the run sizes the count runs share with the session runs
from test_fast_path import feedBatches, runsOf, withLatencies

LONG = Serdes.Long()


VALUE_SERDES = {"integer": Serdes.Integer(), "string": Serdes.String()}


def topology(values="integer"):
    """``groupByKey().count()`` uncached, Integer values (a value of another size does not
    deserialize) or String values (every value deserializes: the runs check only for nulls)."""
    b = StreamsBuilder()
    (b.stream("in", Consumed.with_(Serdes.String(), VALUE_SERDES[values])).groupByKey()
     .count(Materialized.as_("s").withCachingDisabled())
     .toStream().to("out", Produced.with_(Serdes.String(), Serdes.Long())))
    return b.build()


def countBatches(raws, batch, asColumns=False, handOff=False, stateDir=None, restored=(), onTask=None, config=None,
                 values="integer"):
    """As the Spark hosts run a task: (key bytes, value bytes, timestamp, headers) records added per
    batch (as tuples or as ``RawRecordColumns``), processAll, commit; with ``stateDir`` the store is
    persistent (a working set of 2 entries evicted at each commit, changes applied at once as the
    stream threads apply them), first restored from the changelog records ``restored``. Returns
    the records written, counters and latencies, the task checkpoint, and for a persistent store
    each commit's changelog records and the database's entries."""
    config = StreamsConfig({"application.id": "count-runs",
                            "processing.exception.handler": LogAndContinueProcessingExceptionHandler,
                            "default.deserialization.exception.handler": LogAndContinueExceptionHandler,
                            "default.timestamp.extractor": LogAndSkipOnInvalidTimestamp(), **(config or {})})
    topo = topology(values)
    task = StreamTask("0_0", topo.subtopologies()[0], topo.storeBuilders(), config, 0, lambda t: t, lambda t: 3)
    state = None
    if stateDir is not None:
        assert makePersistent(task.stores["s"])
        state = PersistentTaskState({"s": task.stores["s"]}, {"s": "count-runs-s-changelog"}, str(stateDir), 8 << 20, 2)
        state.open("ckpt", None)
        if restored:
            state.restoreRecords("s", list(restored))
        state.restored("ckpt", None)
    task.initialize()
    assert task._fastPath.__qualname__.startswith("countRunner")  # the count runs were built
    if onTask is not None:
        onTask(task)
    changelog: list = []

    def flushed(n: int) -> None:  # the stream threads' commit: the store's changes applied at once
        if state is not None:
            changelog.append(state.flush("", n, task.partitionGroup.streamTime, "ckpt", applyNow=True))

    out = feedBatches(task, raws, batch, asColumns, handOff, flushed)
    if state is None:
        return out, withLatencies(task), task.checkpoint()
    checkpoint = {"streamTime": task.partitionGroup.streamTime,
                  "partitionTimes": {t: q.partitionTime for t, q in task.queueOf.items()}}
    entries = list(state.db.items(None, None))
    state.close()
    return out, withLatencies(task), checkpoint, changelog, entries


INT = [b"\x00\x00\x00\x01", b"\x00\x00\x00\x02"]


@st.composite
def rawInputs(draw):
    """Long runs of String keys with, at a drawn rate, null keys, a key that is not UTF-8, null
    values, a value that is not an Integer's 4 bytes, negative timestamps; out-of-order timestamps
    (T-17 keeps each key's max)."""
    rare = draw(st.sampled_from([0, 1, 3]))  # problems per 40 records, roughly
    keys = [b"a", b"b", b"c", b"d", b"e", b"\xef\xbf\xbd"] * 7 + [None, b"\xff"] * rare
    records = draw(st.lists(st.tuples(st.sampled_from(keys), st.sampled_from([0, 1, 2, 5, 9, -3, -7, 40]),
                                      st.sampled_from(INT * 20 + [None, b"\x01"] * rare),
                                      st.sampled_from([(), (), (("h", b"1"),)]),
                                      st.sampled_from([False] * 40 + [True] * rare)), min_size=30, max_size=200))
    ts, out = 100, []
    for key, step, value, headers, invalid in records:
        ts = max(0, ts + step)
        out.append((key, value, -1 if invalid else ts, headers))
    return out


@settings(max_examples=200, deadline=None, derandomize=True)
@given(raws=rawInputs(), batch=st.sampled_from([5, 40, 1000]), runs=st.sampled_from([(1, 1000), (2, 7), (1, 3)]),
       asColumns=st.booleans(), values=st.sampled_from(sorted(VALUE_SERDES)))
def test_count_runs_equal_the_scalar_loop_over_an_in_memory_store(raws, batch, runs, asColumns, values):
    with runsOf(*runs):
        vectorised = countBatches(raws, batch, asColumns=asColumns, handOff=asColumns, values=values)
    with runsOf(None, None):
        scalar = countBatches(raws, batch, asColumns=not asColumns, values=values)
    assert vectorised == scalar


# restored entries: a=5@3, b a 4-byte value (LongDeserializer's error, at the aggregation, to the
# processing handler), c a count of 2^62 (left to the scalar loop: the runs' int64 arithmetic stops
# short of Long.MAX_VALUE), d=7@500 (after the records' times)
RESTORED = [ChangelogRecord(b"a", (5).to_bytes(8, "big"), 3), ChangelogRecord(b"b", b"\x00\x00\x00\x07", 3),
            ChangelogRecord(b"c", (1 << 62).to_bytes(8, "big"), 4), ChangelogRecord(b"d", (7).to_bytes(8, "big"), 500)]


@settings(max_examples=100, deadline=None, derandomize=True)
@given(raws=rawInputs(), batch=st.sampled_from([5, 40, 1000]), runs=st.sampled_from([(1, 1000), (2, 7)]),
       asColumns=st.booleans(), restored=st.booleans())
def test_count_runs_equal_the_scalar_loop_over_a_persistent_store(raws, batch, runs, asColumns, restored,
                                                                   tmp_path_factory):
    restoredRecords = RESTORED if restored else ()
    with runsOf(*runs):
        vectorised = countBatches(raws, batch, asColumns=asColumns, stateDir=tmp_path_factory.mktemp("runs"),
                                  restored=restoredRecords)
    with runsOf(None, None):
        scalar = countBatches(raws, batch, asColumns=asColumns, stateDir=tmp_path_factory.mktemp("scalar"),
                              restored=restoredRecords)
    assert vectorised == scalar


def test_count_runs_concrete_records(tmp_path):
    """T-17 and DP-2 by hand, through one run over restored entries a=5@3 and d=7@500: "a"@10
    counts 6 at 10; "e"@11 with a header 1 at 11; "a"@8 counts 7 at 10 (the max timestamp);
    "d"@20 counts 8 at 500 (the entry's); partitions of murmur2(key) over 3."""
    raws = [(b"a", INT[0], 10, ()), (b"e", INT[0], 11, (("h", b"1"),)), (b"a", INT[1], 8, ()), (b"d", INT[0], 20, ())]
    handed = []

    def listen(task):  # what a listener gets is the run's output, taken off the task
        task.producedListener = lambda chunk: handed.append(chunk)

    with runsOf(1, 1000):
        out, _, checkpoint, changelog, entries = countBatches(raws, 1000, stateDir=tmp_path / "a",
                                                              restored=[RESTORED[0], RESTORED[3]])
        countBatches(raws, 1000, stateDir=tmp_path / "b", restored=[RESTORED[0], RESTORED[3]], onTask=listen)
    assert [type(c).__name__ for chunk in handed for c in chunk] == ["ProducedColumns"]  # one run
    assert [(k, LONG.deserialize("out", v), ts, p, h) for k, v, ts, p, h in out] == [
        (b"a", 6, 10, 1, ()), (b"e", 1, 11, 2, (("h", b"1"),)), (b"a", 7, 10, 1, ()), (b"d", 8, 500, 2, ())]
    assert checkpoint["streamTime"] == 20 and checkpoint["partitionTimes"] == {"in": 20}
    assert sorted((k, LONG.deserialize("c", v), ts) for _, k, v, ts, _ in changelog[0]) == [
        (b"a", 7, 10), (b"d", 8, 500), (b"e", 1, 11)]
    # the database: ValueAndTimestamp bytes (timestamp, then the Long) under the store's prefix
    assert sorted(e for e in entries if e[0].startswith(b"ss\x00")) == [
        (b"ss\x00a", (10).to_bytes(8, "big") + (7).to_bytes(8, "big")),
        (b"ss\x00d", (500).to_bytes(8, "big") + (8).to_bytes(8, "big")),
        (b"ss\x00e", (11).to_bytes(8, "big") + (1).to_bytes(8, "big"))]


@pytest.mark.parametrize("invalid", ["timestamp", "value"])
def test_count_runs_fail_where_the_scalar_loop_fails(invalid):
    """T-3 (FailOnInvalidTimestamp) and LogAndFail: the queue reads record 3 when it polls record 2,
    so the task fails with records 0 and 1 processed and 2 not, in a run as in the scalar loop."""
    bad = (b"c", INT[0], -1, ()) if invalid == "timestamp" else (b"c", b"\x01", 13, ())
    raws = [(b"a", INT[0], 10, ()), (b"b", INT[0], 11, ()), (b"a", INT[0], 12, ()), bad, (b"a", INT[0], 14, ())]
    config = {"default.deserialization.exception.handler": LogAndFailExceptionHandler,
              "default.timestamp.extractor": FailOnInvalidTimestamp()}
    tasks = []
    for runs in ((1, 1000), (None, None)):
        with runsOf(*runs), pytest.raises(StreamsException):
            countBatches(raws, 1000, onTask=tasks.append, config=config)
    vectorised, scalar = tasks
    produced = vectorised.drainProducedChunks()
    assert [type(c).__name__ for c in produced] == ["ProducedColumns"]  # a run wrote them
    records = produced[0].records()
    assert [(r.key, LONG.deserialize("out", r.value), r.timestamp) for r in records] == [(b"a", 1, 10), (b"b", 1, 11)]
    assert records == scalar.drainProduced()
    assert vectorised.stores["s"].snapshot() == scalar.stores["s"].snapshot()

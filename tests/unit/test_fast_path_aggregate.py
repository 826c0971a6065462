"""The fused record loop of ``source -> count / reduce / aggregate -> toStream() -> to()``
(``fast_paths.aggregateFastPath``) gives the same output records, headers, partitions, metrics,
drops, errors and store contents as the per-node path it replaces (rule T-17: an aggregate's
timestamp is the max of its records'; null keys and values dropped and counted; KIP-1033
processing handler at the aggregation and at ``toStream()``; DP-1 partitions of the key),
record at a time (TopologyTestDriver), per batch over in-memory stores, and per commit over the
persistent stores of the Spark hosts (RocksDB working sets that evict between commits).

The per-node path is forced by clearing the task's ``_fastPath``; each run first checks that the
fused loop was really built, so a shape change cannot make a test vacuous.
"""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kspark import Consumed, Materialized, Produced, Serdes, StreamsBuilder
from kspark.config import StreamsConfig
from kspark.errors import LogAndContinueProcessingExceptionHandler, StreamsException
from kspark.runtime.record_queue import RawRecord
from kspark.runtime.stream_task import StreamTask
from kspark.state._persistent import PersistentTaskState, makePersistent
from kspark.testing import TopologyTestDriver
from test_fast_path import onDriver as onDriverWith, withLatencies  # tests/unit: pytest's rootdir import

KEY_SERDES = {"string": Serdes.String(), "json": Serdes.JSON()}
KINDS = ("count", "reduce", "aggregate", "inPlace", "sinkError")


def failOnX(agg, value):
    if value == "x":
        raise ValueError("bad value x")
    return agg + "+" + value


class RecordingHandler(LogAndContinueProcessingExceptionHandler):
    """LogAndContinue, keeping what each call was given: the failing node and its input record
    (for ``toStream()``, the ``Change`` with the old value the aggregation forwards)."""

    seen: list = []

    def handleError(self, context, record, exception):
        RecordingHandler.seen.append((tuple(context), record.key(), repr(record.value()), record.timestamp(),
                                      record._headers))
        return super().handleError(context, record, exception)


def newTally():
    return {"n": 0, "last": None}


def tally(key, value, agg):
    """A new dict per update (the store keeps its bytes: a mutable value)."""
    if value == "x":
        raise ValueError("bad value x")
    return {"n": agg["n"] + 1, "last": value}


def tallyInPlace(key, value, agg):
    """Changes the aggregate it was given, as a Java aggregator may."""
    agg["n"] += 1
    agg["last"] = value
    return agg


def topology(kind: str, keys: str = "string", cached: bool = False):
    keySerde = KEY_SERDES[keys]
    materialized = Materialized.as_("s")
    if not cached:
        materialized = materialized.withCachingDisabled()
    grouped = StreamsBuilder()
    b, grouped = grouped, grouped.stream("in", Consumed.with_(keySerde, Serdes.String())).groupByKey()
    if kind in ("count", "sinkError"):
        table = grouped.count(materialized=materialized)
        # sinkError: a Long count into the String serde fails at the sink, for every record
        valueSerde = Serdes.Long() if kind == "count" else Serdes.String()
    elif kind == "reduce":
        table, valueSerde = grouped.reduce(failOnX, materialized=materialized.withValueSerde(Serdes.String())), Serdes.String()
    else:
        table = grouped.aggregate(newTally, tally if kind == "aggregate" else tallyInPlace,
                                  materialized=materialized.withValueSerde(Serdes.JSON()))
        valueSerde = Serdes.JSON()
    table.toStream().to("out", Produced.with_(keySerde, valueSerde))
    return b.build()


def onDriver(records, topo, fused, keySerde):
    """``test_fast_path.onDriver``'s output, metrics and store, and what the handler was given."""
    RecordingHandler.seen = []
    return (*onDriverWith(records, topo, fused, keySerde, RecordingHandler), RecordingHandler.seen)


def newTask(topo):
    RecordingHandler.seen = []
    config = StreamsConfig({"application.id": "fast-path", "processing.exception.handler": RecordingHandler})
    return StreamTask("0_0", topo.subtopologies()[0], topo.storeBuilders(), config, 0, lambda t: t, lambda t: 3)


def raw(records, keySerde):
    return [RawRecord(n, ts, keySerde.serialize("in", k), Serdes.String().serialize("in", v), headers, ts)
            for n, (k, v, ts, headers) in enumerate(records)]


def onBatches(records, topo, fused, batch, keySerde, stateDir=None, restored=()):
    """As the Spark hosts run a task: raw records added per batch, processAll, commit. With
    ``stateDir``, the store is persistent (RocksDB, a working set of 2 entries between commits,
    each commit's changes applied at once as the stream threads apply them), first restored from
    the changelog records ``restored``; the changelog records and the database's entries are
    compared too."""
    task = newTask(topo)
    state = None
    if stateDir is not None:
        store = task.stores["s"]
        assert makePersistent(store)
        state = PersistentTaskState({"s": store}, {"s": "fast-path-s-changelog"}, str(stateDir), 8 << 20, 2)
        state.open("ckpt", None)
        if restored:
            state.restoreRecords("s", list(restored))
        state.restored("ckpt", None)
    task.initialize()
    assert task._fastPath is not None
    if not fused:
        task._fastPath = None
    out, changelog = [], []
    raws = raw(records, keySerde)
    for n, i in enumerate(range(0, len(raws), batch)):
        task.addRecords("in", raws[i:i + batch], lag=0)
        task.processAll(0)
        task.commit()
        out += [(r.key, r.value, r.timestamp, r.partition, r.headers) for r in task.drainProduced()]
        if state is not None:
            changelog.append(sorted((t, k, v, ts) for t, k, v, ts, _ in
                                    state.flush("", n, task.partitionGroup.streamTime, "ckpt", applyNow=True)))
    if state is None:
        return out, withLatencies(task), sorted(task.stores["s"]._data.items()), RecordingHandler.seen
    entries = list(state.db.items(None, None))
    state.close()
    return out, withLatencies(task), changelog, entries, RecordingHandler.seen


@st.composite
def inputs(draw):
    steps = draw(st.lists(st.tuples(st.sampled_from(["a", "b", "c", "d", None]), st.sampled_from([0, 1, 5, -3, -40]),
                                    st.sampled_from(["v", "w", "v", "x", None]),
                                    st.sampled_from([(), (), (("h", b"1"),)])),
                          min_size=1, max_size=60))
    ts, records = 100, []
    for key, step, value, headers in steps:
        ts = max(0, ts + step)
        records.append((key, value, ts, headers))
    return records


@settings(max_examples=150, deadline=None, derandomize=True)
@given(records=inputs(), kind=st.sampled_from(KINDS), batch=st.sampled_from([1, 7, 1000]),
       keys=st.sampled_from(sorted(KEY_SERDES)))
def test_fused_aggregate_loop_equals_the_per_node_path(records, kind, batch, keys, tmp_path_factory):
    """Null keys and values (dropped, counted), out-of-order timestamps (T-17), headers, an
    aggregator or reducer failing on "x" and a sink failing on every record under LogAndContinue
    (KIP-1033), a mutable aggregate changed in place, String and JSON keys (DP-1: the partition
    of the key's bytes), in-memory and persistent stores."""
    topo, keySerde = topology(kind, keys), KEY_SERDES[keys]
    driver, batches = onDriver(records, topo, True, keySerde), onBatches(records, topo, True, batch, keySerde)
    assert driver == onDriver(records, topo, False, keySerde)
    assert batches == onBatches(records, topo, False, batch, keySerde)
    # TopologyTestDriver and the hosts' batches write the same records (the batches' task writes
    # to 3 partitions, the driver's topic has 1)
    assert [r[:3] + r[4:] for r in driver[0]] == [r[:3] + r[4:] for r in batches[0]]
    fused, perNode = tmp_path_factory.mktemp("fused"), tmp_path_factory.mktemp("per-node")
    assert (onBatches(records, topo, True, batch, keySerde, fused)
            == onBatches(records, topo, False, batch, keySerde, perNode))


def test_fused_count_loads_a_persistent_stores_entries_as_the_per_node_path(tmp_path, caplog):
    """The fused count's inline load of a String/Long persistent store (``aggregateFastPath``):
    restored entries a=5@3 and b (a 4-byte value, not a Long), a key c never written; a working
    set of 2 entries evicted between commits. a counts on from 5 at the max timestamp (T-17); b's
    load fails with LongDeserializer's error at the aggregation, to its processing handler
    (KIP-1033, LogAndContinue: skipped); c counts from 1. Same records, changelog and entries as
    the per-node path."""
    from kspark.state._changelog import ChangelogRecord

    topo = topology("count")
    restored = [ChangelogRecord(b"a", (5).to_bytes(8, "big"), 3), ChangelogRecord(b"b", b"\x00\x00\x00\x07", 3)]
    records = [("a", "v", 2, ()), ("b", "v", 4, ()), ("c", "v", 5, ()), ("a", "v", 6, ()), ("b", "v", 7, ())]
    runs = [onBatches(records, topo, fused, 2, Serdes.String(), tmp_path / str(fused), restored)
            for fused in (True, False)]
    assert runs[0] == runs[1]
    out, _, _, _, seen = runs[0]
    long = Serdes.Long()
    assert [(k, long.deserialize("out", v), ts) for k, v, ts, _, _ in out] == [(b"a", 6, 3), (b"c", 1, 5), (b"a", 7, 6)]
    assert [(context[5], context[2], key, ts) for context, key, _, ts, _ in seen] == [
        ("KSTREAM-AGGREGATE-0000000001", 1, "b", 4), ("KSTREAM-AGGREGATE-0000000001", 4, "b", 7)]
    assert caplog.text.count("SerializationException: Size of data received by LongDeserializer is not 8") == 4


def test_fused_count_concrete_records_and_counters():
    """T-17 by hand: "a"@10 counts 1; "a"@5 counts 2 at 10 (the max timestamp); a null key and a
    null value are dropped and counted; "b"@7 counts 1. The String key's bytes and the Long
    value's 8 bytes, partitions of murmur2(key) over the sink's 3 partitions."""
    topo = topology("count")
    records = [("a", "v", 10, ()), ("a", "v", 5, (("h", b"1"),)), (None, "v", 11, ()), ("a", None, 12, ()),
               ("b", "v", 7, ())]
    task = newTask(topo)
    task.initialize()
    assert task._fastPath is not None
    task.addRecords("in", raw(records, Serdes.String()), lag=0)
    assert task.processAll(0) == 5
    out = [(r.key, Serdes.Long().deserialize("out", r.value), r.timestamp, r.partition, r.headers)
           for r in task.drainProduced()]
    assert out == [(b"a", 1, 10, 1, ()), (b"a", 2, 10, 1, (("h", b"1"),)), (b"b", 1, 7, 2, ())]
    counters = task.metrics.all()
    dropped = {m.tag("reason"): v for m, v in counters.items() if m.group == "kspark-dropped-records"}
    assert dropped == {"null key or value": 2}
    nodes = {m.tag("processor-node-id"): v for m, v in counters.items()
             if m.name == "process-total" and m.group == "stream-processor-node-metrics"}
    assert nodes == {"KSTREAM-SOURCE-0000000000": 5, "KSTREAM-AGGREGATE-0000000001": 5,
                     "KTABLE-TOSTREAM-0000000002": 3, "KSTREAM-SINK-0000000003": 3}


@pytest.mark.parametrize("fused", [True, False])
def test_fused_aggregate_fails_like_the_per_node_path_without_a_handler(fused):
    with TopologyTestDriver(topology("reduce"), initialWallClockTime=0) as d:
        assert d._task._fastPath is not None
        if not fused:
            d._task._fastPath = None
        i = d.createInputTopic("in", Serdes.String(), Serdes.String())
        i.pipeInput("a", "v", 1)
        with pytest.raises(StreamsException, match=r"processor=KSTREAM-REDUCE-0000000001, topic=in, "
                                                   r"partition=0, offset=1, stacktrace=ValueError: bad value x"):
            i.pipeInput("a", "x", 2)


def test_other_shapes_keep_the_per_node_path():
    """The record cache on, or another node after toStream()."""
    with TopologyTestDriver(topology("count", cached=True)) as d:
        assert d._task._fastPath is None
    b = StreamsBuilder()
    b.stream("in").groupByKey().count(materialized=Materialized.as_("s").withCachingDisabled()).toStream() \
        .mapValues(str).to("out")
    with TopologyTestDriver(b.build()) as d:
        assert d._task._fastPath is None


def test_a_sink_error_writes_the_dead_letters_of_the_per_node_path():
    """KIP-1034 with ``errors.dead.letter.queue.topic.name``: the sink's key serializer failing
    on "b" makes the production handler write a dead-letter record of the input record, then
    toStream()'s processing handler another, in both paths."""
    def failOnB(topic, key):
        if key == "b":
            raise ValueError("no b")
        return key.encode()

    b = StreamsBuilder()
    (b.stream("in", Consumed.with_(Serdes.String(), Serdes.String())).groupByKey()
     .count(materialized=Materialized.as_("s").withCachingDisabled()).toStream()
     .to("out", Produced.with_(Serdes.serdeFrom(failOnB, lambda t, data: data.decode()), Serdes.Long())))
    out = []
    for fused in (True, False):
        config = {"processing.exception.handler": LogAndContinueProcessingExceptionHandler,
                  "errors.dead.letter.queue.topic.name": "dlq"}
        with TopologyTestDriver(b.build(), config, initialWallClockTime=0) as d:
            assert d._task._fastPath is not None
            if not fused:
                d._task._fastPath = None
            i = d.createInputTopic("in", Serdes.String(), Serdes.String())
            for k, ts in (("a", 1), ("b", 2), ("a", 3)):
                i.pipeInput(k, "v", ts)
            # the stack trace header names each path's own frames
            out.append(([(p, ts, k, v) for p, ts, k, v, _ in d._outputs.get("out", ())],
                        [(p, ts, k, v, [(h, x) for h, x in headers if h != "__streams.errors.stacktrace"])
                         for p, ts, k, v, headers in d._outputs.get("dlq", ())]))
    assert out[0] == out[1]
    outputs, deadLetters = out[0]
    assert [(k, v) for _, _, k, v in outputs] == [(b"a", (1).to_bytes(8, "big")), (b"a", (2).to_bytes(8, "big"))]
    assert [(k, v, dict(h)["__streams.errors.exception"]) for _, _, k, v, h in deadLetters] == [
        (b"b", b"v", b"ValueError"), (b"b", b"v", b"kspark.errors.StreamsException")]

"""Fused chains of built-in processors (``StreamTask._fuseChains``: filter, mapValues, KStream-KTable
and KStream-GlobalKTable joins called once per node instead of forward -> wrapper -> process)
give what the per-node path gives on the same input: output records (keys, values, timestamps,
headers), ``process-total`` and dropped-records counters (J-1..J-4, J-7, J-8 null-key drops),
the processing handler's calls (KIP-1033: node, record context, record headers, exception; a
ClassCastException handed to the node above), the FAIL error, the record context and stream time a
processor below the chain sees, and stream-time punctuation (P-2).

The per-node path is forced with ``StreamTask.fuseChains = False``; every test checks which chain
was fused, so a change of shape cannot make it vacuous.
"""

from contextlib import contextmanager

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kspark import Consumed, Materialized, Produced, PunctuationType, Serdes, StreamsBuilder
from kspark.errors import ProcessingExceptionHandler, ProcessingHandlerResponse
from kspark.processor import ContextualProcessor, Record
from kspark.runtime.stream_task import StreamTask
from kspark.serialization import IncompatibleTypeException
from kspark.testing import TopologyTestDriver

CALLS: list = []  # (node, topic, partition, offset, timestamp, headers, record, exception) per handler call


class RecordingHandler(ProcessingExceptionHandler):
    response = ProcessingHandlerResponse.CONTINUE

    def handle(self, context, record, exception):
        CALLS.append((context.processorNodeId, context.topic, context.partition, context.offset, context.timestamp,
                      context.headers, repr(record), type(exception).__name__, str(exception)))
        return self.response


class FailingHandler(RecordingHandler):
    response = ProcessingHandlerResponse.FAIL


class Tail(ContextualProcessor):
    """Below the chain: records what it sees, adds a header, raises a ClassCastException on "cc"
    (after the header: the node above meets it with the record it forwarded), punctuates."""

    seen: list = []

    def init(self, context):
        super().init(context)
        context.schedule(10, PunctuationType.STREAM_TIME, self.punctuate)

    def punctuate(self, ts):
        Tail.seen.append(("punctuate", ts))
        self.context().forward(Record("p", str(ts), ts))

    def process(self, record):
        ctx = self.context()
        Tail.seen.append((record.key(), record.value(), record.timestamp(), tuple(record.headers()),
                          tuple(ctx.recordMetadata()), ctx.currentStreamTimeMs()))
        record.headers().add("seen", b"1")
        if "cc" in str(record.value()):
            raise IncompatibleTypeException("cc", Serdes.Long(), record.value())
        ctx.forward(record)


def tableJoiner(key, value, tableValue):
    if tableValue == "boom-j":
        raise ValueError(f"bad table value for {key}")
    if tableValue == "cc-j":
        raise IncompatibleTypeException("cc-j", Serdes.Long(), value)
    return f"{value}|{tableValue}"


def mapper(value):
    if "boom-m" in value:
        raise TypeError("bad value to map")
    return value + "!"


def globalKey(key, value):
    return None if key == "nk" else (None if key is None else key.upper())


def predicate(key, value):
    if "boom-p" in str(value):
        raise RuntimeError("bad value to filter")
    return "y" not in str(value)


def topology(order, leftTable, leftGlobal, tail):
    b = StreamsBuilder()
    s = Consumed.with_(Serdes.String(), Serdes.String())
    table = b.table("t", s, Materialized.as_("t-store"))
    glob = b.globalTable("g", s, Materialized.as_("g-store"))
    stream = b.stream("in", s)
    if order == "filter-first":
        stream = stream.filter(predicate, named="f")
    stream = (stream.leftJoin if leftTable else stream.join)(table, tableJoiner, joined="tj")
    stream = stream.mapValues(mapper, named="m")
    stream = (stream.leftJoin if leftGlobal else stream.join)(glob, globalKey, lambda v, g: f"{v}+{g}", named="gj")
    if order == "filter-last":
        stream = stream.filterNot(lambda k, v: not predicate(k, v), named="f")
    if tail:
        stream = stream.process(Tail, named="tail")
    stream.to("out", Produced.with_(Serdes.String(), Serdes.String()))
    return b.build()


@contextmanager
def fusing(on):
    before = StreamTask.fuseChains
    StreamTask.fuseChains = on
    try:
        yield
    finally:
        StreamTask.fuseChains = before


def run(events, topo, handler, fused):
    CALLS.clear()
    Tail.seen = []
    error = None
    with fusing(fused), TopologyTestDriver(topo, {"processing.exception.handler": handler}, initialWallClockTime=0) as d:
        chains = d._task.fusedChains
        topics = {t: d.createInputTopic(t, Serdes.String(), Serdes.String()) for t in ("in", "t", "g")}
        out = d.createOutputTopic("out", Serdes.String(), Serdes.String())
        try:
            for topic, key, value, ts, headers in events:
                topics[topic].pipeInput(key, value, ts, headers=headers)
        except Exception as e:
            error = (type(e).__name__, str(e), type(e.__cause__).__name__, str(e.__cause__))
        records = [(r.key(), r.value(), r.timestamp(), tuple(r.headers())) for r in out.readRecordsToList()]
        return chains, records, d.metrics(), list(CALLS), list(Tail.seen), error


@st.composite
def events(draw):
    tables = draw(st.lists(st.tuples(st.sampled_from(["t", "g"]), st.sampled_from(["a", "b", "nk", "A", "B"]),
                                     st.sampled_from(["T1", "T2", "boom-j", "cc-j", None]), st.integers(0, 5),
                                     st.just(())), max_size=8))
    stream = draw(st.lists(st.tuples(st.just("in"), st.sampled_from(["a", "b", "c", "nk", None]),
                                     st.sampled_from(["x", "y", "boom-p", "boom-m", "cc", None]), st.integers(0, 60),
                                     st.sampled_from([(), (("h", b"1"),), (("h", None), ("h", b"2"))])),
                           min_size=1, max_size=25))
    late = draw(st.lists(st.tuples(st.sampled_from(["t", "g"]), st.sampled_from(["a", "b", "A"]),
                                   st.sampled_from(["T3", "boom-j", None]), st.integers(0, 60), st.just(())),
                         max_size=4))
    mixed = stream + late
    order = draw(st.permutations(range(len(mixed))))
    base = [("t", "a", "T1", 0, ()), ("t", "b", "T2", 0, ()), ("g", "A", "G1", 0, ()), ("g", "B", "G2", 0, ())]
    return base + tables + [mixed[i] for i in order]


@settings(max_examples=150, deadline=None, derandomize=True)
@given(events=events(), order=st.sampled_from(["filter-first", "filter-last"]), leftTable=st.booleans(),
       leftGlobal=st.booleans(), tail=st.booleans(), handler=st.sampled_from([RecordingHandler, FailingHandler]))
def test_fused_chain_equals_the_per_node_path(events, order, leftTable, leftGlobal, tail, handler):
    fused = run(events, topology(order, leftTable, leftGlobal, tail), handler, True)
    plain = run(events, topology(order, leftTable, leftGlobal, tail), handler, False)
    names = ["f", "tj", "m", "gj"] if order == "filter-first" else ["tj", "m", "gj", "f"]
    assert fused[0] == [names] and plain[0] == []
    assert fused[1:] == plain[1:]


def test_both_paths_on_a_fixed_input():
    """Concrete expectations, so the comparison above cannot pass on two equally wrong paths."""
    events = [("t", "a", "T1", 0, ()), ("g", "A", "G", 0, ()), ("t", "b", "boom-j", 0, ()),
              ("in", "a", "x", 5, (("h", b"1"),)), ("in", "a", "y", 6, ()), ("in", None, "x", 7, ()),
              ("in", "b", "x", 8, ()), ("in", "a", "cc", 9, ())]
    topo = topology("filter-last", False, False, True)
    for fused in (True, False):
        chains, records, metrics, calls, seen, error = run(events, topo, RecordingHandler, fused)
        assert records == [("p", "0", 0, ()), ("a", "x|T1!+G", 5, (("h", b"1"), ("seen", b"1")))]
        assert seen[1] == ("a", "x|T1!+G", 5, (("h", b"1"),), ("in", 0, 0), 5)
        assert error is None
        # b's joiner raised at tj; a's "cc" raised in the tail, a ClassCastException met by f,
        # with the record the tail had changed (its header added), as in Kafka's node above
        assert [c[0] for c in calls] == ["tj", "f"]
        assert calls[0][7:] == ("ValueError", "bad table value for b")
        assert calls[1][5] == (("seen", b"1"),) and calls[1][7] == "StreamsException"
        dropped = {(k.tag("processor-node-id"), k.tag("reason")): v for k, v in metrics.items()
                   if k.name == "dropped-records-total" and k.tag("reason")}
        assert dropped == {("tj", "null join key or value"): 1, ("tj", "processing error: ValueError"): 1,
                           ("f", "processing error: StreamsException"): 1}  # J-2, KIP-1033
        process = {k.tag("processor-node-id"): v for k, v in metrics.items() if k.name == "process-total"}
        assert process["tj"] == 5 and process["m"] == 3 and process["gj"] == 3 and process["f"] == 3


def test_a_versioned_or_buffered_join_ends_the_chain():
    """fusedStep returns None where the join reads as of the record's time or buffers it."""
    from datetime import timedelta

    from kspark import Joined, Stores

    b = StreamsBuilder()
    s = Consumed.with_(Serdes.String(), Serdes.String())
    table = b.table("t", s, Materialized.as_(Stores.persistentVersionedKeyValueStore("v", timedelta(minutes=1))))
    (b.stream("in", s).filter(lambda k, v: True, named="f")
     .join(table, lambda v, t: v + t, Joined.with_(Serdes.String(), Serdes.String(), Serdes.String())
           .withGracePeriod(timedelta(0)).withName("tj"))
     .to("out"))
    with TopologyTestDriver(b.build()) as d:
        assert d._task.fusedChains == [["f"]]


def onTask(raws, fused):
    """As the Spark host runs a task: records added per batch, ``processAll`` and commit."""
    from kspark.config import StreamsConfig
    from kspark.runtime.record_queue import RawRecord

    b = StreamsBuilder()
    s = Consumed.with_(Serdes.String(), Serdes.String())
    table = b.table("t", s, Materialized.as_("t-store"))
    b.stream("in", s).filter(predicate, named="f").join(table, tableJoiner, joined="tj").mapValues(mapper, named="m") \
        .to("out", Produced.with_(Serdes.String(), Serdes.String()))
    topo = b.build()
    with fusing(fused):
        task = StreamTask("0_0", topo.subtopologies()[0], topo.storeBuilders(),
                          StreamsConfig({"application.id": "fused", "processing.exception.handler": RecordingHandler}),
                          0, lambda t: t, lambda t: 2)
        task.initialize()
    CALLS.clear()
    out, error = [], None
    task.addRecords("t", [RawRecord(0, 0, b"a", b"T1"), RawRecord(1, 0, b"b", b"boom-j")], lag=0)
    try:
        for batch in (raws[:3], raws[3:]):
            task.addRecords("in", [RawRecord(*r) for r in batch], lag=0)
            task.processAll(0)
            task.commit()
            out += task.drainProduced()
    except Exception as e:
        error = (type(e).__name__, str(e))
    return task.fusedChains, out, withLatencies(task), list(CALLS), error


@pytest.mark.parametrize("extracted", [None, -1])
def test_process_all_on_a_task_equals_the_per_node_path(extracted):
    """The Spark host's batches (``processAll``): the same output, counters and handler calls; a
    record whose extracted timestamp a host gave as negative fails as a Record of it does
    (``Malformed Record``), on both paths."""
    raws = [(0, 5, b"a", b"x", (("h", b"1"),)), (1, 6, b"b", b"x", ()), (2, 7, b"a", b"boom-p", ()),
            (3, 8, None, b"x", ()), (4, 9, b"a", b"y", (), extracted), (5, 10, b"a", b"boom-m", ())]
    fused, plain = onTask(raws, True), onTask(raws, False)
    assert fused[0] == [["f", "tj", "m"]] and plain[0] == []
    assert fused[1:] == plain[1:]
    if extracted is None:
        assert [(r.key, r.value, r.timestamp, r.headers) for r in fused[1]] == [
            (b"a", b"x|T1!", 5, (("h", b"1"),))]  # b: its joiner raised; a "y": filtered out
        assert [c[0] for c in fused[3]] == ["tj", "f", "m"] and fused[4] is None
    else:
        assert fused[4] == ("ValueError", "Malformed Record: timestamp may not be negative. Got: -1")


def withLatencies(task) -> dict:
    """The task's counters, and the e2e latency summaries and output histogram of its source and
    terminal nodes at fixed wall-clock times (both paths must keep the same record timestamps)."""
    task.metrics.recordLatencies(1_000_000, 2_000_000)
    return {**task.metrics.all(), **task.metrics.latencySummaries(), "histogram": dict(task.metrics.histogram)}

"""``__emit.interval.ms.kstreams.windowed.aggregation__`` (issue 36 item 4): an emit-final
aggregation (``EmitStrategy.onWindowClose()``; time, session and sliding windows) runs its emit pass
at most once per interval of wall-clock time (Kafka ``AbstractKStreamTimeWindowAggregateProcessor
.shouldEmitFinal`` / ``KStreamSessionWindowAggregate``: ``now < nextTimeToEmit`` skips the pass,
a pass sets ``nextTimeToEmit = now + interval`` whether or not a window closed). Windows closed
meanwhile go out together at the next pass, or never if the store expired them first. Not set,
the interval is 0 (TopologyTestDriver's value, TTD-2): every record runs the pass.

Every expected record is Kafka 4.3.1's TopologyTestDriver's, which advances its wall clock with
``advanceWallClockTime`` as here (conformance ``*.emitFinal.emitInterval.fixed``; generated inputs
in ``*.emitFinal.emitInterval``)."""

from datetime import timedelta

import pytest

from kspark import (Consumed, EmitStrategy, KeyValue, Produced, Serdes, SessionWindows, SlidingWindows, StreamsBuilder,
                    TimeWindows)
from kspark.testing import TopologyTestDriver

KEY = "__emit.interval.ms.kstreams.windowed.aggregation__"
# records (key, timestamp) and wall-clock advances (ms), the driver's clock starting at 0
STEPS = (("a", 100), ("b", 1600), 1000, ("c", 1700), ("a", 2600), 500, ("b", 2700), 500, ("c", 2800),
         ("c", 2900), 2500, ("a", 3100), ("a", 3900), 1000, ("b", 3950))
WINDOWS = {
    "time": TimeWindows.ofSizeAndGrace(timedelta(milliseconds=1000), timedelta(milliseconds=500)),
    "session": SessionWindows.ofInactivityGapAndGrace(timedelta(milliseconds=500), timedelta(milliseconds=300)),
    "sliding": SlidingWindows.ofTimeDifferenceAndGrace(timedelta(milliseconds=500), timedelta(milliseconds=200)),
}
# Kafka's records after each step, interval 1000 ms
THROTTLED = {
    "time": {3: [("a@0/1000", 1, 100)], 8: [("b@1000/2000", 1, 1600), ("c@1000/2000", 1, 1700)],
             # a@3100 passes at wall clock 4500 but closes no new window (shouldRangeFetch)
             14: [("a@2000/3000", 1, 2600), ("b@2000/3000", 1, 2700), ("c@2000/3000", 2, 2900)]},
    "session": {3: [("a@100/100", 1, 100)], 8: [("b@1600/1600", 1, 1600), ("c@1700/1700", 1, 1700)],
                14: [("b@2700/2700", 1, 2700), ("c@2800/2900", 2, 2900), ("a@2600/3100", 2, 3100)]},
    # a@100 is early (before the time difference): Kafka skips the emit pass for it, so b@1600 runs the first
    "sliding": {1: [("a@0/500", 1, 100)], 8: [("b@1100/1600", 1, 1600), ("c@1200/1700", 1, 1700)],
                11: [("a@2100/2600", 1, 2600), ("b@2200/2700", 1, 2700), ("c@2300/2800", 1, 2800)],
                14: [("c@2400/2900", 2, 2900), ("a@2600/3100", 2, 3100), ("a@2601/3101", 1, 3100),
                     ("c@2801/3301", 1, 2900)]},
}


def topology(kind):
    b = StreamsBuilder()
    (b.stream("in", Consumed.with_(Serdes.String(), Serdes.String())).groupByKey().windowedBy(WINDOWS[kind])
     .emitStrategy(EmitStrategy.onWindowClose()).count().toStream()
     .map(lambda w, c: KeyValue.pair(f"{w.key()}@{w.window().start()}/{w.window().end()}", c))
     .to("out", Produced.with_(Serdes.String(), Serdes.Long())))
    return b.build()


def run(kind, config):
    props = {"default.key.serde": Serdes.String(), "default.value.serde": Serdes.String(), **config}
    with TopologyTestDriver(topology(kind), props, initialWallClockTime=0) as d:
        inp, out = d.createInputTopic("in"), d.createOutputTopic("out", Serdes.String(), Serdes.Long())
        steps = []
        for step in STEPS:
            if isinstance(step, int):
                d.advanceWallClockTime(timedelta(milliseconds=step))
            else:
                inp.pipeInput(step[0], "x", step[1])
            steps.append([(r.key(), r.value(), r.timestamp()) for r in out.readRecordsToList()])
        return steps


@pytest.mark.parametrize("cache", [0, 10 << 20])
@pytest.mark.parametrize("kind", ["time", "session", "sliding"])
def test_emit_final_runs_at_most_once_per_interval_of_wall_clock_time(kind, cache):
    got = run(kind, {KEY: "1000", "statestore.cache.max.bytes": cache})
    assert got == [THROTTLED[kind].get(i, []) for i in range(len(STEPS))]


def test_without_the_interval_every_record_runs_the_emit_pass():
    """TopologyTestDriver's default 0: each window goes out as soon as a record closes it
    (conformance ``wcount.emitFinal.noInterval.fixed``)."""
    got = run("time", {})
    assert got == run("time", {KEY: 0})
    assert [(i, r) for i, records in enumerate(got) for r in records] == [
        (1, ("a@0/1000", 1, 100)), (4, ("b@1000/2000", 1, 1600)), (4, ("c@1000/2000", 1, 1700)),
        (12, ("a@2000/3000", 1, 2600)), (12, ("b@2000/3000", 1, 2700)), (12, ("c@2000/3000", 2, 2900))]

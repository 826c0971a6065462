"""Property tests (hypothesis): the session-window aggregation in TopologyTestDriver equals a
small reference model of KIP-94 written as a pure function of the input (rules SA-1..SA-12,
ST-6, ST-8, SW-*), for both emit strategies, with the record cache off (every update forwarded).

The model keeps, per key, a dict of sessions ``(start, end) -> aggregate`` and follows Kafka's
``KStreamSessionWindowAggregate`` step by step: null keys are skipped before stream time moves;
candidate sessions are those of the key overlapping ``[ts - gap, ts + gap]`` that the segmented
store still shows (end > max session end put - retention, ST-6), taken in store order (end,
start); a merged window ending before ``streamTime - gap - grace`` drops the record; otherwise
each merged-away session gets a tombstone unless the merged window is ``[ts, ts]``, and the new
aggregate is forwarded with timestamp = window end. Emit-on-close forwards, after every
non-null-key record, all sessions (every key) whose end lies in ``[max(0, lastClose),
close - 1]``, ordered by (end, start, key); that time-ordered read sees every session of a live
segment, even one the key lookups already hide (Kafka's ``fetchSessions`` does not clamp its
lower bound to the retention). Timestamps stay below 60 s, so with gap + grace
< 60 s every session stays in segment 0 and no segment is ever dropped (ST-6's segment
expiry is covered by concrete tests in test_session_windows.py).
"""

from datetime import timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from kspark import Consumed, EmitStrategy, Materialized, Produced, Serdes, SessionWindows, StreamsBuilder, WindowedSerdes
from kspark.testing import TopologyTestDriver

KEY_SERDE = WindowedSerdes.sessionWindowedSerdeFrom(Serdes.String())


def model(records, gap, grace, emitFinal, kind):
    """The expected output records ``(key, start, end, value, timestamp)`` (value None = tombstone)."""
    retention = gap + grace
    sessions: dict = {}
    streamTime, maxEnd, lastClose = -1, -1 << 62, -1
    out = []
    init = (lambda: 0) if kind == "count" else (lambda: "")
    merge = (lambda a, b: a + b)
    for key, value, ts in records:
        if key is None:
            continue
        streamTime = max(streamTime, ts)
        close = streamTime - gap - grace
        own = sessions.setdefault(key, {})
        found = sorted(((e, s) for (s, e) in own
                        if e >= ts - gap and s <= ts + gap and e > maxEnd - retention))
        agg, start, end = init(), ts, ts
        for e, s in found:
            agg = merge(agg, own[(s, e)])
            start, end = min(start, s), max(end, e)
        if end >= close:
            if (start, end) != (ts, ts):
                for e, s in found:
                    del own[(s, e)]
                    maxEnd = max(maxEnd, e)
                    if not emitFinal:
                        out.append((key, s, e, None, e))
            agg = agg + 1 if kind == "count" else agg + "+" + value
            own[(start, end)] = agg
            maxEnd = max(maxEnd, end)
            if not emitFinal:
                out.append((key, start, end, agg, end))
        if emitFinal and (lastClose == -1 or lastClose < close):
            lower, upper = max(0, lastClose), close - 1
            if upper >= 0 and upper >= lower:
                due = sorted((e, s, k, a) for k, ks in sessions.items() for (s, e), a in ks.items()
                             if lower <= e <= upper)  # the time-ordered read is not clamped
                out += [(k, s, e, a, e) for e, s, k, a in due]
                lastClose = close
    return out


def onDriver(records, gap, grace, emitFinal, kind):
    b = StreamsBuilder()
    windowed = (b.stream("in", Consumed.with_(Serdes.String(), Serdes.String())).groupByKey()
                .windowedBy(SessionWindows.ofInactivityGapAndGrace(timedelta(milliseconds=gap),
                                                                   timedelta(milliseconds=grace))))
    if emitFinal:
        windowed = windowed.emitStrategy(EmitStrategy.onWindowClose())
    valueSerde = Serdes.Long() if kind == "count" else Serdes.String()
    materialized = Materialized.as_("s").withValueSerde(valueSerde)
    table = (windowed.count(materialized=materialized) if kind == "count" else
             windowed.aggregate(lambda: "", lambda k, v, agg: agg + "+" + v, lambda k, a, b: a + b,
                                materialized=materialized))
    table.toStream().to("out", Produced.with_(KEY_SERDE, valueSerde))
    with TopologyTestDriver(b.build(), {"statestore.cache.max.bytes": 0}) as d:
        i = d.createInputTopic("in", Serdes.String(), Serdes.String())
        for k, v, ts in records:
            i.pipeInput(k, v, ts)
        return [(r.key().key(), r.key().window().start(), r.key().window().end(), r.value(), r.timestamp())
                for r in d.createOutputTopic("out", KEY_SERDE, valueSerde).readRecordsToList()]


@st.composite
def inputs(draw):
    steps = draw(st.lists(st.tuples(st.sampled_from(["a", "b", "c", None]),
                                    st.sampled_from([0, 1, 2, 5, 9, 20, 45, -3, -8, -25, -70])),
                          min_size=1, max_size=60))
    ts, records = 200, []
    for n, (key, step) in enumerate(steps):
        ts = max(0, ts + step)
        records.append((key, str(n), ts))
    return records


@settings(max_examples=300, deadline=None, derandomize=True)
@given(records=inputs(), gap=st.integers(1, 25), grace=st.integers(0, 30), emitFinal=st.booleans(),
       kind=st.sampled_from(["count", "aggregate"]))
def test_session_aggregation_equals_the_kip94_model(records, gap, grace, emitFinal, kind):
    assert onDriver(records, gap, grace, emitFinal, kind) == model(records, gap, grace, emitFinal, kind)


def test_model_agrees_with_a_hand_worked_case():
    """SA-6, SA-8: gap 10, grace 20: a@0, a@20 are two sessions; a@10 bridges them into [0,20] = 3 records,
    with a tombstone for each merged-away session first (timestamps = their ends)."""
    records = [("a", "0", 0), ("a", "1", 20), ("a", "2", 10)]
    expected = [("a", 0, 0, 1, 0), ("a", 20, 20, 1, 20), ("a", 0, 0, None, 0), ("a", 20, 20, None, 20),
                ("a", 0, 20, 3, 20)]
    assert model(records, 10, 20, False, "count") == expected
    assert onDriver(records, 10, 20, False, "count") == expected

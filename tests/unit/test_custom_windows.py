"""Issue 19 item 4: custom windows (Kafka ``Windows``) and the fused loop's conditions.

A ``Windows`` subclass (or a ``TimeWindows`` subclass overriding ``windowsFor``) must give the
same records with the record cache off (where the built-in windows take the fused loop) as with
it on (the per-node path); the built-in ``TimeWindows`` must give the same records fused and
per node. Rules T-18 (window aggregate timestamps), SA-10 (cache flushed per record in the driver).
"""

import pytest

from kspark import Consumed, Serdes, StreamsBuilder, TimeWindow, TimeWindows, Windows
from kspark.testing import TopologyTestDriver

INPUT = [("a", "x", 3), ("a", "y", 7), ("b", "z", 12), ("a", "w", 16)]


class ShiftedWindows(TimeWindows):
    """Tumbling 10 ms windows starting at 5, 15, 25... (``windowsFor`` overridden)."""

    def __init__(self):
        super().__init__(10, 10, 0)

    def windowsFor(self, timestamp):
        start = ((timestamp - 5) // 10) * 10 + 5
        return {start: TimeWindow(start, start + 10)} if start >= 0 else {}


class PairsOfWindows(Windows):
    """A custom ``Windows``: 20 ms windows starting at every multiple of 10."""

    def windowsFor(self, timestamp):
        base = timestamp - timestamp % 10
        return {s: TimeWindow(s, s + 20) for s in (base - 10, base) if s >= 0}

    def size(self):
        return 20

    def gracePeriodMs(self):
        return 0


def counts(windows, config, fused=None):
    b = StreamsBuilder()
    (b.stream("in", Consumed.with_(Serdes.String(), Serdes.String())).groupByKey().windowedBy(windows).count()
     .toStream().to("out"))
    with TopologyTestDriver(b.build(), config) as d:
        if fused is not None:
            assert (d._task._fastPath is not None) == fused
        for k, v, ts in INPUT:
            d.createInputTopic("in").pipeInput(k, v, ts)
        return [(r.key().key(), r.key().window().start(), r.key().window().end(), r.value(), r.timestamp())
                for r in d.createOutputTopic("out").readRecordsToList()]


@pytest.mark.parametrize("cache", [0, 10_000_000])
def test_timewindows_subclass_overriding_windowsfor_is_used_on_both_paths(cache):
    # cache 0 took the fused loop with its own window arithmetic before (issue 19 item 4)
    assert counts(ShiftedWindows(), {"statestore.cache.max.bytes": cache}, fused=False) == [
        ("a", 5, 15, 1, 7), ("b", 5, 15, 1, 12), ("a", 15, 25, 1, 16)]  # 3 is in no window


@pytest.mark.parametrize("cache", [0, 10_000_000])
def test_custom_windows_class(cache):
    assert counts(PairsOfWindows(), {"statestore.cache.max.bytes": cache}) == [
        ("a", 0, 20, 1, 3), ("a", 0, 20, 2, 7), ("b", 0, 20, 1, 12), ("b", 10, 30, 1, 12),
        ("a", 0, 20, 3, 16), ("a", 10, 30, 1, 16)]


def test_builtin_timewindows_fused_equals_per_node():
    expected = [("a", 0, 10, 1, 3), ("a", 0, 10, 2, 7), ("b", 10, 20, 1, 12), ("a", 10, 20, 1, 16)]
    windows = TimeWindows.ofSizeWithNoGrace(10)
    assert counts(windows, {"statestore.cache.max.bytes": 0}, fused=True) == expected
    assert counts(windows, {"statestore.cache.max.bytes": 10_000_000}, fused=False) == expected


def test_windowedby_rejects_what_is_no_windows():
    with pytest.raises(TypeError, match="takes Windows"):
        StreamsBuilder().stream("in").groupByKey().windowedBy(10)

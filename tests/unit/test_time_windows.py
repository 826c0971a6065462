"""Time-window aggregations: windowsFor, grace, late drops, timestamps (rules T-18, SW-8-like
validation, DP-1 windowed partitioning)."""

import pytest

from kspark import KeyValue, Materialized, Produced, Serdes, StreamsBuilder, TimeWindow, TimeWindows, Windowed, WindowedSerdes
from kspark.runtime.partitioner import partitionForKey
from kspark.testing import TestRecord, TopologyTestDriver


def test_windows_for_tumbling_and_hopping():
    assert TimeWindows.ofSizeWithNoGrace(10).windowsFor(25) == {20: TimeWindow(20, 30)}
    assert TimeWindows.ofSizeWithNoGrace(10).advanceBy(5).windowsFor(25) == {20: TimeWindow(20, 30), 25: TimeWindow(25, 35)}
    assert TimeWindows.ofSizeWithNoGrace(10).advanceBy(5).windowsFor(3) == {0: TimeWindow(0, 10)}


def test_validation_messages():
    with pytest.raises(ValueError, match="Window size"):
        TimeWindows.ofSizeWithNoGrace(0)
    with pytest.raises(ValueError, match="Window advancement interval"):
        TimeWindows.ofSizeWithNoGrace(10).advanceBy(11)
    with pytest.raises(ValueError, match="Grace period must not be negative."):
        TimeWindows.ofSizeAndGrace(10, -1)
    with pytest.raises(ValueError, match="Window startMs time cannot be negative."):
        TimeWindow(-1, 5)


def windowedCount(windows, materialized=None):
    b = StreamsBuilder()
    (b.stream("in").groupByKey().windowedBy(windows).count(materialized=materialized)
     .toStream().to("out", Produced.with_(WindowedSerdes.timeWindowedSerdeFrom(Serdes.String(), windows.size()), Serdes.Long())))
    return b.build()


def test_t18_tumbling_count_with_grace_drops_records_of_closed_windows():
    windows = TimeWindows.ofSizeAndGrace(10, 5)
    with TopologyTestDriver(windowedCount(windows, Materialized.as_("counts"))) as d:
        i = d.createInputTopic("in")
        for ts in (1, 12, 8, 16, 9, 25):
            i.pipeInput("k", "v", ts)
        # 9 arrives at stream time 16: window [0,10) closes at 16 - 5 = 11 >= 10 -> dropped
        assert d.createOutputTopic("out").readRecordsToList() == [
            TestRecord(Windowed("k", TimeWindow(0, 10)), 1, 1),
            TestRecord(Windowed("k", TimeWindow(10, 20)), 1, 12),
            TestRecord(Windowed("k", TimeWindow(0, 10)), 2, 8),
            TestRecord(Windowed("k", TimeWindow(10, 20)), 2, 16),
            TestRecord(Windowed("k", TimeWindow(20, 30)), 1, 25),
        ]
        drops = {m.tag("reason"): v for m, v in d.metrics().items() if m.group == "kspark-dropped-records"}
        assert drops == {"expired window": 1}
        assert list(d.getWindowStore("counts").fetch("k", 0, 30)) == [
            KeyValue(10, (2, 16)), KeyValue(20, (1, 25))]  # [0,10) is past retention (size + grace)


def test_hopping_windows_update_every_containing_window():
    windows = TimeWindows.ofSizeWithNoGrace(10).advanceBy(5)
    with TopologyTestDriver(windowedCount(windows)) as d:
        d.createInputTopic("in").pipeInput("k", "v", 7)
        assert d.createOutputTopic("out").readKeyValuesToList() == [
            (Windowed("k", TimeWindow(0, 10)), 1), (Windowed("k", TimeWindow(5, 15)), 1)]


def test_windowed_key_serde_round_trips_and_partitions_by_the_base_key():
    serde = WindowedSerdes.timeWindowedSerdeFrom(Serdes.String(), 10)
    data = serde.serialize("t", Windowed("alice", TimeWindow(20, 30)))
    assert data == b"alice" + (20).to_bytes(8, "big")
    assert serde.deserialize("t", data) == Windowed("alice", TimeWindow(20, 30))
    assert str(Windowed("alice", TimeWindow(20, 30))) == "[alice@20/30]"
    assert partitionForKey(serde.baseKeyBytes(data), 5) == 4  # DP-3: "alice" -> 4 of 5

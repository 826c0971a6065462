"""KStream-KStream joins (Kafka ``KStreamJoinWindow``, ``KStreamKStreamJoin``,
``KStreamKStreamJoinLeftSide`` / ``RightSide``, ``KStreamImplJoin.TimeTracker``).

A join is five processors: each input goes through a *windowed* node that forwards the record
and then puts it (non-null key) into its side's window store (which retains duplicates); its
*join* node looks the key up in the other side's store, over ``[ts - before, ts + after]``
(left side; the right side uses ``[ts - after, ts + before]``), and forwards
``joiner(left, right)`` for every match with timestamp ``max(ts, other's ts)``; a *merge* node
(``PassThrough``) unites the two. The record is looked up before it is put, so in a self-join a
record meets itself once, through the right side.

Left and outer joins with ``JoinWindows.ofTimeDifference*`` (KIP-633, the spurious-result fix):
a record that finds no match is not forwarded at once but kept in the shared *outer-join store*
(key = timestamp, side, key; Kafka's ``ListValueStore``). An in-order record (timestamp equal to
the join's stream time, shared by both sides of a task) first emits every kept record whose
window has closed: left records with ``ts + after + grace < streamTime``, right records with
``ts + before + grace < streamTime``, in store order (timestamp, right side first, key bytes), with
their own timestamps and the current record's headers, ``joiner(left, None)`` /
``joiner(None, right)``. A kept record that later joins is removed. A record whose window end
``ts + after`` (its side's) is already before stream time is forwarded at once as non-joined.
With the deprecated ``JoinWindows.of`` there is no outer-join store: non-joined results are
forwarded at once (Kafka < 3.1).

A null key or value is skipped and counted (``dropped-records``, "Skipping record due to null key
or value."), except that the outer side of a left/outer join forwards a null-key record with a
value at once as non-joined (KIP-962). Kafka's emit throttle
(``__emit.interval.ms.kstreams.outer.join.spurious.results.fix__``) is 0 on every kspark host,
TopologyTestDriver's value (rule TTD-2).
"""

from __future__ import annotations

from ...processor import ContextualProcessor, Record
from ...state._join_stores import LeftOrRightValue, TimestampedKeyAndJoinSide
from .common import dropped

_MAX = (1 << 63) - 1  # Java's Long.MAX_VALUE: the time tracker's "no minimum"


def _javaLong(n: int) -> int:
    """``n`` wrapped to a signed 64-bit long, as Java's long arithmetic does (``Long.MAX_VALUE + 1``
    is negative): the time tracker's ``minTime`` starts at ``Long.MAX_VALUE``."""
    return ((n + (1 << 63)) & ((1 << 64) - 1)) - (1 << 63)


class KStreamJoinWindow(ContextualProcessor):
    """Forwards the record, then puts it into this side's window store if its key is not null
    (Kafka ``KStreamJoinWindow``)."""

    def __init__(self, storeName: str) -> None:
        self.storeName = storeName

    def init(self, context) -> None:
        super().init(context)
        self.store = context.getStateStore(self.storeName)

    def process(self, record: Record) -> None:
        self.context().forward(record)
        key = record.key()
        if key is not None:
            self.store.put(key, record.value(), record.timestamp())


class KStreamKStreamJoin(ContextualProcessor):
    """One side of a stream-stream join (Kafka ``KStreamKStreamJoin.KStreamKStreamJoinProcessor``;
    see the module docstring).

    Parameters
    ----------
    otherStoreName : str
        The other side's window store.
    beforeMs, afterMs : int
        This side's lookup range ``[ts - beforeMs, ts + afterMs]`` (the left side: the windows'
        ``before``/``after``; the right side: swapped).
    windows : JoinWindows
    joiner : callable
        ``joiner(key, thisValue, otherValue)`` (the right side gets the reversed joiner).
    outer : bool
        This side forwards non-joined records (left side of left/outer joins, both sides of outer joins).
    outerStoreName : str or None
        The outer-join store (left/outer joins with the spurious-result fix), else None.
    leftSide : bool
    trackerName : str
        Name of the time tracker both sides of this join share per task.
    """

    def __init__(self, otherStoreName: str, beforeMs: int, afterMs: int, windows, joiner, outer: bool,
                 outerStoreName: str | None, leftSide: bool, trackerName: str) -> None:
        self.otherStoreName, self.beforeMs, self.afterMs = otherStoreName, beforeMs, afterMs
        self.windowsBeforeMs, self.windowsAfterMs = windows.beforeMs, windows.afterMs
        self.graceMs = windows.gracePeriodMs()
        self.joiner, self.outer, self.leftSide = joiner, outer, leftSide
        self.outerStoreName = outerStoreName if windows._spuriousResultFix else None
        self.trackerName = trackerName

    def init(self, context) -> None:
        super().init(context)
        self.otherStore = context.getStateStore(self.otherStoreName)
        self.outerStore = None if self.outerStoreName is None else context.getStateStore(self.outerStoreName)
        tracker = self.tracker = context.sharedState(self.trackerName)  # Kafka's TimeTracker of this task
        tracker.setdefault("streamTime", -1)
        tracker.setdefault("minTime", _MAX)

    def process(self, record: Record) -> None:
        tracker = self.tracker
        key, value, ts = record.key(), record.value(), record.timestamp()
        if ts > tracker["streamTime"]:
            tracker["streamTime"] = ts
        if self.outer and key is None and value is not None:
            self.context().forward(record.withValue(self.joiner(key, value, None)))
            return
        if key is None or value is None:
            dropped(self.context(), "null key or value", "Skipping record due to null key or value.")
            return
        outerStore = self.outerStore
        if outerStore is not None and ts == tracker["streamTime"]:
            self._emitNonJoinedOuterRecords(record)
        timeFrom = max(0, ts - self.beforeMs)
        timeTo = max(0, ts + self.afterMs)
        otherStore = self.otherStore
        matches = otherStore._fetchEntries(otherStore._keyBytes(key), timeFrom, timeTo)
        if matches:
            joiner, forward, thaw = self.joiner, self.context().forward, otherStore._thaw
            for otherTs, _, _, otherValue in matches:
                if outerStore is not None:
                    # the other side's record joined: it is no longer a non-joined candidate
                    outerStore.putIfAbsent(TimestampedKeyAndJoinSide(not self.leftSide, key, otherTs), None)
                forward(Record(key, joiner(key, value, thaw(otherValue)), max(ts, otherTs), record._headers))
        elif self.outer:
            if outerStore is None or timeTo < tracker["streamTime"]:
                self.context().forward(record.withValue(self.joiner(key, value, None)))
            else:
                if ts < tracker["minTime"]:
                    tracker["minTime"] = ts
                outerStore.put(TimestampedKeyAndJoinSide(self.leftSide, key, ts),
                               LeftOrRightValue(value, None) if self.leftSide else LeftOrRightValue(None, value))

    def _emitNonJoinedOuterRecords(self, record: Record) -> None:
        """Forward the kept non-joined records whose window has closed, then delete them (Kafka
        ``emitNonJoinedOuterRecords``; its emit throttle is 0 here, see the module docstring)."""
        tracker, grace = self.tracker, self.graceMs
        streamTime = tracker["streamTime"]
        if _javaLong(tracker["minTime"] + self.afterMs + grace) >= streamTime:
            return  # nothing kept can have closed yet
        tracker["minTime"] = _MAX
        store, forward, joiner, leftSide = self.outerStore, self.context().forward, self.joiner, self.leftSide
        # a left record's window closes at ts + after (+ grace), a right record's at ts + before
        leftClose, rightClose = self.windowsAfterMs + grace, self.windowsBeforeMs + grace
        leftOpen = rightOpen = False
        deleted: set = set()
        scanned = 0
        headers = record._headers
        for kb, stored, values in store._scan():
            scanned += 1
            isLeft, ts = stored.leftSide, stored.timestamp
            isOpen = ts + (leftClose if isLeft else rightClose) >= streamTime
            stop = False
            for storedValue in values:  # Kafka iterates value by value: minTime and the break are per value
                tracker["minTime"] = ts
                if leftOpen and rightOpen:  # no more candidates on either side
                    stop = True
                    break
                if isOpen:  # this side's window is still open: later records of this side are too
                    if isLeft:
                        leftOpen = True
                    else:
                        rightOpen = True
                    continue
                left, right = store._thawSide(storedValue)
                # the right side's joiner is reversed: it takes (key, right, left)
                out = joiner(stored.key, left, right) if leftSide else joiner(stored.key, right, left)
                forward(Record(stored.key, out, ts, headers))
                deleted.add(kb)
            if stop:
                break
        if deleted:
            store._deleteScanned(scanned, deleted)

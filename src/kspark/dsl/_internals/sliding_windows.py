"""Sliding-window aggregations: ``KGroupedStream.windowedBy(SlidingWindows)`` ``.count/reduce/
aggregate`` (Kafka ``KStreamSlidingWindowAggregate``, KIP-450), emitting on update or on close.

For a time difference ``d`` every record at ``t`` has a *left* window ``[t - d, t]`` (it is the
last record in it) and, if records of the key follow within ``d``, a *right* window ``[t + 1,
t + 1 + d]`` (it starts just after it); the windows hold exactly the distinct sets of records
within ``d`` of each other. A window is stored (and forwarded) as ``Windowed(key, TimeWindow(start,
start + d))`` in a window store of window size ``d`` and retention ``2 d + grace``; its value is a
``ValueAndTimestamp`` whose timestamp is the largest record timestamp in it. A record at ``t``
reads its key's windows starting in ``[t - 2 d, t + 1]`` (latest first), adds itself to those
that contain it, creates its left window from the window just before (or the initializer), its
right window from the latest window it is in, and the previous record's right window if missing.
Records before ``d`` go into one window ``[0, d]``. A record whose left window ends before
``streamTime - grace`` is dropped; a window it would update that ends before that time is
skipped; each is logged and counted ("Skipping record for expired window.").
"""

from __future__ import annotations

from ...processor import ContextualProcessor, Record
from ...state import ValueAndTimestamp
from ...state._window import TimeWindow, Windowed
from .cache import RecordCache
from .common import Change, dropped, emitIntervalMs, expiredWindow, shouldEmitFinal


def _make(value, timestamp: int):
    """Kafka ``ValueAndTimestamp.make``: None for a None value."""
    return None if value is None else ValueAndTimestamp(value, timestamp)


class KStreamSlidingWindowAggregate(ContextualProcessor):
    """Sliding-window aggregation (Kafka ``KStreamSlidingWindowAggregate``; see the module docstring).

    Null keys or values are skipped and counted. With ``emitFinal`` (``EmitStrategy.onWindowClose()``)
    nothing is forwarded on update; after each record (from ``d`` on), when the close time
    ``streamTime - grace`` advanced, every window (all keys) starting in ``[lower, closeTime - d - 1]``
    is forwarded once, by start then key, with its aggregate's timestamp and the current record's
    headers; ``lower`` is 0 the first time, then ``max(0, lastCloseTime - d)``; at most one emit
    pass per ``__emit.interval.ms.kstreams.windowed.aggregation__`` ms of wall-clock time
    (``common.shouldEmitFinal``; 0 when not set: TopologyTestDriver's value, TTD-2, on every host).
    """

    sendOldValues = False  # set by the table's supplier when a downstream operation needs old values

    def __init__(self, storeName: str, windows, initializer, aggregator, caching: bool = False,
                 emitFinal: bool = False) -> None:
        self.storeName, self.windows = storeName, windows
        self.initializer, self.aggregator = initializer, aggregator
        self.emitFinal = emitFinal
        self.caching = caching and not emitFinal  # Kafka: no cache for emit-final
        self.d, self.grace = windows.timeDifferenceMs(), windows.gracePeriodMs()

    def init(self, context) -> None:
        super().init(context)
        self.store = context.getStateStore(self.storeName)
        self.cache = RecordCache.forStore(self, self.caching and context.cachingEnabled(), self.store, "window")
        self.meta = context.nodeState()
        self.meta.setdefault("observedStreamTime", -1)
        self.meta.setdefault("lastEmitWindowCloseTime", -1)
        self.emitIntervalMs = emitIntervalMs(context) if self.emitFinal else 0

    def process(self, record: Record) -> None:
        key, ts = record.key(), record.timestamp()
        if key is None or record.value() is None:
            dropped(self.context(), "null key or value", "Skipping record due to null key or value.")
            return
        meta = self.meta
        if ts > meta["observedStreamTime"]:
            meta["observedStreamTime"] = ts
        closeTime = meta["observedStreamTime"] - self.grace
        d = self.d
        if ts + d < closeTime:
            self._skip(ts, ts, ts + d, closeTime)
            return
        self.kb = self.store._keyBytes(key)
        if ts < d:
            self._processEarly(record, closeTime)
            return  # Kafka returns before maybeForwardFinalResult for early records
        self._processReverse(record, closeTime)
        if self.emitFinal:
            self._maybeForwardFinalResult(record, closeTime)

    def _skip(self, ts: int, start: int, end: int, closeTime: int) -> None:
        expiredWindow(self.context(), ts, f"[{start},{end}]", closeTime, self.meta["observedStreamTime"])

    def _windows(self, key, timeFrom: int, timeTo: int) -> list:
        """``(start, ValueAndTimestamp)`` of ``key``'s windows starting in ``[timeFrom, timeTo]``,
        read as Kafka reads them: through the record cache, which still holds windows the store
        hides past its retention."""
        windows = self.store._windowsOfKey(self.kb, timeFrom, timeTo)
        return self.cache.withCachedWindows(self.kb, windows, timeFrom, timeTo) if self.cache.enabled else windows

    def _processReverse(self, record: Record, closeTime: int) -> None:
        """Kafka ``processReverse``: the key's windows from the latest start back."""
        ts, d = record.timestamp(), self.d
        starts = set()
        leftWinAgg = rightWinAgg = previousRecordTimestamp = None
        leftWinAlreadyCreated = rightWinAlreadyCreated = False
        for start, vt in reversed(self._windows(record.key(), max(0, ts - 2 * d), ts + 1)):
            starts.add(start)
            end = start + d
            if start == ts + 1:
                rightWinAlreadyCreated = True
            elif end > ts:
                if rightWinAgg is None:
                    rightWinAgg = vt
                self._updateWindowAndForward(start, end, vt, record, closeTime, True)
            elif end == ts:
                leftWinAlreadyCreated = True
                self._updateWindowAndForward(start, end, vt, record, closeTime, True)
                if vt.timestamp < ts:
                    previousRecordTimestamp = vt.timestamp
                else:
                    return  # a record at ts was here before: every window it needs exists
            else:  # end < ts: the window just before this record's left window
                leftWinAgg, previousRecordTimestamp = vt, vt.timestamp
                break
        self._createWindows(record, closeTime, starts, rightWinAgg, leftWinAgg, leftWinAlreadyCreated,
                            rightWinAlreadyCreated, previousRecordTimestamp)

    def _processEarly(self, record: Record, closeTime: int) -> None:
        """Kafka ``processEarly``: a record at ``0 <= ts < d`` goes into the window ``[0, d]`` (no
        negative starts), and updates or creates right windows as later records need."""
        ts, d = record.timestamp(), self.d
        starts = set()
        combined = rightWinAgg = previousRecordTimestamp = None
        rightWinAlreadyCreated = False
        for start, vt in self._windows(record.key(), 0, ts + 1):
            starts.add(start)
            if start == 0:
                combined = vt
                if vt.timestamp < ts:
                    previousRecordTimestamp = vt.timestamp
            elif start <= ts:
                rightWinAgg = vt
                self._updateWindowAndForward(start, start + d, vt, record, closeTime, True)
            elif start == ts + 1:
                rightWinAlreadyCreated = True
            else:
                raise RuntimeError("Unexpected window found when processing sliding windows")
        if rightWinAgg is None and combined is not None and combined.timestamp > ts:
            rightWinAgg = combined
        if not rightWinAlreadyCreated and rightWinAgg is not None and rightWinAgg.timestamp > ts:
            self._createCurrentRecordRightWindow(ts, rightWinAgg, record)
        if previousRecordTimestamp is not None and previousRecordTimestamp + 1 not in starts:
            self._createPreviousRecordRightWindow(previousRecordTimestamp + 1, record, closeTime)
        if combined is None:
            self._updateWindowAndForward(0, d, _make(self.initializer(), ts), record, closeTime, False)
        else:
            self._updateWindowAndForward(0, d, combined, record, closeTime, True)

    def _createWindows(self, record: Record, closeTime: int, starts: set, rightWinAgg, leftWinAgg,
                       leftWinAlreadyCreated: bool, rightWinAlreadyCreated: bool, previousRecordTimestamp) -> None:
        ts, d = record.timestamp(), self.d
        if previousRecordTimestamp is not None:  # the previous record's right window, if this record is in it
            previousRightStart = previousRecordTimestamp + 1
            if previousRightStart not in starts and previousRightStart + d >= ts:
                self._createPreviousRecordRightWindow(previousRightStart, record, closeTime)
        if not leftWinAlreadyCreated:  # this record's left window: the previous records within d, and this one
            if previousRecordTimestamp is not None and ts - d <= previousRecordTimestamp:
                vt = _make(leftWinAgg.value, ts)
            else:
                vt = _make(self.initializer(), ts)
            TimeWindow(ts - d, ts)  # Kafka builds it here: with d = 0 every record fails (end must exceed start)
            self._updateWindowAndForward(ts - d, ts, vt, record, closeTime, False)
        if not rightWinAlreadyCreated and rightWinAgg is not None and rightWinAgg.timestamp > ts:
            self._createCurrentRecordRightWindow(ts, rightWinAgg, record)

    def _createCurrentRecordRightWindow(self, ts: int, rightWinAgg, record: Record) -> None:
        """``[ts + 1, ts + 1 + d]`` holds the later records of the latest window this record is in."""
        start = ts + 1
        self.store._putBytes(self.kb, record.key(), rightWinAgg, start)
        self._maybeForwardUpdate(record, start, None, rightWinAgg.value, rightWinAgg.timestamp, False)

    def _createPreviousRecordRightWindow(self, start: int, record: Record, closeTime: int) -> None:
        self._updateWindowAndForward(start, start + self.d, _make(self.initializer(), record.timestamp()), record,
                                     closeTime, False)

    def _updateWindowAndForward(self, start: int, end: int, vt, record: Record, closeTime: int, existed: bool) -> None:
        if end < closeTime:
            self._skip(record.timestamp(), start, end, closeTime)
            return
        oldAgg = None if vt is None else vt.value
        newAgg = self.aggregator(record.key(), record.value(), oldAgg)
        ts = record.timestamp()
        newTimestamp = ts if oldAgg is None else max(ts, vt.timestamp)
        self.store._putBytes(self.kb, record.key(), ValueAndTimestamp(newAgg, newTimestamp), start)
        self._maybeForwardUpdate(record, start, oldAgg, newAgg, newTimestamp, existed)

    def _maybeForwardUpdate(self, record: Record, start: int, oldAgg, newAgg, newTimestamp: int, existed: bool) -> None:
        if self.emitFinal:
            return
        windowed = Windowed(record.key(), TimeWindow(start, start + self.d))
        self.cache.forward(Record(windowed, Change(newAgg, oldAgg if self.sendOldValues else None), newTimestamp,
                                  record._headers), existed, self.kb)

    def _maybeForwardFinalResult(self, record: Record, closeTime: int) -> None:
        """KIP-825 for sliding windows (``AbstractKStreamTimeWindowAggregateProcessor``): window
        starts and ends are inclusive, so the windows closed are those ending before ``closeTime``."""
        meta, d = self.meta, self.d
        if not shouldEmitFinal(self.context(), meta, self.emitIntervalMs, closeTime):
            return
        last = meta["lastEmitWindowCloseTime"]
        upper = closeTime - d - 1
        if upper < 0:
            return
        lower = 0 if last == -1 else max(0, last - d)
        for kv in self.store.fetchAll(lower, upper):
            self.context().forward(Record(kv.key, Change(kv.value.value, None), kv.value.timestamp, record._headers))
        meta["lastEmitWindowCloseTime"] = closeTime

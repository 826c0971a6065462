"""One small processor per DSL operator (Kafka ``kstream/internals/KStream*``, ``KTableSource``)."""

from __future__ import annotations

import inspect
import logging
from contextlib import contextmanager
from typing import Any, Callable, NamedTuple

from ...processor import ContextualProcessor, Record, RecordMetadata
from ...state import ValueAndTimestamp
from ...state._stores import _IMMUTABLE
from .._windows import SessionWindow as _SessionWindow, Windowed as _Windowed
from .cache import RecordCache
from .session_count_batch import batchRunner, countAggregator, countInitializer, countMerger

log = logging.getLogger("kspark.dsl")


class Change(NamedTuple):
    """A KTable update flowing between KTable nodes (Kafka ``Change``): new and old value."""

    newValue: Any
    oldValue: Any


def arity(fn: Callable) -> int:
    """Number of positional parameters ``fn`` takes (used to tell ``ValueMapper`` from ``ValueMapperWithKey``)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return -1
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return -1
    return sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty for p in params)


def _dropped(context, reason: str, message: str) -> None:
    meta = context.recordMetadata()
    if meta is not None:
        log.warning("%s topic=[%s] partition=[%d] offset=[%d]", message, meta.topic, meta.partition, meta.offset)
    else:
        log.warning(message)
    context.metrics().recordDropped(context.taskId(), context.currentNode.name, reason)


def _expiredWindow(context, ts: int, window: str, closeTime: int, streamTime: int) -> None:
    """A windowed aggregation skips a record for an expired window: Kafka's warning, and the
    ``dropped-records`` counter of the current node ("expired window")."""
    meta = context.recordMetadata()
    log.warning(
        "Skipping record for expired window. topic=[%s] partition=[%s] offset=[%s] timestamp=[%d] "
        "window=%s expiration=[%d] streamTime=[%d]",
        meta and meta.topic, meta and meta.partition, meta and meta.offset, ts, window, closeTime, streamTime,
    )
    context.metrics().recordDropped(context.taskId(), context.currentNode.name, "expired window")


class KStreamFilter(ContextualProcessor):
    def __init__(self, predicate, filterNot: bool) -> None:
        self.predicate, self.filterNot = predicate, filterNot

    def process(self, record: Record) -> None:
        if self.filterNot ^ bool(self.predicate(record.key(), record.value())):
            self.context().forward(record)


class KStreamMapValues(ContextualProcessor):
    def __init__(self, mapper, withKey: bool) -> None:
        self.mapper, self.withKey = mapper, withKey

    def process(self, record: Record) -> None:
        value = self.mapper(record.key(), record.value()) if self.withKey else self.mapper(record.value())
        self.context().forward(record.withValue(value))


class KStreamMap(ContextualProcessor):
    def __init__(self, mapper) -> None:
        self.mapper = mapper

    def process(self, record: Record) -> None:
        result = self.mapper(record.key(), record.value())
        try:
            key, value = result
        except (TypeError, ValueError):
            raise TypeError(f"The mapper of map() must return a KeyValue or (key, value) pair, got {result!r}") from None
        self.context().forward(Record(key, value, record.timestamp(), record.headers()))


class KStreamSelectKey(ContextualProcessor):
    def __init__(self, mapper) -> None:
        self.mapper = mapper

    def process(self, record: Record) -> None:
        self.context().forward(record.withKey(self.mapper(record.key(), record.value())))


class KStreamPeek(ContextualProcessor):
    def __init__(self, action) -> None:
        self.action = action

    def process(self, record: Record) -> None:
        self.action(record.key(), record.value())
        self.context().forward(record)


class RepartitionNullKeyFilter(ContextualProcessor):
    """Drops null-key records before a repartition sink (rule RP-2); counted per node as kspark's addition.

    ``policy.dropNullKeys`` is False when a relaxed (left) join is downstream (KIP-962): null keys pass.
    """

    def __init__(self, policy=None) -> None:
        self.dropNullKeys = True if policy is None else policy.dropNullKeys

    def process(self, record: Record) -> None:
        if self.dropNullKeys and record.key() is None:
            self.context().metrics().recordDropped(
                self.context().taskId(), self.context().currentNode.name, "null key before repartition"
            )
            return
        self.context().forward(record)


class KTableSource(ContextualProcessor):
    """Materializes a changelog into a timestamped store and forwards ``Change`` (Kafka ``KTableSource``).

    Null keys are skipped and counted (``dropped-records``); a null value deletes the key.
    Not materialized (``storeName`` None) it forwards ``Change(value, None)``; the old value is
    forwarded only when ``sendOldValues`` (a downstream subtractor or join asked for it).
    """

    def __init__(self, storeName: str | None, sendOldValues: bool = True) -> None:
        self.storeName, self.sendOldValues = storeName, sendOldValues

    def init(self, context) -> None:
        super().init(context)
        self.store = None if self.storeName is None else context.getStateStore(self.storeName)

    def process(self, record: Record) -> None:
        key = record.key()
        if key is None:
            _dropped(self.context(), "null key", "Skipping record due to null key.")
            return
        if self.store is None:
            self.context().forward(record.withValue(Change(record.value(), None)))
            return
        old = self.store.get(key)
        oldValue = None
        if old is not None:
            oldValue = old.value
            if record.timestamp() < old.timestamp:
                log.warning(
                    "Detected out-of-order KTable update for %s, old timestamp=[%d] new timestamp=[%d].",
                    self.storeName, old.timestamp, record.timestamp(),
                )
        value = record.value()
        self.store.put(key, None if value is None else ValueAndTimestamp(value, record.timestamp()))
        self.context().forward(record.withValue(Change(value, oldValue if self.sendOldValues else None)))


class KTableToStream(ContextualProcessor):
    def process(self, record: Record) -> None:
        self.context().forward(record.withValue(record.value().newValue))


class KStreamKTableJoin(ContextualProcessor):
    """Stream-side-triggered lookup join against a KTable's store (Kafka ``KStreamKTableJoinProcessor``).

    Rules J-1..J-4: only stream records produce output; a null key or null value is dropped
    and counted, except a null key with a non-null value in a left join; the output keeps the
    stream record's key and timestamp.
    """

    def __init__(self, storeName: str, joiner, withKey: bool, leftJoin: bool, valueGetter=None) -> None:
        self.storeName, self.joiner, self.withKey, self.leftJoin = storeName, joiner, withKey, leftJoin
        self.valueGetter = valueGetter  # a KTable value getter (ktable_processors) instead of the store

    def init(self, context) -> None:
        super().init(context)
        if self.valueGetter is not None:
            self.valueGetter.init(context)
            self.store = self.valueGetter
        else:
            self.store = context.getStateStore(self.storeName)

    def process(self, record: Record) -> None:
        key, value = record.key(), record.value()
        if not (self.leftJoin and key is None and value is not None) and (key is None or value is None):
            _dropped(self.context(), "null join key or value", "Skipping record due to null join key or value.")
            return
        found = None if key is None else self.store.get(key)
        tableValue = None if found is None else found.value
        if self.leftJoin or tableValue is not None:
            joined = self.joiner(key, value, tableValue) if self.withKey else self.joiner(value, tableValue)
            self.context().forward(record.withValue(joined))


def oldValueToForward(processor, key, oldAgg, sendOldValues: bool):
    """The old aggregate an aggregation forwards in ``Change(new, old)`` (None unless
    ``sendOldValues``). Uncached, Kafka forwards the very object the aggregator was given, so an
    aggregator that changes it in place changes the old value too; cached, Kafka's flush reads the
    old value from the store's bytes, unchanged: for a mutable value that is a second read of the
    store (kspark's store gives a new object per read)."""
    if not sendOldValues:
        return None
    if oldAgg is None or type(oldAgg) in _IMMUTABLE or not processor.cache.enabled:
        return oldAgg
    return processor.store.get(key).value


class KStreamAggregate(ContextualProcessor):
    """Non-windowed aggregation into a timestamped store (Kafka ``KStreamAggregate`` / ``KStreamReduce``).

    Records with a null key or value are skipped and counted. The first record of a key starts
    from ``initializer()`` (reduce: from the value itself); the result's timestamp is the max of
    the contributing input timestamps (rule T-17); forwards ``Change(newAgg, oldAgg)``, the old
    aggregate only when a downstream KTable operation enabled old values (else None), as Kafka.
    """

    sendOldValues = True  # Kafka: only when a downstream KTable operation enables it (MaterializedTableSupplier)

    def __init__(self, storeName: str, initializer, aggregator, reduce: bool = False, caching: bool = False) -> None:
        self.storeName, self.initializer, self.aggregator, self.reduce = storeName, initializer, aggregator, reduce
        self.caching = caching

    def init(self, context) -> None:
        super().init(context)
        self.store = context.getStateStore(self.storeName)
        self.cache = RecordCache(self, self.caching and context.cachingEnabled(), self.store, "keyValue")

    def process(self, record: Record) -> None:
        key, value = record.key(), record.value()
        if key is None or value is None:
            _dropped(self.context(), "null key or value", "Skipping record due to null key or value.")
            return
        old = self.store.get(key)
        if old is None:
            newAgg = value if self.reduce else self.aggregator(key, value, self.initializer())
            timestamp, oldAgg = record.timestamp(), None
        else:
            oldAgg = oldValueToForward(self, key, old.value, self.sendOldValues)  # sendOldValues: set by the table's supplier
            newAgg = self.aggregator(old.value, value) if self.reduce else self.aggregator(key, value, old.value)
            timestamp = max(record.timestamp(), old.timestamp)
        self.store.put(key, ValueAndTimestamp(newAgg, timestamp))
        self.cache.forward(Record(key, Change(newAgg, oldAgg), timestamp, record.headers()), old is not None)


class KStreamWindowAggregate(ContextualProcessor):
    """Time-window aggregation (Kafka ``KStreamWindowAggregate``).

    Null keys are skipped and counted. The processor's stream time is the max timestamp it has
    seen; for each window containing the record, if ``window.end > streamTime - grace`` the
    aggregate is updated (timestamp = max of contributing timestamps, rule T-18) and
    ``Change(newAgg, None)`` is forwarded under ``Windowed(key, window)``; otherwise the record is
    dropped for that window and counted ("Skipping record for expired window").

    ``emitFinal`` (``EmitStrategy.onWindowClose()``, KIP-825): no update is forwarded; after
    every non-null-key record, when the close time ``streamTime - grace`` has advanced past the
    last emission, every window (all keys) starting in ``[lower, closeTime - size]`` is forwarded
    once, by start then key, with its aggregate's timestamp and the current record's headers;
    ``lower`` is 0 the first time, then ``max(0, lastCloseTime - size) + 1``; nothing is fetched
    (and the last close time stays) while no new window has closed (``shouldRangeFetch``).
    The emit throttle is 0 ms (TopologyTestDriver's value, TTD-2) on every host.
    """

    sendOldValues = False

    def __init__(self, storeName: str, windows, initializer, aggregator, reduce: bool = False, caching: bool = False,
                 emitFinal: bool = False) -> None:
        self.storeName, self.windows = storeName, windows
        self.initializer, self.aggregator, self.reduce = initializer, aggregator, reduce
        self.emitFinal = emitFinal
        self.caching = caching and not emitFinal  # emit-final forwards without the cache's flush listener

    def init(self, context) -> None:
        super().init(context)
        self.store = context.getStateStore(self.storeName)
        self.cache = RecordCache(self, self.caching and context.cachingEnabled(), self.store, "window")
        self.meta = context.nodeState()
        self.meta.setdefault("observedStreamTime", -1)

    def process(self, record: Record) -> None:
        from .._windows import Windowed

        key, value, ts = record.key(), record.value(), record.timestamp()
        if key is None:
            _dropped(self.context(), "null key", "Skipping record due to null key.")
            return
        streamTime = self.meta["observedStreamTime"] = max(self.meta["observedStreamTime"], ts)
        closeTime = streamTime - self.windows.gracePeriodMs()
        store, kb = self.store, None
        for start, window in self.windows.windowsFor(ts).items():
            if window.end() <= closeTime:
                self._skipExpiredWindow(ts, start, window.end(), closeTime, streamTime)
                continue
            if kb is None:  # serialized once, when a window first needs the store
                kb = store._keyBytes(key)
            old = store._fetchBytes(kb, start)
            if old is None:
                newAgg = value if self.reduce else self.aggregator(key, value, self.initializer())
                timestamp = ts
            else:
                newAgg = self.aggregator(old.value, value) if self.reduce else self.aggregator(key, value, old.value)
                timestamp = max(ts, old.timestamp)
            store._putBytes(kb, key, ValueAndTimestamp(newAgg, timestamp), start)  # store.put(key, ..., start)
            if not self.emitFinal:
                oldAgg = old.value if self.sendOldValues and old is not None else None
                self.cache.forward(Record(Windowed(key, window), Change(newAgg, oldAgg), timestamp, record.headers()),
                                   old is not None)
        if self.emitFinal:
            self._maybeForwardFinalResult(record, closeTime)

    def _skipExpiredWindow(self, ts: int, start: int, end: int, closeTime: int, streamTime: int) -> None:
        """The record is too late for window ``[start, end)``: log, count, skip that window."""
        _expiredWindow(self.context(), ts, f"[{start},{end})", closeTime, streamTime)

    def fastPath(self, task, source, node, queue):
        """The fused loop of ``source -> this -> toStream() -> to()`` without emit-final or cache
        (see ``StreamTask._buildFastPath``), or None: same records, stores, counters, drops and
        errors as the per-node path."""
        return _windowedFastPath(self, task, source, node, queue, _timeWindowFastPath)

    def _maybeForwardFinalResult(self, record: Record, closeTime: int) -> None:
        """KIP-825 for time windows (``AbstractKStreamTimeWindowAggregateProcessor``)."""
        meta, size = self.meta, self.windows.size()
        last = meta.setdefault("lastEmitWindowCloseTime", -1)
        if not (last == -1 or last < closeTime):
            return
        upper = closeTime - size
        if upper < 0:
            return
        lower = 0 if last == -1 else max(0, last - size) + 1
        if last != -1 and self.windows.windowsFor(upper) == self.windows.windowsFor(lower - 1):
            return  # no new window closed since the last emission
        for kv in self.store._fetchAllTimeFirst(lower, upper):
            self.context().forward(Record(kv.key, Change(kv.value.value, None), kv.value.timestamp, record.headers()))
        meta["lastEmitWindowCloseTime"] = closeTime


class KStreamSessionWindowAggregate(ContextualProcessor):
    """Session-window aggregation, emit on window update (Kafka ``KStreamSessionWindowAggregate``).

    Rules SA-1..SA-9: null keys skipped and counted (before stream time moves); stream time per
    processor instance; candidate sessions = ``findSessions(key, ts - gap, ts + gap)``, merged in
    store order with ``merger`` into ``[min start, max end]``; a merged session ending before
    ``streamTime - grace - gap`` drops the record (counted); otherwise every merged-away session
    gets a tombstone (timestamp = its end) unless the merged window is exactly ``[ts, ts]``, then
    the new aggregate is stored and forwarded with timestamp = the merged window's end.
    """

    def __init__(self, storeName: str, windows, initializer, aggregator, merger, emitFinal: bool = False,
                 caching: bool = False) -> None:
        self.storeName, self.windows = storeName, windows
        self.initializer, self.aggregator, self.merger = initializer, aggregator, merger
        self.emitFinal = emitFinal
        self.caching = caching and not emitFinal  # the DSL disables caching for emit-final

    def init(self, context) -> None:
        super().init(context)
        self.store = context.getStateStore(self.storeName)
        self.meta = context.nodeState()
        self.meta.setdefault("observedStreamTime", -1)
        self.meta.setdefault("lastEmitWindowCloseTime", -1)
        self.cache = RecordCache(self, self.caching and context.cachingEnabled(), self.store, "session")
        self._gap, self._grace = self.windows.inactivityGap(), self.windows.gracePeriodMs()

    def process(self, record: Record) -> None:
        closeTime = self._aggregate(record)
        if self.emitFinal and closeTime is not None:
            self._maybeForwardFinalResult(record, closeTime)

    def _maybeForwardFinalResult(self, record: Record, closeTime: int) -> None:
        """SA-11: emit every session (all keys) whose end is in [max(0, lastEmit), closeTime - 1],
        in time order (end, start, key), once per close-time advance (throttle interval 0)."""
        last = self.meta["lastEmitWindowCloseTime"]
        if not (last == -1 or last < closeTime):
            return
        upper, lower = closeTime - 1, max(0, last)
        if upper < 0 or upper < lower:
            return
        due = list(self.store.findSessionsByEnd(lower, upper))
        due.sort(key=lambda kv: (kv.key.window().end(), kv.key.window().start(), self.store._keyBytes(kv.key.key())))
        for kv in due:
            self.context().forward(Record(kv.key, Change(kv.value, None), kv.key.window().end(), record.headers()))
        self.meta["lastEmitWindowCloseTime"] = closeTime

    def _aggregate(self, record: Record) -> int | None:
        """The update path (SA-1..SA-9); returns the window close time, None for a null key."""
        key, ts = record.key(), record.timestamp()
        if key is None:
            _dropped(self.context(), "null key", "Skipping record due to null key.")
            return None
        meta = self.meta
        streamTime = meta["observedStreamTime"]
        if ts > streamTime:
            streamTime = meta["observedStreamTime"] = ts
        gap = self._gap
        closeTime = streamTime - self._grace - gap
        store = self.store
        kb = store._keyBytes(key)
        # (end, start, stored key, aggregate) in findSessions order (store order, SA-3)
        merged = store._findSessionEntries(kb, ts - gap, ts + gap)
        hidden = ()
        cachedIndex = self.cache.byKey.get(key)
        if cachedIndex:  # ST-9: the cache still shows sessions the store hides past its retention
            merged, hidden = self.cache.withHiddenSessions(merged, cachedIndex, ts - gap, ts + gap)
        agg, start, end = self._merge(key, ts, merged)
        if end < closeTime:
            self._skipExpired(ts, start, end, closeTime, streamTime, merged)
            return closeTime
        emitFinal, forward = self.emitFinal, self.cache.forward
        if start != ts or end != ts:
            for sEnd, sStart, sKey, _ in merged:
                store._putEntry(sEnd, kb, sStart, sKey, None)  # store.remove(Windowed(sKey, [sStart, sEnd]))
                if not emitFinal:
                    # a session the store hides is not in it as far as the flush can tell: Kafka
                    # skips its tombstone (the flush finds no old value)
                    forward(Record(_Windowed(sKey, _SessionWindow(sStart, sEnd)), _TOMBSTONE, sEnd, record.headers()),
                            (sEnd, sStart) not in hidden)
        agg = self.aggregator(key, record.value(), agg)
        existed = store.fetchSession(key, start, end) is not None
        store._putEntry(end, kb, start, key, agg)  # store.put(Windowed(key, [start, end]), agg)
        if not emitFinal:
            forward(Record(_Windowed(key, _SessionWindow(start, end)), Change(agg, None), end, record.headers()), existed)
        return closeTime


    def _merge(self, key, ts: int, merged) -> tuple:
        """SA-4: the initial aggregate merged with the found sessions in store order, and the
        merged window ``[min start, max end]`` (``ts`` included)."""
        agg, start, end, merger = self.initializer(), ts, ts, self.merger
        for sEnd, sStart, _, sAgg in merged:
            agg = merger(key, agg, sAgg)
            if sStart < start:
                start = sStart
            if sEnd > end:
                end = sEnd
        return agg, start, end

    def _skipExpired(self, ts: int, start: int, end: int, closeTime: int, streamTime: int, merged) -> None:
        """SA-6: the merged session ended before the close time: log, count, drop the record."""
        _expiredWindow(self.context(), ts, f"[{start},{end}]", closeTime, streamTime)
        for sEnd, sStart, sKey, _ in merged:  # the lookup read them through the cache: now most recently used
            self.cache.touch(_Windowed(sKey, _SessionWindow(sStart, sEnd)))

    def fastPath(self, task, source, node, queue):
        """The fused loop of ``source -> this -> toStream() -> to()`` (see ``StreamTask._buildFastPath``),
        or None when the graph has another shape, emits final results, or caches.

        Same records, timestamps, stores, counters, drops and errors as the per-node path: it runs
        ``_aggregate``'s steps inline and writes the sink's records directly (one key serialization
        per output, the partition from the inner key as ``WindowedStreamPartitioner`` does); null
        keys, expired records and exceptions go through the per-node code.
        """
        return _windowedFastPath(self, task, source, node, queue, _sessionFastPath)


def _windowedFastPath(agg, task, source, node, queue, build):
    """``build(agg, task, source, node, toStream, sinkNode, queue)`` when the fused loop provably
    computes what the per-node path computes, else None. The conditions:

    - the windows are exactly the built-in ``TimeWindows`` or ``SessionWindows`` (not a
      subclass): the loops inline their window arithmetic (``TimeWindows.windowsFor``, the
      session gap), which a custom ``Windows.windowsFor`` would not follow;
    - no emit-final and no record cache (they forward at other times than on update);
    - ``toStream().to(topic)`` with a static topic and the default partitioner is the only downstream.
    """
    from .._windows import SessionWindows, TimeWindows

    if type(agg.windows) not in (TimeWindows, SessionWindows):
        return None
    if agg.emitFinal or agg.cache.enabled or len(node.children) != 1:
        return None
    toStream = node.children[0]
    if type(toStream.processor) is not KTableToStream or len(toStream.children) != 1:
        return None
    sinkNode = toStream.children[0]
    sink = sinkNode.sink
    if sink is None or sink.partitioner is not None or sink.extractor is not None:
        return None
    return build(agg, task, source, node, toStream, sinkNode, queue)


_TOMBSTONE = Change(None, None)


class KTableSuppress(ContextualProcessor):
    """Suppression of KTable updates (Kafka ``KTableSuppressProcessor`` over an
    ``InMemoryTimeOrderedKeyValueChangeBuffer``), rules SU-2..SU-5.

    Each update is buffered by key. Its buffer time is the window end (``untilWindowCloses``,
    ``windowEnd=True``) or the record timestamp (``untilTimeLimit``), taken from the key's
    **first** buffered update: a later update replaces the value, record timestamp and headers
    but keeps the place in the queue (Kafka's "non-resetting" ``cleanPut``). The node's stream
    time is the max record timestamp it saw. After each record: entries with ``bufferTime <=
    streamTime - duration`` leave in (buffer time, serialized key) order; then, if the buffer
    holds more than ``maxRecords`` keys or ``maxBytes`` bytes, EMIT evicts in the same order until
    it fits and SHUT_DOWN raises ``StreamsException("<node> buffer exceeded its max capacity.
    Currently [r/maxR] records and [b/maxB] bytes.")``. Leaving entries are forwarded with their
    buffered timestamp and headers, except tombstones when ``safeToDropTombstones``
    (``untilWindowCloses``). The buffer lives in the task checkpoint.

    Sizes are Kafka's ``computeRecordSize``: 8 + key bytes + prior value + old value (when not
    the prior one) + new value bytes + record context (8 + 8 + 4 + topic + headers). Keys and
    values are serialized with the serdes of the upstream table's store (windowed keys as Kafka's
    windowed serdes lay them out); without a store, ``str(x)`` as UTF-8 stands in. kspark's
    windowed aggregations do not send old values (Kafka's suppress turns them on), so a
    buffered windowed update counts fewer bytes than in Kafka.
    """

    def __init__(self, durationMs: int, bufferConfig, nodeName: str, windowEnd: bool = True,
                 safeToDropTombstones: bool = True, storeName: str | None = None) -> None:
        self.durationMs, self.bufferConfig, self.nodeName = durationMs, bufferConfig, nodeName
        self.windowEnd, self.safeToDropTombstones, self.storeName = windowEnd, safeToDropTombstones, storeName

    def init(self, context) -> None:
        super().init(context)
        self.meta = context.nodeState()
        self.meta.setdefault("observedStreamTime", -1)
        # key -> [bufferTime, keyBytes, Change, timestamp, headers, size, priorLen]
        self.meta.setdefault("buffer", {})
        self.meta.setdefault("bufferBytes", 0)
        store = context._task.stores.get(self.storeName) if self.storeName else None
        self.keySerde = getattr(store, "_keySerde", None)
        self.valueSerde = getattr(store, "_valueSerde", None)

    # -- serialized sizes
    def _keyBytes(self, key) -> bytes:
        from .._windows import SessionWindow, Windowed

        if isinstance(key, Windowed):
            inner = self._keyBytes(key.key())
            window = key.window()
            if isinstance(window, SessionWindow):
                return inner + window.end().to_bytes(8, "big", signed=True) + window.start().to_bytes(8, "big", signed=True)
            return inner + window.start().to_bytes(8, "big", signed=True)
        if self.keySerde is not None:
            return self.keySerde.serialize(self.nodeName, key) or b""
        return str(key).encode()

    def _valueLen(self, value) -> int:
        if value is None:
            return 0
        if self.valueSerde is not None:
            return len(self.valueSerde.serialize(self.nodeName, value) or b"")
        return len(str(value).encode())

    def process(self, record: Record) -> None:
        meta, buffer = self.meta, self.meta["buffer"]
        meta["observedStreamTime"] = max(meta["observedStreamTime"], record.timestamp())
        key, change = record.key(), record.value()
        previous = buffer.get(key)
        if previous is None:
            bufferTime = key.window().end() if self.windowEnd else record.timestamp()
            keyBytes = self._keyBytes(key)
            priorLen = self._valueLen(change.oldValue)
            oldLen = 0                      # the prior value *is* the old value: counted once
        else:
            bufferTime, keyBytes, priorLen = previous[0], previous[1], previous[6]
            oldLen = self._valueLen(change.oldValue)
            meta["bufferBytes"] -= previous[5]
        recordMeta = self.context().recordMetadata()
        size = 8 + len(keyBytes) + priorLen + oldLen + self._valueLen(change.newValue) + 20
        size += len(recordMeta.topic) if recordMeta is not None and recordMeta.topic else 0
        size += sum(len(k) + (len(v) if v is not None else 0) for k, v in record.headers() or ())
        buffer[key] = [bufferTime, keyBytes, change, record.timestamp(), record.headers(), size, priorLen]
        meta["bufferBytes"] += size
        self._enforceConstraints()

    def _overCapacity(self) -> bool:
        cfg = self.bufferConfig
        return ((cfg.maxRecords is not None and len(self.meta["buffer"]) > cfg.maxRecords)
                or (cfg.maxBytes is not None and self.meta["bufferBytes"] > cfg.maxBytes))

    def _enforceConstraints(self) -> None:
        buffer = self.meta["buffer"]
        limit = self.meta["observedStreamTime"] - self.durationMs
        ordered = sorted(buffer.items(), key=lambda e: (e[1][0], e[1][1]))
        i = 0
        while i < len(ordered) and ordered[i][1][0] <= limit:
            self._emit(*ordered[i])
            i += 1
        if self._overCapacity():
            cfg = self.bufferConfig
            if cfg.strategy == cfg.SHUT_DOWN:
                from .._suppress import bufferFull

                raise bufferFull(self.nodeName, len(buffer), cfg.maxRecords, self.meta["bufferBytes"], cfg.maxBytes)
            while i < len(ordered) and self._overCapacity():
                self._emit(*ordered[i])
                i += 1

    def _emit(self, key, entry) -> None:
        del self.meta["buffer"][key]
        self.meta["bufferBytes"] -= entry[5]
        change, timestamp, headers = entry[2], entry[3], entry[4]
        if change.newValue is not None or not self.safeToDropTombstones:
            self.context().forward(Record(key, change, timestamp, headers))


_ForwardingCache = RecordCache  # the former name, for modules written against it


def _fusedLoop(agg, task, source, node, toStream, sinkNode, queue, windowedSerde, windowOf, body):
    """``run(limit)``: the record loop of one task whose graph is ``source -> agg -> toStream()
    -> to()`` (see ``StreamTask._buildFastPath``), for a windowed aggregation ``agg``.

    ``body(emit, rec, key, ts, headers, kb, innerBytes)`` aggregates one record with a non-null
    key as ``agg``'s ``process`` would, calling ``emit(key, start, end, value, timestamp, headers,
    innerBytes)`` for each update it forwards; ``kb`` is the key's bytes in the store when known
    without calling the key serde (a str key and String serdes), else None: the body serializes
    the key where ``process`` does. Null keys and exceptions take the per-node code.

    The sink writes ``Windowed(key, windowOf(start, end))`` keys. With the built-in windowed
    serde ``windowedSerde`` (session or time) the key bytes are the inner key's bytes plus the
    serde's window suffix, written directly, and the partition is the inner key's
    (``WindowedStreamPartitioner``, DP-1); any other key serde goes through the sink's write.
    """
    import struct

    from ...errors import StreamsException
    from ...runtime.partitioner import partitionForKey
    from ...runtime.stream_task import ProducedRecord
    from ...serialization import _LongSerde, _StringSerde
    from .._windows import _END_START, _SessionWindowedSerde

    pg, context, store, sink = task.partitionGroup, task.context, agg.store, sinkNode.sink
    topic, sinkName, valueSerialize = sink.topic, sink.name, sink.valueSerde.serialize
    inner = sink.keySerde.inner if type(sink.keySerde) is windowedSerde else None
    # String keys in the store and the sink: the store's key bytes are the sink's inner key bytes
    # (a str key's UTF-8), so one encode per record serves the lookup, the key and the partition
    stringKeys = type(inner) is _StringSerde and type(store._keySerde) is _StringSerde
    longValues = type(sink.valueSerde) is _LongSerde  # an int packs as >q, as _LongSerde does
    packLong, write = struct.Struct(">q").pack, sink.write
    # the window suffix of the key bytes: end + start (SessionKeySchema), or start (TimeWindowedSerializer)
    sessions = windowedSerde is _SessionWindowedSerde
    packEndStart = _END_START.pack
    produced = sink._produced

    def emitAny(key, start: int, end: int, value, timestamp: int, headers: tuple, keyBytes) -> None:
        toStream.processed += 1
        sinkNode.processed += 1
        if inner is None:
            write(_Windowed(key, windowOf(start, end)), value, timestamp, headers)
            return
        try:
            if keyBytes is None:
                keyBytes = inner.serialize(topic, key)
            if value is None or not longValues or type(value) is not int or not -1 << 63 <= value < 1 << 63:
                valueBytes = valueSerialize(topic, value)
            else:
                valueBytes = packLong(value)
        except Exception as e:
            raise StreamsException(f"Error serializing record to topic {topic} in sink node {sinkName}: {e}") from e
        # WindowedStreamPartitioner: the partition of the inner key (DP-1); one partition: 0
        n = sink._n if sink._n is not None else sink.numPartitions()
        produced.append(_tupleNew(ProducedRecord, (
            topic, 0 if n == 1 else partitionForKey(keyBytes, n), timestamp,
            keyBytes + (packEndStart(end, start) if sessions else packLong(start)), valueBytes, headers)))

    def emitStringLong(key, start: int, end: int, value, timestamp: int, headers: tuple, keyBytes) -> None:
        """``emit`` for a str key's bytes ``keyBytes`` and an int or None value, into the built-in
        session-windowed String serde and the Long serde; anything else goes to ``emitAny``."""
        if keyBytes is None or (value is not None and (type(value) is not int or not -1 << 63 <= value < 1 << 63)):
            emitAny(key, start, end, value, timestamp, headers, keyBytes)
            return
        toStream.processed += 1
        sinkNode.processed += 1
        n = sink._n if sink._n is not None else sink.numPartitions()
        produced.append(_tupleNew(ProducedRecord, (
            topic, 0 if n == 1 else partitionForKey(keyBytes, n), timestamp, keyBytes + packEndStart(end, start),
            None if value is None else packLong(value), headers)))

    emit = emitStringLong if inner is not None and stringKeys and longValues and sessions else emitAny

    def perNode(rec) -> None:  # one record through the per-node path (StreamTask.process)
        context.metadata = _tupleNew(RecordMetadata, (rec.topic, rec.partition, rec.offset))
        try:
            source.process(Record(rec.key, rec.value, rec.timestamp, rec.headers))
        finally:
            context.currentNode = None
            context.metadata = None

    def processPolled(rec) -> None:
        """Process ``rec``, just polled from ``queue`` (its partition time already advanced)."""
        ts = rec.timestamp
        if ts > pg.streamTime:
            pg.streamTime = ts
        key = rec.key
        if key is None:
            perNode(rec)
            return
        source.processed += 1
        node.processed += 1
        try:
            kb = key.encode("utf-8") if stringKeys and type(key) is str else None
            body(emit, rec, key, ts, tuple(rec.headers) if rec.headers else (), kb, kb)
        except StreamsException:
            raise
        except Exception as e:  # KIP-1033, as StreamTask._processorCall
            context.metadata = _tupleNew(RecordMetadata, (rec.topic, rec.partition, rec.offset))
            context.currentNode = node
            try:
                task._onProcessingError(node, Record(key, rec.value, ts, rec.headers), e)
            finally:
                context.currentNode = context.metadata = None

    def run(limit: int | None) -> int:
        n = 0
        while limit is None or n < limit:
            rec = queue.head
            if rec is None:
                break
            n += 1
            # PartitionGroup.nextRecord / RecordQueue.poll for a task with one queue
            queue.head = queue._headRaw = None
            if rec.timestamp > queue.partitionTime:
                queue.partitionTime = rec.timestamp
            queue._updateHead()
            processPolled(rec)
        return n

    run.processPolled = processPolled
    return run


@contextmanager
def _asNode(context, node, rec):
    """Per-node code of ``node`` for ``rec`` runs inside: record metadata and current node set, then cleared."""
    context.metadata = _tupleNew(RecordMetadata, (rec.topic, rec.partition, rec.offset))
    context.currentNode = node
    try:
        yield
    finally:
        context.currentNode = context.metadata = None


def _sessionFastPath(agg: KStreamSessionWindowAggregate, task, source, node, toStream, sinkNode, queue):
    """``run(limit)`` for ``KStreamSessionWindowAggregate.fastPath``: ``_aggregate``'s steps inline."""
    from .._windows import _SessionWindowedSerde

    context, store, meta = task.context, agg.store, agg.meta
    gap, grace = agg._gap, agg._grace
    aggregator, merge = agg.aggregator, agg._merge
    keyBytesOf, find, put = store._keyBytes, store._findSessionEntries, store._putEntry

    def body(emit, rec, key, ts: int, headers: tuple, kb, innerBytes) -> None:
        streamTime = meta["observedStreamTime"]
        if ts > streamTime:
            streamTime = meta["observedStreamTime"] = ts
        closeTime = streamTime - grace - gap
        if kb is None:
            kb = keyBytesOf(key)
        merged = find(kb, ts - gap, ts + gap)
        value, start, end = merge(key, ts, merged)
        if end < closeTime:
            with _asNode(context, node, rec):
                agg._skipExpired(ts, start, end, closeTime, streamTime, merged)
            return
        if start != ts or end != ts:
            for sEnd, sStart, sKey, _ in merged:
                put(sEnd, kb, sStart, sKey, None)
                emit(sKey, sStart, sEnd, None, sEnd, headers, innerBytes)
        value = aggregator(key, rec.value, value)
        put(end, kb, start, key, value)
        emit(key, start, end, value, end, headers, innerBytes)

    def countBody(emit, rec, key, ts: int, headers: tuple, kb, innerBytes) -> None:
        """``body`` for the DSL's ``count()``: its initializer (0), aggregator (+1) and merger (sum)
        inline (≈ 3 % of P3's time per record against ``body``'s three calls)."""
        streamTime = meta["observedStreamTime"]
        if ts > streamTime:
            streamTime = meta["observedStreamTime"] = ts
        if kb is None:
            kb = keyBytesOf(key)
        merged = find(kb, ts - gap, ts + gap)
        value, start, end = 1, ts, ts
        for sEnd, sStart, _, sAgg in merged:
            value += sAgg
            if sStart < start:
                start = sStart
            if sEnd > end:
                end = sEnd
        closeTime = streamTime - grace - gap
        if end < closeTime:
            with _asNode(context, node, rec):
                agg._skipExpired(ts, start, end, closeTime, streamTime, merged)
            return
        if start != ts or end != ts:
            for sEnd, sStart, sKey, _ in merged:
                put(sEnd, kb, sStart, sKey, None)
                emit(sKey, sStart, sEnd, None, sEnd, headers, innerBytes)
        put(end, kb, start, key, value)
        emit(key, start, end, value, end, headers, innerBytes)

    if agg.initializer is countInitializer and agg.aggregator is countAggregator and agg.merger is countMerger:
        body = countBody
    scalar = _fusedLoop(agg, task, source, node, toStream, sinkNode, queue, _SessionWindowedSerde, _SessionWindow, body)
    runner = batchRunner(agg, task, source, node, toStream, sinkNode, queue, scalar)
    if runner is None:
        return scalar
    runner.processPolled = scalar.processPolled
    return runner


def _timeWindowFastPath(agg: "KStreamWindowAggregate", task, source, node, toStream, sinkNode, queue):
    """``run(limit)`` for ``KStreamWindowAggregate.fastPath``: ``process``'s steps inline."""
    from .._windows import TimeWindow, _TimeWindowedSerde

    context, store, meta = task.context, agg.store, agg.meta
    size, advance, grace = agg.windows.sizeMs, agg.windows.advanceMs, agg.windows.gracePeriodMs()
    aggregator, initializer, reduce = agg.aggregator, agg.initializer, agg.reduce
    keyBytesOf, fetch, put = store._keyBytes, store._fetchBytes, store._putBytes

    def body(emit, rec, key, ts: int, headers: tuple, kb, innerBytes) -> None:
        streamTime = meta["observedStreamTime"]
        if ts > streamTime:
            streamTime = meta["observedStreamTime"] = ts
        closeTime = streamTime - grace
        value = rec.value
        start = (max(0, ts - size + advance) // advance) * advance  # TimeWindows.windowsFor
        while start <= ts:
            end = start + size
            if end <= closeTime:
                with _asNode(context, node, rec):
                    agg._skipExpiredWindow(ts, start, end, closeTime, streamTime)
            else:
                if kb is None:
                    kb = keyBytesOf(key)
                old = fetch(kb, start)
                if old is None:
                    newAgg = value if reduce else aggregator(key, value, initializer())
                    timestamp = ts
                else:
                    newAgg = aggregator(old.value, value) if reduce else aggregator(key, value, old.value)
                    timestamp = ts if ts > old.timestamp else old.timestamp
                put(kb, key, _tupleNew(ValueAndTimestamp, (newAgg, timestamp)), start)
                emit(key, start, end, newAgg, timestamp, headers, innerBytes)
            start += advance

    return _fusedLoop(agg, task, source, node, toStream, sinkNode, queue, _TimeWindowedSerde, TimeWindow, body)


_tupleNew = tuple.__new__

"""One small processor per DSL operator (Kafka ``kstream/internals/KStream*``, ``KTableSource``)."""

from __future__ import annotations

import inspect
import logging
from typing import Any, Callable, NamedTuple

from ...processor import ContextualProcessor, Record
from ...state import ValueAndTimestamp

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


class _ForwardingCache:
    """The DSL's record cache in front of an aggregation's downstream (Kafka ``CachingSessionStore``
    / ``TimestampedTupleForwarder``, rules SA-10, E-5).

    Enabled when the store has caching on (the DSL default) and ``statestore.cache.max.bytes`` > 0:
    updates are held per key until the task commits (after every record in TopologyTestDriver,
    once per micro-batch on Spark), then forwarded in the order of each key's last update with its
    latest value; a key created and removed between two commits forwards nothing. Disabled, every
    update is forwarded at once. Size-based eviction before a commit is not modelled.
    """

    def __init__(self, processor, enabled: bool) -> None:
        self.processor, self.enabled = processor, enabled
        self.dirty: dict = {}
        if enabled:
            processor.context().registerCommitCallback(self.flush)

    def forward(self, record: Record, existedInStore: bool) -> None:
        if not self.enabled:
            self.processor.context().forward(record)
            return
        key = record.key()
        previous = self.dirty.pop(key, None)
        if previous is not None and isinstance(record.value(), Change):
            # the old value is the one before the last flush (Kafka reads it from the underlying store)
            record = record.withValue(Change(record.value().newValue, previous[0].value().oldValue))
        self.dirty[key] = (record, existedInStore if previous is None else previous[1])

    def flush(self) -> None:
        entries, self.dirty = self.dirty, {}
        for record, existed in entries.values():
            if record.value().newValue is None and not existed:
                continue
            self.processor.context().forward(record)


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
        self.cache = _ForwardingCache(self, self.caching and context.cachingEnabled())

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
            oldAgg = old.value
            newAgg = self.aggregator(oldAgg, value) if self.reduce else self.aggregator(key, value, oldAgg)
            timestamp = max(record.timestamp(), old.timestamp)
        self.store.put(key, ValueAndTimestamp(newAgg, timestamp))
        oldAgg = oldAgg if self.sendOldValues else None  # set by the table's supplier when downstream asks
        self.cache.forward(Record(key, Change(newAgg, oldAgg), timestamp, record.headers()), old is not None)


class KStreamWindowAggregate(ContextualProcessor):
    """Time-window aggregation (Kafka ``KStreamWindowAggregate``, emit on window update).

    Null keys are skipped and counted. The processor's stream time is the max timestamp it has
    seen; for each window containing the record, if ``window.end > streamTime - grace`` the
    aggregate is updated (timestamp = max of contributing timestamps, rule T-18) and
    ``Change(newAgg, None)`` is forwarded under ``Windowed(key, window)``; otherwise the record is
    dropped for that window and counted ("Skipping record for expired window").
    """

    sendOldValues = False

    def __init__(self, storeName: str, windows, initializer, aggregator, reduce: bool = False, caching: bool = False) -> None:
        self.storeName, self.windows = storeName, windows
        self.initializer, self.aggregator, self.reduce = initializer, aggregator, reduce
        self.caching = caching

    def init(self, context) -> None:
        super().init(context)
        self.store = context.getStateStore(self.storeName)
        self.cache = _ForwardingCache(self, self.caching and context.cachingEnabled())
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
        for start, window in self.windows.windowsFor(ts).items():
            if window.end() <= closeTime:
                meta = self.context().recordMetadata()
                log.warning(
                    "Skipping record for expired window. topic=[%s] partition=[%s] offset=[%s] timestamp=[%d] "
                    "window=[%d,%d) expiration=[%d] streamTime=[%d]",
                    meta and meta.topic, meta and meta.partition, meta and meta.offset, ts, start, window.end(),
                    closeTime, streamTime,
                )
                self.context().metrics().recordDropped(self.context().taskId(), self.context().currentNode.name,
                                                       "expired window")
                continue
            old = self.store.fetch(key, start)
            if old is None:
                newAgg = value if self.reduce else self.aggregator(key, value, self.initializer())
                timestamp = ts
            else:
                newAgg = self.aggregator(old.value, value) if self.reduce else self.aggregator(key, value, old.value)
                timestamp = max(ts, old.timestamp)
            self.store.put(key, ValueAndTimestamp(newAgg, timestamp), start)
            oldAgg = old.value if self.sendOldValues and old is not None else None
            self.cache.forward(Record(Windowed(key, window), Change(newAgg, oldAgg), timestamp, record.headers()), old is not None)


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
        self.cache = _ForwardingCache(self, self.caching and context.cachingEnabled())

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
        from .._windows import SessionWindow, Windowed

        key, ts = record.key(), record.timestamp()
        if key is None:
            _dropped(self.context(), "null key", "Skipping record due to null key.")
            return None
        streamTime = self.meta["observedStreamTime"] = max(self.meta["observedStreamTime"], ts)
        gap = self.windows.inactivityGap()
        closeTime = streamTime - self.windows.gracePeriodMs() - gap
        merged = list(self.store.findSessions(key, ts - gap, ts + gap))
        agg = self.initializer()
        start, end = ts, ts
        for session in merged:
            agg = self.merger(key, agg, session.value)
            start, end = min(start, session.key.window().start()), max(end, session.key.window().end())
        if end < closeTime:
            meta = self.context().recordMetadata()
            log.warning(
                "Skipping record for expired window. topic=[%s] partition=[%s] offset=[%s] timestamp=[%d] "
                "window=[%d,%d] expiration=[%d] streamTime=[%d]",
                meta and meta.topic, meta and meta.partition, meta and meta.offset, ts, start, end,
                closeTime, streamTime,
            )
            self.context().metrics().recordDropped(self.context().taskId(), self.context().currentNode.name,
                                                   "expired window")
            return closeTime
        if (start, end) != (ts, ts):
            for session in merged:
                self.store.remove(session.key)
                if not self.emitFinal:
                    self.cache.forward(Record(session.key, Change(None, None), session.key.window().end(), record.headers()), True)
        agg = self.aggregator(key, record.value(), agg)
        window = Windowed(key, SessionWindow(start, end))
        existed = self.store.fetchSession(key, start, end) is not None
        self.store.put(window, agg)
        if not self.emitFinal:
            self.cache.forward(Record(window, Change(agg, None), end, record.headers()), existed)
        return closeTime


class KTableSuppress(ContextualProcessor):
    """Final-results suppression (Kafka ``KTableSuppressProcessor`` with ``untilWindowCloses``).

    Rules SU-2, SU-3: each update is buffered by window key with buffer time = window end,
    replacing the previous one; the node's stream time is the max record timestamp it saw; after
    each record, entries with ``bufferTime <= streamTime - duration`` leave in buffer-time order
    (ties: first buffered first); tombstones are dropped, others forwarded with their buffered
    timestamp and headers. The buffer lives in the task checkpoint.
    """

    def __init__(self, durationMs: int, bufferConfig, nodeName: str) -> None:
        self.durationMs, self.bufferConfig, self.nodeName = durationMs, bufferConfig, nodeName

    def init(self, context) -> None:
        super().init(context)
        self.meta = context.nodeState()
        self.meta.setdefault("observedStreamTime", -1)
        self.meta.setdefault("buffer", {})  # windowed key -> (bufferTime, seq, value, timestamp, headers)
        self.meta.setdefault("seq", 0)

    def process(self, record: Record) -> None:
        meta, buffer = self.meta, self.meta["buffer"]
        meta["observedStreamTime"] = max(meta["observedStreamTime"], record.timestamp())
        key = record.key()
        previous = buffer.get(key)
        seq = previous[1] if previous is not None else meta["seq"]
        meta["seq"] += previous is None
        buffer[key] = (key.window().end(), seq, record.value(), record.timestamp(), record.headers())
        cfg = self.bufferConfig
        if cfg.maxRecords is not None and len(buffer) > cfg.maxRecords:
            from .._suppress import bufferFull

            raise bufferFull(self.nodeName, len(buffer), cfg.maxRecords, 0, cfg.maxBytes)
        limit = meta["observedStreamTime"] - self.durationMs
        due = sorted((entry for entry in buffer.items() if entry[1][0] <= limit), key=lambda e: e[1][:2])
        for k, (_, _, value, timestamp, headers) in due:
            del buffer[k]
            if value.newValue is not None:  # safeToDropTombstones
                self.context().forward(Record(k, value, timestamp, headers))

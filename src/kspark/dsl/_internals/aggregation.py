"""Non-windowed aggregations: ``KGroupedStream.count/reduce/aggregate`` (Kafka
``KStreamAggregate``, ``KStreamReduce``) and ``KTable.groupBy(...).count/reduce/aggregate`` with its
repartition topic's ``Change`` serde (Kafka ``KTableRepartitionMap``, ``ChangedSerializer`` /
``ChangedDeserializer``, ``KTableAggregate``, ``KTableReduce``)."""

from __future__ import annotations

from ...errors import StreamsException
from ...processor import ContextualProcessor, Record
from ...serialization import Serde
from ...state import ValueAndTimestamp
from .cache import RecordCache
from .common import Change, dropped, oldValueToForward
from .fast_paths import aggregateFastPath
from .ktable import ValueGetterSupplier, materializedView, valueOrNull


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
        self.cache = RecordCache.forStore(self, self.caching and context.cachingEnabled(), self.store, "keyValue")

    def storeKeyedByRecordKey(self) -> str:
        """The store this processor reads and writes under its input record's key, and under no
        other key (a host's cache fill, ``StreamTask.prefillStores``)."""
        return self.storeName

    def process(self, record: Record) -> None:
        key, value = record.key(), record.value()
        if key is None or value is None:
            dropped(self.context(), "null key or value", "Skipping record due to null key or value.")
            return
        old = self.store.get(key)
        if old is None:
            initial = None if self.reduce else self.initializer()
            newAgg = value if self.reduce else self.aggregator(key, value, initial)
            # Kafka: Change(newAgg, sendOldValues ? oldAgg : null) with oldAgg = initializer() for a
            # new key; cached, the flush reads the old value from the store instead (none)
            timestamp, oldAgg = record.timestamp(), initial if self.sendOldValues and not self.cache.enabled else None
        else:
            oldAgg = oldValueToForward(self, key, old.value, self.sendOldValues)  # sendOldValues: set by the table's supplier
            newAgg = self.aggregator(old.value, value) if self.reduce else self.aggregator(key, value, old.value)
            timestamp = max(record.timestamp(), old.timestamp)
        self.store.put(key, ValueAndTimestamp(newAgg, timestamp))
        self.cache.forward(Record(key, Change(newAgg, oldAgg), timestamp, record._headers), old is not None)

    def fastPath(self, task, source, node, queue):
        """The fused loop of ``source -> this -> toStream() -> to()`` (see ``StreamTask._buildFastPath``),
        or None when the graph has another shape or the record cache is on
        (``fast_paths.aggregateFastPath`` gives the conditions).

        Same records, timestamps, stores, counters, drops and errors as the per-node path."""
        return aggregateFastPath(self, task, source, node, queue)


# ---------------------------------------------------------------------------- groupBy + aggregate
class KTableRepartitionMapSupplier:
    """Kafka ``KTableRepartitionMap`` (``KTable#groupBy``): maps the old and the new value with
    ``selector(key, value) -> (newKey, newValue)``; pairs with a null key or value are skipped.
    If both pairs are non-null and have the same key, one ``Change(new, old)`` is forwarded under
    that key (KIP-904); otherwise ``Change(None, old)`` under the old key first, then
    ``Change(new, None)`` under the new key, so the subtractor runs before the adder."""

    def __init__(self, parent, selector) -> None:
        self.parent, self.selector = parent, selector
        # KIP-914: the aggregate of a versioned table takes its latest values only
        self.useVersionedSemantics = parent._isVersioned()

    def enableSendingOldValues(self, forceMaterialization: bool) -> bool:
        raise RuntimeError("KTableRepartitionMap should always require sending old values.")

    def view(self):
        raise StreamsException("Underlying state store not accessible due to repartitioning.")

    def __call__(self):
        return KTableRepartitionMapProcessor(self.selector, self.useVersionedSemantics)


def _pair(result):
    if result is None:
        return None
    try:
        key, value = result
    except (TypeError, ValueError):
        raise TypeError(f"The selector of KTable.groupBy() must return a KeyValue or (key, value) pair, got {result!r}") from None
    return key, value


class KTableRepartitionMapProcessor(ContextualProcessor):
    def __init__(self, selector, useVersionedSemantics: bool = False) -> None:
        self.selector, self.useVersionedSemantics = selector, useVersionedSemantics

    def process(self, record: Record) -> None:
        key, change = record.key(), record.value()
        if key is None:
            raise StreamsException("Record key for the grouping KTable should not be null.")
        if self.useVersionedSemantics and not change.isLatest:
            # an out-of-order update of a versioned table is not aggregated; Kafka counts nothing
            context = self.context()
            context.metrics().recordSkipped(context.taskId(), context.currentNode.name, "out-of-order versioned record")
            return
        newPair = None if change.newValue is None else _pair(self.selector(key, change.newValue))
        oldPair = None if change.oldValue is None else _pair(self.selector(key, change.oldValue))
        oldOk = oldPair is not None and oldPair[0] is not None and oldPair[1] is not None
        newOk = newPair is not None and newPair[0] is not None and newPair[1] is not None
        isLatest = change.isLatest
        if oldOk and newOk and oldPair[0] == newPair[0]:
            self.context().forward(record.withKey(oldPair[0]).withValue(Change(newPair[1], oldPair[1], isLatest)))
            return
        if oldOk:
            self.context().forward(record.withKey(oldPair[0]).withValue(Change(None, oldPair[1], isLatest)))
        if newOk:
            self.context().forward(record.withKey(newPair[0]).withValue(Change(newPair[1], None, isLatest)))


class ChangedSerde(Serde):
    """Serde of a ``Change`` on a groupBy repartition topic (Kafka ``ChangedSerializer`` /
    ``ChangedDeserializer``), byte-compatible with Kafka 3.5+:
    ``{old}{0}``, ``{new}{1}``, or ``{varint len(new)}{new}{old}{2}``; flags 3-5 (with an
    ``isLatest`` byte before the flag) are read too. Both values null raises."""

    name = "Changed"

    def __init__(self, inner: Serde | None) -> None:
        self.inner = inner

    def withDefault(self, default: Serde) -> "ChangedSerde":
        return self if self.inner is not None else ChangedSerde(default)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ChangedSerde) and other.inner == self.inner

    def __hash__(self) -> int:
        return hash((ChangedSerde, self.inner))

    def __repr__(self) -> str:
        return f"ChangedSerde({self.inner!r})"

    def serialize(self, topic, data):
        newValue, oldValue = data[0], data[1]
        if newValue is not None and oldValue is not None:
            new, old = self.inner.serialize(topic, newValue), self.inner.serialize(topic, oldValue)
            return _varint(len(new)) + new + old + b"\x02"
        if newValue is not None:
            return self.inner.serialize(topic, newValue) + b"\x01"
        if oldValue is not None:
            return self.inner.serialize(topic, oldValue) + b"\x00"
        raise StreamsException("Both old and new values are null in ChangeSerializer, which is not allowed.")

    def deserialize(self, topic, data):
        if data is None:
            return None
        data = bytes(data)
        flag, isLatest = data[-1], True
        if flag in (0, 1, 2):
            body = data[:-1]
        elif flag in (3, 4, 5):
            body = data[:-2]
            flag -= 3
            if data[-2] not in (0, 1):
                raise StreamsException(f"Encountered unexpected byte value `{data[-2]}` for isLatestFlag in "
                                       "ChangedDeserializer.")
            isLatest = data[-2] == 1
        else:
            raise StreamsException(f"Encountered unknown byte value `{flag}` for encodingFlag in ChangedDeserializer.")
        if flag == 0:
            return Change(None, self.inner.deserialize(topic, body), isLatest)
        if flag == 1:
            return Change(self.inner.deserialize(topic, body), None, isLatest)
        n, pos = _readVarint(body)
        return Change(self.inner.deserialize(topic, body[pos:pos + n]), self.inner.deserialize(topic, body[pos + n:]),
                      isLatest)


def _varint(n: int) -> bytes:
    """Kafka ``ByteUtils.writeVarint`` (zig-zag)."""
    v = ((n << 1) ^ (n >> 31)) & 0xFFFFFFFF
    out = bytearray()
    while v & ~0x7F:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def _readVarint(data: bytes) -> tuple[int, int]:
    value, shift, pos = 0, 0, 0
    while True:
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
    return (value >> 1) ^ -(value & 1), pos



class KTableAggregateSupplier:
    """Kafka ``KTableAggregate`` / ``KTableReduce`` (``KGroupedTable#aggregate/reduce/count``).

    Per record: if ``oldValue`` and the current aggregate are non-null, ``subtractor`` first;
    then if ``newValue`` is non-null, ``adder`` (from ``initializer()`` — reduce: from the value
    itself — when the intermediate aggregate is null). The result is stored (a null aggregate
    deletes the key and forwards a tombstone) and forwarded as ``Change(new, old if sendOldValues)``.
    Timestamp (rule T-17): the record's, or ``max(record, previous aggregate)`` once the previous
    aggregate took part (KTableReduce: on a subtraction or an addition to a non-null aggregate).
    """

    def __init__(self, storeName: str, initializer, adder, subtractor, reduce: bool, caching: bool) -> None:
        self.storeName, self.initializer, self.adder, self.subtractor = storeName, initializer, adder, subtractor
        self.reduce, self.caching = reduce, caching
        self.sendOldValues = False

    def enableSendingOldValues(self, forceMaterialization: bool) -> bool:
        self.sendOldValues = True  # aggregates are always materialized
        return True

    def view(self) -> ValueGetterSupplier:
        return materializedView(self.storeName)

    def __call__(self):
        return KTableAggregateProcessor(self)


class KTableAggregateProcessor(ContextualProcessor):
    def __init__(self, supplier: KTableAggregateSupplier) -> None:
        self.s = supplier

    def init(self, context) -> None:
        super().init(context)
        self.store = context.getStateStore(self.s.storeName)
        self.cache = RecordCache.forStore(self, self.s.caching and context.cachingEnabled(), self.store, "keyValue")

    def process(self, record: Record) -> None:
        s, key, change = self.s, record.key(), record.value()
        if key is None:
            op = "reduce" if s.reduce else "aggregate"
            raise StreamsException(f"Record key for KTable {op} operator with state {s.storeName} should not be null.")
        old = self.store.get(key)
        oldAgg = valueOrNull(old)
        forwardedOld = oldValueToForward(self, key, oldAgg, s.sendOldValues)
        ts = record.timestamp()
        if change.oldValue is not None and oldAgg is not None:
            intermediate = s.subtractor(oldAgg, change.oldValue) if s.reduce else s.subtractor(key, change.oldValue, oldAgg)
            ts = max(record.timestamp(), old.timestamp)
        else:
            intermediate = oldAgg
        if change.newValue is not None:
            if s.reduce:
                if intermediate is None:
                    newAgg = change.newValue
                else:
                    newAgg = s.adder(intermediate, change.newValue)
                    ts = max(record.timestamp(), old.timestamp)
            else:
                newAgg = s.adder(key, change.newValue, s.initializer() if intermediate is None else intermediate)
                if old is not None:
                    ts = max(record.timestamp(), old.timestamp)
        else:
            newAgg = intermediate
        self.store.put(key, None if newAgg is None else ValueAndTimestamp(newAgg, ts))
        out = Record(key, Change(newAgg, forwardedOld if s.sendOldValues else None), ts, record._headers)
        self.cache.forward(out, old is not None)

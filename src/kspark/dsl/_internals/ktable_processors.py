"""KTable operators: filter, mapValues, groupBy + aggregate, KTable-KTable joins.

Mirrors Kafka's ``kstream/internals/KTable*`` processor suppliers. Each supplier is a callable
returning a new processor per task (our ``ProcessorSupplier``) and, like Kafka's
``KTableProcessorSupplier``, also answers:

- ``enableSendingOldValues(forceMaterialization) -> bool``: downstream needs ``Change.oldValue``
  (groupBy's subtractor, a join's left/outer side, a filter over a materialized table);
  returns False when it cannot be done without materializing and that is not forced.
- ``view() -> ValueGetterSupplier``: how a downstream join reads this table's current value for a
  key. A materialized table reads its store; a non-materialized filter / mapValues / join applies
  its function to the parent's getter on the fly, so it can be joined without a store of its own.

The mutable flags are read when a task builds its processors (after ``StreamsBuilder.build()``),
as Kafka reads them when ``get()`` is called.
"""

from __future__ import annotations

import logging
from typing import Any, Callable

from ...errors import StreamsException, TopologyException
from ...processor import ContextualProcessor, Record
from ...serialization import Serde
from ...state import ValueAndTimestamp
from .processors import Change, _dropped, _ForwardingCache, oldValueToForward

log = logging.getLogger("kspark.dsl")

UNKNOWN = -1  # Kafka's ConsumerRecord.NO_TIMESTAMP / RecordQueue.UNKNOWN


# ---------------------------------------------------------------------------- value getters
class ValueGetterSupplier:
    """Kafka ``KTableValueGetterSupplier``: ``get()`` returns a getter with ``init(context)`` and
    ``get(key) -> ValueAndTimestamp | None``; ``storeNames()`` are the stores the reading processor
    must be connected to."""

    def __init__(self, factory: Callable[[], Any], storeNames: Callable[[], list[str]]) -> None:
        self._factory, self._storeNames = factory, storeNames

    def get(self):
        return self._factory()

    def storeNames(self) -> list[str]:
        return self._storeNames()


class _StoreGetter:
    def __init__(self, storeName: str) -> None:
        self.storeName = storeName

    def init(self, context) -> None:
        self.store = context.getStateStore(self.storeName)

    def get(self, key):
        return self.store.get(key)


def materializedView(storeName: str) -> ValueGetterSupplier:
    """Kafka ``KTableMaterializedValueGetterSupplier`` / ``KTableSourceValueGetterSupplier``."""
    return ValueGetterSupplier(lambda: _StoreGetter(storeName), lambda: [storeName])


class _MappedGetter:
    """A parent getter with a function applied to what it returns (filter / mapValues views)."""

    def __init__(self, parent, fn) -> None:
        self.parent, self.fn = parent, fn

    def init(self, context) -> None:
        self.parent.init(context)

    def get(self, key):
        return self.fn(key, self.parent.get(key))


def _valueOrNull(vt):
    return None if vt is None else vt.value


# ---------------------------------------------------------------------------- source
class KTableSourceSupplier:
    """``builder.table`` / ``KStream.toTable`` (Kafka ``KTableSource``): materialized only when the
    table is queryable (``Materialized.as_``) or something downstream needs its store (a join's
    value getter, old values for a subtractor or a join). ``materialize()`` adds the store to the
    topology at that moment, so ``describe()`` shows ``(stores: [])`` otherwise, as Kafka does."""

    def __init__(self, topology, nodeName: str, storeName: str, queryableName: str | None, storeBuilder) -> None:
        self.topology, self.nodeName, self.storeName = topology, nodeName, storeName
        self.storeBuilder = storeBuilder
        self.queryableName: str | None = None
        self.sendOldValues = False
        if queryableName is not None:
            self.materialize()

    def materialized(self) -> bool:
        return self.queryableName is not None

    def materialize(self) -> None:
        if self.queryableName is None:
            self.queryableName = self.storeName
            self.topology.addStateStore(self.storeBuilder(), self.nodeName)

    def enableSendingOldValues(self, forceMaterialization: bool) -> bool:
        if not forceMaterialization and not self.materialized():
            return False
        self.sendOldValues = True
        self.materialize()
        return True

    def view(self) -> ValueGetterSupplier:
        self.materialize()  # "whenever a source ktable is required for getter, it should be materialized"
        return materializedView(self.storeName)

    def __call__(self):
        from .processors import KTableSource

        return KTableSource(self.queryableName, self.sendOldValues)


class MaterializedTableSupplier:
    """The table of a ``KGroupedStream`` aggregation: always materialized, always able to send
    old values (Kafka ``KStreamAggProcessorSupplier``). ``windowed`` tables have no key-value view."""

    def __init__(self, storeName: str, processorSupplier: Callable[[], Any] | None = None, windowed: bool = False) -> None:
        self.storeName, self.processorSupplier, self.windowed = storeName, processorSupplier, windowed
        self.sendOldValues = False

    def enableSendingOldValues(self, forceMaterialization: bool) -> bool:
        self.sendOldValues = True
        return True

    def view(self) -> ValueGetterSupplier:
        if self.windowed:
            raise TopologyException("kspark cannot look up or join a windowed KTable by key (not supported yet)")
        return materializedView(self.storeName)

    def __call__(self):
        processor = self.processorSupplier()
        processor.sendOldValues = self.sendOldValues  # Kafka: Change(newAgg, sendOldValues ? oldAgg : null)
        return processor


class KTableSuppressSupplier:
    """Kafka ``KTableSuppressProcessorSupplier.enableSendingOldValues`` delegates to the parent."""

    def __init__(self, parent, processorSupplier) -> None:
        self.parent, self.processorSupplier = parent, processorSupplier

    def enableSendingOldValues(self, forceMaterialization: bool) -> bool:
        return self.parent._enableSendingOldValues(forceMaterialization)

    def view(self) -> ValueGetterSupplier:
        raise TopologyException("kspark cannot look up or join a suppressed KTable (not supported yet)")

    def __call__(self):
        return self.processorSupplier()


# ---------------------------------------------------------------------------- filter / mapValues
class _StoreForwarder(ContextualProcessor):
    """Shared by filter / mapValues / join merger: with a queryable store, put the new value (a
    null deletes) and forward ``Change(new, old if sendOldValues)`` (Kafka ``TimestampedTupleForwarder``)."""

    def init(self, context) -> None:
        super().init(context)
        self.store = None if self.supplier.queryableName is None else context.getStateStore(self.supplier.queryableName)

    def _putAndForward(self, record: Record, newValue, oldValue) -> None:
        self.store.put(record.key(), None if newValue is None else ValueAndTimestamp(newValue, record.timestamp()))
        self.context().forward(record.withValue(Change(newValue, oldValue if self.supplier.sendOldValues else None)))


class KTableFilterSupplier:
    """Kafka ``KTableFilter``. A record whose new value fails the predicate becomes a tombstone
    ``Change(None, old')``; with old values enabled, a change that is null on both sides after
    filtering is not forwarded at all (no tombstone for a key that was never in the result)."""

    def __init__(self, parent, predicate, filterNot: bool, queryableName: str | None) -> None:
        self.parent, self.predicate, self.filterNot, self.queryableName = parent, predicate, filterNot, queryableName
        # "If upstream is already materialized, enable sending old values to avoid sending unnecessary tombstones"
        self.sendOldValues = parent._enableSendingOldValues(False)

    def enableSendingOldValues(self, forceMaterialization: bool) -> bool:
        if self.queryableName is not None:
            self.sendOldValues = True
            return True
        if self.parent._enableSendingOldValues(forceMaterialization):
            self.sendOldValues = True
        return self.sendOldValues

    def computeValue(self, key, value):
        if value is not None and (self.filterNot ^ bool(self.predicate(key, value))):
            return value
        return None

    def view(self) -> ValueGetterSupplier:
        if self.queryableName is not None:
            return materializedView(self.queryableName)
        parentView = self.parent._valueGetterSupplier()

        def apply(key, vt):
            return vt if vt is not None and (self.filterNot ^ bool(self.predicate(key, vt.value))) else None

        return ValueGetterSupplier(lambda: _MappedGetter(parentView.get(), apply), parentView.storeNames)

    def __call__(self):
        return KTableFilterProcessor(self)


class KTableFilterProcessor(_StoreForwarder):
    def __init__(self, supplier: KTableFilterSupplier) -> None:
        self.supplier = supplier

    def process(self, record: Record) -> None:
        s, key, change = self.supplier, record.key(), record.value()
        newValue = s.computeValue(key, change.newValue)
        oldValue = None
        if s.sendOldValues:
            oldValue = _valueOrNull(self.store.get(key)) if self.store is not None else s.computeValue(key, change.oldValue)
            if oldValue is None and newValue is None:
                return  # unnecessary to forward here
        if self.store is not None:
            self._putAndForward(record, newValue, oldValue)
        else:
            self.context().forward(record.withValue(Change(newValue, oldValue)))


class KTableMapValuesSupplier:
    """Kafka ``KTableMapValues``: ``mapper(key, value)``; a null value stays null (the mapper is not
    called), so a tombstone stays a tombstone. The timestamp is unchanged."""

    def __init__(self, parent, mapper, queryableName: str | None) -> None:
        self.parent, self.mapper, self.queryableName = parent, mapper, queryableName
        self.sendOldValues = False

    def enableSendingOldValues(self, forceMaterialization: bool) -> bool:
        if self.queryableName is not None:
            self.sendOldValues = True
            return True
        if self.parent._enableSendingOldValues(forceMaterialization):
            self.sendOldValues = True
        return self.sendOldValues

    def computeValue(self, key, value):
        return None if value is None else self.mapper(key, value)

    def view(self) -> ValueGetterSupplier:
        if self.queryableName is not None:
            return materializedView(self.queryableName)
        parentView = self.parent._valueGetterSupplier()

        def apply(key, vt):
            # Kafka: ValueAndTimestamp.make(null, ts) is null
            if vt is None:
                return None
            value = self.mapper(key, vt.value)
            return None if value is None else ValueAndTimestamp(value, vt.timestamp)

        return ValueGetterSupplier(lambda: _MappedGetter(parentView.get(), apply), parentView.storeNames)

    def __call__(self):
        return KTableMapValuesProcessor(self)


class KTableMapValuesProcessor(_StoreForwarder):
    def __init__(self, supplier: KTableMapValuesSupplier) -> None:
        self.supplier = supplier

    def process(self, record: Record) -> None:
        s, key, change = self.supplier, record.key(), record.value()
        newValue = s.computeValue(key, change.newValue)
        oldValue = None
        if s.sendOldValues:
            oldValue = _valueOrNull(self.store.get(key)) if self.store is not None else s.computeValue(key, change.oldValue)
        if self.store is not None:
            self._putAndForward(record, newValue, oldValue)
        else:
            self.context().forward(record.withValue(Change(newValue, oldValue)))


# ---------------------------------------------------------------------------- groupBy + aggregate
class KTableRepartitionMapSupplier:
    """Kafka ``KTableRepartitionMap`` (``KTable#groupBy``): maps the old and the new value with
    ``selector(key, value) -> (newKey, newValue)``; pairs with a null key or value are skipped.
    If both pairs are non-null and have the same key, one ``Change(new, old)`` is forwarded under
    that key (KIP-904); otherwise ``Change(None, old)`` under the old key first, then
    ``Change(new, None)`` under the new key, so the subtractor runs before the adder."""

    def __init__(self, parent, selector) -> None:
        self.parent, self.selector = parent, selector

    def enableSendingOldValues(self, forceMaterialization: bool) -> bool:
        raise RuntimeError("KTableRepartitionMap should always require sending old values.")

    def view(self):
        raise StreamsException("Underlying state store not accessible due to repartitioning.")

    def __call__(self):
        return KTableRepartitionMapProcessor(self.selector)


def _pair(result):
    if result is None:
        return None
    try:
        key, value = result
    except (TypeError, ValueError):
        raise TypeError(f"The selector of KTable.groupBy() must return a KeyValue or (key, value) pair, got {result!r}") from None
    return key, value


class KTableRepartitionMapProcessor(ContextualProcessor):
    def __init__(self, selector) -> None:
        self.selector = selector

    def process(self, record: Record) -> None:
        key, change = record.key(), record.value()
        if key is None:
            raise StreamsException("Record key for the grouping KTable should not be null.")
        newPair = None if change.newValue is None else _pair(self.selector(key, change.newValue))
        oldPair = None if change.oldValue is None else _pair(self.selector(key, change.oldValue))
        oldOk = oldPair is not None and oldPair[0] is not None and oldPair[1] is not None
        newOk = newPair is not None and newPair[0] is not None and newPair[1] is not None
        if oldOk and newOk and oldPair[0] == newPair[0]:
            self.context().forward(record.withKey(oldPair[0]).withValue(Change(newPair[1], oldPair[1])))
            return
        if oldOk:
            self.context().forward(record.withKey(oldPair[0]).withValue(Change(None, oldPair[1])))
        if newOk:
            self.context().forward(record.withKey(newPair[0]).withValue(Change(newPair[1], None)))


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
        newValue, oldValue = data
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
        flag = data[-1]
        if flag in (0, 1, 2):
            body = data[:-1]
        elif flag in (3, 4, 5):
            body = data[:-2]
            flag -= 3
        else:
            raise StreamsException(f"Encountered unknown byte value `{flag}` for encodingFlag in ChangedDeserializer.")
        if flag == 0:
            return Change(None, self.inner.deserialize(topic, body))
        if flag == 1:
            return Change(self.inner.deserialize(topic, body), None)
        n, pos = _readVarint(body)
        return Change(self.inner.deserialize(topic, body[pos:pos + n]), self.inner.deserialize(topic, body[pos + n:]))


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
        self.cache = _ForwardingCache(self, self.s.caching and context.cachingEnabled(), self.store, "keyValue")

    def process(self, record: Record) -> None:
        s, key, change = self.s, record.key(), record.value()
        if key is None:
            op = "reduce" if s.reduce else "aggregate"
            raise StreamsException(f"Record key for KTable {op} operator with state {s.storeName} should not be null.")
        old = self.store.get(key)
        oldAgg = _valueOrNull(old)
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
        out = Record(key, Change(newAgg, forwardedOld if s.sendOldValues else None), ts, record.headers())
        self.cache.forward(out, old is not None)



# ---------------------------------------------------------------------------- KTable-KTable join
INNER, LEFT, RIGHT, OUTER = "inner", "left", "right", "outer"


class KTableKTableJoinSupplier:
    """One side of a KTable-KTable join (Kafka ``KTableKTableInnerJoin`` / ``LeftJoin`` /
    ``RightJoin`` / ``OuterJoin``): an update of ``table1`` looks ``table2`` up through its value
    getter. ``joiner(value1, value2)`` (the other side gets the reversed joiner). Output timestamp
    = ``max(record, other side's)`` (rule T-19). Rules per kind:

    - inner: no other value -> nothing; else ``Change(join(new) if new, join(old) if old and sendOldValues)``.
    - left (this = left): no other value and the change null on both sides -> nothing; the joiner
      gets ``None`` for a missing right value; timestamp = the record's when the right is missing.
    - right (this = right side of a left join): no left value -> nothing; the joiner is called even
      with a null new/old value (a right-side delete re-emits ``joiner(left, None)``).
    - outer: no other value and the change null on both sides -> nothing; ``joiner`` is called
      whenever at least one of its inputs is non-null, else the result is null (a tombstone).
    Null keys are skipped and counted (``dropped-records``).
    """

    def __init__(self, kind: str, table1, table2, joiner) -> None:
        self.kind, self.table1, self.table2, self.joiner = kind, table1, table2, joiner
        self.view1 = table1._valueGetterSupplier()
        self.view2 = table2._valueGetterSupplier()
        self.sendOldValues = False

    def enableSendingOldValues(self, forceMaterialization: bool) -> bool:
        self.table1._enableSendingOldValues(True)  # table-table joins require upstream materialization
        self.table2._enableSendingOldValues(True)
        self.sendOldValues = True
        return True

    def view(self) -> ValueGetterSupplier:
        v1, v2, kind, joiner = self.view1, self.view2, self.kind, self.joiner
        return ValueGetterSupplier(lambda: _JoinGetter(kind, v1.get(), v2.get(), joiner),
                                   lambda: v1.storeNames() + [s for s in v2.storeNames() if s not in v1.storeNames()])

    def __call__(self):
        return KTableKTableJoinProcessor(self)


class _JoinGetter:
    """The join result for a key computed from both sides' getters (Kafka ``KTableKTable*ValueGetter``)."""

    def __init__(self, kind, getter1, getter2, joiner) -> None:
        self.kind, self.g1, self.g2, self.joiner = kind, getter1, getter2, joiner

    def init(self, context) -> None:
        self.g1.init(context)
        self.g2.init(context)

    def get(self, key):
        kind = self.kind
        if kind == OUTER:
            vt1, vt2 = self.g1.get(key), self.g2.get(key)
            v1, v2 = _valueOrNull(vt1), _valueOrNull(vt2)
            if v1 is None and v2 is None:
                return None
            value = self.joiner(v1, v2)
            ts = max(UNKNOWN if vt1 is None else vt1.timestamp, UNKNOWN if vt2 is None else vt2.timestamp)
            return None if value is None else ValueAndTimestamp(value, ts)
        if kind == RIGHT:  # driven by the right side (getter 2)
            vt2 = self.g2.get(key)
            if _valueOrNull(vt2) is None:
                return None
            vt1 = self.g1.get(key)
            value = self.joiner(_valueOrNull(vt1), vt2.value)
            ts = vt2.timestamp if vt1 is None else max(vt1.timestamp, vt2.timestamp)
            return None if value is None else ValueAndTimestamp(value, ts)
        vt1 = self.g1.get(key)
        if _valueOrNull(vt1) is None:
            return None
        vt2 = self.g2.get(key)
        if kind == INNER and _valueOrNull(vt2) is None:
            return None
        value = self.joiner(vt1.value, _valueOrNull(vt2))
        ts = vt1.timestamp if vt2 is None else max(vt1.timestamp, vt2.timestamp)
        return None if value is None else ValueAndTimestamp(value, ts)


class KTableKTableJoinProcessor(ContextualProcessor):
    def __init__(self, supplier: KTableKTableJoinSupplier) -> None:
        self.s = supplier
        self.getter = supplier.view2.get()

    def init(self, context) -> None:
        super().init(context)
        self.getter.init(context)

    def process(self, record: Record) -> None:
        s, key, change = self.s, record.key(), record.value()
        if key is None:
            _dropped(self.context(), "null key", "Skipping record due to null key.")
            return
        other = self.getter.get(key)
        otherValue = _valueOrNull(other)
        joiner, kind = s.joiner, s.kind
        newValue = oldValue = None
        if kind == INNER:
            if otherValue is None:
                return
            ts = max(record.timestamp(), other.timestamp)
            if change.newValue is not None:
                newValue = joiner(change.newValue, otherValue)
            if s.sendOldValues and change.oldValue is not None:
                oldValue = joiner(change.oldValue, otherValue)
        elif kind == RIGHT:
            if otherValue is None:
                return
            ts = max(record.timestamp(), other.timestamp)
            newValue = joiner(change.newValue, otherValue)
            if s.sendOldValues:
                oldValue = joiner(change.oldValue, otherValue)
        elif kind == LEFT:
            if otherValue is None:
                if change.newValue is None and change.oldValue is None:
                    return
                ts = max(record.timestamp(), UNKNOWN)
            else:
                ts = max(record.timestamp(), other.timestamp)
            if change.newValue is not None:
                newValue = joiner(change.newValue, otherValue)
            if s.sendOldValues and change.oldValue is not None:
                oldValue = joiner(change.oldValue, otherValue)
        else:  # OUTER
            if otherValue is None:
                if change.newValue is None and change.oldValue is None:
                    return
                ts = record.timestamp()
            else:
                ts = max(record.timestamp(), other.timestamp)
            if otherValue is not None or change.newValue is not None:
                newValue = joiner(change.newValue, otherValue)
            if s.sendOldValues and (otherValue is not None or change.oldValue is not None):
                oldValue = joiner(change.oldValue, otherValue)
        self.context().forward(record.withValue(Change(newValue, oldValue)).withTimestamp(ts))


class KTableKTableJoinMergerSupplier:
    """Kafka ``KTableKTableJoinMerger``: the join's result node. Materialized (``Materialized``
    given), it stores each new value (a null deletes) and forwards; otherwise it forwards the
    change, dropping the old value unless old values were requested downstream."""

    def __init__(self, parent1: KTableKTableJoinSupplier, parent2: KTableKTableJoinSupplier, queryableName: str | None) -> None:
        self.parent1, self.parent2, self.queryableName = parent1, parent2, queryableName
        self.sendOldValues = False

    def enableSendingOldValues(self, forceMaterialization: bool) -> bool:
        self.parent1.enableSendingOldValues(True)
        self.parent2.enableSendingOldValues(True)
        self.sendOldValues = True
        return True

    def view(self) -> ValueGetterSupplier:
        if self.queryableName is not None:
            return materializedView(self.queryableName)
        v1, v2 = self.parent1.view(), self.parent2.view()
        return ValueGetterSupplier(v1.get, lambda: v1.storeNames() + [s for s in v2.storeNames() if s not in v1.storeNames()])

    def __call__(self):
        return KTableKTableJoinMergeProcessor(self)


class KTableKTableJoinMergeProcessor(_StoreForwarder):
    def __init__(self, supplier: KTableKTableJoinMergerSupplier) -> None:
        self.supplier = supplier

    def process(self, record: Record) -> None:
        change = record.value()
        if self.store is not None:
            self._putAndForward(record, change.newValue, change.oldValue)
        elif self.supplier.sendOldValues:
            self.context().forward(record)
        else:
            self.context().forward(record.withValue(Change(change.newValue, None)))

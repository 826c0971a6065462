"""KTable-KTable joins: inner, left, outer, and the merger that makes the joined table (Kafka
``KTableKTableInnerJoin``, ``KTableKTableLeftJoin``, ``KTableKTableRightJoin``,
``KTableKTableOuterJoin``, ``KTableKTableJoinMerger``)."""

from __future__ import annotations

from ...processor import ContextualProcessor, Record
from ...state import ValueAndTimestamp
from .common import Change, dropped
from .ktable import UNKNOWN, ValueGetterSupplier, StoreForwarder, materializedView, valueOrNull


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
            v1, v2 = valueOrNull(vt1), valueOrNull(vt2)
            if v1 is None and v2 is None:
                return None
            value = self.joiner(v1, v2)
            ts = max(UNKNOWN if vt1 is None else vt1.timestamp, UNKNOWN if vt2 is None else vt2.timestamp)
            return None if value is None else ValueAndTimestamp(value, ts)
        if kind == RIGHT:  # driven by the right side (getter 2)
            vt2 = self.g2.get(key)
            if valueOrNull(vt2) is None:
                return None
            vt1 = self.g1.get(key)
            value = self.joiner(valueOrNull(vt1), vt2.value)
            ts = vt2.timestamp if vt1 is None else max(vt1.timestamp, vt2.timestamp)
            return None if value is None else ValueAndTimestamp(value, ts)
        vt1 = self.g1.get(key)
        if valueOrNull(vt1) is None:
            return None
        vt2 = self.g2.get(key)
        if kind == INNER and valueOrNull(vt2) is None:
            return None
        value = self.joiner(vt1.value, valueOrNull(vt2))
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
            dropped(self.context(), "null key", "Skipping record due to null key.")
            return
        other = self.getter.get(key)
        otherValue = valueOrNull(other)
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


class KTableKTableJoinMergeProcessor(StoreForwarder):
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

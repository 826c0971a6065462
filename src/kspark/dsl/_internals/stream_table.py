"""Stream-table joins: a KStream record looks up a KTable's or a GlobalKTable's current value
(Kafka ``KStreamKTableJoinProcessor``, ``KStreamGlobalKTableJoin``)."""

from __future__ import annotations

from ...processor import ContextualProcessor, Record
from .common import dropped


class KStreamKTableJoin(ContextualProcessor):
    """Stream-side-triggered lookup join against a KTable's store (Kafka ``KStreamKTableJoinProcessor``).

    Rules J-1..J-4: only stream records produce output; a null key or null value is dropped
    and counted, except a null key with a non-null value in a left join; the output keeps the
    stream record's key and timestamp.
    """

    def __init__(self, storeName: str, joiner, withKey: bool, leftJoin: bool, valueGetter=None) -> None:
        self.storeName, self.joiner, self.withKey, self.leftJoin = storeName, joiner, withKey, leftJoin
        self.valueGetter = valueGetter  # a KTable value getter (ktable.py) instead of the store

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
            dropped(self.context(), "null join key or value", "Skipping record due to null join key or value.")
            return
        found = None if key is None else self.store.get(key)
        tableValue = None if found is None else found.value
        if self.leftJoin or tableValue is not None:
            joined = self.joiner(key, value, tableValue) if self.withKey else self.joiner(value, tableValue)
            self.context().forward(record.withValue(joined))


class KStreamGlobalKTableJoin(ContextualProcessor):
    """Stream-triggered lookup of ``keySelector(key, value)`` in a global store (Kafka
    ``KStreamGlobalKTableJoin`` = ``KStreamKTableJoinProcessor`` with a key mapper).

    Rules J-7, J-8 (``maybeDropRecord``): a left join never drops a record with a null key and a
    non-null value (if the mapped key is null too, the joiner gets a null table value);
    otherwise a null mapped key or a null value drops the record (WARN + ``dropped-records``);
    an inner join with a null stream key and a non-null mapped key joins. Output: the stream
    record's key and timestamp, value ``joiner(...)`` if ``leftJoin`` or a table value exists.
    """

    def __init__(self, storeName: str, keySelector, joiner, withKey: bool, leftJoin: bool) -> None:
        self.storeName, self.keySelector, self.joiner = storeName, keySelector, joiner
        self.withKey, self.leftJoin = withKey, leftJoin

    def init(self, context) -> None:
        super().init(context)
        self.store = context.getStateStore(self.storeName)

    def process(self, record: Record) -> None:
        key, value = record.key(), record.value()
        mappedKey = self.keySelector(key, value)
        if not (self.leftJoin and key is None and value is not None) and (mappedKey is None or value is None):
            dropped(self.context(), "null join key or value", "Skipping record due to null join key or value.")
            return
        found = None if mappedKey is None else self.store.get(mappedKey)
        tableValue = None if found is None else found.value
        if self.leftJoin or tableValue is not None:
            joined = self.joiner(key, value, tableValue) if self.withKey else self.joiner(value, tableValue)
            self.context().forward(record.withValue(joined))

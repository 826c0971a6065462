"""Stream-table joins: a KStream record looks up a KTable's or a GlobalKTable's current value
(Kafka ``KStreamKTableJoinProcessor``, ``KStreamGlobalKTableJoin``)."""

from __future__ import annotations

from ...processor import ContextualProcessor, Record
from ...serialization import Serde
from ...state import StoreBuilder
from ...state._join_stores import StreamTableJoinBuffer
from ...state._stores import KeyValueBytesStoreSupplier, TimestampedKeyValueStore
from .common import dropped
from .ktable import _StoreGetter


class KStreamKTableJoin(ContextualProcessor):
    """Stream-side-triggered lookup join against a KTable's store (Kafka ``KStreamKTableJoinProcessor``).

    Rules J-1..J-4: only stream records produce output; a null key or null value is dropped
    and counted, except a null key with a non-null value in a left join; the output keeps the
    stream record's key and timestamp. A versioned table (KIP-914) is read as of the stream
    record's timestamp. With a grace period (``bufferName``, KIP-923) a record is held in a
    ``StreamTableJoinBuffer`` until stream time has passed its timestamp by the grace period, then
    joined (with its own record metadata and headers); a record already older than that is joined
    at once.
    """

    def __init__(self, storeName: str, joiner, withKey: bool, leftJoin: bool, valueGetter=None,
                 bufferName: str | None = None) -> None:
        self.storeName, self.joiner, self.withKey, self.leftJoin = storeName, joiner, withKey, leftJoin
        self.valueGetter = valueGetter  # a KTable value getter (ktable.py) instead of the store
        self.bufferName = bufferName

    def init(self, context) -> None:
        super().init(context)
        if self.valueGetter is not None:
            self.valueGetter.init(context)
            self.store = self.valueGetter
        else:
            self.store = context.getStateStore(self.storeName)
        isVersioned = getattr(self.store, "isVersioned", None)
        self.versioned = isVersioned is not None and isVersioned()
        self.buffer = None
        if self.bufferName is not None:
            if not self.versioned:
                raise ValueError("KTable must be versioned to use a grace period in a stream table join.")
            self.buffer = context.getStateStore(self.bufferName)

    def process(self, record: Record) -> None:
        key, value = record.key(), record.value()
        if not (self.leftJoin and key is None and value is not None) and (key is None or value is None):
            dropped(self.context(), "null join key or value", "Skipping record due to null join key or value.")
            return
        buffer = self.buffer
        if buffer is None or not buffer.put(record, self.context().recordMetadata()):
            self._join(record)
            return
        context = self.context()
        current, source = getattr(context, "metadata", None), getattr(context, "sourceRecord", None)
        try:
            for buffered, meta in buffer.evict():
                context.metadata = meta  # Kafka: the buffered record's own record context (no raw record)
                context.sourceRecord = None
                self._join(buffered)
        finally:
            context.metadata, context.sourceRecord = current, source

    def fusedStep(self, drop):
        """``process`` as a step of a fused chain (``StreamTask._fuseChains``): the joined value
        (``process`` forwards it in a copy of the record, ``withValue``), or ``drop`` where
        ``process`` drops or finds no table value in an inner join. Only without a grace-period
        buffer and for a table that is not versioned (``process`` then calls ``_join`` at once,
        which reads ``store.get(key)``); None otherwise."""
        if self.buffer is not None or self.versioned:
            return None
        joiner, withKey, leftJoin, context = self.joiner, self.withKey, self.leftJoin, self.context()
        store = self.store
        if type(store) is _StoreGetter and not store.versioned:
            store = store.store  # what _StoreGetter.get reads for a store that is not versioned
        return _joinStep(None, _valueReader(store), joiner, withKey, leftJoin, context, drop), False

    def _join(self, record: Record) -> None:
        key, value = record.key(), record.value()
        if key is None:
            found = None
        else:
            found = self.store.getAsOf(key, record.timestamp()) if self.versioned else self.store.get(key)
        tableValue = None if found is None else found.value
        if self.leftJoin or tableValue is not None:
            joined = self.joiner(key, value, tableValue) if self.withKey else self.joiner(value, tableValue)
            self.context().forward(record.withValue(joined))


def _joinStep(keySelector, valueOf, joiner, withKey: bool, leftJoin: bool, context, drop):
    """The fused step of a stream-table join (J-1..J-4) or, with ``keySelector``, of a
    stream-global-table join (J-7, J-8): the table is read at the record's key, or at
    ``keySelector(key, value)``; a null lookup key or value drops the record (WARN and
    ``dropped-records``) unless a left join has a null stream key and a value; the joined value,
    or ``drop`` for an inner join that finds nothing."""

    def step(key, value):
        lookup = key if keySelector is None else keySelector(key, value)
        if not (leftJoin and key is None and value is not None) and (lookup is None or value is None):
            dropped(context, "null join key or value", "Skipping record due to null join key or value.")
            return drop
        tableValue = None if lookup is None else valueOf(lookup)
        if leftJoin or tableValue is not None:
            return joiner(key, value, tableValue) if withKey else joiner(value, tableValue)
        return drop

    return step


def _valueReader(store):
    """``key -> store.get(key).value`` (None if absent) for a fused join step: the store's own
    ``_getValue`` for a ``TimestampedKeyValueStore`` (no ``ValueAndTimestamp`` built), ``get``
    otherwise."""
    if isinstance(store, TimestampedKeyValueStore):
        return store._getValue
    get = store.get

    def valueOf(key):
        found = get(key)
        return None if found is None else found.value

    return valueOf


class StreamTableJoinBufferBuilder(StoreBuilder):
    """Kafka ``RocksDBTimeOrderedKeyValueBuffer.Builder``: serdes unset fall back to the defaults."""

    def __init__(self, name: str, keySerde: Serde | None, valueSerde: Serde | None, graceMs: int) -> None:
        super().__init__(KeyValueBytesStoreSupplier(name, persistent=True), keySerde, valueSerde)
        self.graceMs = graceMs

    def build(self, defaultKeySerde: Serde | None = None, defaultValueSerde: Serde | None = None):
        if defaultKeySerde is None or defaultValueSerde is None:
            from ...serialization import Serdes

            defaultKeySerde, defaultValueSerde = defaultKeySerde or Serdes.String(), defaultValueSerde or Serdes.JSON()
        return StreamTableJoinBuffer(self.name(), self._keySerde or defaultKeySerde,
                                     self._valueSerde or defaultValueSerde, self.graceMs)


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

    def fusedStep(self, drop):
        """``process`` as a step of a fused chain (``StreamTask._fuseChains``): the joined value
        (``process`` forwards it in a copy of the record, ``withValue``), or ``drop`` where
        ``process`` drops or finds no table value in an inner join."""
        from ...runtime.global_state import ReadOnlyStore

        keySelector, store, joiner = self.keySelector, self.store, self.joiner
        withKey, leftJoin, context = self.withKey, self.leftJoin, self.context()
        valueOf = _valueReader(store._store if type(store) is ReadOnlyStore else store)  # reads pass through
        return _joinStep(keySelector, valueOf, joiner, withKey, leftJoin, context, drop), False

"""The store of a ``KTable.suppress`` buffer (Kafka ``InMemoryTimeOrderedKeyValueChangeBuffer``).

The suppress processor keeps each buffered update here, by serialized key (Kafka's ``index`` is a
``Map<Bytes, BufferKey>``: two keys are one entry exactly when the key serde writes the same
bytes, so ``dict`` and ``list`` keys work): its buffer time, the serialized key, the ``Change``,
the record's timestamp, headers and record metadata, its size, its prior value's size and the
key itself (what is forwarded). The store is a task's state like any other: it appears in ``describe()``
(``KTABLE-SUPPRESS-STATE-STORE-<n>`` or ``<name>-store``), is connected to its processor, and is
part of the task's checkpoint.

Sizes are Kafka's ``computeRecordSize``: 8 (buffer time) + serialized key + prior value + old
value (unless the old value *is* the prior one: the key's first buffered update) + new value +
the record context (8 timestamp + 8 offset + 4 partition + topic characters + header key
characters and value bytes). Keys and values are serialized with the store's serdes (the
suppressed table's serdes, else the task's defaults, as Kafka's ``setSerdesIfNull``).
"""

from __future__ import annotations


from ..serialization import Serde

__all__ = ["SuppressionBufferStoreBuilder", "TimeOrderedKeyValueBuffer"]


def javaChars(text: str | None) -> int:
    """``text.toCharArray().length``: UTF-16 code units."""
    if not text:
        return 0
    return len(text) if text.isascii() else len(text.encode("utf-16-le")) // 2


class TimeOrderedKeyValueBuffer:
    """Buffered ``Change`` updates by serialized key (see the module docstring). ``entries``:
    key bytes -> ``[bufferTime, keyBytes, change, timestamp, headers, size, priorLen, metadata, key]``."""

    def __init__(self, name: str, keySerde: Serde, valueSerde: Serde) -> None:
        self._name, self._keySerde, self._valueSerde = name, keySerde, valueSerde
        self._serdeTopic = name  # Kafka's changelog name, set by the task
        self.entries: dict[bytes, list] = {}
        self.sizeBytes = 0
        self._open = True

    def name(self) -> str:
        return self._name

    def persistent(self) -> bool:
        return False

    def isOpen(self) -> bool:
        return self._open

    def flush(self) -> None:
        pass

    def init(self, context=None, root=None) -> None:
        pass

    def close(self) -> None:
        self._open = False

    def numRecords(self) -> int:
        return len(self.entries)

    def _valueLen(self, value) -> int:
        return 0 if value is None else len(self._valueSerde.serialize(self._serdeTopic, value) or b"")

    def put(self, bufferTime: int, key, change, timestamp: int, headers: tuple, metadata) -> None:
        """Buffer ``change`` for ``key`` (Kafka ``put`` / ``cleanPut``): a key already buffered
        keeps its buffer time and prior value ("non-resetting"), the rest is replaced.

        Raises
        ------
        kspark.serialization.IncompatibleTypeException
            If the key or a value does not fit the store's serdes (Kafka: ``ClassCastException``).
        """
        keyBytes = self._keySerde.serialize(self._serdeTopic, key) or b""
        previous = self.entries.get(keyBytes)
        if previous is None:
            priorLen = self._valueLen(change.oldValue)
            oldLen = 0  # the prior value is the old value: counted once
        else:
            bufferTime, priorLen = previous[0], previous[6]
            oldLen = self._valueLen(change.oldValue)
            self.sizeBytes -= previous[5]
        size = (8 + len(keyBytes) + priorLen + oldLen + self._valueLen(change.newValue)
                + 8 + 8 + 4 + javaChars(metadata[0] if metadata is not None else None))
        for hkey, hvalue in headers or ():
            size += javaChars(hkey) + (len(hvalue) if hvalue is not None else 0)
        self.entries[keyBytes] = [bufferTime, keyBytes, change, timestamp, headers, size, priorLen, metadata, key]
        self.sizeBytes += size

    def evictionOrder(self) -> list:
        """``(key bytes, entry)`` by buffer time, then serialized key (Kafka's ``BufferKey`` order)."""
        return sorted(self.entries.items(), key=lambda e: (e[1][0], e[0]))

    def remove(self, keyBytes: bytes) -> list:
        """Remove and return the entry of serialized key ``keyBytes`` (its last item is the key)."""
        entry = self.entries.pop(keyBytes)
        self.sizeBytes -= entry[5]
        return entry

    def snapshot(self) -> dict:
        return {"entries": self.entries, "bytes": self.sizeBytes}

    def restore(self, data: dict) -> None:
        self.entries, self.sizeBytes = _byKeyBytes(data["entries"]), data["bytes"]

    def mergeSnapshot(self, data: dict) -> None:
        """Add another task's snapshot (to view a store over all tasks)."""
        self.entries.update(_byKeyBytes(data["entries"]))
        self.sizeBytes += data["bytes"]


def _byKeyBytes(entries: dict) -> dict:
    """Snapshot entries keyed by serialized key; a snapshot written when they were keyed by the key
    object (8 items, the serialized key second) is converted."""
    if not entries or len(next(iter(entries.values()))) > 8:
        return entries
    return {entry[1]: [*entry, key] for key, entry in entries.items()}


class SuppressionBufferStoreBuilder:
    """Builds a task's ``TimeOrderedKeyValueBuffer`` (Kafka
    ``InMemoryTimeOrderedKeyValueChangeBuffer.Builder``); serdes left None take the task's
    defaults."""

    def __init__(self, name: str, keySerde: Serde | None, valueSerde: Serde | None, logging: bool = True) -> None:
        self._name, self._keySerde, self._valueSerde, self._logging = name, keySerde, valueSerde, logging

    def name(self) -> str:
        return self._name

    def loggingEnabled(self) -> bool:
        return self._logging

    def build(self, defaultKeySerde: Serde | None = None, defaultValueSerde: Serde | None = None) -> TimeOrderedKeyValueBuffer:
        if defaultKeySerde is None or defaultValueSerde is None:
            from ..serialization import Serdes

            defaultKeySerde, defaultValueSerde = defaultKeySerde or Serdes.String(), defaultValueSerde or Serdes.JSON()
        return TimeOrderedKeyValueBuffer(self._name, self._keySerde or defaultKeySerde,
                                         self._valueSerde or defaultValueSerde)

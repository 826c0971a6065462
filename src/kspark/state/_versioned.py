"""Versioned key-value stores (KIP-889): every value of a key with the timestamp from which it is
valid, for reads "as of" a time (Kafka ``VersionedKeyValueStore``, ``RocksDBVersionedStore``)."""

from __future__ import annotations

import bisect
import logging
from typing import Any, NamedTuple

from ..serialization import Serde
from ._stores import StoreBuilder, _StoreBase

__all__ = ["VersionedBytesStoreSupplier", "VersionedKeyValueStore", "VersionedRecord"]

log = logging.getLogger("kspark.state")

PUT_RETURN_CODE_VALID_TO_UNDEFINED = -1
PUT_RETURN_CODE_NOT_PUT = -(2 ** 63)  # Java Long.MIN_VALUE


class VersionedRecord:
    """One version of a key's value (Kafka ``VersionedRecord``): ``value()``, ``timestamp()`` (ms,
    from when it is valid) and ``validTo()`` (ms, exclusive; None when not known: Kafka's
    Java ``Optional.empty()``, which is what a store's ``get`` gives).

    Raises
    ------
    TypeError
        If ``value`` is None (Kafka: ``NullPointerException``, a version always has a value).
    """

    __slots__ = ("_value", "_timestamp", "_validTo")

    def __init__(self, value: Any, timestamp: int, validTo: int | None = None) -> None:
        if value is None:
            raise TypeError("value cannot be null")
        self._value, self._timestamp, self._validTo = value, timestamp, validTo

    def value(self) -> Any:
        return self._value

    def timestamp(self) -> int:
        return self._timestamp

    def validTo(self) -> int | None:
        return self._validTo

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, VersionedRecord) and other._value == self._value
                and other._timestamp == self._timestamp and other._validTo == self._validTo)

    def __hash__(self) -> int:
        return hash((self._timestamp, self._validTo))

    def __repr__(self) -> str:
        validTo = "" if self._validTo is None else f", validTo={self._validTo}"
        return f"VersionedRecord(value={self._value!r}, timestamp={self._timestamp}{validTo})"


class VersionedBytesStoreSupplier(NamedTuple):
    """Names a versioned store, its history retention and segment interval in ms (Kafka
    ``VersionedBytesStoreSupplier``, from ``Stores.persistentVersionedKeyValueStore``)."""

    name: str
    historyRetentionMs: int
    segmentIntervalMs: int
    persistent: bool = True

    def metricsScope(self) -> str:
        return "rocksdb"


class VersionedKeyValueStore(_StoreBase):
    """A key's values over time, of one task (Kafka ``VersionedKeyValueStore`` as
    ``RocksDBVersionedStore`` behaves; ``persistentVersionedKeyValueStore``).

    - ``put(key, value, timestamp)`` adds the version valid from ``timestamp`` (a null value: a
      delete from then on) and returns its ``validTo`` (the next version's timestamp), -1 when it is
      the latest version (``PUT_RETURN_CODE_VALID_TO_UNDEFINED``), or ``PUT_RETURN_CODE_NOT_PUT``
      (Java's ``Long.MIN_VALUE``) when ``timestamp`` is older than the largest timestamp put minus
      the history retention (the grace period: "Skipping record for expired put.").
    - ``get(key)``: the latest version, or None if absent or deleted.
    - ``get(key, asOfTimestamp)``: the version valid at that time; for a time older than the
      history retention, only the latest version (if it is valid then), else None.
    - ``delete(key, timestamp)``: a tombstone from ``timestamp``; returns the version that was
      valid at ``timestamp``.

    Returned records carry no ``validTo`` (None), as Kafka's ``MeteredVersionedKeyValueStore``
    (the store an application and ``TopologyTestDriver`` see) passes each one through a
    ``ValueAndTimestamp``, which drops it.

    Versions past the retention are never visible, so keeping them changes no result; the
    segment interval is kept for API parity. Values are not aliased (see ``_StoreBase``). A None
    key raises ``TypeError`` (Kafka: ``NullPointerException``).
    """

    PUT_RETURN_CODE_VALID_TO_UNDEFINED = PUT_RETURN_CODE_VALID_TO_UNDEFINED
    PUT_RETURN_CODE_NOT_PUT = PUT_RETURN_CODE_NOT_PUT

    def __init__(self, name: str, keySerde: Serde, valueSerde: Serde, historyRetentionMs: int,
                 segmentIntervalMs: int) -> None:
        super().__init__(name, keySerde, valueSerde, True)
        self._historyRetentionMs, self._segmentIntervalMs = historyRetentionMs, segmentIntervalMs
        # key bytes -> (key, [timestamps ascending], [stored value or None (a tombstone)])
        self._versions: dict[bytes, tuple[Any, list[int], list[Any]]] = {}
        self._observed = -1  # Kafka ConsumerRecord.NO_TIMESTAMP
        self.expiredCounter = None  # set by the task: counts puts past the grace period

    def historyRetention(self) -> int:
        return self._historyRetentionMs

    # -- contents as a picklable value, for hosts that checkpoint stores
    def snapshot(self) -> dict:
        return {"versions": self._versions, "observed": self._observed}

    def restore(self, data: dict) -> None:
        self._versions, self._observed = data["versions"], data["observed"]

    def mergeSnapshot(self, data: dict) -> None:
        self._versions.update(data["versions"])
        self._observed = max(self._observed, data["observed"])

    # -- VersionedKeyValueStore
    def put(self, key: Any, value: Any, timestamp: int) -> int:
        kb = self._keyBytes(key)
        if timestamp < self._observed - self._historyRetentionMs:  # gracePeriod == historyRetention
            log.warning("Skipping record for expired put.")
            if self.expiredCounter is not None:
                self.expiredCounter()
            return PUT_RETURN_CODE_NOT_PUT
        self._observed = max(self._observed, timestamp)
        return self._put(kb, key, None if value is None else self._freeze(value), timestamp)

    def _put(self, kb: bytes, key: Any, stored: Any, timestamp: int) -> int:
        entry = self._versions.get(kb)
        if entry is None:
            self._versions[kb] = (key, [timestamp], [stored])
            return PUT_RETURN_CODE_VALID_TO_UNDEFINED
        _, times, values = entry
        i = bisect.bisect_left(times, timestamp)
        if i < len(times) and times[i] == timestamp:
            values[i] = stored
        else:
            times.insert(i, timestamp)
            values.insert(i, stored)
        return times[i + 1] if i + 1 < len(times) else PUT_RETURN_CODE_VALID_TO_UNDEFINED

    def delete(self, key: Any, timestamp: int) -> VersionedRecord | None:
        kb = self._keyBytes(key)
        if timestamp < self._observed - self._historyRetentionMs:
            log.warning("Skipping record for expired delete.")
            if self.expiredCounter is not None:
                self.expiredCounter()
            return None
        existing = self.get(key, timestamp)
        self._observed = max(self._observed, timestamp)
        self._put(kb, key, None, timestamp)
        return existing

    def get(self, key: Any, asOfTimestamp: int | None = None) -> VersionedRecord | None:
        entry = self._versions.get(self._keyBytes(key))
        if entry is None:
            return None
        _, times, values = entry
        if asOfTimestamp is None or asOfTimestamp < self._observed - self._historyRetentionMs:
            # the latest version never expires; an older one past the retention is not returned
            if values[-1] is None or (asOfTimestamp is not None and times[-1] > asOfTimestamp):
                if asOfTimestamp is not None:
                    log.warning("Returning null for expired get.")
                return None
            return VersionedRecord(self._thaw(values[-1]), times[-1])
        i = bisect.bisect_right(times, asOfTimestamp) - 1
        if i < 0 or values[i] is None:
            return None
        return VersionedRecord(self._thaw(values[i]), times[i])

    def approximateNumEntries(self) -> int:
        return sum(1 for _, _, values in self._versions.values() if values[-1] is not None)


class VersionedStoreBuilder(StoreBuilder):
    """Builds a ``VersionedKeyValueStore`` per task (Kafka ``VersionedKeyValueStoreBuilder``);
    caching is never enabled (Kafka: "versioned stores do not support caching")."""

    def withCachingEnabled(self) -> "VersionedStoreBuilder":
        return self

    def build(self, defaultKeySerde: Serde | None = None, defaultValueSerde: Serde | None = None):
        if defaultKeySerde is None or defaultValueSerde is None:
            from ..serialization import Serdes

            defaultKeySerde, defaultValueSerde = defaultKeySerde or Serdes.String(), defaultValueSerde or Serdes.JSON()
        s = self._supplier
        return VersionedKeyValueStore(s.name, self._keySerde or defaultKeySerde, self._valueSerde or defaultValueSerde,
                                      s.historyRetentionMs, s.segmentIntervalMs)

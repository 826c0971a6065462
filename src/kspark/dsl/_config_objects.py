"""Operator parameters (Kafka ``Consumed``, ``Produced``, ``Repartitioned``, ``Materialized``, ``Named``).

Each factory works on the class (``Consumed.with_(...)``, a new object) and on an object (a
modified copy), as Kafka's static factories and ``withX`` methods do.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

from ..processor import TimestampExtractor
from ..serialization import Serde

__all__ = ["Consumed", "Grouped", "Joined", "Materialized", "Named", "Produced", "Repartitioned"]


class _factory:
    """Method usable on the class (applied to a fresh default object) or on an object (applied to a copy)."""

    def __init__(self, fn) -> None:
        self.fn = fn
        functools.update_wrapper(self, fn)

    def __get__(self, obj, cls):
        @functools.wraps(self.fn)
        def bound(*args, **kwargs):
            target = cls() if obj is None else copy.copy(obj)
            self.fn(target, *args, **kwargs)
            return target

        return bound


class _Params:
    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if v is not None)
        return f"{type(self).__name__}({fields})"


class Named(_Params):
    """A processor name for an operation (Kafka ``Named``)."""

    def __init__(self) -> None:
        self.name: str | None = None

    @_factory
    def as_(self, name: str) -> "Named":
        self.name = name


class Consumed(_Params):
    """How a source topic is read: serdes, timestamp extractor, node name (Kafka ``Consumed``)."""

    def __init__(self) -> None:
        self.keySerde: Serde | None = None
        self.valueSerde: Serde | None = None
        self.timestampExtractor: TimestampExtractor | None = None
        self.name: str | None = None

    @_factory
    def with_(self, keySerde: Serde | None = None, valueSerde: Serde | None = None) -> "Consumed":
        self.keySerde, self.valueSerde = keySerde, valueSerde

    @_factory
    def withKeySerde(self, keySerde: Serde) -> "Consumed":
        self.keySerde = keySerde

    @_factory
    def withValueSerde(self, valueSerde: Serde) -> "Consumed":
        self.valueSerde = valueSerde

    @_factory
    def withTimestampExtractor(self, timestampExtractor: TimestampExtractor) -> "Consumed":
        if not hasattr(timestampExtractor, "extract"):
            raise TypeError("timestampExtractor must implement extract(record, partitionTime)")
        self.timestampExtractor = timestampExtractor

    @_factory
    def as_(self, processorName: str) -> "Consumed":
        self.name = processorName

    withName = as_


class Produced(_Params):
    """How a sink writes: serdes, partitioner, node name (Kafka ``Produced``).

    ``streamPartitioner(topic, key, value, numPartitions) -> int | None``; ``None`` falls back
    to the default murmur2 partitioning (rule DP-1).
    """

    def __init__(self) -> None:
        self.keySerde: Serde | None = None
        self.valueSerde: Serde | None = None
        self.partitioner = None
        self.name: str | None = None

    @_factory
    def with_(self, keySerde: Serde | None = None, valueSerde: Serde | None = None) -> "Produced":
        self.keySerde, self.valueSerde = keySerde, valueSerde

    @_factory
    def withKeySerde(self, keySerde: Serde) -> "Produced":
        self.keySerde = keySerde

    @_factory
    def withValueSerde(self, valueSerde: Serde) -> "Produced":
        self.valueSerde = valueSerde

    @_factory
    def withStreamPartitioner(self, partitioner) -> "Produced":
        self.partitioner = partitioner

    @_factory
    def as_(self, processorName: str) -> "Produced":
        self.name = processorName

    withName = as_


class Repartitioned(_Params):
    """Parameters of ``KStream.repartition`` (Kafka ``Repartitioned``, rule RP-3).

    ``withNumberOfPartitions(n)`` fixes ("enforces") the repartition topic's partition count;
    without it the count is derived (rules RP-4, RP-5).
    """

    def __init__(self) -> None:
        self.name: str | None = None
        self.keySerde: Serde | None = None
        self.valueSerde: Serde | None = None
        self.numberOfPartitions: int | None = None
        self.partitioner = None

    @_factory
    def as_(self, name: str) -> "Repartitioned":
        self.name = name

    withName = as_

    @_factory
    def with_(self, keySerde: Serde | None = None, valueSerde: Serde | None = None) -> "Repartitioned":
        self.keySerde, self.valueSerde = keySerde, valueSerde

    @_factory
    def withKeySerde(self, keySerde: Serde) -> "Repartitioned":
        self.keySerde = keySerde

    @_factory
    def withValueSerde(self, valueSerde: Serde) -> "Repartitioned":
        self.valueSerde = valueSerde

    @_factory
    def withNumberOfPartitions(self, numberOfPartitions: int) -> "Repartitioned":
        if isinstance(numberOfPartitions, bool) or not isinstance(numberOfPartitions, int) or numberOfPartitions < 1:
            raise ValueError(f"Number of partitions must be a positive integer, got {numberOfPartitions!r}")
        self.numberOfPartitions = numberOfPartitions

    @_factory
    def withStreamPartitioner(self, partitioner) -> "Repartitioned":
        self.partitioner = partitioner


class Grouped(_Params):
    """Serdes and name of a grouping's repartition topic (Kafka ``Grouped``)."""

    def __init__(self) -> None:
        self.name: str | None = None
        self.keySerde: Serde | None = None
        self.valueSerde: Serde | None = None

    @_factory
    def as_(self, name: str) -> "Grouped":
        self.name = name

    withName = as_

    @_factory
    def with_(self, keySerde: Serde | None = None, valueSerde: Serde | None = None) -> "Grouped":
        self.keySerde, self.valueSerde = keySerde, valueSerde

    @_factory
    def withKeySerde(self, keySerde: Serde) -> "Grouped":
        self.keySerde = keySerde

    @_factory
    def withValueSerde(self, valueSerde: Serde) -> "Grouped":
        self.valueSerde = valueSerde


class Joined(_Params):
    """Serdes, name and grace period of a KStream-KTable join (Kafka ``Joined``).

    ``keySerde`` / ``valueSerde`` serialize the stream side when it goes through a repartition
    topic first (rule J-6); ``otherValueSerde`` is the table's value serde (kept for API parity:
    kspark reads the table from its store, so it is not used). ``name`` names the join processor
    and the repartition topic ``<name>-repartition``.
    """

    def __init__(self) -> None:
        self.keySerde: Serde | None = None
        self.valueSerde: Serde | None = None
        self.otherValueSerde: Serde | None = None
        self.name: str | None = None
        self.gracePeriodMs: int | None = None

    @_factory
    def with_(self, keySerde: Serde | None = None, valueSerde: Serde | None = None,
              otherValueSerde: Serde | None = None, name: str | None = None) -> "Joined":
        self.keySerde, self.valueSerde, self.otherValueSerde, self.name = keySerde, valueSerde, otherValueSerde, name

    @_factory
    def as_(self, name: str) -> "Joined":
        self.name = name

    withName = as_

    @_factory
    def withKeySerde(self, keySerde: Serde) -> "Joined":
        self.keySerde = keySerde

    @_factory
    def withValueSerde(self, valueSerde: Serde) -> "Joined":
        self.valueSerde = valueSerde

    @_factory
    def withOtherValueSerde(self, otherValueSerde: Serde) -> "Joined":
        self.otherValueSerde = otherValueSerde

    @_factory
    def withGracePeriod(self, gracePeriod) -> "Joined":
        """Buffer stream records by ``gracePeriod`` (timedelta or ms) before joining (KIP-923,
        rule J-5). Needs a versioned table, which kspark does not have yet: a join with a grace
        period raises ``ValueError`` as Kafka's ``IllegalArgumentException`` does."""
        from .._duration import toMillis

        self.gracePeriodMs = toMillis(gracePeriod, "gracePeriod")


class Materialized(_Params):
    """How a KTable's store is named and serialized (Kafka ``Materialized``)."""

    def __init__(self) -> None:
        self.storeName: str | None = None
        self.keySerde: Serde | None = None
        self.valueSerde: Serde | None = None
        self.retentionMs: int | None = None
        self.caching = True

    @_factory
    def as_(self, storeName: str) -> "Materialized":
        self.storeName = storeName

    @_factory
    def withCachingEnabled(self) -> "Materialized":
        """Hold aggregation updates in the record cache until commit (the default; rule SA-10)."""
        self.caching = True

    @_factory
    def withCachingDisabled(self) -> "Materialized":
        """Forward every aggregation update at once."""
        self.caching = False

    @_factory
    def withRetention(self, retention) -> "Materialized":
        """How long (ms or timedelta) a windowed store keeps windows."""
        from .._duration import toMillis

        self.retentionMs = toMillis(retention, "retention")

    @_factory
    def with_(self, keySerde: Serde | None = None, valueSerde: Serde | None = None) -> "Materialized":
        self.keySerde, self.valueSerde = keySerde, valueSerde

    @_factory
    def withKeySerde(self, keySerde: Serde) -> "Materialized":
        self.keySerde = keySerde

    @_factory
    def withValueSerde(self, valueSerde: Serde) -> "Materialized":
        self.valueSerde = valueSerde


def nameOf(named: Any) -> str | None:
    """The name carried by ``named`` (a str, ``Named`` or any parameter object with ``name``)."""
    if named is None or isinstance(named, str):
        return named
    return getattr(named, "name", None)

"""Operator parameters (Kafka ``Consumed``, ``Produced``, ``Repartitioned``, ``Materialized``, ``Named``).

Each factory works on the class (``Consumed.with_(...)``, a new object) and on an object (a
modified copy), as Kafka's static factories and ``withX`` methods do.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

from .._auto_offset_reset import AutoOffsetReset
from ..processor import TimestampExtractor
from ..serialization import Serde
from ._overloads import Kind, bind, check, instanceOf

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
        self.name = check("Named.as_", "name", STRING, name, nullable=False)

    withName = as_


def _isSerde(v) -> bool:
    return isinstance(v, Serde) or (hasattr(v, "serialize") and hasattr(v, "deserialize") and not isinstance(v, type))


STRING = instanceOf("str", str)
SERDE = Kind("Serde", _isSerde)
EXTRACTOR = Kind("TimestampExtractor (an object with extract(record, partitionTime))",
                 lambda v: hasattr(v, "extract") and not isinstance(v, type))
RESET_POLICY = instanceOf("AutoOffsetReset", AutoOffsetReset)
PARTITIONER = Kind("StreamPartitioner (partitions(topic, key, value, numPartitions) or a function of those)",
                   lambda v: callable(v) or callable(getattr(v, "partitions", None))
                   or callable(getattr(v, "partition", None)))


def _partitioner(p):
    """A ``StreamPartitioner`` object (Kafka 4's ``partitions``, or Kafka 3's ``partition``) or
    function as the function the runtime calls (it returns None, a set of partitions or one)."""
    if p is None:
        return None
    for method in ("partitions", "partition"):
        if callable(getattr(p, method, None)):
            return getattr(p, method)
    return p


class Consumed(_Params):
    """How a source topic is read: serdes, timestamp extractor, offset reset policy, node name
    (Kafka ``Consumed``).

    ``Consumed.with_`` takes Kafka's forms by type: ``with_(keySerde, valueSerde)``,
    ``with_(keySerde, valueSerde, timestampExtractor, resetPolicy)``, ``with_(timestampExtractor)``,
    ``with_(resetPolicy)`` (an ``AutoOffsetReset``).

    Raises
    ------
    TypeError
        For an argument of another type (e.g. an extractor where a serde is expected).
    """

    def __init__(self) -> None:
        self.keySerde: Serde | None = None
        self.valueSerde: Serde | None = None
        self.timestampExtractor: TimestampExtractor | None = None
        self.offsetResetPolicy: AutoOffsetReset | None = None
        self.name: str | None = None

    @_factory
    def with_(self, keySerde: Serde | None = None, valueSerde: Serde | None = None,
              timestampExtractor: TimestampExtractor | None = None,
              resetPolicy: AutoOffsetReset | None = None) -> "Consumed":
        self.keySerde, self.valueSerde, self.timestampExtractor, self.offsetResetPolicy = bind(
            "Consumed.with_", "with_(keySerde, valueSerde), with_(keySerde, valueSerde, timestampExtractor, "
            "resetPolicy), with_(timestampExtractor), with_(resetPolicy)", (SERDE, SERDE, EXTRACTOR, RESET_POLICY),
            (keySerde, valueSerde, timestampExtractor, resetPolicy))

    @_factory
    def withOffsetResetPolicy(self, resetPolicy: AutoOffsetReset) -> "Consumed":
        """Kafka ``Consumed.withOffsetResetPolicy``: the source's topics use ``resetPolicy``
        instead of the config's ``auto.offset.reset`` (see ``AutoOffsetReset``)."""
        self.offsetResetPolicy = check("Consumed.withOffsetResetPolicy", "resetPolicy", RESET_POLICY, resetPolicy)

    @_factory
    def withKeySerde(self, keySerde: Serde) -> "Consumed":
        self.keySerde = check("Consumed.withKeySerde", "keySerde", SERDE, keySerde)

    @_factory
    def withValueSerde(self, valueSerde: Serde) -> "Consumed":
        self.valueSerde = check("Consumed.withValueSerde", "valueSerde", SERDE, valueSerde)

    @_factory
    def withTimestampExtractor(self, timestampExtractor: TimestampExtractor) -> "Consumed":
        self.timestampExtractor = check("Consumed.withTimestampExtractor", "timestampExtractor", EXTRACTOR,
                                        timestampExtractor, nullable=False)

    @_factory
    def as_(self, processorName: str) -> "Consumed":
        self.name = check("Consumed.as_", "processorName", STRING, processorName)

    withName = as_


class Produced(_Params):
    """How a sink writes: serdes, partitioner, node name (Kafka ``Produced``).

    ``with_(keySerde, valueSerde)`` or ``with_(keySerde, valueSerde, partitioner)``, and Kafka's
    static factories ``keySerde``, ``valueSerde``, ``streamPartitioner``, ``as_``. A partitioner
    is Kafka 4's ``StreamPartitioner``: ``partitions(topic, key, value, numPartitions)`` (a
    function, or an object with that method) returning None (the default murmur2 partitioning,
    rule DP-1), a set of partitions (the record goes to each; an empty set drops it, counted in
    ``dropped-records``), or, as Kafka 3's ``partition()``, one int.
    """

    def __init__(self) -> None:
        self.keySerde: Serde | None = None
        self.valueSerde: Serde | None = None
        self.partitioner = None
        self.name: str | None = None

    @_factory
    def with_(self, keySerde: Serde | None = None, valueSerde: Serde | None = None, partitioner=None) -> "Produced":
        self.keySerde, self.valueSerde, partitioner = bind(
            "Produced.with_", "with_(keySerde, valueSerde), with_(keySerde, valueSerde, partitioner)",
            (SERDE, SERDE, PARTITIONER), (keySerde, valueSerde, partitioner))
        self.partitioner = _partitioner(partitioner)

    @_factory
    def withKeySerde(self, keySerde: Serde) -> "Produced":
        self.keySerde = check("Produced.withKeySerde", "keySerde", SERDE, keySerde)

    @_factory
    def withValueSerde(self, valueSerde: Serde) -> "Produced":
        self.valueSerde = check("Produced.withValueSerde", "valueSerde", SERDE, valueSerde)

    @_factory
    def withStreamPartitioner(self, partitioner) -> "Produced":
        self.partitioner = _partitioner(check("Produced.withStreamPartitioner", "partitioner", PARTITIONER, partitioner))

    # Kafka's static factories (on an object, these names are its fields)
    keySerde = withKeySerde
    valueSerde = withValueSerde
    streamPartitioner = withStreamPartitioner

    @_factory
    def as_(self, processorName: str) -> "Produced":
        self.name = check("Produced.as_", "processorName", STRING, processorName)

    withName = as_


class Repartitioned(_Params):
    """Parameters of ``KStream.repartition`` (Kafka ``Repartitioned``, rule RP-3).

    ``withNumberOfPartitions(n)`` fixes ("enforces") the repartition topic's partition count;
    without it the count is derived (rules RP-4, RP-5). Kafka's static factories ``as_``,
    ``with_``, ``numberOfPartitions(n)`` and ``streamPartitioner(p)`` start from the defaults.

    Raises
    ------
    ValueError
        For a partition count that is not a positive int.
    """

    def __init__(self) -> None:
        self.name: str | None = None
        self.keySerde: Serde | None = None
        self.valueSerde: Serde | None = None
        self.numberOfPartitions: int | None = None
        self.partitioner = None

    @_factory
    def as_(self, name: str) -> "Repartitioned":
        self.name = check("Repartitioned.as_", "name", STRING, name)

    withName = as_

    @_factory
    def with_(self, keySerde: Serde | None = None, valueSerde: Serde | None = None) -> "Repartitioned":
        self.keySerde, self.valueSerde = bind("Repartitioned.with_", "with_(keySerde, valueSerde)", (SERDE, SERDE),
                                              (keySerde, valueSerde))

    @_factory
    def withKeySerde(self, keySerde: Serde) -> "Repartitioned":
        self.keySerde = check("Repartitioned.withKeySerde", "keySerde", SERDE, keySerde)

    @_factory
    def withValueSerde(self, valueSerde: Serde) -> "Repartitioned":
        self.valueSerde = check("Repartitioned.withValueSerde", "valueSerde", SERDE, valueSerde)

    @_factory
    def withNumberOfPartitions(self, numberOfPartitions: int) -> "Repartitioned":
        if isinstance(numberOfPartitions, bool) or not isinstance(numberOfPartitions, int) or numberOfPartitions < 1:
            raise ValueError(f"Number of partitions must be a positive integer, got {numberOfPartitions!r}")
        self.numberOfPartitions = numberOfPartitions

    @_factory
    def withStreamPartitioner(self, partitioner) -> "Repartitioned":
        self.partitioner = _partitioner(check("Repartitioned.withStreamPartitioner", "partitioner", PARTITIONER,
                                              partitioner))

    # Kafka's static factories (on an object, ``numberOfPartitions`` is its field)
    numberOfPartitions = withNumberOfPartitions
    streamPartitioner = withStreamPartitioner


class Grouped(_Params):
    """Serdes and name of a grouping's repartition topic (Kafka ``Grouped``):
    ``with_(keySerde, valueSerde)`` or ``with_(name, keySerde, valueSerde)``, and Kafka's static
    factories ``as_(name)``, ``keySerde(serde)``, ``valueSerde(serde)``."""

    def __init__(self) -> None:
        self.name: str | None = None
        self.keySerde: Serde | None = None
        self.valueSerde: Serde | None = None

    @_factory
    def as_(self, name: str) -> "Grouped":
        self.name = check("Grouped.as_", "name", STRING, name)

    withName = as_

    @_factory
    def with_(self, *args: Any, name: str | None = None, keySerde: Serde | None = None,
              valueSerde: Serde | None = None) -> "Grouped":
        if len(args) > 3 or (args and (name, keySerde, valueSerde) != (None, None, None)):
            raise TypeError("Grouped.with_() takes ([name,] keySerde, valueSerde), positional or by keyword")
        values = (name, keySerde, valueSerde) if not args else (
            args if len(args) == 3 or isinstance(args[0], str) else (None, *args))
        self.name, self.keySerde, self.valueSerde = bind(
            "Grouped.with_", "with_(keySerde, valueSerde), with_(name, keySerde, valueSerde)",
            (STRING, SERDE, SERDE), values)

    @_factory
    def withKeySerde(self, keySerde: Serde) -> "Grouped":
        self.keySerde = check("Grouped.withKeySerde", "keySerde", SERDE, keySerde)

    @_factory
    def withValueSerde(self, valueSerde: Serde) -> "Grouped":
        self.valueSerde = check("Grouped.withValueSerde", "valueSerde", SERDE, valueSerde)

    # Kafka's static factories (on an object, these names are its fields)
    keySerde = withKeySerde
    valueSerde = withValueSerde


class Joined(_Params):
    """Serdes, name and grace period of a KStream-KTable join (Kafka ``Joined``):
    ``with_(keySerde, valueSerde, otherValueSerde[, name])``.

    Kafka's static factories ``keySerde``, ``valueSerde``, ``otherValueSerde``, ``as_`` start from
    the defaults. ``keySerde`` / ``valueSerde`` serialize the stream side when it goes through a repartition
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
        self.keySerde, self.valueSerde, self.otherValueSerde, self.name = bind(
            "Joined.with_", "with_(keySerde, valueSerde, otherValueSerde), with_(keySerde, valueSerde, "
            "otherValueSerde, name)", (SERDE, SERDE, SERDE, STRING), (keySerde, valueSerde, otherValueSerde, name))

    @_factory
    def as_(self, name: str) -> "Joined":
        self.name = check("Joined.as_", "name", STRING, name)

    withName = as_

    @_factory
    def withKeySerde(self, keySerde: Serde) -> "Joined":
        self.keySerde = check("Joined.withKeySerde", "keySerde", SERDE, keySerde)

    @_factory
    def withValueSerde(self, valueSerde: Serde) -> "Joined":
        self.valueSerde = check("Joined.withValueSerde", "valueSerde", SERDE, valueSerde)

    @_factory
    def withOtherValueSerde(self, otherValueSerde: Serde) -> "Joined":
        self.otherValueSerde = check("Joined.withOtherValueSerde", "otherValueSerde", SERDE, otherValueSerde)

    # Kafka's static factories (on an object, these names are its fields)
    keySerde = withKeySerde
    valueSerde = withValueSerde
    otherValueSerde = withOtherValueSerde

    @_factory
    def withGracePeriod(self, gracePeriod) -> "Joined":
        """Buffer stream records by ``gracePeriod`` (timedelta or ms) before joining (KIP-923,
        rule J-5). Needs a versioned table, which kspark does not have yet: a join with a grace
        period raises ``ValueError`` as Kafka's ``IllegalArgumentException`` does."""
        from .._duration import toMillis

        self.gracePeriodMs = toMillis(gracePeriod, "gracePeriod")


class StreamJoined(_Params):
    """Serdes, names and stores of a KStream-KStream join (Kafka ``StreamJoined``).

    ``with_(keySerde, valueSerde, otherValueSerde)`` or ``with_(thisStoreSupplier,
    otherStoreSupplier)``; ``as_(storeName)``; ``withName(name)`` names the join's processors
    (``<name>-this-windowed``, ``<name>-join-this``...) and repartition topics
    (``<name>-left-repartition``, ``<name>-right-repartition``); ``withStoreName(name)`` names its
    stores (``<name>-this-join-store``, ``<name>-other-join-store``, ``<name>-left-shared-join-store``
    or ``-outer-shared-join-store``). Serdes not given are the defaults (Kafka does not take the
    streams' serdes here). A store supplier must come from ``Stores.*WindowStore(name,
    retention=size + grace, windowSize=size, retainDuplicates=True)``.
    ``withLoggingEnabled/Disabled`` are recorded (the changelog is the Spark checkpoint).

    Raises
    ------
    TypeError
        For an argument of another type.
    """

    def __init__(self) -> None:
        self.keySerde: Serde | None = None
        self.valueSerde: Serde | None = None
        self.otherValueSerde: Serde | None = None
        self.thisStoreSupplier = None
        self.otherStoreSupplier = None
        self.name: str | None = None
        self.storeName: str | None = None
        self.logging = True
        self.topicConfig: dict = {}

    @_factory
    def with_(self, keySerdeOrThisSupplier=None, valueSerdeOrOtherSupplier=None, otherValueSerde=None) -> "StreamJoined":
        if _isWindowSupplier(keySerdeOrThisSupplier) or _isWindowSupplier(valueSerdeOrOtherSupplier):
            self.thisStoreSupplier, self.otherStoreSupplier = bind(
                "StreamJoined.with_", "with_(keySerde, valueSerde, otherValueSerde), with_(thisStoreSupplier, "
                "otherStoreSupplier)", (WINDOW_SUPPLIER, WINDOW_SUPPLIER),
                (keySerdeOrThisSupplier, valueSerdeOrOtherSupplier))
            if otherValueSerde is not None:
                raise TypeError("StreamJoined.with_(thisStoreSupplier, otherStoreSupplier) takes two arguments")
            return
        self.keySerde, self.valueSerde, self.otherValueSerde = bind(
            "StreamJoined.with_", "with_(keySerde, valueSerde, otherValueSerde), with_(thisStoreSupplier, "
            "otherStoreSupplier)", (SERDE, SERDE, SERDE), (keySerdeOrThisSupplier, valueSerdeOrOtherSupplier, otherValueSerde))

    @_factory
    def as_(self, storeName: str) -> "StreamJoined":
        """Kafka ``StreamJoined.as(storeName)``: the base name of the join's stores."""
        self.storeName = check("StreamJoined.as_", "storeName", STRING, storeName)

    @_factory
    def withName(self, name: str) -> "StreamJoined":
        self.name = check("StreamJoined.withName", "name", STRING, name)

    @_factory
    def withStoreName(self, storeName: str) -> "StreamJoined":
        self.storeName = check("StreamJoined.withStoreName", "storeName", STRING, storeName)

    @_factory
    def withKeySerde(self, keySerde: Serde) -> "StreamJoined":
        self.keySerde = check("StreamJoined.withKeySerde", "keySerde", SERDE, keySerde)

    @_factory
    def withValueSerde(self, valueSerde: Serde) -> "StreamJoined":
        self.valueSerde = check("StreamJoined.withValueSerde", "valueSerde", SERDE, valueSerde)

    @_factory
    def withOtherValueSerde(self, otherValueSerde: Serde) -> "StreamJoined":
        self.otherValueSerde = check("StreamJoined.withOtherValueSerde", "otherValueSerde", SERDE, otherValueSerde)

    @_factory
    def withThisStoreSupplier(self, thisStoreSupplier) -> "StreamJoined":
        self.thisStoreSupplier = check("StreamJoined.withThisStoreSupplier", "thisStoreSupplier", WINDOW_SUPPLIER,
                                       thisStoreSupplier)

    @_factory
    def withOtherStoreSupplier(self, otherStoreSupplier) -> "StreamJoined":
        self.otherStoreSupplier = check("StreamJoined.withOtherStoreSupplier", "otherStoreSupplier", WINDOW_SUPPLIER,
                                        otherStoreSupplier)

    @_factory
    def withLoggingEnabled(self, config: dict | None = None) -> "StreamJoined":
        """Kafka: the stores' changelog topics with ``config``; recorded only (see ``Materialized``)."""
        self.logging, self.topicConfig = True, dict(config or {})

    @_factory
    def withLoggingDisabled(self) -> "StreamJoined":
        self.logging, self.topicConfig = False, {}


def _isWindowSupplier(v) -> bool:
    from ..state import WindowBytesStoreSupplier

    return isinstance(v, WindowBytesStoreSupplier)


WINDOW_SUPPLIER = Kind("WindowBytesStoreSupplier (Stores.persistentWindowStore / inMemoryWindowStore)", _isWindowSupplier)


def _isStoreSupplier(v) -> bool:
    from ..state import KeyValueBytesStoreSupplier, SessionBytesStoreSupplier, WindowBytesStoreSupplier

    return isinstance(v, (KeyValueBytesStoreSupplier, SessionBytesStoreSupplier, WindowBytesStoreSupplier))


STORE_SUPPLIER = Kind("StoreSupplier (from Stores)", _isStoreSupplier)


class Materialized(_Params):
    """How a KTable's or aggregation's store is named, built and serialized (Kafka ``Materialized``).

    ``Materialized.as_(storeName)`` or ``Materialized.as_(storeSupplier)`` (a supplier from
    ``Stores``: its name, kind (in-memory or persistent) and, for window and session stores, its
    retention and window size are used); ``Materialized.with_(keySerde, valueSerde)``.
    ``withLoggingEnabled(config)`` / ``withLoggingDisabled()`` are accepted and recorded: the
    changelog is the Spark host's checkpoint, so they change nothing else.

    Raises
    ------
    TypeError
        If ``as_`` gets neither a str nor a store supplier, or a ``withX`` gets the wrong type.
    """

    def __init__(self) -> None:
        self.storeName: str | None = None
        self.storeSupplier = None
        self.keySerde: Serde | None = None
        self.valueSerde: Serde | None = None
        self.retentionMs: int | None = None
        self.caching = True
        self.logging = True
        self.topicConfig: dict = {}

    @_factory
    def as_(self, storeNameOrSupplier) -> "Materialized":
        name, supplier = bind("Materialized.as_", "as_(storeName), as_(storeSupplier)", (STRING, STORE_SUPPLIER),
                              (storeNameOrSupplier,))
        if name is None and supplier is None:
            raise TypeError("Materialized.as_(): name cannot be null")  # Kafka: NullPointerException
        self.storeName = name if supplier is None else supplier.name
        self.storeSupplier = supplier

    @_factory
    def withCachingEnabled(self) -> "Materialized":
        """Hold aggregation updates in the record cache until commit (the default; rule SA-10)."""
        self.caching = True

    @_factory
    def withCachingDisabled(self) -> "Materialized":
        """Forward every aggregation update at once."""
        self.caching = False

    @_factory
    def withLoggingEnabled(self, config: dict | None = None) -> "Materialized":
        """Kafka: the store's changelog topic with ``config``; kspark's changelog is the Spark
        checkpoint, so this only records the flag and config."""
        self.logging, self.topicConfig = True, dict(config or {})

    @_factory
    def withLoggingDisabled(self) -> "Materialized":
        """Kafka: no changelog topic; kspark records the flag (the Spark checkpoint still keeps the store)."""
        self.logging, self.topicConfig = False, {}

    @_factory
    def withRetention(self, retention) -> "Materialized":
        """How long (ms or timedelta) a windowed store keeps windows."""
        from .._duration import toMillis

        self.retentionMs = toMillis(retention, "retention")

    @_factory
    def with_(self, keySerde: Serde | None = None, valueSerde: Serde | None = None) -> "Materialized":
        self.keySerde, self.valueSerde = bind("Materialized.with_", "with_(keySerde, valueSerde)", (SERDE, SERDE),
                                              (keySerde, valueSerde))

    @_factory
    def withKeySerde(self, keySerde: Serde) -> "Materialized":
        self.keySerde = check("Materialized.withKeySerde", "keySerde", SERDE, keySerde)

    @_factory
    def withValueSerde(self, valueSerde: Serde) -> "Materialized":
        self.valueSerde = check("Materialized.withValueSerde", "valueSerde", SERDE, valueSerde)


NAMED = Kind("Named (or a str name)", lambda v: isinstance(v, (Named, str)))
MATERIALIZED = instanceOf("Materialized", Materialized)
CONSUMED = instanceOf("Consumed", Consumed)
PRODUCED = instanceOf("Produced", Produced)
GROUPED = instanceOf("Grouped", Grouped)
REPARTITIONED = instanceOf("Repartitioned", Repartitioned)


def _supplierOf(method: str, materialized, supplierType: type, what: str):
    supplier = materialized.storeSupplier if materialized is not None else None
    if supplier is not None and not isinstance(supplier, supplierType):
        raise TypeError(f"{method}(): Materialized.as_() needs {what} here, got a {type(supplier).__name__}")
    return supplier


def keyValueStoreBuilder(method: str, materialized: "Materialized", storeName: str, keySerde=None, valueSerde=None):
    """Kafka ``KeyValueStoreMaterializer``: the timestamped key-value store of a KTable or an
    aggregation, from ``materialized``'s store supplier (a persistent store by default) and serdes
    (else ``keySerde``/``valueSerde``, else the defaults).

    Raises
    ------
    TypeError
        If ``materialized`` holds a window or session store supplier.
    """
    from ..state import KeyValueBytesStoreSupplier, Stores

    supplier = _supplierOf(method, materialized, KeyValueBytesStoreSupplier,
                           "a key-value store supplier (Stores.persistentKeyValueStore / inMemoryKeyValueStore)")
    builder = Stores.timestampedKeyValueStoreBuilder(
        supplier or Stores.persistentKeyValueStore(storeName), materialized.keySerde or keySerde,
        materialized.valueSerde or valueSerde)
    return builder if materialized.logging else builder.withLoggingDisabled()


def nameOf(named: Any) -> str | None:
    """The name carried by ``named`` (a str, ``Named`` or any parameter object with ``name``)."""
    if named is None or isinstance(named, str):
        return named
    return getattr(named, "name", None)


def named(method: str, value: Any) -> str | None:
    """The name given as ``named`` (a ``Named`` or a str) to ``method``; TypeError for anything else."""
    return nameOf(check(method, "named", NAMED, value))

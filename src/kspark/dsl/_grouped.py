from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from ..serialization import Serdes
from ..state import SessionBytesStoreSupplier, Stores, WindowBytesStoreSupplier
from ._config_objects import MATERIALIZED, NAMED, Grouped, Materialized, Repartitioned, _supplierOf, keyValueStoreBuilder
from ._internals.aggregation import KStreamAggregate
from ._internals.ktable import MaterializedTableSupplier
from ._internals.session_count_batch import countAggregator, countInitializer
from ._ktable import KTable
from ._overloads import bind

if TYPE_CHECKING:
    from ._cogrouped import CogroupedKStream
    from ._kstream import KStream

__all__ = ["KGroupedStream", "SessionWindowedKStream", "SlidingWindowedKStream", "TimeWindowedKStream"]


def _countForms(cls: str) -> tuple[str, str]:
    return f"{cls}.count", "count(), count(Named), count(Materialized), count(Named, Materialized)"


def _options(method: str, forms: str, named, materialized) -> tuple:
    """Kafka's ``(…, Named)``, ``(…, Materialized)``, ``(…, Named, Materialized)`` forms, by type."""
    return tuple(bind(method, forms, (NAMED, MATERIALIZED), (named, materialized)))


def _burnForCount(builder, materialized: Materialized | None) -> None:
    """Kafka's ``count(Materialized)`` without a store name burns one store name "for
    compatibility" before naming anything (``KGroupedStreamImpl.count``); ``count()`` does not."""
    if materialized is not None and materialized.storeName is None:
        builder._newStoreName("KSTREAM-AGGREGATE-")


class KGroupedStream:
    """A stream grouped by key, ready to aggregate (Kafka ``KGroupedStream``).

    If the stream was marked for repartitioning (its key changed), aggregating first writes it
    to a repartition topic named after ``Grouped``'s name or the store name (rules RP-1, RP-2, SA-12).

    Serdes as Kafka carries them: the grouping's (``Grouped``, else the stream's) key serde is the
    store's and the result's key serde unless ``Materialized`` sets one; ``count`` stores and
    forwards ``Serdes.Long()`` values, ``reduce`` the grouping's value serde, ``aggregate`` the
    default value serde, unless ``Materialized`` sets one. ``toStream().to(topic)`` then writes
    with these serdes (a count as an 8-byte big-endian long).
    """

    def __init__(self, stream: "KStream", grouped: Grouped) -> None:
        self._stream = stream
        self._grouped = grouped
        self._repartition: "KStream | None" = None

    def _repartitioned(self, storeName: str) -> "KStream":
        """The repartition topic in front of an aggregation: ``<Grouped name>-repartition`` or
        ``<store name>-repartition``, with the grouping's serdes. Several aggregations of this
        grouped stream share one topic only when ``Grouped`` names it; otherwise each gets its own
        (Kafka ``GroupedStreamAggregateBuilder``; topology optimization, off by default, is not modelled)."""
        prefix = self._grouped.name or storeName
        repartitioned = Repartitioned.with_(self._grouped.keySerde, self._grouped.valueSerde)
        if self._repartition is not None and self._grouped.name is not None:
            for p in ("KSTREAM-SINK-", "KSTREAM-FILTER-", "KSTREAM-SOURCE-"):  # Kafka still burns these
                self._stream._builder._newProcessorName(p)
            return self._repartition
        self._repartition = self._stream._repartitionThrough(prefix, repartitioned)
        return self._repartition

    def _withSerdes(self, materialized: Materialized | None, valueSerde) -> Materialized:
        """``materialized`` with the grouping's key serde and ``valueSerde`` where it sets none."""
        materialized = materialized or Materialized()
        return materialized.with_(materialized.keySerde or self._grouped.keySerde, materialized.valueSerde or valueSerde)

    def count(self, named=None, materialized: Materialized | None = None) -> KTable:
        """Number of records per key (null keys and null values skipped and counted) as a
        ``KTable`` of ``Serdes.Long()`` values; the timestamp of each update is the max input
        timestamp of the key so far (rule T-17). Forms ``count()``, ``count(Named)``,
        ``count(Materialized)``, ``count(Named, Materialized)``; ``Materialized.as_(name)`` names
        the store (queryable, e.g. ``TopologyTestDriver.getKeyValueStore(name)``).
        Mirrors Kafka ``KGroupedStream#count``.

        Raises
        ------
        TypeError
            For an argument that fits none of those forms.
        """
        named, materialized = _options(*_countForms("KGroupedStream"), named, materialized)
        _burnForCount(self._stream._builder, materialized)
        materialized = self._withSerdes(materialized, Serdes.Long())
        caching = materialized.caching
        return self._aggregate("KSTREAM-AGGREGATE-", named, materialized,
                               lambda store: KStreamAggregate(store, countInitializer, countAggregator, caching=caching))

    def reduce(self, reducer: Callable, named=None, materialized: Materialized | None = None) -> KTable:
        """``reducer(aggregate, value)`` per key, starting from the key's first value (Kafka
        ``KGroupedStream#reduce``; forms ``reduce(reducer[, Named][, Materialized])``; null
        keys/values skipped, T-17 timestamps; values use the grouping's value serde by default)."""
        named, materialized = _options("KGroupedStream.reduce", "reduce(reducer), reduce(reducer, Materialized), "
                                       "reduce(reducer, Named, Materialized)", named, materialized)
        materialized = self._withSerdes(materialized, self._grouped.valueSerde)
        caching = materialized.caching
        return self._aggregate("KSTREAM-REDUCE-", named, materialized,
                               lambda store: KStreamAggregate(store, None, reducer, reduce=True, caching=caching))

    def aggregate(self, initializer: Callable, aggregator: Callable, named=None,
                  materialized: Materialized | None = None) -> KTable:
        """``aggregator(key, value, aggregate)`` per key, starting from ``initializer()`` (Kafka
        ``KGroupedStream#aggregate``; forms ``aggregate(initializer, aggregator[, Named][,
        Materialized])``; null keys/values skipped, T-17 timestamps)."""
        named, materialized = _options("KGroupedStream.aggregate", "aggregate(initializer, aggregator), "
                                       "aggregate(initializer, aggregator, Materialized), aggregate(initializer, "
                                       "aggregator, Named, Materialized)", named, materialized)
        materialized = self._withSerdes(materialized, None)
        caching = materialized.caching
        return self._aggregate("KSTREAM-AGGREGATE-", named, materialized,
                               lambda store: KStreamAggregate(store, initializer, aggregator, caching=caching))

    def cogroup(self, aggregator: Callable) -> "CogroupedKStream":
        """Start a cogrouped aggregation with this grouped stream and its ``aggregator(key, value,
        aggregate)`` (Kafka ``KGroupedStream#cogroup``, KIP-150); add more grouped streams with
        ``CogroupedKStream.cogroup`` and finish with ``aggregate`` or ``windowedBy(...).aggregate``.

        Raises
        ------
        TypeError
            If ``aggregator`` is not callable.
        """
        from ._cogrouped import CogroupedKStream

        return CogroupedKStream(self).cogroup(self, aggregator)

    def windowedBy(self, windows) -> "TimeWindowedKStream | SessionWindowedKStream":
        """Aggregate in windows (Kafka ``KGroupedStream#windowedBy``): ``TimeWindows`` or any other
        ``Windows`` subclass (custom ``windowsFor``) give a ``TimeWindowedKStream``,
        ``SlidingWindows`` a ``SlidingWindowedKStream`` (Kafka's ``TimeWindowedKStream`` interface),
        ``SessionWindows`` a ``SessionWindowedKStream``.

        Raises
        ------
        TypeError
            For anything else.
        """
        from ._windows import SessionWindows, SlidingWindows, Windows

        if isinstance(windows, SessionWindows):
            return SessionWindowedKStream(self, windows)
        if isinstance(windows, SlidingWindows):
            return SlidingWindowedKStream(self, windows)
        if not isinstance(windows, Windows):
            raise TypeError(f"KGroupedStream.windowedBy(): takes Windows (TimeWindows or a subclass of Windows), "
                            f"SlidingWindows or SessionWindows, got {type(windows).__name__}")
        return TimeWindowedKStream(self, windows)

    def _aggregate(self, prefix: str, named, materialized: Materialized, processor, storeBuilder=None,
                   resultKeySerde=None) -> KTable:
        from ._config_objects import nameOf

        builder = self._stream._builder
        # Kafka's order (KGroupedStreamImpl + GroupedStreamAggregateBuilder.build): store name,
        # processor name, then the repartition topic's sink/filter/source names
        storeName = materialized.storeName or builder._newStoreName(prefix)
        name = builder._nameOrGenerate(nameOf(named), prefix)
        stream = self._stream
        if stream._repartitionRequired:
            stream = self._repartitioned(storeName)
        topology = builder._topology
        if storeBuilder is None:
            builderOfStore = keyValueStoreBuilder("KGroupedStream", materialized, storeName)
            resultKeySerde = materialized.keySerde
        else:
            builderOfStore = storeBuilder(storeName)
        supplier = MaterializedTableSupplier(storeName, lambda: processor(storeName), windowed=storeBuilder is not None)
        topology.addProcessor(name, supplier, stream._name)
        topology.addStateStore(builderOfStore, name)
        return KTable(builder, name, storeName, stream._sourceTopics, supplier, materialized.storeName,
                      resultKeySerde, materialized.valueSerde)


class _WindowedKStream:
    """What ``TimeWindowedKStream`` and ``SessionWindowedKStream`` share: the grouping, the
    windows, the emit strategy, and the serde defaults of the grouping."""

    def __init__(self, grouped: KGroupedStream, windows) -> None:
        self._grouped = grouped
        self._windows = windows
        self._emitFinal = False

    def emitStrategy(self, emitStrategy) -> "_WindowedKStream":
        """``EmitStrategy.onWindowClose()``: forward each window once, after it closes, with its
        final aggregate and no updates (or tombstones) before (Kafka KIP-825, rules SA-11);
        ``onWindowUpdate()`` (the default) forwards every update."""
        from ._suppress import EmitStrategy

        self._emitFinal = emitStrategy.type() == EmitStrategy.ON_WINDOW_CLOSE
        return self


class TimeWindowedKStream(_WindowedKStream):
    """A grouped stream in time windows (Kafka ``TimeWindowedKStream``); results are keyed by
    ``Windowed(key, TimeWindow)`` and stored in a window store with retention ``size + grace``
    (``Materialized.withRetention`` to keep them longer). The windows are ``TimeWindows`` or any
    ``Windows`` subclass; the result's key serde is Kafka's time-windowed serde of the store's key
    serde (inner key bytes + 8-byte window start)."""

    def count(self, named=None, materialized: Materialized | None = None) -> KTable:
        """Records per key and window, ``Serdes.Long()`` values (null keys skipped and counted;
        late records dropped per window and counted). Forms as ``KGroupedStream.count``.
        Mirrors Kafka ``TimeWindowedKStream#count``."""
        named, materialized = _options(*_countForms("TimeWindowedKStream"), named, materialized)
        _burnForCount(self._grouped._stream._builder, materialized)
        materialized = self._grouped._withSerdes(materialized, Serdes.Long())
        return self._aggregate("KSTREAM-AGGREGATE-", named, materialized, lambda: 0, lambda k, v, a: a + 1, False)

    def reduce(self, reducer: Callable, named=None, materialized: Materialized | None = None) -> KTable:
        """``reducer(aggregate, value)`` per key and window (Kafka ``TimeWindowedKStream#reduce``;
        forms ``reduce(reducer[, Named][, Materialized])``)."""
        named, materialized = _options("TimeWindowedKStream.reduce", "reduce(reducer), reduce(reducer, Named), "
                                       "reduce(reducer, Materialized), reduce(reducer, Named, Materialized)",
                                       named, materialized)
        materialized = self._grouped._withSerdes(materialized, self._grouped._grouped.valueSerde)
        return self._aggregate("KSTREAM-REDUCE-", named, materialized, None, reducer, True)

    def aggregate(self, initializer: Callable, aggregator: Callable, named=None,
                  materialized: Materialized | None = None) -> KTable:
        """``aggregator(key, value, aggregate)`` per key and window from ``initializer()`` (Kafka
        ``TimeWindowedKStream#aggregate``; forms ``aggregate(initializer, aggregator[, Named][, Materialized])``)."""
        named, materialized = _options("TimeWindowedKStream.aggregate", "aggregate(initializer, aggregator), "
                                       "aggregate(initializer, aggregator, Named), aggregate(initializer, aggregator, "
                                       "Materialized), aggregate(initializer, aggregator, Named, Materialized)",
                                       named, materialized)
        materialized = self._grouped._withSerdes(materialized, None)
        return self._aggregate("KSTREAM-AGGREGATE-", named, materialized, initializer, aggregator, False)

    def _aggregate(self, prefix, named, materialized: Materialized, initializer, aggregator, reduce) -> KTable:
        from ._internals.time_windows import KStreamWindowAggregate
        from ._windows import WindowedSerdes

        windows = self._windows
        emitFinal = self._emitFinal
        storeBuilder = timeWindowStore("TimeWindowedKStream", materialized, windows, emitFinal)

        keySerde = materialized.keySerde
        table = self._grouped._aggregate(
            prefix, named, materialized,
            lambda store: KStreamWindowAggregate(store, windows, initializer, aggregator, reduce, materialized.caching,
                                                 emitFinal),
            storeBuilder, None if keySerde is None else WindowedSerdes.timeWindowedSerdeFrom(keySerde, windows.size()),
        )
        table._windowCloseDuration = windows.gracePeriodMs()  # SU-1
        return table


class SlidingWindowedKStream(TimeWindowedKStream):
    """A grouped stream in sliding windows (Kafka's ``SlidingWindowedKStreamImpl``, returned as its
    ``TimeWindowedKStream``; KIP-450). Results are keyed by ``Windowed(key, TimeWindow(start,
    start + timeDifference))`` and stored in a window store of window size ``timeDifference`` and
    retention ``2 * timeDifference + grace`` (``Materialized.withRetention`` may raise it, not
    lower it). The result's key serde is Kafka's time-windowed serde with that window size.

    ``count/reduce/aggregate`` take the forms of ``TimeWindowedKStream``'s; updates are emitted on
    every change (a record updates every window it falls in and may create up to three), or once
    per window after it closes with ``emitStrategy(EmitStrategy.onWindowClose())``; ``suppress``
    works as for time windows (close = window end + grace). Late records (their window ``[t - d, t]``
    ends before ``streamTime - grace``) and null keys or values are dropped and counted.
    """

    def count(self, named=None, materialized: Materialized | None = None) -> KTable:
        """Records per key and sliding window, ``Serdes.Long()`` values (Kafka
        ``TimeWindowedKStream#count`` of ``SlidingWindowedKStreamImpl``; unlike time windows,
        ``count(Materialized)`` burns no store name)."""
        named, materialized = _options("SlidingWindowedKStream.count", _countForms("SlidingWindowedKStream")[1],
                                       named, materialized)
        materialized = self._grouped._withSerdes(materialized, Serdes.Long())
        return self._aggregate("KSTREAM-AGGREGATE-", named, materialized, lambda: 0, lambda k, v, a: a + 1, False)

    def _aggregate(self, prefix, named, materialized: Materialized, initializer, aggregator, reduce) -> KTable:
        from ._internals.sliding_windows import KStreamSlidingWindowAggregate
        from ._windows import WindowedSerdes

        windows, emitFinal = self._windows, self._emitFinal
        if reduce:  # Kafka aggregatorForReducer with the reduce initializer (null)
            reducer = aggregator
            initializer, aggregator = (lambda: None), (lambda k, v, agg: v if agg is None else reducer(agg, v))
        storeBuilder = slidingWindowStore("SlidingWindowedKStream", materialized, windows, emitFinal)

        keySerde = materialized.keySerde
        table = self._grouped._aggregate(
            prefix, named, materialized,
            lambda store: KStreamSlidingWindowAggregate(store, windows, initializer, aggregator, materialized.caching,
                                                        emitFinal),
            storeBuilder, None if keySerde is None else WindowedSerdes.timeWindowedSerdeFrom(keySerde,
                                                                                             windows.timeDifferenceMs()),
        )
        table._windowCloseDuration = windows.gracePeriodMs()  # SU-1: sliding windows close at end + grace
        return table


def _windowSupplierOf(method: str, materialized: Materialized):
    """``Materialized``'s window store supplier, if any; one that retains duplicates (a join's) is
    refused: Kafka would store every update of a window as a new value."""
    supplier = _supplierOf(method, materialized, WindowBytesStoreSupplier,
                           "a window store supplier (Stores.persistentWindowStore / inMemoryWindowStore)")
    if supplier is not None and supplier.retainDuplicates:
        raise ValueError(f"{method}(): the window store supplier {supplier.name} retains duplicates; a windowed "
                         "aggregation needs one that does not (Kafka's results with it are undefined)")
    return supplier


class SessionWindowedKStream(_WindowedKStream):
    """A grouped stream in session windows (Kafka ``SessionWindowedKStream``); results are keyed
    by ``Windowed(key, SessionWindow)``, kept in a session store with retention ``gap + grace``
    unless ``Materialized.withRetention`` (rule ST-1). Updates are emitted on every change, with
    a tombstone for each merged-away session (SA-8). The result's key serde is Kafka's
    session-windowed serde of the store's key serde (inner key bytes + 8-byte end + 8-byte start)."""

    def count(self, named=None, materialized: Materialized | None = None) -> KTable:
        """Records per session, ``Serdes.Long()`` values (SA-12: initializer 0, aggregator +1,
        merger a + b). Forms as ``KGroupedStream.count``."""
        from ._internals.session_count_batch import countMerger

        named, materialized = _options(*_countForms("SessionWindowedKStream"), named, materialized)
        _burnForCount(self._grouped._stream._builder, materialized)
        materialized = self._grouped._withSerdes(materialized, Serdes.Long())
        return self._aggregate("KSTREAM-AGGREGATE-", named, materialized,
                               countInitializer, countAggregator, countMerger)

    def reduce(self, reducer: Callable, named=None, materialized: Materialized | None = None) -> KTable:
        """``reducer(aggregate, value)`` per session; merging sessions applies the reducer in store
        order, so "A:B" merged with a new "C" gives "A:B:C" (SA-12). Forms
        ``reduce(reducer[, Named][, Materialized])``."""
        named, materialized = _options("SessionWindowedKStream.reduce", "reduce(reducer), reduce(reducer, Named), "
                                       "reduce(reducer, Materialized), reduce(reducer, Named, Materialized)",
                                       named, materialized)

        def aggregator(k, v, agg):
            return v if agg is None else reducer(agg, v)

        materialized = self._grouped._withSerdes(materialized, self._grouped._grouped.valueSerde)
        return self._aggregate("KSTREAM-REDUCE-", named, materialized,
                               lambda: None, aggregator, lambda k, a1, a2: aggregator(k, a2, a1))

    def aggregate(self, initializer: Callable, aggregator: Callable, sessionMerger: Callable, named=None,
                  materialized: Materialized | None = None) -> KTable:
        """``aggregator(key, value, agg)`` per session from ``initializer()``; ``sessionMerger(key,
        agg1, agg2)`` combines sessions that a record bridges (SA-6, SA-12). Forms
        ``aggregate(initializer, aggregator, sessionMerger[, Named][, Materialized])``."""
        named, materialized = _options("SessionWindowedKStream.aggregate", "aggregate(initializer, aggregator, "
                                       "sessionMerger), aggregate(initializer, aggregator, sessionMerger, Named), "
                                       "aggregate(initializer, aggregator, sessionMerger, Materialized), "
                                       "aggregate(initializer, aggregator, sessionMerger, Named, Materialized)",
                                       named, materialized)
        materialized = self._grouped._withSerdes(materialized, None)
        return self._aggregate("KSTREAM-AGGREGATE-", named, materialized, initializer, aggregator, sessionMerger)

    def _aggregate(self, prefix, named, materialized: Materialized, initializer, aggregator, merger) -> KTable:
        from ._internals.session_windows import KStreamSessionWindowAggregate
        from ._windows import WindowedSerdes

        windows = self._windows
        storeBuilder = sessionStore("SessionWindowedKStream", materialized, windows)

        emitFinal, keySerde = self._emitFinal, materialized.keySerde
        table = self._grouped._aggregate(
            prefix, named, materialized,
            lambda store: KStreamSessionWindowAggregate(store, windows, initializer, aggregator, merger, emitFinal,
                                                        materialized.caching),
            storeBuilder, None if keySerde is None else WindowedSerdes.sessionWindowedSerdeFrom(keySerde),
        )
        table._windowCloseDuration = windows.inactivityGap() + windows.gracePeriodMs()  # SU-1
        return table


# ---------------------------------------------------------------------------- window and session stores
def timeWindowStore(method: str, materialized: Materialized, windows, emitFinal: bool = False):
    """``storeName -> StoreBuilder`` of a time-window aggregation's timestamped window store
    (Kafka ``WindowStoreMaterializer``): retention ``size + grace`` unless ``Materialized`` sets a
    larger one; Kafka's time-ordered store (``WindowStore.timeFirst``) for ``emitFinal`` unless
    ``Materialized`` gives a store supplier (Kafka ``BuiltInDslStoreSuppliers.RocksDBDslStoreSuppliers``).

    Raises
    ------
    ValueError
        If the retention is smaller than ``size + grace`` (Kafka's message).
    """
    retention = materialized.retentionMs
    minimum = windows.size() + windows.gracePeriodMs()
    if retention is None:
        retention = minimum
    elif retention < minimum:
        raise ValueError(
            f"The retention period of the window store {materialized.storeName} must be no smaller than its "
            f"window size plus the grace period. Got size=[{windows.size()}], grace=[{windows.gracePeriodMs()}], "
            f"retention=[{retention}]"
        )

    def storeBuilder(storeName):
        supplier = _windowSupplierOf(method, materialized)
        builder = Stores.timestampedWindowStoreBuilder(
            supplier or Stores.persistentWindowStore(storeName, retention, windows.size()),
            materialized.keySerde, materialized.valueSerde)
        builder._timeFirst = emitFinal and supplier is None
        return builder if materialized.logging else builder.withLoggingDisabled()

    return storeBuilder


def slidingWindowStore(method: str, materialized: Materialized, windows, emitFinal: bool = False):
    """``storeName -> StoreBuilder`` of a sliding-window aggregation's store (Kafka
    ``SlidingWindowStoreMaterializer``): window size ``timeDifference``, retention ``2 *
    timeDifference + grace`` unless ``Materialized`` sets another; Kafka's time-ordered store
    (``WindowStore.timeFirst``) for ``emitFinal`` unless ``Materialized`` gives a store supplier.

    Raises
    ------
    ValueError
        When the store is built, if the retention is smaller than ``2 * timeDifference + grace``.
    """
    d, grace = windows.timeDifferenceMs(), windows.gracePeriodMs()
    retention = materialized.retentionMs if materialized.retentionMs is not None else grace + 2 * d

    def storeBuilder(storeName):
        if d * 2 + grace > retention:
            raise ValueError(f"The retention period of the window store {storeName} must be no smaller than 2 * "
                             f"time difference plus the grace period. Got time difference=[{d}], grace=[{grace}], "
                             f"retention=[{retention}]")
        supplier = _windowSupplierOf(method, materialized)
        builder = Stores.timestampedWindowStoreBuilder(supplier or Stores.persistentWindowStore(storeName, retention, d),
                                                       materialized.keySerde, materialized.valueSerde)
        builder._timeFirst = emitFinal and supplier is None
        return builder if materialized.logging else builder.withLoggingDisabled()

    return storeBuilder


def sessionStore(method: str, materialized: Materialized, windows):
    """``storeName -> StoreBuilder`` of a session aggregation's store (Kafka
    ``SessionStoreMaterializer``): retention ``gap + grace`` unless ``Materialized`` sets more (ST-1).

    Raises
    ------
    ValueError
        If the retention is smaller than ``gap + grace`` (Kafka's message).
    """
    minimum = windows.inactivityGap() + windows.gracePeriodMs()
    retention = minimum if materialized.retentionMs is None else materialized.retentionMs
    if retention < minimum:
        raise ValueError(
            f"The retention period of the session store {materialized.storeName} must be no smaller than the "
            f"session inactivity gap plus the grace period. Got gap=[{windows.inactivityGap()}], "
            f"grace=[{windows.gracePeriodMs()}], retention=[{retention}]"
        )

    def storeBuilder(storeName):
        supplier = _supplierOf(method, materialized, SessionBytesStoreSupplier,
                               "a session store supplier (Stores.persistentSessionStore / inMemorySessionStore)")
        builder = Stores.sessionStoreBuilder(supplier or Stores.persistentSessionStore(storeName, retention),
                                             materialized.keySerde, materialized.valueSerde)
        return builder if materialized.logging else builder.withLoggingDisabled()

    return storeBuilder

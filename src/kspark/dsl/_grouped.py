from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from ..serialization import Serdes
from ..state import Stores
from ._config_objects import Grouped, Materialized, Repartitioned
from ._internals.processors import KStreamAggregate
from ._ktable import KTable

if TYPE_CHECKING:
    from ._kstream import KStream

__all__ = ["KGroupedStream", "SessionWindowedKStream", "TimeWindowedKStream"]


def _burnForCount(builder, materialized: Materialized | None) -> None:
    """Kafka's ``count(Materialized)`` without a store name burns one store name "for
    compatibility" before naming anything (``KGroupedStreamImpl.count``); ``count()`` does not."""
    if materialized is not None and materialized.storeName is None:
        builder._newStoreName("KSTREAM-AGGREGATE-")


class KGroupedStream:
    """A stream grouped by key, ready to aggregate (Kafka ``KGroupedStream``).

    If the stream was marked for repartitioning (its key changed), aggregating first writes it
    to a repartition topic named after ``Grouped``'s name or the store name (rules RP-1, RP-2, SA-12).
    """

    def __init__(self, stream: "KStream", grouped: Grouped) -> None:
        self._stream = stream
        self._grouped = grouped
        self._repartition: "KStream | None" = None

    def _repartitioned(self, storeName: str) -> "KStream":
        """The repartition topic in front of an aggregation: ``<Grouped name>-repartition`` or
        ``<store name>-repartition``. Several aggregations of this grouped stream share one topic
        only when ``Grouped`` names it; otherwise each gets its own (Kafka
        ``GroupedStreamAggregateBuilder``; topology optimization, off by default, is not modelled)."""
        prefix = self._grouped.name or storeName
        repartitioned = Repartitioned.with_(self._grouped.keySerde, self._grouped.valueSerde)
        if self._repartition is not None and self._grouped.name is not None:
            for p in ("KSTREAM-SINK-", "KSTREAM-FILTER-", "KSTREAM-SOURCE-"):  # Kafka still burns these
                self._stream._builder._newProcessorName(p)
            return self._repartition
        self._repartition = self._stream._repartitionThrough(prefix, repartitioned)
        return self._repartition

    def count(self, named=None, materialized: Materialized | None = None) -> KTable:
        """Number of records per key (null keys and null values skipped and counted) as a
        ``KTable``; the timestamp of each update is the max input timestamp of the key so far
        (rule T-17). Mirrors Kafka ``KGroupedStream#count``."""
        _burnForCount(self._stream._builder, materialized)
        materialized = materialized or Materialized()
        if materialized.valueSerde is None:
            materialized = materialized.withValueSerde(Serdes.Long())
        caching = materialized.caching
        return self._aggregate("KSTREAM-AGGREGATE-", named, materialized,
                               lambda store: KStreamAggregate(store, lambda: 0, lambda k, v, agg: agg + 1, caching=caching))

    def reduce(self, reducer: Callable, named=None, materialized: Materialized | None = None) -> KTable:
        """``reducer(aggregate, value)`` per key, starting from the key's first value (Kafka
        ``KGroupedStream#reduce``; null keys/values skipped, T-17 timestamps)."""
        materialized = materialized or Materialized()
        caching = materialized.caching
        return self._aggregate("KSTREAM-REDUCE-", named, materialized,
                               lambda store: KStreamAggregate(store, None, reducer, reduce=True, caching=caching))

    def aggregate(self, initializer: Callable, aggregator: Callable, named=None,
                  materialized: Materialized | None = None) -> KTable:
        """``aggregator(key, value, aggregate)`` per key, starting from ``initializer()`` (Kafka
        ``KGroupedStream#aggregate``; null keys/values skipped, T-17 timestamps)."""
        materialized = materialized or Materialized()
        caching = materialized.caching
        return self._aggregate("KSTREAM-AGGREGATE-", named, materialized,
                               lambda store: KStreamAggregate(store, initializer, aggregator, caching=caching))

    def windowedBy(self, windows) -> "TimeWindowedKStream | SessionWindowedKStream":
        """Aggregate in time windows (``TimeWindows``); Kafka ``KGroupedStream#windowedBy``."""
        from ._windows import SessionWindows, TimeWindows

        if isinstance(windows, SessionWindows):
            return SessionWindowedKStream(self, windows)
        if not isinstance(windows, TimeWindows):
            raise TypeError("windowedBy takes TimeWindows or SessionWindows")
        return TimeWindowedKStream(self, windows)

    def _aggregate(self, prefix: str, named, materialized: Materialized, processor, storeBuilder=None) -> KTable:
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
            builderOfStore = Stores.timestampedKeyValueStoreBuilder(
                Stores.persistentKeyValueStore(storeName),
                materialized.keySerde or self._grouped.keySerde, materialized.valueSerde,
            )
        else:
            builderOfStore = storeBuilder(storeName)
        from ._internals.ktable_processors import MaterializedTableSupplier

        supplier = MaterializedTableSupplier(storeName, lambda: processor(storeName), windowed=storeBuilder is not None)
        topology.addProcessor(name, supplier, stream._name)
        topology.addStateStore(builderOfStore, name)
        return KTable(builder, name, storeName, stream._sourceTopics, supplier, materialized.storeName)


class TimeWindowedKStream:
    """A grouped stream in time windows (Kafka ``TimeWindowedKStream``); results are keyed by
    ``Windowed(key, TimeWindow)`` and stored in a window store with retention ``size + grace``
    (``Materialized.withRetention`` to keep them longer)."""

    def __init__(self, grouped: KGroupedStream, windows) -> None:
        self._grouped = grouped
        self._windows = windows
        self._emitFinal = False

    def emitStrategy(self, emitStrategy) -> "TimeWindowedKStream":
        """``EmitStrategy.onWindowClose()``: forward each window once, after stream time passes its
        end + grace, with its final aggregate and no updates before (Kafka KIP-825,
        ``KStreamWindowAggregate``); ``onWindowUpdate()`` (the default) forwards every update."""
        from ._suppress import EmitStrategy

        self._emitFinal = emitStrategy.type() == EmitStrategy.ON_WINDOW_CLOSE
        return self

    def count(self, named=None, materialized: Materialized | None = None) -> KTable:
        """Records per key and window (null keys skipped and counted; late records dropped per
        window and counted). Mirrors Kafka ``TimeWindowedKStream#count``."""
        _burnForCount(self._grouped._stream._builder, materialized)
        materialized = materialized or Materialized()
        if materialized.valueSerde is None:
            materialized = materialized.withValueSerde(Serdes.Long())
        return self._aggregate("KSTREAM-AGGREGATE-", named, materialized, lambda: 0, lambda k, v, a: a + 1, False)

    def reduce(self, reducer: Callable, named=None, materialized: Materialized | None = None) -> KTable:
        return self._aggregate("KSTREAM-REDUCE-", named, materialized or Materialized(), None, reducer, True)

    def aggregate(self, initializer: Callable, aggregator: Callable, named=None,
                  materialized: Materialized | None = None) -> KTable:
        return self._aggregate("KSTREAM-AGGREGATE-", named, materialized or Materialized(), initializer, aggregator, False)

    def _aggregate(self, prefix, named, materialized: Materialized, initializer, aggregator, reduce) -> KTable:
        from ._internals.processors import KStreamWindowAggregate

        windows = self._windows
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

        emitFinal = self._emitFinal

        def storeBuilder(storeName):
            return Stores.windowStoreBuilder(
                Stores.persistentWindowStore(storeName, retention, windows.size()),
                materialized.keySerde or self._grouped._grouped.keySerde, materialized.valueSerde,
            )

        table = self._grouped._aggregate(
            prefix, named, materialized,
            lambda store: KStreamWindowAggregate(store, windows, initializer, aggregator, reduce, materialized.caching,
                                                 emitFinal),
            storeBuilder,
        )
        table._windowCloseDuration = windows.gracePeriodMs()  # SU-1
        return table


class SessionWindowedKStream:
    """A grouped stream in session windows (Kafka ``SessionWindowedKStream``); results are keyed
    by ``Windowed(key, SessionWindow)``, kept in a session store with retention ``gap + grace``
    unless ``Materialized.withRetention`` (rule ST-1). Updates are emitted on every change, with
    a tombstone for each merged-away session (SA-8)."""

    def __init__(self, grouped: KGroupedStream, windows) -> None:
        self._grouped = grouped
        self._windows = windows
        self._emitFinal = False

    def emitStrategy(self, emitStrategy) -> "SessionWindowedKStream":
        """``EmitStrategy.onWindowClose()``: forward each session once, when stream time passes
        its end + gap + grace, with no updates or tombstones before (rule SA-11)."""
        from ._suppress import EmitStrategy

        self._emitFinal = emitStrategy.type() == EmitStrategy.ON_WINDOW_CLOSE
        return self

    def count(self, named=None, materialized: Materialized | None = None) -> KTable:
        """Records per session (SA-12: initializer 0, aggregator +1, merger a + b)."""
        from ._internals.session_count_batch import countAggregator, countInitializer, countMerger

        _burnForCount(self._grouped._stream._builder, materialized)
        materialized = materialized or Materialized()
        if materialized.valueSerde is None:
            materialized = materialized.withValueSerde(Serdes.Long())
        return self._aggregate("KSTREAM-AGGREGATE-", named, materialized,
                               countInitializer, countAggregator, countMerger)

    def reduce(self, reducer: Callable, named=None, materialized: Materialized | None = None) -> KTable:
        """``reducer(aggregate, value)`` per session; merging sessions applies the reducer in store
        order, so "A:B" merged with a new "C" gives "A:B:C" (SA-12)."""
        def aggregator(k, v, agg):
            return v if agg is None else reducer(agg, v)

        return self._aggregate("KSTREAM-REDUCE-", named, materialized or Materialized(),
                               lambda: None, aggregator, lambda k, a1, a2: aggregator(k, a2, a1))

    def aggregate(self, initializer: Callable, aggregator: Callable, sessionMerger: Callable, named=None,
                  materialized: Materialized | None = None) -> KTable:
        """``aggregator(key, value, agg)`` per session from ``initializer()``; ``sessionMerger(key,
        agg1, agg2)`` combines sessions that a record bridges (SA-6, SA-12)."""
        return self._aggregate("KSTREAM-AGGREGATE-", named, materialized or Materialized(),
                               initializer, aggregator, sessionMerger)

    def _aggregate(self, prefix, named, materialized: Materialized, initializer, aggregator, merger) -> KTable:
        from ._internals.processors import KStreamSessionWindowAggregate

        windows = self._windows
        minimum = windows.inactivityGap() + windows.gracePeriodMs()
        retention = minimum if materialized.retentionMs is None else materialized.retentionMs
        if retention < minimum:
            raise ValueError(
                f"The retention period of the session store {materialized.storeName} must be no smaller than the "
                f"session inactivity gap plus the grace period. Got gap=[{windows.inactivityGap()}], "
                f"grace=[{windows.gracePeriodMs()}], retention=[{retention}]"
            )

        def storeBuilder(storeName):
            return Stores.sessionStoreBuilder(
                Stores.persistentSessionStore(storeName, retention),
                materialized.keySerde or self._grouped._grouped.keySerde, materialized.valueSerde,
            )

        emitFinal = self._emitFinal
        table = self._grouped._aggregate(
            prefix, named, materialized,
            lambda store: KStreamSessionWindowAggregate(store, windows, initializer, aggregator, merger, emitFinal,
                                                        materialized.caching),
            storeBuilder,
        )
        table._windowCloseDuration = windows.inactivityGap() + windows.gracePeriodMs()  # SU-1
        return table

"""``KGroupedStream.cogroup`` (KIP-150): several grouped streams aggregated into one table
(Kafka ``CogroupedKStreamImpl``, ``CogroupedStreamAggregateBuilder``,
``TimeWindowedCogroupedKStreamImpl``, ``SlidingWindowedCogroupedKStreamImpl``,
``SessionWindowedCogroupedKStreamImpl``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from ._config_objects import MATERIALIZED, NAMED, Materialized, Repartitioned, keyValueStoreBuilder, nameOf
from ._grouped import sessionStore, slidingWindowStore, timeWindowStore
from ._internals.cogroup import KTablePassThroughSupplier
from ._internals.ktable import MaterializedTableSupplier
from ._ktable import KTable
from ._overloads import bind

if TYPE_CHECKING:
    from ._grouped import KGroupedStream

__all__ = ["CogroupedKStream", "SessionWindowedCogroupedKStream", "SlidingWindowedCogroupedKStream",
           "TimeWindowedCogroupedKStream"]

AGGREGATE_NAME, MERGE_NAME = "COGROUPKSTREAM-AGGREGATE-", "COGROUPKSTREAM-MERGE-"


def _options(method: str, forms: str, named, materialized) -> tuple:
    return tuple(bind(method, forms, (NAMED, MATERIALIZED), (named, materialized)))


class CogroupedKStream:
    """Grouped streams of one key type aggregated into one table (Kafka ``CogroupedKStream``).

    ``stream1.groupByKey().cogroup(agg1).cogroup(stream2.groupByKey(), agg2).aggregate(init)``:
    one aggregate per key (a ``KeyValueStore``), started by ``init()``; each record of a grouped
    stream updates it with that stream's aggregator ``agg(key, value, aggregate)``; the result
    table forwards every update (``Change``) with the timestamp rules of ``aggregate`` (T-17).
    Null keys or values are skipped and counted. A grouped stream whose key was changed upstream
    is repartitioned first, through ``<Grouped name>-repartition`` or ``<store name>-repartition``
    (rule RP-1); the grouped streams must be co-partitioned (Kafka checks the topics the grouped
    streams read, before any repartition). Names as Kafka's: ``COGROUPKSTREAM-AGGREGATE-<n>`` per
    input and ``COGROUPKSTREAM-MERGE-<n>``, or ``<Named>-cogroup-agg-<i>`` and
    ``<Named>-cogroup-merge``; the store ``COGROUPKSTREAM-AGGREGATE-STATE-STORE-<n>`` or
    ``Materialized``'s. The store's serdes are ``Materialized``'s, else the defaults (Kafka does
    not take the grouped streams' serdes).

    ``clicks.cogroup(lambda k, v, agg: agg + "a" + v).cogroup(views, lambda k, v, agg: agg + "b" + v)
    .aggregate(lambda: "")``:

    ====  ======  ===========  ==============================  =========
    step  input   key:value@t  aggregate                       forwarded
    ====  ======  ===========  ==============================  =========
    1     clicks  k:1@5        ``"" + "a" + "1"``              k:a1@5
    2     views   k:2@9        ``"a1" + "b" + "2"``            k:a1b2@9
    3     clicks  k:3@7        ``"a1b2" + "a" + "3"`` (T-17)   k:a1b2a3@9
    ====  ======  ===========  ==============================  =========

    Windowed with ``windowedBy(TimeWindows | SlidingWindows | SessionWindows)``, each input runs
    the windowed aggregation of that kind (emitting on every update) over the shared window or
    session store.
    """

    def __init__(self, grouped: "KGroupedStream") -> None:
        self._builder = grouped._stream._builder
        self._patterns: list[list] = []  # [KGroupedStream, aggregator] in the order first cogrouped
        self._parents: dict[int, object] = {}  # id(KGroupedStream) -> the stream its aggregation reads

    def cogroup(self, groupedStream: "KGroupedStream", aggregator: Callable) -> "CogroupedKStream":
        """Add ``groupedStream`` with its ``aggregator(key, value, aggregate)`` (Kafka
        ``CogroupedKStream#cogroup``); cogrouping the same grouped stream again replaces its
        aggregator. Returns this cogrouped stream.

        Raises
        ------
        TypeError
            If ``groupedStream`` is not a ``KGroupedStream`` or ``aggregator`` is not callable.
        """
        from ._grouped import KGroupedStream

        if not isinstance(groupedStream, KGroupedStream):
            raise TypeError(f"CogroupedKStream.cogroup(): groupedStream must be a KGroupedStream, got "
                            f"{type(groupedStream).__name__}")
        if not callable(aggregator):
            raise TypeError("CogroupedKStream.cogroup(): aggregator can't be null")
        for pattern in self._patterns:
            if pattern[0] is groupedStream:
                pattern[1] = aggregator
                return self
        self._patterns.append([groupedStream, aggregator])
        return self

    def aggregate(self, initializer: Callable, named=None, materialized: Materialized | None = None) -> KTable:
        """The cogrouped aggregation (Kafka ``CogroupedKStream#aggregate``; forms
        ``aggregate(initializer[, Named][, Materialized])``). See the class docstring."""
        from ._internals.aggregation import KStreamAggregate

        named, materialized = _options("CogroupedKStream.aggregate", "aggregate(initializer), aggregate(initializer, "
                                       "Named), aggregate(initializer, Materialized), aggregate(initializer, Named, "
                                       "Materialized)", named, materialized)
        materialized = materialized or Materialized()
        caching = materialized.caching
        return self._build(named, materialized,
                           lambda store, agg: KStreamAggregate(store, initializer, agg, caching=caching),
                           lambda storeName: keyValueStoreBuilder("CogroupedKStream", materialized, storeName),
                           materialized.keySerde, windowed=False)

    def windowedBy(self, windows):
        """Aggregate in windows (Kafka ``CogroupedKStream#windowedBy``): ``TimeWindows`` (or a
        ``Windows`` subclass), ``SlidingWindows`` or ``SessionWindows``.

        Raises
        ------
        TypeError
            For anything else.
        """
        from ._windows import SessionWindows, SlidingWindows, Windows

        if isinstance(windows, SessionWindows):
            return SessionWindowedCogroupedKStream(self, windows)
        if isinstance(windows, SlidingWindows):
            return SlidingWindowedCogroupedKStream(self, windows)
        if isinstance(windows, Windows):
            return TimeWindowedCogroupedKStream(self, windows)
        raise TypeError(f"CogroupedKStream.windowedBy(): takes Windows, SlidingWindows or SessionWindows, got "
                        f"{type(windows).__name__}")

    def _build(self, named, materialized: Materialized, processorOf, storeBuilderOf, resultKeySerde,
               windowed: bool) -> KTable:
        """Kafka ``CogroupedStreamAggregateBuilder.build``: store name, repartitions, one
        aggregation per grouped stream (the first one owns the store), the merge node."""
        builder = self._builder
        topology = builder._topology
        storeName = materialized.storeName or builder._newStoreName(AGGREGATE_NAME)
        name = nameOf(named)
        # processRepartitions: a grouped stream's repartition topic is made once per cogroup
        # (later aggregations reuse it), its names burnt every time
        for grouped, _ in self._patterns:
            stream = grouped._stream
            if stream._repartitionRequired:
                if id(grouped) in self._parents:
                    for prefix in ("KSTREAM-SINK-", "KSTREAM-FILTER-", "KSTREAM-SOURCE-"):
                        builder._newProcessorName(prefix)
                else:
                    self._parents[id(grouped)] = stream._repartitionThrough(
                        grouped._grouped.name or storeName,
                        Repartitioned.with_(grouped._grouped.keySerde, grouped._grouped.valueSerde))
            else:
                self._parents[id(grouped)] = stream
        # Kafka co-partitions the grouped streams' own sources (before any repartition topic)
        topology._copartition(set().union(*(g._stream._sourceTopics for g, _ in self._patterns)))
        suppliers, names = [], []
        for i, (grouped, aggregator) in enumerate(self._patterns):
            aggName = builder._nameOrGenerate(None if name is None else f"{name}-cogroup-agg-{i}", AGGREGATE_NAME)
            supplier = MaterializedTableSupplier(storeName, lambda agg=aggregator: processorOf(storeName, agg), windowed)
            topology.addProcessor(aggName, supplier, self._parents[id(grouped)]._name)
            if i == 0:
                topology.addStateStore(storeBuilderOf(storeName), aggName)
            else:
                topology.connectProcessorAndStateStores(aggName, storeName)
            suppliers.append(supplier)
            names.append(aggName)
        mergeName = builder._nameOrGenerate(None if name is None else f"{name}-cogroup-merge", MERGE_NAME)
        passThrough = KTablePassThroughSupplier(suppliers, storeName, windowed)
        topology.addProcessor(mergeName, passThrough, *names)
        sourceTopics = set().union(*(self._parents[id(g)]._sourceTopics for g, _ in self._patterns))
        return KTable(builder, mergeName, storeName, sourceTopics, passThrough, materialized.storeName, resultKeySerde,
                      materialized.valueSerde)


class _WindowedCogroupedKStream:
    def __init__(self, cogrouped: CogroupedKStream, windows) -> None:
        self._cogrouped, self._windows = cogrouped, windows


class TimeWindowedCogroupedKStream(_WindowedCogroupedKStream):
    """A cogrouped stream in time windows (Kafka ``TimeWindowedCogroupedKStream``): each input
    runs ``KStreamWindowAggregate`` (emit on update) over one window store of retention ``size +
    grace``; results keyed by ``Windowed(key, TimeWindow)``."""

    def aggregate(self, initializer: Callable, named=None, materialized: Materialized | None = None) -> KTable:
        """Forms ``aggregate(initializer[, Named][, Materialized])`` (Kafka
        ``TimeWindowedCogroupedKStream#aggregate``); late records are dropped per window and counted.

        Raises
        ------
        ValueError
            If ``Materialized.withRetention`` is smaller than ``size + grace``.
        """
        from ._internals.time_windows import KStreamWindowAggregate

        windows = self._windows
        return self._aggregate(named, materialized, timeWindowStore, windows.size(),
                               lambda store, agg, caching: KStreamWindowAggregate(store, windows, initializer, agg,
                                                                                  False, caching))

    def _aggregate(self, named, materialized, storeOf, windowSize: int, processorOf) -> KTable:
        from ._windows import WindowedSerdes

        method = f"{type(self).__name__}.aggregate"
        named, materialized = _options(method, "aggregate(initializer), aggregate(initializer, Named), aggregate("
                                       "initializer, Materialized), aggregate(initializer, Named, Materialized)",
                                       named, materialized)
        materialized = materialized or Materialized()
        storeBuilder = storeOf(type(self).__name__, materialized, self._windows)
        keySerde, caching = materialized.keySerde, materialized.caching
        table = self._cogrouped._build(
            named, materialized, lambda store, agg: processorOf(store, agg, caching), storeBuilder,
            None if keySerde is None else WindowedSerdes.timeWindowedSerdeFrom(keySerde, windowSize), windowed=True)
        table._windowCloseDuration = self._windows.gracePeriodMs()  # SU-1
        return table


class SlidingWindowedCogroupedKStream(TimeWindowedCogroupedKStream):
    """A cogrouped stream in sliding windows (Kafka ``SlidingWindowedCogroupedKStreamImpl``,
    returned as its ``TimeWindowedCogroupedKStream``): each input runs
    ``KStreamSlidingWindowAggregate`` (emit on update) over one window store of window size
    ``timeDifference`` and retention ``2 * timeDifference + grace``."""

    def aggregate(self, initializer: Callable, named=None, materialized: Materialized | None = None) -> KTable:
        """Forms ``aggregate(initializer[, Named][, Materialized])``; see ``SlidingWindows``.

        Raises
        ------
        ValueError
            When built, if ``Materialized.withRetention`` is smaller than ``2 * timeDifference + grace``.
        """
        from ._internals.sliding_windows import KStreamSlidingWindowAggregate

        windows = self._windows
        return self._aggregate(named, materialized, slidingWindowStore, windows.timeDifferenceMs(),
                               lambda store, agg, caching: KStreamSlidingWindowAggregate(store, windows, initializer,
                                                                                         agg, caching))


class SessionWindowedCogroupedKStream(_WindowedCogroupedKStream):
    """A cogrouped stream in session windows (Kafka ``SessionWindowedCogroupedKStream``): each
    input runs ``KStreamSessionWindowAggregate`` (emit on update, tombstones for merged sessions)
    over one session store of retention ``gap + grace``; ``sessionMerger(key, agg1, agg2)``
    combines sessions a record bridges."""

    def aggregate(self, initializer: Callable, sessionMerger: Callable, named=None,
                  materialized: Materialized | None = None) -> KTable:
        """Forms ``aggregate(initializer, sessionMerger[, Named][, Materialized])``.

        Raises
        ------
        ValueError
            If ``Materialized.withRetention`` is smaller than ``gap + grace``.
        """
        from ._internals.session_windows import KStreamSessionWindowAggregate
        from ._windows import WindowedSerdes

        named, materialized = _options("SessionWindowedCogroupedKStream.aggregate", "aggregate(initializer, "
                                       "sessionMerger), aggregate(initializer, sessionMerger, Named), "
                                       "aggregate(initializer, sessionMerger, Materialized), aggregate(initializer, "
                                       "sessionMerger, Named, Materialized)", named, materialized)
        if not callable(sessionMerger):
            raise TypeError("SessionWindowedCogroupedKStream.aggregate(): sessionMerger can't be null")
        materialized, windows = materialized or Materialized(), self._windows
        storeBuilder = sessionStore("SessionWindowedCogroupedKStream", materialized, windows)
        keySerde, caching = materialized.keySerde, materialized.caching
        table = self._cogrouped._build(
            named, materialized,
            lambda store, agg: KStreamSessionWindowAggregate(store, windows, initializer, agg, sessionMerger, False,
                                                             caching),
            storeBuilder, None if keySerde is None else WindowedSerdes.sessionWindowedSerdeFrom(keySerde),
            windowed=True)
        table._windowCloseDuration = windows.inactivityGap() + windows.gracePeriodMs()  # SU-1
        return table

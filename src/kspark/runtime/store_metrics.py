"""Store-level metrics at ``metrics.recording.level`` ``DEBUG`` (Kafka's ``StateStoreMetrics``,
recorded by ``MeteredKeyValueStore``, ``MeteredWindowStore`` and ``MeteredSessionStore``).

Kafka Streams records a store's ``put``, ``get``, ``fetch``... sensors at ``DEBUG`` only: group
``stream-state-metrics``, tags ``thread-id``, ``task-id`` and ``<store type>-state-id`` (the store
supplier's ``metricsScope()``: ``rocksdb``, ``in-memory``, ``rocksdb-window``,
``in-memory-window``, ``rocksdb-session``, ``in-memory-session``), names ``<op>-rate`` (calls per
second) and ``<op>-latency-avg``/``-max`` (ns per call).

kspark does the same at ``DEBUG`` (or ``TRACE``): :func:`meterStores` gives each key-value,
window and session store of a task instance-level wrappers of the methods processors call, which
count the calls and time them (``time.perf_counter_ns``) into the task's ``Metrics.storeOps``;
a call made inside another metered call of the same store (``putAll`` calling ``put``) is the
outer call only, as Kafka's metered layer sees it. At ``INFO`` (the default) no store is wrapped:
the metrics cost nothing and are not reported (Kafka registers them and leaves them at 0).

The metered operations (Kafka's names) and the store methods that count as them, including the
internal ones the DSL's processors call:

- key-value stores: ``put`` (``put``), ``get`` (``get``, and the fused stream-table join's
  ``_getValue``), ``put-if-absent``, ``put-all``, ``delete``, ``range`` (``range``,
  ``reverseRange``), ``all`` (``all``, ``reverseAll``), ``prefix-scan``;
- window stores: ``put`` (``put``, ``_putBytes``), ``fetch`` (``fetch``, ``backwardFetch``,
  ``_fetchBytes``, ``_windowsOfKey``);
- session stores: ``put`` and ``remove`` (``put``, ``remove``, ``_putEntry``: a None aggregate is
  a remove), ``fetch`` (``fetch``, ``backwardFetch``, ``findSessions``, ``backwardFindSessions``,
  ``fetchSession``, ``_findSessionEntries``).

Not metered: versioned stores, the stores of stream-stream joins, global stores, Kafka's
``flush``/``commit``/``restore`` sensors and the RocksDB statistics.
"""

from __future__ import annotations

from time import perf_counter_ns
from typing import Any

from .metrics import STATE_GROUP, MetricName

__all__ = ["meterStores", "recordsStoreMetrics", "storeType"]

_KEY_VALUE_OPS = {"put": "put", "get": "get", "_getValue": "get", "putIfAbsent": "put-if-absent",
                  "putAll": "put-all", "delete": "delete", "range": "range", "reverseRange": "range",
                  "all": "all", "reverseAll": "all", "prefixScan": "prefix-scan", "prefixScanBytes": "prefix-scan"}
_WINDOW_OPS = {"put": "put", "_putBytes": "put", "fetch": "fetch", "backwardFetch": "fetch",
               "_fetchBytes": "fetch", "_windowsOfKey": "fetch"}
_SESSION_OPS = {"put": "put", "remove": "remove", "fetch": "fetch", "backwardFetch": "fetch",
                "findSessions": "fetch", "backwardFindSessions": "fetch", "fetchSession": "fetch",
                "_findSessionEntries": "fetch"}


def recordsStoreMetrics(config) -> bool:
    """Whether ``config`` (a ``StreamsConfig``) asks for Kafka's DEBUG metrics:
    ``metrics.recording.level`` ``DEBUG`` or ``TRACE``."""
    return str(config.get("metrics.recording.level") or "INFO").upper() in ("DEBUG", "TRACE")


def storeType(store: Any) -> tuple[str, dict[str, str]] | None:
    """Kafka's ``metricsScope()`` of ``store``'s supplier and the method -> operation map, or None
    for a store kind kspark does not meter."""
    from ..state._join_stores import DuplicatesWindowStore, ListValueStore
    from ..state._stores import KeyValueStore, SessionStore, WindowStore

    kind = "rocksdb" if store.persistent() else "in-memory"
    if isinstance(store, (DuplicatesWindowStore, ListValueStore)):  # a stream-stream join's stores
        return None
    if isinstance(store, KeyValueStore):
        return kind, _KEY_VALUE_OPS
    if isinstance(store, WindowStore):
        return f"{kind}-window", _WINDOW_OPS
    if isinstance(store, SessionStore):
        return f"{kind}-session", _SESSION_OPS
    return None


def meterStores(stores: dict[str, Any], taskId: str, storeOps: dict[MetricName, list]) -> None:
    """Wrap the metered methods of every store in ``stores`` (name -> store) of task ``taskId``
    (see the module docstring); the calls and their ns go to ``storeOps`` (``Metrics.storeOps``)."""
    for name, store in stores.items():
        kind = storeType(store)
        if kind is None:
            continue
        scope, ops = kind
        tags = (("task-id", taskId), (f"{scope}-state-id", name))
        counters = {op: storeOps.setdefault(MetricName(op, STATE_GROUP, tags), [0, 0, 0]) for op in set(ops.values())}
        store._meterBusy = False
        for method, op in ops.items():
            if hasattr(type(store), method):
                setattr(store, method, _metered(store, method, counters[op]))
        if "remove" in counters and hasattr(type(store), "_putEntry"):
            store._putEntry = _meteredPutEntry(store, counters["put"], counters["remove"])


def _metered(store: Any, method: str, counter: list):
    """``store.<method>`` that counts an outermost call in ``counter`` ([calls, ns, max ns]).
    The method is looked up on the store's class at each call: the Spark host changes a store's
    class to its persistent one after the task built it (``kspark.state._persistent.makePersistent``)."""

    def call(*args, **kwargs):
        if store._meterBusy:
            return getattr(type(store), method)(store, *args, **kwargs)
        store._meterBusy = True
        start = perf_counter_ns()
        try:
            return getattr(type(store), method)(store, *args, **kwargs)
        finally:
            ns = perf_counter_ns() - start
            store._meterBusy = False
            counter[0] += 1
            counter[1] += ns
            if ns > counter[2]:
                counter[2] = ns

    return call


def _meteredPutEntry(store: Any, put: list, remove: list):
    """A session store's ``_putEntry(end, kb, start, key, aggregate)``: a ``put``, or with a None
    aggregate a ``remove`` (the DSL's session aggregation writes and removes sessions through it)."""
    putCall, removeCall = _metered(store, "_putEntry", put), _metered(store, "_putEntry", remove)

    def call(end, kb, start, key, aggregate):
        return (removeCall if aggregate is None else putCall)(end, kb, start, key, aggregate)

    return call

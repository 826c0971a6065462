"""What the DSL's processors share: ``Change`` (Kafka ``kstream.internals.Change``), the
``ValueMapper``/``ValueMapperWithKey`` arity test, the dropped-record counters and the old value
an aggregation forwards."""

from __future__ import annotations

import inspect
import logging
from typing import Callable

from ...config import EMIT_INTERVAL_MS_KSTREAMS_WINDOWED_AGGREGATION
from ...state._change import Change  # noqa: F401 (the DSL's name for it; defined below state/)
from ...state._stores import _IMMUTABLE

log = logging.getLogger("kspark.dsl")


def arity(fn: Callable) -> int:
    """Number of positional parameters ``fn`` takes (used to tell ``ValueMapper`` from ``ValueMapperWithKey``)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return -1
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return -1
    return sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty for p in params)


def dropped(context, reason: str, message: str) -> None:
    meta = context.recordMetadata()
    if meta is not None:
        log.warning("%s topic=[%s] partition=[%d] offset=[%d]", message, *meta)
    else:
        log.warning(message)
    context.metrics().recordDropped(context.taskId(), context.currentNode.name, reason)


def expiredWindow(context, ts: int, window: str, closeTime: int, streamTime: int) -> None:
    """A windowed aggregation skips a record for an expired window: Kafka's warning, and the
    ``dropped-records`` counter of the current node ("expired window")."""
    meta = context.recordMetadata()
    log.warning(
        "Skipping record for expired window. topic=[%s] partition=[%s] offset=[%s] timestamp=[%d] "
        "window=%s expiration=[%d] streamTime=[%d]",
        meta and meta[0], meta and meta[1], meta and meta[2], ts, window, closeTime, streamTime,
    )
    context.metrics().recordDropped(context.taskId(), context.currentNode.name, "expired window")


def oldValueToForward(processor, key, oldAgg, sendOldValues: bool):
    """The old aggregate an aggregation forwards in ``Change(new, old)`` (None unless
    ``sendOldValues``). Uncached, Kafka forwards the very object the aggregator was given, so an
    aggregator that changes it in place changes the old value too; cached, Kafka's flush reads the
    old value from the store's bytes, unchanged: for a mutable value that is a second read of the
    store (kspark's store gives a new object per read)."""
    if not sendOldValues:
        return None
    if oldAgg is None or type(oldAgg) in _IMMUTABLE or not processor.cache.enabled:
        return oldAgg
    return processor.store.get(key).value



def emitIntervalMs(context) -> int:
    """``__emit.interval.ms.kstreams.windowed.aggregation__`` (ms; Kafka ``StreamsConfig.InternalConfig
    .EMIT_INTERVAL_MS_KSTREAMS_WINDOWED_AGGREGATION``), 0 when not given: TopologyTestDriver's
    value, which kspark applies on every host (Kafka's ``KafkaStreams`` defaults to 1000)."""
    value = context.appConfigs().get(EMIT_INTERVAL_MS_KSTREAMS_WINDOWED_AGGREGATION)
    return 0 if value is None else int(value)


def shouldEmitFinal(context, meta: dict, intervalMs: int, closeTime: int) -> bool:
    """Kafka's ``shouldEmitFinal`` of the emit-final aggregations (time, sliding and session
    windows): at most one emit pass per ``intervalMs`` of wall-clock time
    (``context.currentSystemTimeMs()``: the driver's mock clock, a Spark task's clock at the start
    of its micro-batch). A pass allowed by the clock schedules the next one ``intervalMs`` later
    whether or not it emits anything (``timeTracker.nextTimeToEmit = now + interval``), then runs
    only if the close time moved past the last emission's (``lastEmitWindowCloseTime``, -1 before
    any). ``meta`` is the processor's checkpointed node state."""
    now = context.currentSystemTimeMs()
    if now < meta.get("nextTimeToEmit", 0):
        return False
    meta["nextTimeToEmit"] = now + intervalMs
    last = meta.get("lastEmitWindowCloseTime", -1)
    return last == -1 or last < closeTime

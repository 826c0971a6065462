"""KStream-KStream joins: the wiring (Kafka ``KStreamImpl.doJoin`` and ``KStreamImplJoin.join``).

The record logic is in ``_internals/stream_stream.py``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Callable

from ..errors import StreamsException, TopologyException
from ..state import KeyValueBytesStoreSupplier, Stores
from ._config_objects import StreamJoined, instanceOf
from ._internals.common import arity
from ._internals.stateless import PassThrough
from ._internals.stream_stream import KStreamJoinWindow, KStreamKStreamJoin
from ._overloads import check
from ._windows import JoinWindows

if TYPE_CHECKING:
    from ._kstream import KStream

log = logging.getLogger("kspark.dsl")

STREAM_JOINED = instanceOf("StreamJoined", StreamJoined)
JOIN_WINDOWS = instanceOf("JoinWindows", JoinWindows)


def streamStreamJoin(method: str, this: "KStream", other: "KStream", joiner: Callable, windows: JoinWindows,
                     streamJoined: StreamJoined | None = None, *, leftOuter: bool, rightOuter: bool) -> "KStream":
    """``this.join/leftJoin/outerJoin(other, joiner, windows[, streamJoined])``: repartition the
    inputs that need it, check co-partitioning, add the five processors and the stores with
    Kafka's names (see ``KStream.join``)."""
    from ._kstream import KStream

    if other._builder is not this._builder:
        raise TopologyException("Both streams of a join must come from the same StreamsBuilder")
    n = arity(joiner)
    if n not in (2, 3):
        raise TypeError(f"KStream.{method}(): joiner must take (value, otherValue) or (key, value, otherValue)")
    check(f"KStream.{method}", "windows", JOIN_WINDOWS, windows, nullable=False)
    sj = check(f"KStream.{method}", "streamJoined", STREAM_JOINED, streamJoined) or StreamJoined()
    joinerWithKey = joiner if n == 3 else (lambda key, value1, value2: joiner(value1, value2))
    builder, topology, name = this._builder, this._builder._topology, sj.name

    # KStreamImpl.doJoin: repartition a side whose key changed, named <name>-left / -right or after the stream
    joinThis, joinOther, copartitioned = this, other, set()
    for side, stream, valueSerde in (("left", this, sj.valueSerde), ("right", other, sj.otherValueSerde)):
        if not stream._repartitionRequired:
            copartitioned |= stream._sourceTopics
            continue
        repartitionName = f"{name}-{side}" if name is not None else stream._name
        reused = stream._joinRepartition is not None and repartitionName == stream._name
        repartitioned = stream._repartitionForJoin(repartitionName, sj.keySerde, valueSerde)
        if reused:
            # as in Kafka, a reused repartition topic is not in the co-partition group (its
            # source node name is burnt but never added); said out loud as for stream-table joins
            log.warning("KStream.%s of %s reuses repartition topic %s of an earlier join; as in Kafka Streams it is "
                        "not checked for co-partitioning. Name the join (StreamJoined.withName) to get its own "
                        "repartition topic.", method, stream._name, sorted(repartitioned._sourceTopics))
        else:
            copartitioned |= repartitioned._sourceTopics
        if side == "left":
            joinThis = repartitioned
        else:
            joinOther = repartitioned
    topology._copartition(copartitioned)

    # KStreamImplJoin.join: names (counter values burnt as Kafka burns them)
    thisSuffix = "-outer-this-join" if rightOuter else "-this-join"
    otherSuffix = "-outer-other-join" if leftOuter else "-other-join"
    thisWindowedName = builder._nameOrGenerate(None if name is None else f"{name}-this-windowed", "KSTREAM-WINDOWED-")
    otherWindowedName = builder._nameOrGenerate(None if name is None else f"{name}-other-windowed", "KSTREAM-WINDOWED-")
    thisGenerated = builder._newProcessorName("KSTREAM-OUTERTHIS-" if rightOuter else "KSTREAM-JOINTHIS-")
    otherGenerated = builder._newProcessorName("KSTREAM-OUTEROTHER-" if leftOuter else "KSTREAM-JOINOTHER-")
    joinThisName = thisGenerated if name is None else name + thisSuffix
    joinOtherName = otherGenerated if name is None else name + otherSuffix
    mergeName = builder._nameOrGenerate(None if name is None else f"{name}-merge", "KSTREAM-MERGE-")

    thisSupplier, otherSupplier = sj.thisStoreSupplier, sj.otherStoreSupplier
    if thisSupplier is not None and otherSupplier is not None and thisSupplier.name == otherSupplier.name:
        raise StreamsException("Both StoreSuppliers have the same name.  StoreSuppliers must provide unique names")
    thisStore = _windowStore(sj, windows, thisSupplier, sj.storeName, thisSuffix, thisGenerated, sj.valueSerde)
    otherStore = _windowStore(sj, windows, otherSupplier, sj.storeName, otherSuffix, otherGenerated, sj.otherValueSerde)
    outerStore = _outerJoinStore(sj, thisGenerated, rightOuter) if leftOuter and windows._spuriousResultFix else None
    thisStoreName, otherStoreName = thisStore.name(), otherStore.name()
    outerStoreName = None if outerStore is None else outerStore.name()

    def reversedJoiner(key, value2, value1):
        return joinerWithKey(key, value1, value2)

    topology.addProcessor(thisWindowedName, lambda: KStreamJoinWindow(thisStoreName), joinThis._name)
    topology.addProcessor(otherWindowedName, lambda: KStreamJoinWindow(otherStoreName), joinOther._name)
    topology.addProcessor(joinThisName, lambda: KStreamKStreamJoin(
        otherStoreName, windows.beforeMs, windows.afterMs, windows, joinerWithKey, leftOuter, outerStoreName, True,
        mergeName), thisWindowedName)
    topology.addProcessor(joinOtherName, lambda: KStreamKStreamJoin(
        thisStoreName, windows.afterMs, windows.beforeMs, windows, reversedJoiner, rightOuter, outerStoreName, False,
        mergeName), otherWindowedName)
    topology.addProcessor(mergeName, PassThrough, joinThisName, joinOtherName)
    topology.addStateStore(thisStore, thisWindowedName, joinOtherName)
    topology.addStateStore(otherStore, otherWindowedName, joinThisName)
    if outerStore is not None:
        topology.addStateStore(outerStore, joinThisName, joinOtherName)
    if leftOuter:
        topology._markRelaxedNullKeyJoin(mergeName)  # KIP-962: null keys reach the join (RP-2)
    # Kafka: no value serde for the result, and the key serde only StreamJoined's (the two
    # streams' key serdes may differ)
    return KStream(builder, mergeName, joinThis._sourceTopics | joinOther._sourceTopics, False, sj.keySerde, None)


def _windowStore(sj: StreamJoined, windows: JoinWindows, supplier, storeName, suffix: str, generated: str, valueSerde):
    """A side's window store (Kafka ``StreamJoinedStoreFactory`` or the given supplier, checked
    by ``assertWindowSettings``): retention ``size + grace``, window size ``size``, duplicates kept."""
    size, retention = windows.size(), windows.size() + windows.gracePeriodMs()
    if supplier is None:
        name = (generated if storeName is None else storeName + suffix) + "-store"
        supplier = Stores.persistentWindowStore(name, retention, size, True)
    else:
        if not supplier.retainDuplicates:
            raise StreamsException("The StoreSupplier must set retainDuplicates=true, found retainDuplicates=false")
        if supplier.retentionPeriod != retention or supplier.windowSize != size:
            raise StreamsException(f"Window settings mismatch. WindowBytesStoreSupplier settings {supplier!r} must "
                                   f"match JoinWindows settings {windows!r} for the window size and retention period")
    builder = Stores.windowStoreBuilder(supplier, sj.keySerde, valueSerde)
    return builder if sj.logging else builder.withLoggingDisabled()


def _outerJoinStore(sj: StreamJoined, thisGenerated: str, rightOuter: bool):
    """The outer-join store (Kafka ``OuterStreamJoinStoreFactory``): named after the this-side
    store supplier, the store name or the generated this-join name; in memory if the this-side
    supplier is."""
    from ..state._join_stores import OuterJoinStoreBuilder

    suffix = "-outer-shared-join" if rightOuter else "-left-shared-join"
    thisSupplier = sj.thisStoreSupplier
    if thisSupplier is not None and thisSupplier.name:
        base = thisSupplier.name + suffix
    elif sj.storeName is not None:
        base = sj.storeName + suffix
    else:
        prefix = "KSTREAM-OUTERTHIS-" if rightOuter else "KSTREAM-JOINTHIS-"
        base = "KSTREAM-OUTERSHARED-" + thisGenerated[len(prefix):]
    persistent = thisSupplier.persistent if thisSupplier is not None else True
    builder = OuterJoinStoreBuilder(KeyValueBytesStoreSupplier(base + "-store", persistent), sj.keySerde,
                                    sj.valueSerde, sj.otherValueSerde)
    return builder if sj.logging else builder.withLoggingDisabled()

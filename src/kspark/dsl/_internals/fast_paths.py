"""The fused fast paths of aggregations, and the exact conditions under which each is taken.

A fast path replaces the per-node walk ``source -> aggregation -> toStream() -> to()`` of one
task by one loop that runs the aggregation's steps inline and writes the sink's records
directly. It computes the same records (keys, values, timestamps, headers, partitions), the same
store contents, stream and partition times, drop counters and errors as the per-node path; the
tests in ``tests/unit/test_fast_path.py`` (windowed) and ``tests/unit/test_fast_path_aggregate.py``
(non-windowed) run both paths on the same input.

Where a fast path is taken (``StreamTask._buildFastPath`` asks the source's only child for its
``fastPath``; ``windowedFastPath`` and ``aggregateFastPath`` below decide):

- the task reads exactly one input partition, not a global one, and its source has one child:
  the aggregation (``StreamTask._buildFastPath``);
- no stream-time punctuator is scheduled (``StreamTask.process`` / ``processAll``);
- the aggregation is a non-windowed ``KStreamAggregate`` (``aggregateFastPath`` gives its further
  conditions), or a ``KStreamWindowAggregate`` or ``KStreamSessionWindowAggregate`` whose
  windows are exactly the built-in ``TimeWindows`` or ``SessionWindows`` (a subclass could change
  ``windowsFor``, which the loops inline);
- it emits on update (not ``EmitStrategy.onWindowClose()``) and its record cache is off
  (``Materialized.withCachingDisabled()`` or ``statestore.cache.max.bytes=0``): both forward at
  other times than on update;
- its only downstream is ``toStream()`` whose only downstream is ``to(topic)`` with a static
  topic and the default partitioner.

Inside the loop a record with a null key (non-windowed: or a null value) and an expired (late)
record go through the per-node code; an exception goes to the processing handler of the node
where the per-node path meets it. A session ``count()`` of String keys into the built-in session-windowed String
serde with Long values also runs column-at-a-time (``session_count_batch.batchRunner``, whose
docstring gives its further conditions), and so does an uncached ``count()`` of String keys into
the String and Long serdes (``count_batch.countRunner``).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING

from ...processor import Record, RecordMetadata
from ...state import ValueAndTimestamp
from ...state._window import SessionWindow as _SessionWindow, TimeWindow, Windowed as _Windowed
from .count_batch import countRunner
from .ktable import KTableToStream
from .session_count_batch import batchRunner, countAggregator, countInitializer, countMerger

if TYPE_CHECKING:
    from .session_windows import KStreamSessionWindowAggregate
    from .time_windows import KStreamWindowAggregate


def windowedFastPath(agg, task, source, node, queue, build):
    """``build(agg, task, source, node, toStream, sinkNode, queue)`` when the fused loop provably
    computes what the per-node path computes, else None. The conditions:

    - the windows are exactly the built-in ``TimeWindows`` or ``SessionWindows`` (not a
      subclass): the loops inline their window arithmetic (``TimeWindows.windowsFor``, the
      session gap), which a custom ``Windows.windowsFor`` would not follow;
    - no emit-final and no record cache (they forward at other times than on update);
    - ``toStream().to(topic)`` with a static topic and the default partitioner is the only downstream.
    """
    from .._windows import SessionWindows, TimeWindows

    if type(agg.windows) not in (TimeWindows, SessionWindows):
        return None
    if agg.emitFinal or agg.cache.enabled:
        return None
    nodes = _toStreamTo(node)
    return None if nodes is None else build(agg, task, source, node, *nodes, queue)


def _toStreamTo(node):
    """``(toStream, sinkNode)`` when ``node``'s only downstream is ``toStream().to(topic)`` with a
    static topic and the default partitioner, else None."""
    if len(node.children) != 1:
        return None
    toStream = node.children[0]
    if type(toStream.processor) is not KTableToStream or len(toStream.children) != 1:
        return None
    sinkNode = toStream.children[0]
    sink = sinkNode.sink
    if sink is None or sink.topic is None or sink.partitioner is not None or sink.extractor is not None:
        return None
    return toStream, sinkNode


def _fusedLoop(agg, task, source, node, toStream, sinkNode, queue, windowedSerde, windowOf, body):
    """``run(limit)``: the record loop of one task whose graph is ``source -> agg -> toStream()
    -> to()`` (see ``StreamTask._buildFastPath``), for a windowed aggregation ``agg``.

    ``body(emit, rec, key, ts, headers, kb, innerBytes)`` aggregates one record with a non-null
    key as ``agg``'s ``process`` would, calling ``emit(key, start, end, value, timestamp, headers,
    innerBytes)`` for each update it forwards; ``kb`` is the key's bytes in the store when known
    without calling the key serde (a str key and String serdes), else None: the body serializes
    the key where ``process`` does. Null keys and exceptions take the per-node code.

    The sink writes ``Windowed(key, windowOf(start, end))`` keys. With the built-in windowed
    serde ``windowedSerde`` (session or time) the key bytes are the inner key's bytes plus the
    serde's window suffix, written directly, and the partition is the inner key's
    (``WindowedStreamPartitioner``, DP-1); any other key serde goes through the sink's write.
    """
    import struct

    from ...runtime.partitioner import partitionForKey
    from ...runtime.stream_task import ProducedRecord, serializationError
    from .common import Change
    from ...serialization import IncompatibleTypeException, _LongSerde, _StringSerde
    from .._windows import _END_START, _SessionWindowedSerde

    context, store, sink = task.context, agg.store, sinkNode.sink
    topic, valueSerialize = sink.topic, sink.valueSerde.serialize
    inner = sink.keySerde.inner if type(sink.keySerde) is windowedSerde else None
    # String keys in the store and the sink: the store's key bytes are the sink's inner key bytes
    # (a str key's UTF-8), so one encode per record serves the lookup, the key and the partition
    stringKeys = type(inner) is _StringSerde and type(store._keySerde) is _StringSerde
    longValues = type(sink.valueSerde) is _LongSerde  # an int packs as >q, as _LongSerde does
    packLong, write = struct.Struct(">q").pack, sink.write
    # the window suffix of the key bytes: end + start (SessionKeySchema), or start (TimeWindowedSerializer)
    sessions = windowedSerde is _SessionWindowedSerde
    packEndStart = _END_START.pack
    produced = sink._produced
    sinkStamps = sinkNode.stamps  # record-e2e-latency of the (terminal) sink: the timestamps it wrote

    current = [None]  # the record being processed (for the error path)

    def sinkFailed(e: Exception, key, start: int, end: int, value, timestamp: int, headers: tuple) -> None:
        """The sink's error as the per-node path meets it: handled by the processing handler of
        toStream(), the node that forwarded to the sink (KIP-1033; FAIL raises)."""
        rec = current[0]
        context.metadata = _tupleNew(RecordMetadata, (rec.topic, rec.partition, rec.offset))
        context.currentNode, context.sourceRecord = toStream, rec
        try:
            task._onProcessingError(toStream, Record(_Windowed(key, windowOf(start, end)), Change(value, None), timestamp,
                                                     headers), e)
        finally:
            context.currentNode = context.metadata = context.sourceRecord = None

    def inContext(call, *args):
        """``call(*args)`` in the record context the per-node path has at the sink: the input
        record's metadata and raw bytes (a dead-letter record's source, KIP-1034)."""
        rec = current[0]
        context.metadata = _tupleNew(RecordMetadata, (rec.topic, rec.partition, rec.offset))
        context.sourceRecord = rec
        try:
            return call(*args)
        finally:
            context.metadata = context.sourceRecord = None

    def emitAny(key, start: int, end: int, value, timestamp: int, headers: tuple, keyBytes) -> None:
        toStream.processed += 1
        sinkNode.processed += 1
        if inner is None:
            try:
                inContext(write, _Windowed(key, windowOf(start, end)), value, timestamp, headers)
            except Exception as e:
                sinkFailed(e, key, start, end, value, timestamp, headers)
                return
            sinkStamps.append(timestamp)
            return
        what, serde, data = "key", sink.keySerde, None
        try:
            if keyBytes is None:
                keyBytes = inner.serialize(topic, key)
            what, serde, data = "value", sink.valueSerde, value
            if value is None or not longValues or type(value) is not int or not -1 << 63 <= value < 1 << 63:
                valueBytes = valueSerialize(topic, value)
            else:
                valueBytes = packLong(value)
        except Exception as e:  # what the sink's write does for the same serde error (SinkWriter._serialize)
            if not isinstance(e, IncompatibleTypeException):  # the production handler first: its dead-letter record
                inContext(sink._productionError, e, timestamp, headers)
            data = _Windowed(key, windowOf(start, end)) if what == "key" else data
            sinkFailed(serializationError(serde, what, topic, data, None, timestamp, e), key, start, end, value,
                       timestamp, headers)
            return
        # WindowedStreamPartitioner: the partition of the inner key (DP-1); one partition: 0
        n = sink._n if sink._n is not None else sink.numPartitions()
        produced.append(_tupleNew(ProducedRecord, (
            topic, 0 if n == 1 else partitionForKey(keyBytes, n), timestamp,
            keyBytes + (packEndStart(end, start) if sessions else packLong(start)), valueBytes, headers)))
        sinkStamps.append(timestamp)

    def emitStringLong(key, start: int, end: int, value, timestamp: int, headers: tuple, keyBytes) -> None:
        """``emit`` for a str key's bytes ``keyBytes`` and an int or None value, into the built-in
        session-windowed String serde and the Long serde; anything else goes to ``emitAny``."""
        if keyBytes is None or (value is not None and (type(value) is not int or not -1 << 63 <= value < 1 << 63)):
            emitAny(key, start, end, value, timestamp, headers, keyBytes)
            return
        toStream.processed += 1
        sinkNode.processed += 1
        n = sink._n if sink._n is not None else sink.numPartitions()
        produced.append(_tupleNew(ProducedRecord, (
            topic, 0 if n == 1 else partitionForKey(keyBytes, n), timestamp, keyBytes + packEndStart(end, start),
            None if value is None else packLong(value), headers)))
        sinkStamps.append(timestamp)

    emit = emitStringLong if inner is not None and stringKeys and longValues and sessions else emitAny
    return _recordLoop(task, source, node, queue, body, emit, stringKeys, current, False)


def _recordLoop(task, source, node, queue, body, emit, stringKeys: bool, current: list, nullValues: bool):
    """``run(limit)``: the record loop of a fused task ``source -> node -> ...`` (its queue
    polled as ``PartitionGroup.nextRecord`` polls a task's only queue). A record with a null key
    (and, if ``nullValues``, a null value) takes the per-node path; any other calls
    ``body(emit, rec, key, ts, headers, kb, kb)``, ``kb`` the key's UTF-8 bytes when
    ``stringKeys`` and the key is a str (else None). An exception of ``body`` goes to ``node``'s
    processing handler, as ``StreamTask._processorCall``; ``current[0]`` is the record being
    processed (for the emit's error path)."""
    from ...runtime.stream_task import classCastInvoking
    from ...serialization import IncompatibleTypeException

    pg, context = task.partitionGroup, task.context
    sourceStamps = source.stamps

    def perNode(rec) -> None:  # one record through the per-node path (StreamTask.process)
        context.metadata = _tupleNew(RecordMetadata, (rec.topic, rec.partition, rec.offset))
        context.sourceRecord = rec
        try:
            source.process(Record(rec.key, rec.value, rec.timestamp, rec.headers))
        finally:
            context.currentNode = None
            context.metadata = context.sourceRecord = None

    def processPolled(rec) -> None:
        """Process ``rec``, just polled from ``queue`` (its partition time already advanced)."""
        ts = rec.timestamp
        if ts > pg.streamTime:
            pg.streamTime = ts
        key = rec.key
        if key is None or (nullValues and rec.value is None):
            perNode(rec)
            return
        source.processed += 1
        sourceStamps.append(ts)
        node.processed += 1
        current[0] = rec
        try:
            kb = None
            if stringKeys and type(key) is str:
                try:
                    kb = key.encode("utf-8")
                except UnicodeEncodeError:  # lone surrogates: the serde's own way (the store's _keyBytes)
                    pass
            body(emit, rec, key, ts, tuple(rec.headers) if rec.headers else (), kb, kb)
        except Exception as e:  # KIP-1033, as StreamTask._processorCall
            if getattr(e, "failedProcessing", False):  # failed (and handled) downstream
                raise
            if isinstance(e, IncompatibleTypeException):  # as the per-node path: not this node's handler's
                raise classCastInvoking(node.name, Record(key, rec.value, ts, rec.headers), e) from e.classCast()
            context.metadata = _tupleNew(RecordMetadata, (rec.topic, rec.partition, rec.offset))
            context.currentNode, context.sourceRecord = node, rec
            try:
                task._onProcessingError(node, Record(key, rec.value, ts, rec.headers), e)
            finally:
                context.currentNode = context.metadata = context.sourceRecord = None

    def run(limit: int | None) -> int:
        n = 0
        while limit is None or n < limit:
            rec = queue.head
            if rec is None:
                break
            n += 1
            # PartitionGroup.nextRecord / RecordQueue.poll for a task with one queue
            queue.head = queue._headRaw = None
            if rec.timestamp > queue.partitionTime:
                queue.partitionTime = rec.timestamp
            queue._updateHead()
            processPolled(rec)
        return n

    run.processPolled = processPolled
    return run


@contextmanager
def _asNode(context, node, rec):
    """Per-node code of ``node`` for ``rec`` runs inside: record metadata and current node set, then cleared."""
    context.metadata = _tupleNew(RecordMetadata, (rec.topic, rec.partition, rec.offset))
    context.currentNode = node
    try:
        yield
    finally:
        context.currentNode = context.metadata = None


def sessionFastPath(agg: "KStreamSessionWindowAggregate", task, source, node, toStream, sinkNode, queue):
    """``run(limit)`` for ``KStreamSessionWindowAggregate.fastPath``: ``_aggregate``'s steps inline."""
    from .._windows import _SessionWindowedSerde

    context, store, meta = task.context, agg.store, agg.meta
    gap, grace = agg._gap, agg._grace
    aggregator, merge = agg.aggregator, agg._merge
    keyBytesOf, find, put = store._keyBytes, store._findSessionEntries, store._putEntry

    def body(emit, rec, key, ts: int, headers: tuple, kb, innerBytes) -> None:
        streamTime = meta["observedStreamTime"]
        if ts > streamTime:
            streamTime = meta["observedStreamTime"] = ts
        closeTime = streamTime - grace - gap
        if kb is None:
            kb = keyBytesOf(key)
        merged = find(kb, ts - gap, ts + gap)
        value, start, end = merge(key, ts, merged)
        if end < closeTime:
            with _asNode(context, node, rec):
                agg._skipExpired(ts, start, end, closeTime, streamTime, merged)
            return
        if start != ts or end != ts:
            for sEnd, sStart, sKey, _ in merged:
                put(sEnd, kb, sStart, sKey, None)
                emit(sKey, sStart, sEnd, None, sEnd, (), innerBytes)
        value = aggregator(key, rec.value, value)
        put(end, kb, start, key, value)
        emit(key, start, end, value, end, (), innerBytes)  # uncached: no headers (F7)

    def countBody(emit, rec, key, ts: int, headers: tuple, kb, innerBytes) -> None:
        """``body`` for the DSL's ``count()``: its initializer (0), aggregator (+1) and merger (sum)
        inline (≈ 3 % of P3's time per record against ``body``'s three calls)."""
        streamTime = meta["observedStreamTime"]
        if ts > streamTime:
            streamTime = meta["observedStreamTime"] = ts
        if kb is None:
            kb = keyBytesOf(key)
        merged = find(kb, ts - gap, ts + gap)
        value, start, end = 1, ts, ts
        for sEnd, sStart, _, sAgg in merged:
            value += sAgg
            if sStart < start:
                start = sStart
            if sEnd > end:
                end = sEnd
        closeTime = streamTime - grace - gap
        if end < closeTime:
            with _asNode(context, node, rec):
                agg._skipExpired(ts, start, end, closeTime, streamTime, merged)
            return
        if start != ts or end != ts:
            for sEnd, sStart, sKey, _ in merged:
                put(sEnd, kb, sStart, sKey, None)
                emit(sKey, sStart, sEnd, None, sEnd, (), innerBytes)
        put(end, kb, start, key, value)
        emit(key, start, end, value, end, (), innerBytes)

    if agg.initializer is countInitializer and agg.aggregator is countAggregator and agg.merger is countMerger:
        body = countBody
    scalar = _fusedLoop(agg, task, source, node, toStream, sinkNode, queue, _SessionWindowedSerde, _SessionWindow, body)
    runner = batchRunner(agg, task, source, node, toStream, sinkNode, queue, scalar)
    if runner is None:
        return scalar
    runner.processPolled = scalar.processPolled
    return runner


def timeWindowFastPath(agg: "KStreamWindowAggregate", task, source, node, toStream, sinkNode, queue):
    """``run(limit)`` for ``KStreamWindowAggregate.fastPath``: ``process``'s steps inline."""
    from .._windows import _TimeWindowedSerde

    context, store, meta = task.context, agg.store, agg.meta
    size, advance, grace = agg.windows.sizeMs, agg.windows.advanceMs, agg.windows.gracePeriodMs()
    aggregator, initializer, reduce = agg.aggregator, agg.initializer, agg.reduce
    keyBytesOf, fetch, put = store._keyBytes, store._fetchBytes, store._putBytes

    def body(emit, rec, key, ts: int, headers: tuple, kb, innerBytes) -> None:
        streamTime = meta["observedStreamTime"]
        if ts > streamTime:
            streamTime = meta["observedStreamTime"] = ts
        closeTime = streamTime - grace
        value = rec.value
        start = (max(0, ts - size + advance) // advance) * advance  # TimeWindows.windowsFor
        while start <= ts:
            end = start + size
            if end <= closeTime:
                with _asNode(context, node, rec):
                    agg._skipExpiredWindow(ts, start, end, closeTime, streamTime)
            else:
                if kb is None:
                    kb = keyBytesOf(key)
                old = fetch(kb, start)
                if old is None:
                    newAgg = value if reduce else aggregator(key, value, initializer())
                    timestamp = ts
                else:
                    newAgg = aggregator(old.value, value) if reduce else aggregator(key, value, old.value)
                    timestamp = ts if ts > old.timestamp else old.timestamp
                put(kb, key, None if newAgg is None else _tupleNew(ValueAndTimestamp, (newAgg, timestamp)), start)
                emit(key, start, end, newAgg, timestamp, headers, innerBytes)
            start += advance

    return _fusedLoop(agg, task, source, node, toStream, sinkNode, queue, _TimeWindowedSerde, TimeWindow, body)


_tupleNew = tuple.__new__


def aggregateFastPath(agg, task, source, node, queue):
    """``run(limit)`` for ``KStreamAggregate.fastPath``: a non-windowed ``count``, ``reduce`` or
    ``aggregate`` of ``groupByKey()`` (or of a repartition topic's source) whose only downstream
    is ``toStream().to(topic)``, with ``process``'s steps inline; None for any other shape.

    Taken only where it provably computes what the per-node path computes:

    - the record cache is off (``Materialized.withCachingDisabled()`` or
      ``statestore.cache.max.bytes=0``): a cache forwards at other times than on update;
    - ``toStream().to(topic)`` with a static topic and the default partitioner is the only
      downstream: ``toStream()`` forwards the new value, so the ``Change``'s old value is never
      seen (but by a processing handler, which gets it as the per-node path builds it);
    - the store is exactly a ``TimestampedKeyValueStore`` or its persistent class, whose point
      read and write (``get``/``put`` of ``KeyValueStore`` and ``PersistentKeyValueStore``) are
      inlined on its ``_data``: a dict, or the persistent store's ``WorkingSet``; a value of a
      type the store keeps as is (``_IMMUTABLE``; others are frozen by ``put``), and an in-memory
      store without a sorted key index (built by a first range read), else ``put`` itself;
    - a persistent store with a String key serde and a Long value serde loads a key missing from
      its working set inline, as ``WorkingSet.get`` loads it (``_load``, ``_decode``): the
      database's raw value at the store's prefix + the key's UTF-8 bytes, absent if none, else
      when 16 bytes ``(key, ValueAndTimestamp(value, timestamp))`` (big-endian 8-byte timestamp
      then the 8-byte Long, ``_LongSerde``'s packing; ``_IMMUTABLE``, so kept as is); any other
      length takes ``WorkingSet.get``, which raises the serde's error.

    Null keys and null values go through the per-node code (dropped and counted), exceptions to
    the node's (aggregator) or ``toStream()``'s (sink) processing handler. A String-keyed store
    with a String key serde and a Long value serde on the sink writes the sink's record from the
    key's one UTF-8 encode and ``struct`` ``>q`` (``_LongSerde``'s packing); any other serde or
    value goes through the sink's ``write``.

    A ``count()`` with a String key serde on the store and String and Long serdes on the sink
    also runs column-at-a-time over long queues (``count_batch.countRunner``, whose docstring
    gives its further conditions).
    """
    import struct

    from ...runtime.partitioner import partitionForKey
    from ...runtime.stream_task import ProducedRecord
    from ...serialization import _LongSerde, _StringSerde
    from ...state._persistent import _ABSENT, _MISSING, PersistentTimestampedKeyValueStore, WorkingSet
    from ...state._stores import _IMMUTABLE, TimestampedKeyValueStore
    from .common import Change
    from .session_count_batch import countAggregator, countInitializer

    store = agg.store
    nodes = None if agg.cache.enabled else _toStreamTo(node)
    if nodes is None or type(store) not in (TimestampedKeyValueStore, PersistentTimestampedKeyValueStore):
        return None
    toStream, sinkNode = nodes
    sink = sinkNode.sink

    context = task.context
    topic, write, produced = sink.topic, sink.write, sink._produced
    stringKeys = type(store._keySerde) is _StringSerde
    stringLong = stringKeys and type(sink.keySerde) is _StringSerde and type(sink.valueSerde) is _LongSerde
    packLong = struct.Struct(">q").pack
    sinkStamps = sinkNode.stamps
    initializer, aggregator, reduce, thaw, keyBytesOf = agg.initializer, agg.aggregator, agg.reduce, store._thaw, store._keyBytes
    count = not reduce and initializer is countInitializer and aggregator is countAggregator
    sendOld = agg.sendOldValues  # the Change's old value, as process builds it (cache off)
    setEntry, dictGet = dict.__setitem__, dict.get
    inlineLoad = (type(store) is PersistentTimestampedKeyValueStore and stringKeys
                  and type(store._valueSerde) is _LongSerde)
    unpackStored = struct.Struct(">qq").unpack  # (timestamp, value): ValueAndTimestampSerializer's layout
    current = [None]

    def emit(key, value, timestamp: int, headers: tuple, kb, oldAgg) -> None:
        """``toStream()`` then the sink, for ``Change(value, oldAgg)`` (``kb``: the key's UTF-8
        bytes, or None)."""
        toStream.processed += 1
        sinkNode.processed += 1
        if kb is not None and stringLong and type(value) is int and -1 << 63 <= value < 1 << 63:
            n = sink._n if sink._n is not None else sink.numPartitions()
            produced.append(_tupleNew(ProducedRecord, (topic, 0 if n == 1 else partitionForKey(kb, n), timestamp, kb,
                                                       packLong(value), headers)))
            sinkStamps.append(timestamp)
            return
        rec = current[0]
        context.metadata = _tupleNew(RecordMetadata, (rec.topic, rec.partition, rec.offset))
        context.sourceRecord = rec
        try:
            write(key, value, timestamp, headers)
        except Exception as e:  # the sink's error, as the per-node path meets it: at toStream() (KIP-1033)
            context.currentNode = toStream
            task._processingFailed(toStream, Record(key, Change(value, oldAgg), timestamp, headers), e)
            return
        finally:
            context.currentNode = context.metadata = context.sourceRecord = None
        sinkStamps.append(timestamp)

    def body(emit, rec, key, ts: int, headers: tuple, kb, innerBytes) -> None:
        if kb is None:
            kb = keyBytesOf(key)
        value = rec.value
        data = store._data  # replaced when a host resets the working set: read per record
        if innerBytes is not None and inlineLoad and type(data) is WorkingSet:
            entry = dictGet(data, kb, _MISSING)
            if entry is _MISSING:  # WorkingSet.get's load (_load, _decode) inline: see the docstring
                backend = store._backend
                raw = None if backend.empty else backend.db.db.get(backend.prefix + kb)
                if raw is None:
                    entry = None
                    setEntry(data, kb, _ABSENT)
                elif len(raw) == 16:
                    loadedTs, loaded = unpackStored(raw)
                    entry = (key, _tupleNew(ValueAndTimestamp, (loaded, loadedTs)))
                    setEntry(data, kb, entry)
                else:  # not a Long: the general load raises the serde's error
                    entry = data.get(kb)
            elif entry is _ABSENT:
                entry = None
        else:
            entry = data.get(kb)
        if entry is None:
            if count:
                newAgg, oldAgg = 1, 0
            else:
                initial = None if reduce else initializer()
                newAgg, oldAgg = (value if reduce else aggregator(key, value, initial)), initial
            timestamp = ts
        else:
            old = thaw(entry[1])
            oldAgg = old.value
            if count:
                newAgg = oldAgg + 1
            else:
                newAgg = aggregator(oldAgg, value) if reduce else aggregator(key, value, oldAgg)
            timestamp = ts if ts > old.timestamp else old.timestamp
        if not sendOld:
            oldAgg = None
        if newAgg is not None and type(newAgg) in _IMMUTABLE:  # put(key, VAT), inline: kept as is (no freeze)
            stored = (key, _tupleNew(ValueAndTimestamp, (newAgg, timestamp)))
            if type(data) is WorkingSet:
                setEntry(data, kb, stored)
                data.dirty.add(kb)
            elif store._sorted is None:
                data[kb] = stored
            else:
                store.put(key, stored[1])
        else:
            store.put(key, ValueAndTimestamp(newAgg, timestamp))
        emit(key, newAgg, timestamp, headers, innerBytes, oldAgg)

    scalar = _recordLoop(task, source, node, queue, body, emit, stringKeys, current, True)
    runner = countRunner(agg, task, source, node, toStream, sinkNode, queue, scalar) if count and stringLong else None
    if runner is None:
        return scalar
    runner.processPolled = scalar.processPolled
    return runner

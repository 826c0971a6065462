"""Column-at-a-time runs of the fused session-count loop (issue 7).

A DSL session ``count()`` (SA-12: initializer 0, aggregator +1, merger a + b) of String keys,
uncached, written by ``toStream().to()`` with the session-windowed String serde and Long values,
reads many queued records per call on the Spark host (a micro-batch) and in
``TestInputTopic.pipeRecordList``. For the common case -- each key's records in timestamp order,
nothing late -- the per-record steps of ``KStreamSessionWindowAggregate`` (SA-1..SA-9) reduce to
arithmetic on arrays, done here with numpy over a run of records:

- record ``i`` (key ``k``, timestamp ``t``) can merge only with ``k``'s latest session, ending
  at ``p`` (the previous record of ``k`` in the run, or the store's latest session of ``k``); it
  merges when that session is visible and within the gap: ``p >= max(t - gap, lowest)``, where
  ``lowest = observed - retention + 1`` and ``observed`` is the store's max session end before
  ``i`` (ST-6/ST-7);
- a merge forwards a tombstone for ``[start, p]`` (timestamp ``p``) unless the session was the
  single point ``[t, t]``, then ``[start, t]`` with the count so far (timestamp ``t``); no merge
  forwards ``[t, t]`` = 1 (SA-5).

A run stops before the first record that needs more than that: a null key, a key or value that
does not deserialize, an invalid timestamp (these three one record earlier, as the queue reads a
record when it polls the one before), a record out of timestamp order for its key, a second
visible candidate session or a late record (SA-6). (A record that is not late never meets an
expired segment: ``t >= streamTime - gap - grace >= observed - retention``, ST-6.) That record and a few after it take the scalar fused loop (``_sessionFastPath``), which handles
everything; then runs resume. Outputs, store contents (sessions, segment index, observed time,
purges), stream times, partition times and counters are the scalar loop's, which
``tests/unit/test_fast_path.py`` checks on generated input.
"""

from __future__ import annotations

from itertools import islice

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

# Fewer queued records than this: the scalar loop (a run's fixed cost is ~0.3 ms).
MIN_RUN = 64
# Records looked at per run (numpy arrays of this length).
MAX_RUN = 1 << 16
# After a run stopped early, records handed to the scalar loop before the next run is tried.
SCALAR_AFTER_SHORT_RUN = 256

_NONE = np.iinfo(np.int64).min // 4  # "no session" end (below any lowest visible end)
_SUFFIX, _LONG = pa.binary(16), pa.binary(8)


def countInitializer() -> int:
    return 0


def countAggregator(key, value, aggregate: int) -> int:
    return aggregate + 1


def countMerger(key, aggregate1: int, aggregate2: int) -> int:
    return aggregate1 + aggregate2


def gatherRun(queue, limit: int, withHeaders: bool):
    """The queue's head and up to ``limit - 1`` following records, as (key codes (int64),
    distinct key bytes (None for a null key), timestamps (int64, negative if invalid), raw values
    (a list), headers (a list of tuples, or None when no record has any or ``withHeaders`` is
    false), fromColumns): from the queue's RawRecord tuples, or, when none are queued, from its
    first column chunk."""
    head = queue._headRaw
    headTs = head[1] if head[5] is None else head[5]
    if queue._raw or not queue._columns:
        raws = [head]
        raws.extend(islice(queue._raw, limit - 1))
        index: dict = {}
        codes = np.fromiter((index.setdefault(r[2], len(index)) for r in raws), np.int64, len(raws))
        t = np.fromiter((r[1] if r[5] is None else r[5] for r in raws), np.int64, len(raws))
        headers = [r[4] for r in raws] if withHeaders and any(r[4] for r in raws) else None
        return codes, list(index), t, [r[3] for r in raws], headers, False
    columns, pos = queue._columns[0]
    rows = min(limit - 1, len(columns) - pos)
    keys = pa.concat_arrays([pa.array([head[2]], pa.binary()), columns.keys.slice(pos, rows)]).dictionary_encode()
    distinct = keys.dictionary.to_pylist() + [None]  # codes of null keys: the last one
    codes = pc.fill_null(keys.indices, len(distinct) - 1).to_numpy().astype(np.int64)
    t = np.concatenate([[headTs], columns.timestamps[pos:pos + rows]])
    headers = None
    if withHeaders:
        from ...runtime.stream_task import decodeHeaders

        encoded = columns.headers.slice(pos, rows)
        if head[4] or encoded.null_count < rows:
            headers = [head[4]] + list(map(decodeHeaders, encoded.to_pylist()))
    return codes, distinct, t, [head[3]] + columns.values.slice(pos, rows).to_pylist(), headers, True


def takeRun(queue, pg, n: int, tMax: int, fromColumns: bool) -> None:
    """Take ``n`` records gathered by ``gatherRun`` off the queue as ``n`` polls would (T-9..T-12):
    partition and stream time to ``tMax``, the next head read."""
    if fromColumns:
        entry = queue._columns[0]
        entry[1] += n - 1
        if entry[1] == len(entry[0]):
            queue._columns.popleft()
    else:
        raw = queue._raw
        for _ in range(n - 1):
            raw.popleft()
    if tMax > queue.partitionTime:
        queue.partitionTime = tMax
    if tMax > pg.streamTime:
        pg.streamTime = tMax
    queue.head = queue._headRaw = None
    if not queue._raw:
        queue._materialize(1)  # the next head alone: the rest stays columns for the next run
    queue._updateHead()


def runLoop(task, queue, vectorised, scalar) -> int:
    """Process the whole queue: runs (``vectorised(MAX_RUN)`` -> (records, stopped early)) while
    ``MIN_RUN`` or more records are queued, the scalar loop for the rest and for a few records
    after a run that stopped early; the output is handed off after each run. Returns the records
    processed. (The count runs, ``count_batch``, share it and these sizes.)"""
    done = 0
    while queue.head is not None:
        if queue.size() < MIN_RUN:
            return done + scalar(None)
        n, stopped = vectorised(MAX_RUN)
        done += n
        task.handOffProduced()
        if stopped and queue.head is not None:
            done += scalar(1 if n >= SCALAR_AFTER_SHORT_RUN else SCALAR_AFTER_SHORT_RUN)
    return done


def batchRunner(agg, task, source, node, toStream, sinkNode, queue, scalar):
    """``run(limit)`` that processes long queues in vectorised runs and the rest with ``scalar``,
    or None when ``agg``'s topology is not a String-keyed session count into the built-in
    session-windowed String serde with Long values and a built-in timestamp extractor."""
    from ...runtime.partitioner import partitionForKey
    from ...runtime.stream_task import ProducedColumns
    from ...serialization import (_ByteArraySerde, _JsonSerde, _LongSerde, _PickleSerde, _StringSerde,
                                  _StructSerde)
    from .._windows import _SessionWindowedSerde

    store, sink = agg.store, sinkNode.sink
    if (agg.initializer is not countInitializer or agg.aggregator is not countAggregator
            or agg.merger is not countMerger):
        return None
    if type(sink.keySerde) is not _SessionWindowedSerde or type(sink.keySerde.inner) is not _StringSerde:
        return None
    if (type(store._keySerde) is not _StringSerde or type(queue._keySerde) is not _StringSerde
            or type(sink.valueSerde) is not _LongSerde or not queue.extractsMetadataTimestamp()
            or not store._persistent):  # the DSL's session stores are persistent (ST-6)
        return None
    valueSerde = queue._valueSerde
    valueDeserialize = valueSerde.deserialize
    # built-in deserializers return None for null data: null values need no call
    nullSafe = isinstance(valueSerde, (_StringSerde, _StructSerde, _ByteArraySerde, _JsonSerde, _PickleSerde))
    pg, meta, topic = task.partitionGroup, agg.meta, queue.topic
    gap, grace = agg._gap, agg._grace
    retention, interval = store._retentionMs, store._segmentInterval
    sinkTopic, produced = sink.topic, sink._produced

    def gather(limit: int):
        """``gatherRun`` without headers (Kafka forwards an uncached session update with none),
        values None when all are null and need no deserializer call."""
        codes, distinct, t, values, _, fromColumns = gatherRun(queue, limit, False)
        if nullSafe and not any(v is not None for v in values):
            values = None
        return codes, distinct, t, values, fromColumns

    def vectorised(limit: int) -> tuple[int, bool]:
        """Process the longest simple run among the next ``limit`` queued records; returns
        (records processed, whether the run stopped before a record that needs the scalar loop)."""
        codeArr, distinct, t, values, fromColumns = gather(limit)
        n = len(t)
        stop = n  # records before the first one that needs the scalar loop
        # -- raw-level checks: a problem at j is met when record j - 1 is polled
        keys = []
        for kb in distinct:
            try:
                key = None if kb is None else bytes(kb).decode("utf-8")
            except UnicodeDecodeError:
                key = False
            keys.append(key)
        undecodable = np.fromiter((k is False for k in keys), bool, len(keys))[codeArr]
        if undecodable.any():
            stop = min(stop, max(0, int(np.argmax(undecodable)) - 1))
        nullKey = np.fromiter((k is None for k in keys), bool, len(keys))[codeArr]
        if nullKey.any():  # null keys: the per-node path (SA-1)
            stop = min(stop, int(np.argmax(nullKey)))
        if (t < 0).any():
            stop = min(stop, max(0, int(np.argmax(t < 0)) - 1))
        if values is not None:
            for j in range(1, stop + 1 if stop < n else n):
                v = values[j]
                if v is None and nullSafe:
                    continue
                try:
                    valueDeserialize(topic, v)
                except Exception:
                    stop = min(stop, j - 1)
                    break
        if stop == 0:
            return 0, True
        t, codeArr = t[:stop], codeArr[:stop]
        # -- the run's semantics, records in key order (stable: record order within a key)
        observed0 = store._observed
        cummax = np.maximum.accumulate(t)
        closeTime = np.maximum(meta["observedStreamTime"], cummax) - grace - gap
        observed = np.empty(stop, np.int64)  # the store's observed time before each record
        observed[0] = observed0
        np.maximum(observed0, cummax[:-1], out=observed[1:])
        earliest = np.maximum(t - gap, observed - retention + 1)  # visible and within the gap

        present = np.flatnonzero(np.bincount(codeArr, minlength=len(distinct)))
        lastEnd = np.full(len(distinct), _NONE, np.int64)
        lastStart = np.zeros(len(distinct), np.int64)
        lastCount = np.zeros(len(distinct), np.int64)
        secondEnd = np.full(len(distinct), _NONE, np.int64)
        sessionsOf = store._sessions
        for code in present.tolist():
            sessions = sessionsOf.get(distinct[code])
            if sessions:
                lastEnd[code], lastStart[code], _, lastCount[code] = sessions[-1]
                if len(sessions) > 1:
                    secondEnd[code] = sessions[-2][0]

        order = np.argsort(codeArr, kind="stable")
        c, ts = codeArr[order], t[order]
        first = np.ones(stop, bool)
        first[1:] = c[1:] != c[:-1]
        prevEnd = np.empty(stop, np.int64)
        prevEnd[1:] = ts[:-1]
        prevEnd[first] = lastEnd[c[first]]
        hasPrev = prevEnd != _NONE
        early = earliest[order]
        merged = hasPrev & (prevEnd >= early)
        bad = ((hasPrev & (ts < prevEnd)) | (first & (secondEnd[c] >= early))
               | (ts < closeTime[order]))
        if bad.any():
            stop = int(order[bad].min())
            if stop == 0:
                return 0, True
            keep = order < stop
            order, c, ts, first, prevEnd, merged = (a[keep] for a in (order, c, ts, first, prevEnd, merged))
            t, codeArr = t[:stop], codeArr[:stop]
        m = stop
        # -- sessions: a new one at each key's first record and at each record that did not merge
        opens = first | ~merged
        group = np.cumsum(opens) - 1
        heads = np.flatnonzero(opens)
        fromStore = merged[heads]  # the key's first record merged the store's latest session
        headCodes = c[heads]
        groupStart = np.where(fromStore, lastStart[headCodes], ts[heads])
        groupBase = np.where(fromStore, lastCount[headCodes], 0)
        start = groupStart[group]
        count = groupBase[group] + (np.arange(m) - heads[group]) + 1
        tomb = merged & (start != ts)
        # -- outputs in record order: [tombstone of the merged session,] the updated session
        rec = np.empty(m, np.int64)
        rec[order] = np.arange(m)  # position in key order of each record
        tombRec = tomb[rec]
        slot = np.arange(m) + np.cumsum(tombRec)  # the update's output position
        total = m + int(tombRec.sum())
        outCode = np.empty(total, np.int64)
        outStart = np.empty(total, np.int64)
        outEnd = np.empty(total, np.int64)
        outCount = np.zeros(total, np.int64)
        outRecord = np.empty(total, np.int64)
        startRec, countRec, codeRec = start[rec], count[rec], c[rec]
        outCode[slot], outStart[slot], outEnd[slot], outCount[slot], outRecord[slot] = (
            codeRec, startRec, t, countRec, np.arange(m))
        tombSlot = slot[tombRec] - 1
        outCode[tombSlot], outStart[tombSlot], outEnd[tombSlot] = codeRec[tombRec], startRec[tombRec], prevEnd[rec][tombRec]
        outRecord[tombSlot] = np.flatnonzero(tombRec)
        suffix = np.empty((total, 2), ">i8")  # SessionKeySchema: key + end + start
        suffix[:, 0], suffix[:, 1] = outEnd, outStart
        keyBytes = pc.binary_join_element_wise(
            pa.array(distinct, pa.binary()).take(outCode),
            pa.FixedSizeBinaryArray.from_buffers(_SUFFIX, total, [None, pa.py_buffer(suffix)]).cast(pa.binary()), b"")
        isUpdate = np.ones(total, bool)
        isUpdate[tombSlot] = False
        values = pa.FixedSizeBinaryArray.from_buffers(_LONG, total, [
            pa.array(isUpdate).buffers()[1], pa.py_buffer(outCount.astype(">i8"))]).cast(pa.binary())
        partitions = sink._n if sink._n is not None else sink.numPartitions()
        if partitions == 1:
            partitionCol = np.zeros(total, np.int64)
        else:
            partitionOf = np.zeros(len(distinct), np.int64)
            codes = present.tolist()
            partitionOf[present] = np.fromiter(map(partitionForKey, [distinct[c] for c in codes], [partitions] * len(codes)),
                                               np.int64, len(codes))
            partitionCol = partitionOf[outCode]
        # no headers: Kafka 4.3's KStreamSessionWindowAggregate forwards new Record(key, change, end)
        produced.append(ProducedColumns(sinkTopic, partitionCol, outEnd, keyBytes, values, None))
        # -- the store: each session's last state; every put's segment indexed (ST-6)
        headKeys = headCodes.tolist()
        lastOfGroup = np.append(heads[1:], m) - 1
        for code, merges, s, e, n_ in zip(headKeys, fromStore.tolist(), groupStart.tolist(),
                                          ts[lastOfGroup].tolist(), count[lastOfGroup].tolist()):
            kb = distinct[code]
            if merges:
                store._delete(int(lastEnd[code]), kb, int(lastStart[code]))
            store._store(e, kb, s, keys[code], n_)
        segmentKeys = np.unique((ts // interval) * len(distinct) + c)
        segments = store._segments
        for segment, code in zip((segmentKeys // len(distinct)).tolist(), (segmentKeys % len(distinct)).tolist()):
            keySet = segments.get(segment)
            if keySet is None:
                segments[segment] = {distinct[code]}
            else:
                keySet.add(distinct[code])
        tMax = int(cummax[m - 1])
        if tMax > store._observed:
            store._observed = tMax
        bound = store._observed - retention
        if bound // interval > store._purgedBelow:
            store._purge(bound // interval)
        if tMax > meta["observedStreamTime"]:
            meta["observedStreamTime"] = tMax
        source.processed += m
        node.processed += m
        toStream.processed += total
        sinkNode.processed += total
        source.stampArrays.append(t)  # record-e2e-latency: the source's and the sink's timestamps
        sinkNode.stampArrays.append(outEnd)
        takeRun(queue, pg, m, tMax, fromColumns)
        return m, m < n

    def run(limit: int | None) -> int:
        return scalar(limit) if limit is not None else runLoop(task, queue, vectorised, scalar)

    return run

"""Column-at-a-time runs of the fused count loop (issue 32).

An uncached DSL ``groupByKey().count()`` of String keys written by ``toStream().to()`` with the
String and Long serdes (``fast_paths.aggregateFastPath``'s loop, whose conditions hold) reads many
queued records per call in the Spark hosts (a micro-batch, a stream thread's poll). For a run of
records that all take the loop's plain path -- a String key, a non-null value, a valid timestamp,
an entry that is absent or a Long count -- record ``i`` of key ``k`` at timestamp ``t`` forwards
``k``'s count so far and the max timestamp so far (T-17):

- ``count_i = base(k) + (records of k in the run up to and including i)``, ``base(k)`` the
  store's count of ``k`` before the run (0 if absent);
- ``timestamp_i = max(ts(k), t of k's records in the run up to and including i)``, ``ts(k)`` the
  store entry's timestamp (none if absent);
- with the record's headers, to the sink partition of ``murmur2(key bytes)`` (DP-2);

and the store ends with each key's last count and timestamp. That is arithmetic on arrays, done
here with numpy over a run.

A run stops before the first record that needs more than that: a null key or a null value (the
per-node drop, counted), a key that is not valid UTF-8 (its String is Java's decoding, whose
bytes differ), a value that does not deserialize or an invalid timestamp (these two one record
earlier, as the queue reads a record when it polls the one before), a stored entry that is not a
Long count of a ``ValueAndTimestamp`` (the loop's general load raises the serde's error) or is
2^62 or more (a count the loop could overflow). That record and a few after it take the scalar
loop, which handles everything; then runs resume. Taken only where the queue's serdes are
built-in (pure: a value deserialized here is not deserialized again unless the run stops before
it) and its extractor a built-in one. Outputs, store contents, stream and partition times and
counters are the scalar loop's; ``tests/unit/test_count_runs.py`` checks them on
generated input.
"""

from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa

from .session_count_batch import gatherRun, runLoop, takeRun

_LONG = pa.binary(8)
_COUNT_LIMIT = 1 << 62  # a stored count at or above it: the scalar loop (no run could overflow int64)
_TS_BITS = 46  # timestamps of a run below 2^46 ms (year 4199): per-key maxima in one int64 cummax


def countRunner(agg, task, source, node, toStream, sinkNode, queue, scalar):
    """``run(limit)`` that processes long queues in vectorised runs and the rest with ``scalar``
    (the fused count loop), or None when the queue's serdes or extractor are not built-in ones.
    The caller (``aggregateFastPath``) has checked the rest: a count, cache off, ``toStream().to()``
    with String and Long serdes, a String key serde on the store, a ``TimestampedKeyValueStore``
    or its persistent class."""
    from ...runtime.partitioner import partitionsForKeys
    from ...runtime.stream_task import ProducedColumns
    from ...serialization import _ByteArraySerde, _StringSerde
    from ...state import ValueAndTimestamp
    from ...state._persistent import _ABSENT, _MISSING, WorkingSet

    if not queue._pollsAlone or type(queue._keySerde) is not _StringSerde:
        return None
    store, sink = agg.store, sinkNode.sink
    pg, topic, sinkTopic, produced = task.partitionGroup, queue.topic, sink.topic, sink._produced
    valueDeserialize = queue._valueSerde.deserialize
    # String and ByteArray values: non-null bytes deserialize to a non-null value and never fail
    # (Java's decoding replaces malformed UTF-8), so only null values stop a run
    neverFails = type(queue._valueSerde) in (_StringSerde, _ByteArraySerde)
    unpackStored = struct.Struct(">qq").unpack  # (timestamp, value): ValueAndTimestampSerializer's layout
    tupleNew, dictGet = tuple.__new__, dict.get

    def bases(distinct: list, present: list, data) -> tuple[list, list, list, int | None]:
        """The present key codes that have an entry before the run, with its count and timestamp
        as the loop loads them, and the first code whose entry the loop would not count from
        (else None). The keys the working set does not hold are read from the database in one
        RocksDB ``MultiGet`` (the loop reads them one at a time: the same bytes), and what is read
        is not kept in the working set: the run writes every key it counts, and a key after the
        first such code is read again by the loop."""
        codes, counts, stamps = [], [], []
        entries = [dictGet(data, distinct[code], _MISSING) for code in present]
        if type(data) is WorkingSet and not store._backend.empty:
            prefix = store._backend.prefix
            unloaded = [i for i, entry in enumerate(entries) if entry is _MISSING]
            if unloaded:
                read = store._backend.db.multiGet([prefix + distinct[present[i]] for i in unloaded])
                for i, raw in zip(unloaded, read):
                    entries[i] = raw
        for code, entry in zip(present, entries):
            # _MISSING: an in-memory store's absent key, or an empty database's
            if entry is _MISSING or entry is None or entry is _ABSENT:
                continue
            if type(entry) is bytes:
                if len(entry) != 16:
                    return codes, counts, stamps, code
                ts, count = unpackStored(entry)
            else:
                stored = entry[1]
                if type(stored) is not ValueAndTimestamp or type(stored[0]) is not int:
                    return codes, counts, stamps, code
                count, ts = stored
            if not 0 <= count < _COUNT_LIMIT or not 0 <= ts < 1 << _TS_BITS:
                return codes, counts, stamps, code
            codes.append(code)
            counts.append(count)
            stamps.append(ts)
        return codes, counts, stamps, None

    def vectorised(limit: int) -> tuple[int, bool]:
        """Process the longest simple run among the next ``limit`` queued records; returns
        (records processed, whether the run stopped before a record that needs the scalar loop)."""
        codeArr, distinct, t, values, headers, fromColumns = gatherRun(queue, limit, True)
        n = len(t)
        stop = n
        # -- the queue's reads: a problem at j is met when record j - 1 is polled
        keys = []
        for kb in distinct:
            try:
                keys.append(None if kb is None else kb.decode("utf-8"))
            except UnicodeDecodeError:
                keys.append(False)
        badKey = np.fromiter((k is None or k is False for k in keys), bool, len(keys))[codeArr]
        if badKey.any():
            stop = max(0, int(np.argmax(badKey)) - 1)
        invalid = (t < 0) | (t >= 1 << _TS_BITS)
        if invalid.any():
            stop = min(stop, max(0, int(np.argmax(invalid)) - 1))
        if queue.head.value is None:
            return 0, True
        end = stop + 1 if stop < n else n
        if neverFails:  # the first null value, if any (list.index compares in C)
            try:
                stop = min(stop, values.index(None, 1, end))
            except ValueError:
                pass
        for j in range(1, 1 if neverFails else end):
            try:
                value = valueDeserialize(topic, values[j])
            except Exception:
                stop = min(stop, j - 1)
                break
            if value is None:  # the per-node drop of a null value
                stop = min(stop, j)
                break
        if stop == 0:
            return 0, True
        t, codeArr = t[:stop], codeArr[:stop]
        # -- each key's entry before the run
        data = store._data
        present = np.flatnonzero(np.bincount(codeArr, minlength=len(distinct)))
        presentCodes = present.tolist()
        found, foundCounts, foundStamps, failed = bases(distinct, presentCodes, data)
        baseCount = np.zeros(len(distinct), np.int64)
        baseTs = np.full(len(distinct), -1, np.int64)
        baseCount[found], baseTs[found] = foundCounts, foundStamps
        if failed is not None:
            stop = int(np.argmax(codeArr == failed))
            if stop == 0:
                return 0, True
            t, codeArr = t[:stop], codeArr[:stop]
        # -- counts and timestamps, records in key order (stable: record order within a key)
        m = stop
        order = np.argsort(codeArr, kind="stable")
        c = codeArr[order]
        first = np.ones(m, bool)
        first[1:] = c[1:] != c[:-1]
        heads = np.flatnonzero(first)
        group = np.cumsum(first) - 1
        count = baseCount[c] + (np.arange(m) - heads[group]) + 1
        # the running max of each key's timestamps: one cummax over key-offset values
        offset = group.astype(np.int64) << _TS_BITS
        running = np.maximum.accumulate(t[order] + offset) - offset
        stamp = np.maximum(running, baseTs[c])
        rec = np.empty(m, np.int64)
        rec[order] = np.arange(m)
        outCount, outTs, outCode = count[rec], stamp[rec], codeArr
        # -- the sink's records in record order
        keyBytes = pa.array(distinct, pa.binary()).take(pa.array(outCode))
        values = pa.FixedSizeBinaryArray.from_buffers(_LONG, m, [None, pa.py_buffer(outCount.astype(">i8"))]).cast(
            pa.binary())
        partitions = sink._n if sink._n is not None else sink.numPartitions()
        if partitions == 1:
            partitionCol = np.zeros(m, np.int64)
        else:
            partitionOf = np.zeros(len(distinct), np.int64)
            partitionOf[present] = partitionsForKeys([distinct[code] for code in presentCodes], partitions)
            partitionCol = partitionOf[outCode]
        outHeaders = None
        if headers is not None:
            outHeaders = [tuple(h) if h else () for h in headers[:m]]
            if not any(outHeaders):
                outHeaders = None
        produced.append(ProducedColumns(sinkTopic, partitionCol, outTs, keyBytes, values, outHeaders))
        # -- the store: each key's last count and timestamp, as the loop's put leaves it
        last = np.append(heads[1:], m) - 1
        persistent = type(data) is WorkingSet
        setEntry, dirty = dict.__setitem__, data.dirty if persistent else None
        for code, n_, ts_ in zip(c[heads].tolist(), count[last].tolist(), stamp[last].tolist()):
            kb = distinct[code]
            stored = (keys[code], tupleNew(ValueAndTimestamp, (n_, ts_)))
            if persistent:
                setEntry(data, kb, stored)
                dirty.add(kb)
            else:
                data[kb] = stored
        source.processed += m
        node.processed += m
        toStream.processed += m
        sinkNode.processed += m
        source.stampArrays.append(t)  # record-e2e-latency: the source's and the sink's timestamps
        sinkNode.stampArrays.append(outTs)
        takeRun(queue, pg, m, int(t.max()), fromColumns)
        return m, m < n

    def run(limit: int | None) -> int:
        if limit is not None or store._sorted is not None:  # a sorted key index: the loop's put keeps it
            return scalar(limit)
        return runLoop(task, queue, vectorised, scalar)

    return run

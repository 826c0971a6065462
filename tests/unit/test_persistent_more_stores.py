"""The persistent forms of versioned stores, the suppression buffer, the outer-join store and the
stream-table join buffer (kspark.state._persistent_more) without Spark: every read the same as
the in-memory store's (TopologyTestDriver's) on the same random operations, over micro-batches,
replays of failed batches, tasks rebuilt from their checkpoint and restores from the changelog;
changelog records in Kafka Streams' layouts."""

import copy
import json
import random
import struct

import pyarrow as pa
import pytest

from kspark import Serdes
from kspark.dsl._internals.common import Change
from kspark.dsl._internals.stream_table import StreamTableJoinBufferBuilder
from kspark.processor import Record
from kspark.processor._record import RecordMetadata
from kspark.runtime.stream_task import encodeHeaders
from kspark.state import KeyValueBytesStoreSupplier, Stores
from kspark.state._join_stores import LeftOrRightValue, OuterJoinStoreBuilder
from kspark.state._join_stores import TimestampedKeyAndJoinSide as K
from kspark.state._persistent import CHANGELOG_HEADER, PersistentTaskState, makePersistent
from kspark.state._persistent_more import (PersistentListValueStore, PersistentStreamTableJoinBuffer,
                                           PersistentTimeOrderedKeyValueBuffer, PersistentVersionedKeyValueStore)
from kspark.state._restore import restoreStores
from kspark.state._suppression_buffer import SuppressionBufferStoreBuilder
from kspark.topics import LocalTopics

CKPT = "ckpt-1"
LONG = struct.Struct(">q")
INT = struct.Struct(">i")


def taskState(path, stores, logged=True, entries=1000):
    persistent = {}
    for store in stores:
        assert makePersistent(store)
        persistent[store.name()] = store
    return PersistentTaskState(persistent, {n: f"app-{n}-changelog" if logged else None for n in persistent},
                               str(path / "0_0"), 8 << 20, entries)


def versioned(name="v", retention=1000):
    return Stores.versionedKeyValueStoreBuilder(Stores.persistentVersionedKeyValueStore(name, retention),
                                                Serdes.String(), Serdes.JSON()).build()


def suppression(name="sup"):
    return SuppressionBufferStoreBuilder(name, Serdes.String(), Serdes.JSON()).build()


def outerStore(name="outer"):
    return OuterJoinStoreBuilder(KeyValueBytesStoreSupplier(name, True), Serdes.String(), Serdes.JSON(),
                                 Serdes.String()).build()


def joinBuffer(name="buf", grace=100):
    return StreamTableJoinBufferBuilder(name, Serdes.String(), Serdes.JSON(), grace).build()


class Run:
    """One store kind's in-memory store and persistent store over micro-batches: a batch commits,
    or fails and is replayed from the committed version (the in-memory store from its snapshot,
    the persistent one from its database and its checkpoint meta), or the task is rebuilt from
    its checkpoint. Committed batches' changelog records go to a local changelog topic."""

    def __init__(self, tmp_path, rng, fresh, snapshotOf=lambda s: s.snapshot()):
        self.tmp_path, self.rng, self.fresh, self.snapshotOf = tmp_path, rng, fresh, snapshotOf
        self.memory, self.persistent = fresh(), fresh()
        self.name = self.memory.name()
        self.state = taskState(tmp_path, [self.persistent], entries=rng.choice([0, 3, 1000]))
        self.committed, self.batch, self.meta = None, 0, None
        self.topics = LocalTopics(tmp_path / "topics")
        self.topics.createTopic(f"app-{self.name}-changelog", 1)
        assert self.state.open(CKPT, None) is False
        self.state.restored(CKPT, None)
        self._startBatch()

    def _startBatch(self):
        self.before = copy.deepcopy(self.snapshotOf(self.memory))

    def endBatch(self, streamTime=0):
        version = f"v{self.batch}"
        records = self.state.flush(version, self.batch, streamTime, CKPT)
        meta = json.loads(json.dumps(self.persistent._metaSnapshot()))  # the checkpoint keeps it (after the flush)
        self.state.close()
        entries = self.rng.choice([0, 3, 1000])
        if self.rng.random() < 0.3:  # the batch failed: Spark replays it from the committed version
            self.memory = self.fresh()
            self.memory.restore(copy.deepcopy(self.before))
            self.persistent = self.fresh()
            self.state = taskState(self.tmp_path, [self.persistent], entries=entries)
            self.persistent._metaRestore(self.meta)
        else:
            self.committed, self.meta = version, meta
            self._log(records)
            if self.rng.random() < 0.3:  # the task is rebuilt from its checkpoint (another worker)
                self.persistent = self.fresh()
                self.state = taskState(self.tmp_path, [self.persistent], entries=entries)
                self.persistent._metaRestore(meta)
        assert self.state.open(CKPT, self.committed)
        self.batch += 1
        self._startBatch()
        return records

    def uncache(self):
        """Forget the entries the task keeps loaded between batches beyond its bound (as after a
        flush), so that reads made by a test's checks leave the next batch to load its own."""
        self.persistent._evict(self.state.maxCachedEntries)

    def _log(self, records):
        if records:
            self.topics.append(f"app-{self.name}-changelog", 0, pa.table({
                "timestamp": [r[3] for r in records], "key": [r[1] for r in records], "value": [r[2] for r in records],
                "headers": [encodeHeaders(r[4]) for r in records]}))

    def restoredElsewhere(self):
        """A new task on another executor: the checkpoint's meta, the stores from the changelog."""
        restored = self.fresh()
        state = taskState(self.tmp_path / "elsewhere", [restored])
        restored._metaRestore(self.meta)
        assert state.open(CKPT, self.committed) is False
        restoreStores(state, self.topics, 0, CKPT, self.batch, localTopics=True, taskId="0_0")
        state.restored(CKPT, self.committed)
        return restored, state

    def close(self):
        self.state.close()


# ---------------------------------------------------------------------------- versioned stores
def checkVersioned(rng, memory, persistent, keys, now):
    for key in keys:
        assert persistent.get(key) == memory.get(key)
        for asOf in (now, now - 300, now - 999, now - 1000, now - 1001, now - 5000, rng.randrange(0, now + 10)):
            assert persistent.get(key, asOf) == memory.get(key, asOf), (key, asOf)
    assert persistent.approximateNumEntries() == memory.approximateNumEntries()


def versionedBatch(rng, memory, persistent, keys, now):
    for _ in range(rng.randrange(1, 40)):
        key, op = rng.choice(keys), rng.random()
        now += rng.randrange(0, 200)
        ts = now - rng.choice([0, 0, rng.randrange(0, 900), rng.randrange(0, 3000)])
        if op < 0.55:
            value = rng.choice([rng.randrange(100), f"s{rng.randrange(9)}", {"a": rng.randrange(5)}, [1, "x"]])
            assert persistent.put(key, value, ts) == memory.put(key, value, ts)
        elif op < 0.7:
            assert persistent.delete(key, ts) == memory.delete(key, ts)
        elif op < 0.85:
            assert persistent.get(key) == memory.get(key)
        else:
            asOf = ts - rng.randrange(0, 500)
            assert persistent.get(key, asOf) == memory.get(key, asOf)
        if rng.random() < 0.1:
            checkVersioned(rng, memory, persistent, keys, now)
    checkVersioned(rng, memory, persistent, keys, now)
    return now


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_a_persistent_versioned_store_reads_what_the_in_memory_one_reads(tmp_path, seed):
    rng = random.Random(seed)
    run = Run(tmp_path, rng, versioned)
    keys = ["a", "b", "ab", "a\x00", "zz", "k"]
    now = 10_000
    for _ in range(12):
        now = versionedBatch(rng, run.memory, run.persistent, keys, now)
        assert run.persistent._observed == run.memory._observed
        run.endBatch(now)
        if rng.random() < 0.5:
            checkVersioned(rng, run.memory, run.persistent, keys, now)
            run.uncache()  # what the check read stays out of the next batch's working set
    # a new executor: the store restored from its changelog reads the same, and goes on the same
    restored, state = run.restoredElsewhere()
    assert restored._observed == run.memory._observed
    checkVersioned(rng, run.memory, restored, keys, now)
    versionedBatch(rng, run.memory, restored, keys, now)
    state.close()
    run.close()


def test_a_versioned_store_drops_the_versions_no_read_can_see(tmp_path):
    store = versioned(retention=1000)
    state = taskState(tmp_path, [store])
    state.open(CKPT, None)
    for ts in (100, 200, 300, 1500, 2500):
        store.put("k", ts, ts)
    # observed 2500: reads as of 1500 or later see 1500 and 2500; as of an older time, the latest only
    assert store._versions.get(b"k")[1] == [1500, 2500]
    state.flush("v1", 0, 2500, CKPT)
    state.close()
    state.open(CKPT, "v1")
    assert [LONG.unpack_from(k, len(k) - 8)[0] ^ (-(1 << 63)) for k, _ in state.db.items(b"sv\x00", b"sv\x01")] == \
        [1500, 2500]
    state.close()


def test_versioned_changelog_records_are_kafkas(tmp_path):
    store = Stores.versionedKeyValueStoreBuilder(Stores.persistentVersionedKeyValueStore("v", 1000),
                                                 Serdes.String(), Serdes.Long()).build()
    state = taskState(tmp_path, [store])
    state.open(CKPT, None)
    store.put("k", 7, 5000)
    store.put("k", 8, 6000)
    store.put("k", 6, 4000)  # expired (6000 - 1000 > 4000): not stored, logged all the same
    assert store.delete("j", 5500) is None
    records = state.flush("v1", 0, 6000, CKPT)
    # ChangeLoggingVersionedKeyValueBytesStore: the key, the value's bytes (a delete: none), the
    # version's timestamp as the record's, every call in order
    assert [(k, v, ts) for _, k, v, ts, _ in records] == [
        (b"k", LONG.pack(7), 5000), (b"k", LONG.pack(8), 6000), (b"k", LONG.pack(6), 4000), (b"j", None, 5500)]
    state.close()


# ---------------------------------------------------------------------------- suppression buffer
def headersOf(rng):
    return rng.choice([(), (("h", b"x"),), (("h", b"x"), ("n", None))])


def metadataOf(rng):
    return rng.choice([RecordMetadata("in", 0, rng.randrange(100)), RecordMetadata("t\u00e9", 2, 7), None])


def evictionEntries(buffer):
    return [(key, list(entry[:8])) for key, entry in buffer.evictionOrder()]


def emitUntil(rng, memory, persistent, limit, maxRecords):
    """What the suppress processor does after a record (``_enforceConstraints``): evict by time,
    then by size, on both buffers alike."""
    orders = (memory.evictionOrder(), persistent.evictionOrder())
    assert len(orders[0]) == len(orders[1])
    i = 0
    while i < len(orders[0]) and orders[0][i][1][0] <= limit:
        assert orders[1][i][1][0] == orders[0][i][1][0] and orders[1][i][0] == orders[0][i][0]
        assert persistent.remove(orders[1][i][0]) == memory.remove(orders[0][i][0])
        i += 1
    while i < len(orders[0]) and memory.numRecords() > maxRecords:
        assert persistent.remove(orders[1][i][0]) == memory.remove(orders[0][i][0])
        i += 1
    assert persistent.numRecords() == memory.numRecords() and persistent.sizeBytes == memory.sizeBytes


def suppressionBatch(rng, memory, persistent, keys, now):
    for _ in range(rng.randrange(1, 40)):
        key = rng.choice(keys)
        now += rng.randrange(0, 50)
        ts = now - rng.randrange(0, 300)
        bufferTime = rng.choice([ts, ts + rng.randrange(0, 500)])
        old = rng.choice([None, 1, "x", {"a": 1}])
        new = rng.choice([None, 2, "y", {"b": [1, 2]}, old])
        headers, metadata = headersOf(rng), metadataOf(rng)
        for buffer in (memory, persistent):
            buffer.put(bufferTime, key, Change(new, old), ts, headers, metadata)
        assert persistent.numRecords() == memory.numRecords() and persistent.sizeBytes == memory.sizeBytes
        emitUntil(rng, memory, persistent, now - rng.choice([200, 400, 1000]), rng.choice([3, 6, 100]))
        if rng.random() < 0.1:
            assert evictionEntries(persistent) == evictionEntries(memory)
    assert evictionEntries(persistent) == evictionEntries(memory)
    return now


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_a_persistent_suppression_buffer_evicts_what_the_in_memory_one_evicts(tmp_path, seed):
    rng = random.Random(seed)
    run = Run(tmp_path, rng, suppression)
    keys = ["a", "b", "ab", "a\x00", "zz", "k", "\u00e9t\u00e9"]
    now = 10_000
    for _ in range(12):
        now = suppressionBatch(rng, run.memory, run.persistent, keys, now)
        run.endBatch(now)
        if rng.random() < 0.5:
            assert evictionEntries(run.persistent) == evictionEntries(run.memory)
            run.uncache()  # what the check read stays out of the next batch's working set
    # restored from the changelog: the same entries in the same order; the sizes are Kafka's after
    # a restore (an old value equal to the prior value counted once)
    restored, state = run.restoredElsewhere()
    got, expected = evictionEntries(restored), evictionEntries(run.memory)
    assert [(k, e[:5] + e[6:]) for k, e in got] == [(k, e[:5] + e[6:]) for k, e in expected]
    assert restored.numRecords() == run.memory.numRecords()
    assert restored.sizeBytes == sum(e[5] for _, e in got)
    state.close()
    run.close()


def test_suppression_buffer_changelog_records_are_kafkas(tmp_path):
    buffer = SuppressionBufferStoreBuilder("sup", Serdes.String(), Serdes.String()).build()
    state = taskState(tmp_path, [buffer])
    state.open(CKPT, None)
    buffer.put(10, "k", Change("new", "old"), 5, (("h", b"x"),), RecordMetadata("in", 1, 3))
    buffer.put(20, "j", Change("n", None), 6, (), RecordMetadata("in", 0, 4))
    records = state.flush("v1", 0, 99, CKPT)
    context = LONG.pack(5) + LONG.pack(3) + INT.pack(2) + b"in" + INT.pack(1) + INT.pack(1) + \
        INT.pack(1) + b"h" + INT.pack(1) + b"x"
    # InMemoryTimeOrderedKeyValueChangeBuffer.logValue: BufferValue (context, prior, old (-2: the
    # prior value), new) + the buffer time, header v=3
    k = [r for r in records if r[1] == b"k"][0]
    assert k[2] == context + INT.pack(3) + b"old" + INT.pack(-2) + INT.pack(3) + b"new" + LONG.pack(10)
    assert k[4] == (("v", b"\x03"), (CHANGELOG_HEADER, b"ckpt-1:0"))  # Kafka's own header first
    state.close()
    state.open(CKPT, "v1")
    (key, _), = [(k, e) for k, e in buffer.evictionOrder() if e[1] == b"k"]  # the key, or its bytes (dictkeys)
    assert buffer.remove(key)[2] == Change("new", "old")
    records = state.flush("v2", 1, 99, CKPT)
    assert [(r[1], r[2], r[4]) for r in records] == [(b"k", None, ((CHANGELOG_HEADER, b"ckpt-1:1"),))]
    state.close()


def test_a_suppression_buffer_reads_only_the_front_of_its_time_index(tmp_path):
    buffer = suppression()
    state = taskState(tmp_path, [buffer], entries=0)
    state.open(CKPT, None)
    for i in range(200):
        buffer.put(1000 + i, f"k{i:03d}", Change(i, None), 1000 + i, (), None)
    state.flush("v1", 0, 0, CKPT)
    state.close()
    state.open(CKPT, "v1")
    reads = []

    class Counting:  # the store's view of the database, counting its scans
        def __init__(self, backend):
            self.backend, self.prefix = backend, backend.prefix

        def get(self, key):
            return self.backend.get(key)

        def items(self, *bounds):
            reads.append(bounds)
            return self.backend.items(*bounds)

    buffer._backend = Counting(buffer._backend)
    for i in range(5):  # the suppress processor's loop: evict the due front entries
        order = buffer.evictionOrder()
        assert len(order) == 200 - i and order[0][1][0] == 1000 + i
        buffer.remove(order[0][0])
    assert buffer.evictionOrder()[0][1][0] == 1005
    assert len(reads) <= 6  # one seek to the front per eviction, none for a record that evicts nothing
    state.close()


def test_a_suppression_buffer_finds_an_entry_placed_before_the_ones_it_evicted(tmp_path):
    """An entry evicted for capacity leaves the time index from the front; a later key may go
    before it (an older buffer time): the next batch's scan starts there."""
    buffer = suppression()
    state = taskState(tmp_path, [buffer], entries=0)
    state.open(CKPT, None)
    buffer.put(100, "a", Change(1, None), 100, (), None)
    buffer.put(200, "b", Change(2, None), 200, (), None)
    state.flush("v1", 0, 0, CKPT)
    state.close()
    state.open(CKPT, "v1")
    buffer.remove(buffer.evictionOrder()[0][0])  # over capacity: "a" leaves
    assert buffer.evictionOrder()[0][1][1] == b"b"
    buffer.put(50, "c", Change(3, None), 50, (), None)
    state.flush("v2", 1, 0, CKPT)
    state.close()
    state.open(CKPT, "v2")
    assert [(e[1], e[0]) for _, e in buffer.evictionOrder()] == [(b"c", 50), (b"b", 200)]
    state.close()


# ---------------------------------------------------------------------------- outer-join store
def listEntries(store):
    return [(kv.key, kv.value) for kv in store.all()]


def checkOuter(memory, persistent, keys):
    assert listEntries(persistent) == listEntries(memory)
    for key in keys:
        assert persistent.get(key) == memory.get(key)
    assert persistent.approximateNumEntries() == memory.approximateNumEntries()


def emitLoop(memory, persistent, closeBefore, stopAfter):
    """The join's emit loop on both stores alike: scan in order, delete the closed entries, stop
    at the first entry past ``stopAfter``."""
    scans = (memory._scan(), persistent._scan())
    deleted, scanned = set(), 0
    for m, p in zip(*scans):
        assert (m[0], m[1], [memory._thawSide(v) for v in m[2]]) == (p[0], p[1], [persistent._thawSide(v) for v in p[2]])
        scanned += 1
        if m[1].timestamp > stopAfter:
            break
        if m[1].timestamp < closeBefore:
            deleted.add(m[0])
    memory._deleteScanned(scanned, deleted)
    persistent._deleteScanned(scanned, deleted)


def outerBatch(rng, memory, persistent, keys, now):
    for _ in range(rng.randrange(1, 40)):
        now += rng.randrange(0, 30)
        ts = (now - rng.choice([0, 0, rng.randrange(0, 200)])) // 25 * 25  # keys met again, across batches too
        key = K(rng.random() < 0.5, rng.choice(keys), ts)
        op = rng.random()
        if op < 0.5:
            value = rng.choice([{"a": rng.randrange(5)}, [1, 2], 3, "s"])
            side = LeftOrRightValue(value, None) if key.leftSide else LeftOrRightValue(None, f"r{rng.randrange(9)}")
            memory.put(key, side)
            persistent.put(key, side)
        elif op < 0.6:
            memory.put(key, None)
            persistent.put(key, None)
        elif op < 0.75:
            memory.putIfAbsent(key, None)
            persistent.putIfAbsent(key, None)
        elif op < 0.8:
            value = LeftOrRightValue("again", None) if key.leftSide else LeftOrRightValue(None, "again")
            memory.putIfAbsent(key, value)
            persistent.putIfAbsent(key, value)
        elif op < 0.9:
            emitLoop(memory, persistent, now - rng.randrange(0, 150), now - rng.randrange(0, 100))
        else:
            assert persistent.get(key) == memory.get(key)
        if rng.random() < 0.1:
            checkOuter(memory, persistent, [])
    return now


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_a_persistent_outer_join_store_reads_what_the_in_memory_one_reads(tmp_path, seed):
    rng = random.Random(seed)
    run = Run(tmp_path, rng, outerStore)
    keys = ["a", "b", "ab", "a\x00", "zz"]
    now = 1000
    for _ in range(12):
        now = outerBatch(rng, run.memory, run.persistent, keys, now)
        probe = [K(side, k, now - d) for side in (True, False) for k in keys for d in (0, 5, 50)]
        checkOuter(run.memory, run.persistent, probe)
        run.endBatch(now)
        if rng.random() < 0.5:
            checkOuter(run.memory, run.persistent, probe)
            run.uncache()  # what the check read stays out of the next batch's working set
    restored, state = run.restoredElsewhere()
    checkOuter(run.memory, restored, probe)
    outerBatch(rng, run.memory, restored, keys, now)
    checkOuter(run.memory, restored, probe)
    state.close()
    run.close()


def test_outer_join_store_changelog_records_are_kafkas(tmp_path):
    store = OuterJoinStoreBuilder(KeyValueBytesStoreSupplier("outer", True), Serdes.String(), Serdes.String(),
                                  Serdes.Long()).build()
    state = taskState(tmp_path, [store])
    state.open(CKPT, None)
    store.put(K(True, "k", 5), LeftOrRightValue("A", None))
    store.put(K(True, "k", 5), LeftOrRightValue("B", None))
    store.put(K(False, "j", 7), LeftOrRightValue(None, 3))
    records = state.flush("v1", 0, 9, CKPT)
    # TimestampedKeyAndJoinSide [ts][side][key] -> ListSerde [1][count] + [length][LeftOrRightValue
    # = side byte + value] per value (ChangeLoggingListValueBytesStore: the whole list)
    assert sorted((k, v, ts) for _, k, v, ts, _ in records) == [
        (LONG.pack(5) + b"\x01k", b"\x01" + INT.pack(2) + INT.pack(2) + b"\x01A" + INT.pack(2) + b"\x01B", 5),
        (LONG.pack(7) + b"\x00j", b"\x01" + INT.pack(1) + INT.pack(9) + b"\x00" + LONG.pack(3), 7)]
    state.close()
    state.open(CKPT, "v1")
    store.putIfAbsent(K(True, "k", 5), None)
    assert [(k, v) for _, k, v, _, _ in state.flush("v2", 1, 9, CKPT)] == [(LONG.pack(5) + b"\x01k", None)]
    state.close()


def test_the_emit_loop_scans_from_the_first_live_entry(tmp_path):
    store = outerStore()
    state = taskState(tmp_path, [store])
    state.open(CKPT, None)
    for ts in range(100):
        store.put(K(True, "k", ts), LeftOrRightValue(ts, None))
    state.flush("v1", 0, 0, CKPT)
    state.close()
    state.open(CKPT, "v1")
    emitted = [kb for (kb, _, _), _ in zip(store._scan(), range(50))]
    store._deleteScanned(len(emitted), set(emitted))
    state.flush("v2", 1, 0, CKPT)
    state.close()
    assert state.open(CKPT, "v2")
    assert store._lower == LONG.pack(49) + b"\x01k\x00"
    assert next(store._scan())[1] == K(True, "k", 50)
    store.put(K(True, "k", 3), LeftOrRightValue("late", None))  # an older key moves the bound back
    assert [kv.key.timestamp for kv in store.all()][:2] == [3, 50]
    state.close()


# ---------------------------------------------------------------------------- stream-table join buffer
def evicted(pairs):
    return [((r.key(), r.value(), r.timestamp(), tuple(map(tuple, r.headers()))), meta) for r, meta in pairs]


def joinBufferBatch(rng, memory, persistent, keys, now):
    for _ in range(rng.randrange(1, 40)):
        now += rng.randrange(0, 30)
        ts = now - rng.choice([0, rng.randrange(0, 150), rng.randrange(0, 400)])
        record = Record(rng.choice(keys), rng.choice([{"a": rng.randrange(5)}, 1, "x"]), ts, headersOf(rng))
        meta = metadataOf(rng)
        accepted = memory.put(record, meta)
        assert persistent.put(record, meta) == accepted
        if accepted:
            assert evicted(persistent.evict()) == evicted(memory.evict())
        assert persistent.numRecords() == memory.numRecords()
    return now


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_a_persistent_stream_table_join_buffer_evicts_what_the_in_memory_one_evicts(tmp_path, seed):
    rng = random.Random(seed)
    run = Run(tmp_path, rng, joinBuffer)
    keys = ["a", "b", "ab", "a\x00"]
    now = 1000
    for _ in range(12):
        now = joinBufferBatch(rng, run.memory, run.persistent, keys, now)
        run.endBatch(now)
        assert run.persistent._seqnum == run.memory._seqnum and run.persistent._observed == run.memory._observed
    restored, state = run.restoredElsewhere()
    assert restored.numRecords() == run.memory.numRecords()
    joinBufferBatch(rng, run.memory, restored, keys, now)
    run.memory._observed += 10_000
    restored._observed += 10_000
    assert evicted(restored.evict()) == evicted(run.memory.evict())  # everything left, in order
    state.close()
    run.close()


def test_stream_table_join_buffer_changelog_records_are_kafkas(tmp_path):
    buffer = StreamTableJoinBufferBuilder("buf", Serdes.String(), Serdes.String(), 10).build()
    state = taskState(tmp_path, [buffer])
    state.open(CKPT, None)
    assert buffer.put(Record("k", "v", 100, (("h", None),)), RecordMetadata("s", 0, 42))
    records = state.flush("v1", 0, 100, CKPT)
    # RocksDBTimeOrderedKeyValueBuffer: key [0x00][timestamp][key][seqnum], value BufferValue (the
    # record's context, null prior and old, the value) + 8 zero bytes
    context = LONG.pack(100) + LONG.pack(42) + INT.pack(1) + b"s" + INT.pack(0) + INT.pack(1) + INT.pack(1) + b"h" + \
        INT.pack(-1)
    assert [(k, v) for _, k, v, _, _ in records] == [
        (b"\x00" + LONG.pack(100) + b"k" + INT.pack(1), context + INT.pack(-1) + INT.pack(-1) + INT.pack(1) + b"v"
         + LONG.pack(0))]
    state.close()
    state.open(CKPT, "v1")
    assert buffer.put(Record("j", "w", 200, ()), RecordMetadata("s", 0, 43))
    assert [(r.key(), r.value()) for r, _ in buffer.evict()] == [("k", "v")]
    records = state.flush("v2", 1, 200, CKPT)
    assert [(k, v is None) for _, k, v, _, _ in records] == [
        (b"\x00" + LONG.pack(100) + b"k" + INT.pack(1), True), (b"\x00" + LONG.pack(200) + b"j" + INT.pack(2), False)]
    state.close()


def test_the_kinds_are_registered():
    for build, cls in ((versioned, PersistentVersionedKeyValueStore), (suppression, PersistentTimeOrderedKeyValueBuffer),
                       (outerStore, PersistentListValueStore), (joinBuffer, PersistentStreamTableJoinBuffer)):
        store = build()
        assert makePersistent(store) and type(store) is cls


def test_a_versioned_store_reads_as_of_a_time_through_the_interactive_query_view(tmp_path):
    from kspark.state._persistent import MergedKeyValueView, readOnlyStore
    from kspark.state._rocksdb import pendingWrites

    store = versioned(retention=1000)
    state = taskState(tmp_path, [store])
    state.open(CKPT, None)
    store.put("k", "old", 100)
    store.put("k", "new", 200)
    state.flush("v1", 0, 200, CKPT)  # pending: read as committed by the view (withPending)
    view = MergedKeyValueView([readOnlyStore(versioned(retention=1000), state.db.db, pendingWrites(state.db.db, state.db.meta))])
    assert view.get("k").value() == "new" and view.get("k", 150).value() == "old" and view.get("k", 50) is None
    assert view.get("j") is None
    state.close()


def test_the_fk_join_subscription_store_prefix_scans_the_same_when_persistent(tmp_path):
    """The FK-join subscription store is a TimestampedKeyValueStore of CombinedKey bytes (already
    persistent): its prefix scan by foreign key reads the same over batches."""
    from kspark.state import ValueAndTimestamp

    def build():
        return Stores.timestampedKeyValueStoreBuilder(Stores.persistentTimestampedKeyValueStore("subs"),
                                                      Serdes.ByteArray(), Serdes.String()).build()

    def combined(fk, pk):
        return INT.pack(len(fk)) + fk + pk

    rng = random.Random(5)
    memory, persistent = build(), build()
    state = taskState(tmp_path, [persistent], entries=0)
    state.open(CKPT, None)
    fks, pks = [b"a", b"ab", b"b", b"", b"a\x00"], [b"1", b"2", b"12", b""]
    for batch in range(6):
        for _ in range(30):
            key = combined(rng.choice(fks), rng.choice(pks))
            if rng.random() < 0.7:
                value = ValueAndTimestamp(f"w{rng.randrange(9)}", rng.randrange(1000))
                memory.put(key, value)
                persistent.put(key, value)
            else:
                assert persistent.delete(key) == memory.delete(key)
            fk = rng.choice(fks)
            prefix = INT.pack(len(fk)) + fk
            assert list(persistent.prefixScanBytes(prefix)) == list(memory.prefixScanBytes(prefix))
        state.flush(f"v{batch}", batch, 0, CKPT)
        state.close()
        assert state.open(CKPT, f"v{batch}")
        for fk in fks:
            prefix = INT.pack(len(fk)) + fk
            got = list(persistent.prefixScanBytes(prefix))
            assert got == list(memory.prefixScanBytes(prefix)) and all(type(kv.key) is bytes for kv in got)
    state.close()

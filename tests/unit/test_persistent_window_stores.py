"""The Spark host's persistent window stores (kspark.state._persistent_windows) without Spark: the
same reads as the in-memory WindowStore and DuplicatesWindowStore (TopologyTestDriver's) over
micro-batches, replays, rebuilt tasks and restores from the changelog, the changelog records in
Kafka's layout, and the merged views of interactive queries."""

import copy
import random
import struct

import pyarrow as pa
import pytest

from kspark import Serdes
from kspark.runtime.stream_task import encodeHeaders
from kspark.state import Stores, ValueAndTimestamp
from kspark.state._changelog import ChangelogRecord
from kspark.state._persistent import CHANGELOG_HEADER, PersistentTaskState, makePersistent
from kspark.state._persistent_windows import PersistentDuplicatesWindowStore, PersistentWindowStore
from kspark.state._restore import restoreStores
from kspark.topics import LocalTopics

CKPT = "ckpt-1"
BIG = 1 << 60


def windowStore(name="w", retention=1_000, size=100, timestamped=False, persistent=True, valueSerde=None,
                duplicates=False, timeFirst=False):
    supplier = (Stores.persistentWindowStore if persistent else Stores.inMemoryWindowStore)(name, retention, size,
                                                                                          duplicates)
    builder = (Stores.timestampedWindowStoreBuilder if timestamped else Stores.windowStoreBuilder)(
        supplier, Serdes.String(), valueSerde or Serdes.JSON())
    builder._timeFirst = timeFirst  # an emit-final aggregation's store (Kafka's time-ordered one)
    return builder.build()


def taskState(path, stores, logged=True, entries=1000):
    persistent = {}
    for store in stores:
        assert makePersistent(store)
        persistent[store.name()] = store
    return PersistentTaskState(persistent, {n: f"app-{n}-changelog" if logged else None for n in persistent},
                               str(path), 8 << 20, entries)


def windowsOf(it):
    return [(kv.key.key(), kv.key.window().start(), kv.key.window().end(), kv.value) for kv in it]


def test_the_window_stores_have_persistent_forms():
    assert type(windowStore()) is not PersistentWindowStore
    store, dups = windowStore(), windowStore(duplicates=True)
    assert makePersistent(store) and type(store) is PersistentWindowStore
    assert makePersistent(dups) and type(dups) is PersistentDuplicatesWindowStore
    with pytest.raises(TypeError, match="persistent"):
        store.snapshot()


# ------------------------------------------------------------------------------ WindowStore
@pytest.mark.parametrize("seed,timestamped,persistentSemantics,timeFirst", [
    (1, True, True, False), (2, False, True, False), (3, True, False, False), (4, False, False, False),
    (5, True, True, True), (6, True, True, True), (7, True, True, False)])
def test_a_persistent_window_store_reads_what_the_in_memory_one_reads(tmp_path, seed, timestamped,
                                                                       persistentSemantics, timeFirst):
    """The in-memory WindowStore (TopologyTestDriver's) and the RocksDB one on the same random puts,
    deletes and reads (the DSL's hot paths and the public ones) and expiry, over micro-batches,
    replays of failed batches, tasks rebuilt from their checkpoint meta, and restores from the
    changelog records of the committed batches; ``timeFirst``: both as an emit-final aggregation's
    store, which keeps the window starting exactly at ``observed - retention`` (issue 36 item 5)."""
    rng = random.Random(seed)
    retention, size = rng.choice([(1_000, 100), (500, 500), (3_000, 250)])

    def fresh():
        return windowStore(retention=retention, size=size, timestamped=timestamped, persistent=persistentSemantics,
                           timeFirst=timeFirst)

    def entries():
        return rng.choice([0, 5, 1000])

    memory, persistent = fresh(), fresh()
    dirs = iter(range(1000))
    path = tmp_path / str(next(dirs))
    state = taskState(path, [persistent], entries=entries())
    committed, batch = None, 0
    changelog = []  # the records of the committed batches, in order
    state.open(CKPT, committed)
    keys = ["a", "b", "ab", "a\x00", "zz", "k"]
    now = 1_000

    def value():
        v = rng.choice([rng.randrange(100), f"s{rng.randrange(9)}", {"n": rng.randrange(5)}, [1, "x"], None])
        if timestamped and v is not None:
            return ValueAndTimestamp(v, now - rng.randrange(0, 50))
        return v

    def check():
        for key in keys:
            kb = memory._keyBytes(key)
            start = rng.choice([now - rng.randrange(0, retention + 200), now - retention, now - retention + 1])
            assert persistent._fetchBytes(kb, start) == memory._fetchBytes(kb, start)
            assert persistent.fetch(key, start) == memory.fetch(key, start)
            lo = now - rng.randrange(0, 2 * retention)
            hi = lo + rng.randrange(0, 2 * retention)
            assert persistent._windowsOfKey(kb, lo, hi) == memory._windowsOfKey(kb, lo, hi)
            assert list(persistent.fetch(key, lo, hi)) == list(memory.fetch(key, lo, hi))
            assert list(persistent.backwardFetch(key, lo, hi)) == list(memory.backwardFetch(key, lo, hi))
        lo = max(0, now - rng.randrange(0, 2 * retention))
        hi = lo + rng.randrange(0, 2 * retention)
        assert windowsOf(persistent.fetchAll(lo, hi)) == windowsOf(memory.fetchAll(lo, hi))
        assert windowsOf(persistent.fetchAll(0, BIG)) == windowsOf(memory.fetchAll(0, BIG))
        assert windowsOf(persistent.all()) == windowsOf(memory.all())

    for _ in range(14):
        before = copy.deepcopy((memory.snapshot(), memory._purgedAt))
        meta = persistent._metaSnapshot()
        for _ in range(rng.randrange(1, 40)):
            key = rng.choice(keys)
            now += rng.choice([0, 0, rng.randrange(0, 120), rng.randrange(0, retention)])
            start = max(0, now - rng.randrange(0, retention + retention // 2))
            v = value()
            if rng.random() < 0.5:
                for store in (memory, persistent):
                    store._putBytes(store._keyBytes(key), key, v, start)
            else:
                memory.put(key, v, start)
                persistent.put(key, v, start)
            if rng.random() < 0.15:
                check()
        check()
        assert persistent._observed == memory._observed
        version = f"v{batch}"
        records = state.flush(version, batch, now, CKPT)
        state.close()
        outcome = rng.random()
        if outcome < 0.25:  # the batch failed: Spark replays it from the committed version and its meta
            memory = fresh()
            memory.restore(before[0])
            memory._purgedAt = before[1]
            persistent = fresh()
            state = taskState(path, [persistent], entries=entries())
            persistent._metaRestore(meta)
            assert state.open(CKPT, committed)
        else:
            committed = version
            changelog += [ChangelogRecord(k, v, ts) for _, k, v, ts, _ in records]
            if outcome < 0.45:  # the task is rebuilt from its checkpoint (another worker)
                meta = persistent._metaSnapshot()
                persistent = fresh()
                state = taskState(path, [persistent], entries=entries())
                persistent._metaRestore(meta)
                assert state.open(CKPT, committed)
            elif outcome < 0.6:  # a new executor: the store is restored from its changelog
                meta = persistent._metaSnapshot()
                persistent = fresh()
                path = tmp_path / str(next(dirs))
                state = taskState(path, [persistent], entries=entries())
                persistent._metaRestore(meta)
                assert not state.open(CKPT, committed)
                state.restoreRecords("w", changelog)
                state.restored(CKPT, committed)
            else:
                assert state.open(CKPT, committed)
        check()
        batch += 1
    # expiry: the database holds no window below the retention bound once the batch is applied
    state.flush("last", batch, now, CKPT)
    state.close()
    state.open(CKPT, "last")
    bound = persistent._observed - retention
    starts = [struct.unpack(">Q", k[-8:])[0] - (1 << 63) for k, _ in state.db.items(b"s", b"t")
              if k.startswith(b"sw\x00k")]
    assert all(s >= bound for s in starts)
    assert len(starts) == len(list(state.db.items(b"sw\x00t", b"sw\x00u")))  # one index entry per window
    state.close()


def test_windows_a_flush_applied_at_once_evicted_are_read_back_from_the_database(tmp_path):
    # The continuous host's stream threads apply each commit at once and keep their stores open
    # (test_persistent_stores.py has the key-value and session stores): windows and duplicates
    # evicted from a working set of one entry are read back from the database (a fetch returns
    # what was put, rule E-2's contract for windows).
    windows, dups = windowStore("w"), windowStore("j", duplicates=True)
    state = taskState(tmp_path / "db", [windows, dups], entries=1)
    state.open(CKPT, None)
    state.restored(CKPT, None)
    for i in range(3):
        windows.put(f"k{i}", i, 100 * i)
        dups.put(f"k{i}", i, 100 * i)
        dups.put(f"k{i}", i + 10, 100 * i)
    state.flush("", 0, 300, CKPT, applyNow=True)
    windows.put("k0", 7, 0)
    state.flush("", 1, 300, CKPT, applyNow=True)
    assert [[(kv.key, kv.value) for kv in windows.fetch(f"k{i}", 0, 1_000)] for i in range(3)] == [
        [(0, 7)], [(100, 1)], [(200, 2)]]
    assert [[(kv.key, kv.value) for kv in dups.fetch(f"k{i}", 0, 1_000)] for i in range(3)] == [
        [(0, 0), (0, 10)], [(100, 1), (100, 11)], [(200, 2), (200, 12)]]
    state.close()


def test_window_changelog_records_are_kafkas(tmp_path):
    plain = windowStore("plain", valueSerde=Serdes.Long())
    stamped = windowStore("stamped", timestamped=True, valueSerde=Serdes.Long())
    state = taskState(tmp_path / "db", [plain, stamped])
    state.open(CKPT, None)
    plain.put("k", 7, 1_000)
    plain.put("k", 8, 1_000)  # the batch's last value of a window is logged
    plain.put("j", 9, 900)
    plain.put("j", None, 900)  # a delete: a tombstone
    stamped.put("k", ValueAndTimestamp(5, 1_234), 1_200)
    records = state.flush("v1", 0, 1_500, CKPT)
    state.close()
    # WindowKeySchema.toStoreKeyBinary: key, 8-byte start, 4-byte seqnum 0; a timestamped store logs
    # the value without its timestamp, which is the record's (ChangeLoggingTimestampedWindowBytesStore)
    assert sorted((t, k, v, ts) for t, k, v, ts, _ in records) == [
        ("app-plain-changelog", b"j" + struct.pack(">qi", 900, 0), None, 1_500),
        ("app-plain-changelog", b"k" + struct.pack(">qi", 1_000, 0), struct.pack(">q", 8), 1_500),
        ("app-stamped-changelog", b"k" + struct.pack(">qi", 1_200, 0), struct.pack(">q", 5), 1_234)]
    assert {h for *_, h in records} == {((CHANGELOG_HEADER, b"ckpt-1:0"),)}


def _changelogTopic(tmp_path, topic, records, tag):
    topics = LocalTopics(tmp_path / "topics")
    topics.createTopic(topic, 1)
    header = encodeHeaders(((CHANGELOG_HEADER, tag.encode()),))
    topics.append(topic, 0, pa.table({
        "timestamp": [ts for _, _, _, ts, _ in records], "key": [k for _, k, _, _, _ in records],
        "value": [v for _, _, v, _, _ in records], "headers": [header] * len(records)}))
    return topics


def test_a_window_store_restored_from_its_changelog_drops_the_expired_windows(tmp_path):
    store = windowStore(retention=1_000, valueSerde=Serdes.Long())
    state = taskState(tmp_path / "db", [store])
    state.open(CKPT, None)
    store.put("a", 1, 100)
    store.put("b", 2, 500)
    store.put("a", 3, 1_400)
    records = state.flush("v1", 0, 1_400, CKPT)
    state.close()
    state.open(CKPT, "v1")
    store.put("c", 4, 1_550)  # observed 1550: windows starting before 550 expire
    assert windowsOf(store.all()) == [("a", 1_400, 1_500, 3), ("c", 1_550, 1_650, 4)]
    records += state.flush("v2", 1, 1_550, CKPT)
    state.close()

    topics = _changelogTopic(tmp_path, "app-w-changelog", records, f"{CKPT}:0")
    restored = windowStore(retention=1_000, valueSerde=Serdes.Long())
    state = taskState(tmp_path / "elsewhere", [restored])
    restored._metaRestore(store._metaSnapshot())
    assert state.open(CKPT, "v2") is False
    assert restoreStores(state, topics, 0, CKPT, 2, localTopics=True, taskId="0_0") == 4
    state.restored(CKPT, "v2")
    assert windowsOf(restored.all()) == [("a", 1_400, 1_500, 3), ("c", 1_550, 1_650, 4)]
    assert windowsOf(restored.fetchAll(0, BIG)) == [("a", 1_400, 1_500, 3), ("c", 1_550, 1_650, 4)]
    keys = [k for k, _ in state.db.items(b"s", b"t")]
    assert len(keys) == 4  # the two live windows and their time index entries: a (100) and b (500) are gone
    state.close()


@pytest.mark.parametrize("persistent", [False, True])
@pytest.mark.parametrize("timeFirst", [False, True])
def test_the_retention_edge_of_a_time_first_store_is_one_ms_earlier(tmp_path, persistent, timeFirst):
    """Issue 36 item 5: with retention 1000 and windows put up to start 1100, Kafka's default
    window stores hide the window starting at 100 (reads from ``observed - retention + 1``) and
    refuse a put there; the time-ordered store of an emit-final aggregation
    (``AbstractDualSchemaRocksDBSegmentedBytesStore.getActualFrom``/``get`` for the time-first
    schema) still shows and takes it. Before 100 both hide and refuse. In memory and in RocksDB."""
    store = windowStore(retention=1_000, timestamped=True, valueSerde=Serdes.Long(), timeFirst=timeFirst)
    if persistent:
        state = taskState(tmp_path, [store])
        state.open(CKPT, None)
    a = store._keyBytes("a")
    store.put("a", ValueAndTimestamp(1, 150), 100)
    store.put("a", ValueAndTimestamp(2, 1_150), 1_100)
    edge = [("a", 100, 200, ValueAndTimestamp(1, 150))] if timeFirst else []
    assert windowsOf(store.fetchAll(0, BIG)) == edge + [("a", 1_100, 1_200, ValueAndTimestamp(2, 1_150))]
    assert windowsOf(store.all()) == windowsOf(store.fetchAll(0, BIG))
    assert store.fetch("a", 100) == store._fetchBytes(a, 100) == (ValueAndTimestamp(1, 150) if timeFirst else None)
    assert store._windowsOfKey(a, 0, 1_000) == [(start, v) for _, start, _, v in edge]
    assert [(kv.key, kv.value) for kv in store.fetch("a", 0, 1_000)] == [(start, v) for _, start, _, v in edge]
    store.put("a", ValueAndTimestamp(3, 160), 100)  # a put at the edge: kept by the time-first store only
    store.put("b", ValueAndTimestamp(4, 170), 99)  # before it: refused by both
    assert store._fetchBytes(a, 100) == (ValueAndTimestamp(3, 160) if timeFirst else None)
    assert store.fetch("b", 99) is None and windowsOf(store.fetchAll(0, 99)) == []
    if persistent:
        state.flush("v1", 0, 1_100, CKPT)
        state.close()


# ------------------------------------------------------------------------------ DuplicatesWindowStore
@pytest.mark.parametrize("seed,persistentSemantics", [(1, True), (2, False), (3, True), (4, False), (5, True)])
def test_a_persistent_duplicates_store_reads_what_the_in_memory_one_reads(tmp_path, seed, persistentSemantics):
    """The stream-stream join's store (in-memory DuplicatesWindowStore vs RocksDB) on the same random
    puts (null and expired ones too) and reads, over micro-batches, replays, rebuilt tasks and
    restores from the changelog."""
    rng = random.Random(seed)
    retention = rng.choice([1_000, 130_000])

    def fresh():
        store = windowStore("j", retention=retention, size=100, persistent=persistentSemantics, duplicates=True)
        store.drops = 0

        def dropped():
            store.drops += 1

        store.droppedCounter = dropped
        return store

    def entries():
        return rng.choice([0, 2, 1000])

    def plain(entriesOf):
        return [(e[0], e[2], memory._thaw(e[3])) for e in entriesOf]

    memory, persistent = fresh(), fresh()
    dirs = iter(range(1000))
    path = tmp_path / str(next(dirs))
    state = taskState(path, [persistent], entries=entries())
    committed, batch, changelog = None, 0, []
    state.open(CKPT, committed)
    keys = ["a", "b", "ab", "a\x00"]
    now = 200_000

    def check():
        for key in keys:
            kb = memory._keyBytes(key)
            lo = now - rng.randrange(0, 2 * retention)
            hi = lo + rng.randrange(0, retention)
            assert plain(persistent._fetchEntries(kb, lo, hi)) == plain(memory._fetchEntries(kb, lo, hi))
            assert list(persistent.fetch(key, lo, hi)) == list(memory.fetch(key, lo, hi))
            assert list(persistent.backwardFetch(key, lo, hi)) == list(memory.backwardFetch(key, lo, hi))
            assert persistent.fetch(key, lo) == memory.fetch(key, lo)
        lo = now - rng.randrange(0, 2 * retention)
        hi = lo + rng.randrange(0, 2 * retention)
        assert windowsOf(persistent.fetchAll(lo, hi)) == windowsOf(memory.fetchAll(lo, hi))
        assert windowsOf(persistent.all()) == windowsOf(memory.all())

    for _ in range(14):
        before = copy.deepcopy(memory.snapshot())
        meta = persistent._metaSnapshot()
        for _ in range(rng.randrange(1, 40)):
            key = rng.choice(keys)
            now += rng.choice([0, rng.randrange(0, 100), rng.randrange(0, retention // 2)])
            ts = max(0, now - rng.choice([0, rng.randrange(0, retention // 4), rng.randrange(0, 2 * retention)]))
            v = rng.choice([rng.randrange(5), f"v{rng.randrange(3)}", {"x": 1}, None])
            if rng.random() < 0.5:
                memory.put(key, v, ts)
                persistent.put(key, v, ts)
            else:
                for store in (memory, persistent):
                    store._put(store._keyBytes(key), key, v, ts)
            if rng.random() < 0.15:
                check()
        check()
        assert (persistent._observed, persistent.drops) == (memory._observed, memory.drops)
        version = f"v{batch}"
        records = state.flush(version, batch, now, CKPT)
        state.close()
        outcome = rng.random()
        if outcome < 0.25:  # failed: replay from the committed version
            memory, drops = fresh(), memory.drops
            memory.restore(before)
            memory.drops = drops
            persistent, drops = fresh(), persistent.drops
            persistent.drops = drops
            state = taskState(path, [persistent], entries=entries())
            persistent._metaRestore(meta)
            assert state.open(CKPT, committed)
        else:
            committed = version
            changelog += [ChangelogRecord(k, v, ts) for _, k, v, ts, _ in records]
            if outcome < 0.6:  # rebuilt from the checkpoint meta, here or restored on a new executor
                meta, drops = persistent._metaSnapshot(), persistent.drops
                persistent = fresh()
                persistent.drops = drops
                if outcome < 0.4:
                    state = taskState(path, [persistent], entries=entries())
                    persistent._metaRestore(meta)
                    assert state.open(CKPT, committed)
                else:
                    path = tmp_path / str(next(dirs))
                    state = taskState(path, [persistent], entries=entries())
                    persistent._metaRestore(meta)
                    assert not state.open(CKPT, committed)
                    state.restoreRecords("j", changelog)
                    state.restored(CKPT, committed)
            else:
                assert state.open(CKPT, committed)
        check()
        batch += 1
    state.close()


def test_duplicates_changelog_records_are_kafkas_one_per_put(tmp_path):
    """ChangeLoggingWindowBytesStore with retainDuplicates: every put logged with seqnum
    ``(seqnum + 1) & 0x7FFFFFFF``, a null put (skipped by RocksDBWindowStore) as a tombstone and an
    expired put with its value; the record timestamp is the put's (the joined record's)."""
    store = windowStore("j", retention=1_000, valueSerde=Serdes.Long(), duplicates=True)
    state = taskState(tmp_path / "db", [store])
    state.open(CKPT, None)
    store.put("k", 1, 100_000)
    store.put("k", 2, 100_000)
    store.put("k", None, 100_100)
    store.put("k", 3, 10_000)  # expired: dropped, but logged
    store.put("j", 4, 100_200)
    records = state.flush("v1", 0, 100_200, CKPT)
    assert [(k, v, ts) for _, k, v, ts, _ in records] == [
        (b"k" + struct.pack(">qi", 100_000, 1), struct.pack(">q", 1), 100_000),
        (b"k" + struct.pack(">qi", 100_000, 2), struct.pack(">q", 2), 100_000),
        (b"k" + struct.pack(">qi", 100_100, 3), None, 100_100),
        (b"k" + struct.pack(">qi", 10_000, 4), struct.pack(">q", 3), 10_000),
        (b"j" + struct.pack(">qi", 100_200, 5), struct.pack(">q", 4), 100_200)]
    state.close()
    state.open(CKPT, "v1")
    assert [(kv.key, kv.value) for kv in store.fetch("k", 0, BIG)] == [(100_000, 1), (100_000, 2)]
    store._seq = 0x7FFFFFFF  # Kafka's seqnum wraps to 0 (Java int & 0x7FFFFFFF); the local order does not
    store.put("k", 5, 100_000)
    records = state.flush("v2", 1, 100_200, CKPT)
    assert [k for _, k, _, _, _ in records] == [b"k" + struct.pack(">qi", 100_000, 0)]
    state.close()
    state.open(CKPT, "v2")
    assert [(kv.key, kv.value) for kv in store.fetch("k", 0, BIG)] == [(100_000, 1), (100_000, 2), (100_000, 5)]
    state.close()


def test_a_timestamped_duplicates_store_keeps_value_and_timestamp_and_logs_kafkas_records(tmp_path):
    """``Stores.timestampedWindowStoreBuilder`` over a window store with ``retainDuplicates`` (rule
    E-4; test_changelog_layouts.py compares its records with Kafka's own store): its
    values are ``ValueAndTimestamp`` in both forms, also read back from the database and after a
    restore, and its changelog records are ``ChangeLoggingTimestampedWindowBytesStore``'s (the
    value without its timestamp, which is the record's; the key's seqnum counts the puts). Before,
    the builder left the store plain: the persistent one wrote the JSON list ``[value, timestamp]``
    and read it back as a list."""
    def stamped(persistent=True):
        supplier = (Stores.persistentTimestampedWindowStore if persistent else Stores.inMemoryWindowStore)(
            "j", 1_000, 100, True)
        return Stores.timestampedWindowStoreBuilder(supplier, Serdes.String(), Serdes.Long()).build()

    memory, store = stamped(persistent=False), stamped()
    assert type(store) is not PersistentDuplicatesWindowStore  # made persistent by the host (taskState)
    state = taskState(tmp_path / "db", [store])
    assert type(store) is PersistentDuplicatesWindowStore
    state.open(CKPT, None)
    state.restored(CKPT, None)
    for s in (memory, store):
        s.put("k", ValueAndTimestamp(1, 100_010), 100_000)
        s.put("k", ValueAndTimestamp(2, 100_020), 100_000)
    records = state.flush("v1", 0, 100_000, CKPT)
    assert [(k, v, ts) for _, k, v, ts, _ in records] == [
        (b"k" + struct.pack(">qi", 100_000, 1), struct.pack(">q", 1), 100_010),
        (b"k" + struct.pack(">qi", 100_000, 2), struct.pack(">q", 2), 100_020)]
    state.close()
    expected = [(100_000, ValueAndTimestamp(1, 100_010)), (100_000, ValueAndTimestamp(2, 100_020))]
    assert [(kv.key, kv.value) for kv in memory.fetch("k", 0, BIG)] == expected
    state.open(CKPT, "v1")
    assert [(kv.key, kv.value) for kv in store.fetch("k", 0, BIG)] == expected
    state.close()

    restored = stamped()
    state = taskState(tmp_path / "other", [restored])
    assert state.open("ckpt-2", None) is False
    restoreStores(state, _changelogTopic(tmp_path, "app-j-changelog", records, f"{CKPT}:0"), 0, "ckpt-2", 1,
                  localTopics=False, taskId="0_0")
    state.restored("ckpt-2", None)
    assert [(kv.key, kv.value) for kv in restored.fetch("k", 0, BIG)] == expected
    state.close()


def test_a_duplicates_store_restored_from_its_changelog_drops_the_expired_values(tmp_path):
    store = windowStore("j", retention=1_000, valueSerde=Serdes.Long(), duplicates=True, persistent=False)
    state = taskState(tmp_path / "db", [store])
    state.open(CKPT, None)
    store.put("k", 1, 1_000)
    store.put("k", 2, 1_900)
    store.put("k", 3, 2_500)  # observed 2500: 1000 is gone
    store.put("k", 4, 1_200)  # expired: logged, not stored
    records = state.flush("v1", 0, 2_500, CKPT)
    state.close()
    topics = _changelogTopic(tmp_path, "app-j-changelog", records, f"{CKPT}:0")
    restored = windowStore("j", retention=1_000, valueSerde=Serdes.Long(), duplicates=True, persistent=False)
    state = taskState(tmp_path / "elsewhere", [restored])
    restored._metaRestore(store._metaSnapshot())
    assert not state.open(CKPT, "v1")
    restoreStores(state, topics, 0, CKPT, 1, localTopics=True, taskId="0_0")
    state.restored(CKPT, "v1")
    assert [(kv.key, kv.value) for kv in restored.fetch("k", 0, BIG)] == [(1_900, 2), (2_500, 3)]
    assert len(list(state.db.items(b"s", b"t"))) == 4  # two values, their index entries
    restored.put("k", 5, 1_900)  # after a restore, a new value of a time still comes after the restored ones
    assert [(kv.key, kv.value) for kv in restored.fetch("k", 0, BIG)] == [(1_900, 2), (1_900, 5), (2_500, 3)]
    state.close()


# ------------------------------------------------------------------------------ interactive queries
def test_merged_views_read_the_window_and_session_stores_of_several_tasks(tmp_path):
    from kspark.spark._interactive import _TaskStoresView, _viewOf

    def build(kind):
        if kind == "w":
            return windowStore("w", retention=10_000, size=100, timestamped=True, valueSerde=Serdes.Long())
        if kind == "j":
            return windowStore("j", retention=10_000, size=100, valueSerde=Serdes.Long(), duplicates=True)
        return Stores.sessionStoreBuilder(Stores.persistentSessionStore("s", 10_000), Serdes.String(),
                                          Serdes.Long()).build()

    memory = {kind: build(kind) for kind in "wjs"}
    paths = []
    for task, keys in enumerate([["a", "c"], ["b"]]):
        stores = {kind: build(kind) for kind in "wjs"}
        state = taskState(tmp_path / f"0_{task}", stores.values())
        paths.append(str(tmp_path / f"0_{task}"))
        state.open(CKPT, None)
        for i, key in enumerate(keys):
            for start in (100 * i, 100 * i + 1_000):
                for store in (stores["w"], memory["w"]):
                    store.put(key, ValueAndTimestamp(start + 1, start + 5), start)
                for store in (stores["j"], memory["j"]):
                    store.put(key, start, start)
                    store.put(key, start + 1, start)
                for store in (stores["s"], memory["s"]):
                    store._putEntry(start + 50, store._keyBytes(key), start, key, start)
        state.flush("v1", 0, 2_000, CKPT)
        state.close()

    for kind in "wjs":
        view = _viewOf(build(kind))(kind, paths, lambda kind=kind: build(kind), CKPT, 0)
        assert isinstance(view, _TaskStoresView) and view.name() == kind
        m = memory[kind]
        try:
            if kind == "s":
                for key in "abcz":
                    assert list(view.fetch(key)) == list(m.fetch(key))
                    assert list(view.backwardFetch(key)) == list(m.backwardFetch(key))
                    assert list(view.findSessions(key, 0, 500)) == list(m.findSessions(key, 0, 500))
                    assert list(view.backwardFindSessions(key, 0, 500)) == list(m.backwardFindSessions(key, 0, 500))
                    assert view.fetchSession(key, 1_000, 1_050) == m.fetchSession(key, 1_000, 1_050)
                assert list(view.findSessionsByEnd(0, BIG)) == list(m.findSessionsByEnd(0, BIG))
            else:
                for key in "abcz":
                    assert list(view.fetch(key, 0, 5_000)) == list(m.fetch(key, 0, 5_000))
                    assert list(view.backwardFetch(key, 0, 5_000)) == list(m.backwardFetch(key, 0, 5_000))
                    assert view.fetch(key, 1_000) == m.fetch(key, 1_000)
                assert windowsOf(view.fetchAll(0, 1_050)) == windowsOf(m.fetchAll(0, 1_050))
                assert windowsOf(view.all()) == windowsOf(m.all())
                assert windowsOf(view.backwardAll()) == windowsOf(m.all())[::-1]
                assert len(list(view.all())) == (12 if kind == "j" else 6)
        finally:
            view.close()

"""The Spark host's persistent stores (kspark.state._persistent, _rocksdb, _restore) without
Spark: the same reads as the in-memory stores, a micro-batch's changes pending until the next
batch finds them committed, changelog records in Kafka's layout, restores that skip replayed
batches (rules E-2, T-17)."""

import copy
import json
import os
import pickle
import random
import shutil
import struct

import pyarrow as pa
import pytest
import rocksdict

from kspark import Serdes
from kspark.runtime.stream_task import encodeHeaders
from kspark.state import Stores, ValueAndTimestamp
from kspark.state._changelog import ChangelogRecord
from kspark.state._persistent import CHANGELOG_HEADER, PersistentTaskState, makePersistent
from kspark.state._restore import _keepHeader, restoreStores
from kspark.state._rocksdb import _PENDING_BATCH, TaskStateDB, pendingChanges, pendingWrites
from kspark.topics import LocalTopics

CKPT = "ckpt-1"


def kvStore(name="s", timestamped=False, valueSerde=None):
    supplier = Stores.persistentTimestampedKeyValueStore(name) if timestamped else Stores.persistentKeyValueStore(name)
    builder = (Stores.timestampedKeyValueStoreBuilder if timestamped else Stores.keyValueStoreBuilder)(
        supplier, Serdes.String(), valueSerde or Serdes.JSON())
    return builder.build()


def taskState(tmp_path, stores, logged=True, entries=1000):
    persistent = {}
    for store in stores:
        assert makePersistent(store)
        persistent[store.name()] = store
    return PersistentTaskState(persistent, {n: f"app-{n}-changelog" if logged else None for n in persistent},
                               str(tmp_path / "0_0"), 8 << 20, entries)


def restoredState(tmp_path, stores, **kwargs):
    """A task state opened on a new database with nothing to restore (as a host's first batch)."""
    state = taskState(tmp_path, stores, **kwargs)
    state.open(CKPT, None)
    state.restored(CKPT, None)
    return state


def test_a_new_store_is_empty_and_a_batch_is_read_back_after_its_commit(tmp_path):
    store = kvStore()
    state = taskState(tmp_path, [store])
    assert state.open(CKPT, None) is False  # nothing there yet: a restore (of nothing) is needed
    state.restored(CKPT, None)
    assert store.get("a") is None
    store.put("a", {"n": 1})
    store.put("b", [1, 2])
    store.put("gone", 5)
    store.delete("gone")
    records = state.flush("v1", 0, 99, CKPT)
    state.close()
    # changelog records: Kafka's key-value layout (serialized key, serialized value; a tombstone)
    assert sorted((t, k, v, ts) for t, k, v, ts, _ in records) == [
        ("app-s-changelog", b"a", b'{"n":1}', 99), ("app-s-changelog", b"b", b"[1,2]", 99),
        ("app-s-changelog", b"gone", None, 99)]
    assert {h for *_, h in records} == {((CHANGELOG_HEADER, b"ckpt-1:0"),)}

    fresh = kvStore()
    state = taskState(tmp_path, [fresh])
    assert state.open(CKPT, "v1") is True  # v1 committed: its pending writes are applied
    assert fresh.get("a") == {"n": 1} and fresh.get("b") == [1, 2] and fresh.get("gone") is None
    assert [(kv.key, kv.value) for kv in fresh.all()] == [("a", {"n": 1}), ("b", [1, 2])]
    state.close()


def test_a_replayed_batch_starts_from_the_stores_of_the_batch_before_it(tmp_path):
    store = kvStore()
    state = restoredState(tmp_path, [store])
    store.put("a", 1)
    state.flush("v1", 0, 10, CKPT)
    state.close()
    assert state.open(CKPT, "v1")
    store.put("a", 2)
    store.put("b", 1)
    state.flush("v2", 1, 20, CKPT)  # batch 1 fails after this: Spark still has v1
    state.close()

    replay = kvStore()
    state = taskState(tmp_path, [replay])
    assert state.open(CKPT, "v1") is True  # the database's applied version is v1: v2 is dropped
    assert replay.get("a") == 1 and replay.get("b") is None
    state.close()


def test_each_batchs_pending_writes_are_one_value_that_applying_or_dropping_removes(tmp_path):
    # One value per batch, not a key per write: writing 25K changed keys pending and applying
    # them took 57 ms with a key per write, 23 ms as one value (bench/README.md round 33).
    store = kvStore()
    state = restoredState(tmp_path, [store])
    for batch in range(4):
        store.put(f"k{batch}", batch)
        if batch:
            store.delete(f"k{batch - 1}")
        state.flush(f"v{batch}", batch, 10 * batch, CKPT)
        assert state.db.meta["pendingLayout"] == "batch"
        assert pendingWrites(state.db.db, state.db.meta) == {
            **({b"ss\x00" + f"k{batch - 1}".encode(): None} if batch else {}),
            b"ss\x00" + f"k{batch}".encode(): str(batch).encode()}
        assert [key for key, _ in state.db.items(b"\x00", b"\x01")] == [b"\x00meta", b"\x00pbat"]
        state.close()
        if batch == 2:  # batch 2 fails after its flush: its writes are dropped, the replay writes anew
            state = taskState(tmp_path, [kvStore()])
            assert state.open(CKPT, "v1") is True
            assert [key for key, _ in state.db.items(b"\x00", b"\x01")] == [b"\x00meta"]
            assert pendingWrites(state.db.db, state.db.meta) == {}
            state.close()
        store = kvStore()
        state = taskState(tmp_path, [store])
        assert state.open(CKPT, f"v{batch}") is (batch != 2)
        if batch == 2:
            state.restored(CKPT, "v1")  # (as a host does after a restore)
            break
        assert [key for key, _ in state.db.items(b"\x00", b"\x01")] == [b"\x00meta"]  # applied and deleted
        assert store.get(f"k{batch}") == batch and store.get(f"k{batch - 1}") is None
    state.close()


def test_pending_writes_added_to_before_a_reconcile_apply_in_order(tmp_path):
    # Two flushes without a reconcile between them add to the same pending value, applied in
    # order: a later flush's range deletes an earlier flush's write, the later write of a key wins
    store = kvStore()
    state = restoredState(tmp_path, [store])
    store.put("a", 1)
    store.put("x1", 5)
    store.put("b", 3)
    state.flush("v1", 0, 10, CKPT)
    store.delete("a")
    state.flush("v2", 1, 10, CKPT)
    state.db.writePending([(b"ss\x00b", b"4")], "v2", 1, [(b"ss\x00x", b"ss\x00y")])
    state.close()
    store = kvStore()
    state = taskState(tmp_path, [store])
    assert state.open(CKPT, "v2") is True
    assert store.get("a") is None and store.get("b") == 4 and store.get("x1") is None
    state.close()


def test_pending_writes_of_a_database_of_an_earlier_kspark_are_applied(tmp_path):
    # kspark before the tagged layout wrote them under \x00pend directly, with no pendingTag
    store = kvStore()
    state = restoredState(tmp_path, [store])
    state.db.db[b"\x00pendss\x00a"] = b"\x01" + b"1"
    state.db.db[b"\x00penrss\x00x"] = b"ss\x00y"  # a range [x, y) deleted before the writes
    state.db.db[b"ss\x00x1"] = b"2"
    state.db._setMeta(rocksdict.WriteBatch(raw_mode=True), pending="v1", pendingBatch=0)
    state.db.db[b"\x00meta"] = json.dumps(state.db.meta).encode()
    state.close()
    store = kvStore()
    state = taskState(tmp_path, [store])
    assert state.open(CKPT, "v1") is True
    assert store.get("a") == 1 and store.get("x1") is None
    assert list(state.db.items(b"\x00pend", b"\x00pens")) == []
    store.put("b", 2)
    state.flush("v2", 1, 10, CKPT)
    assert state.db.meta["pendingLayout"] == "batch"  # this kspark's layout from then on
    assert pendingWrites(state.db.db, state.db.meta) == {b"ss\x00b": b"2"}
    state.close()


def test_a_view_of_a_committed_batch_leaves_out_what_its_range_deletes_remove(tmp_path):
    # interactive queries read a committed batch's pending writes over the applied entries; the
    # ranges that batch deletes (a window store's expired segments) are left out too: the applied
    # entries in them, and a pending write that a later range deletes (as applying them would)
    from kspark.state._persistent import MergedKeyValueView, readOnlyStore

    store = kvStore()
    state = restoredState(tmp_path, [store])
    for key, value in (("a", 1), ("b", 2), ("c", 3), ("x", 9)):
        store.put(key, value)
    state.flush("v0", 0, 10, CKPT)
    state.close()
    store = kvStore()
    state = taskState(tmp_path, [store])
    assert state.open(CKPT, "v0") is True
    state.db.writePending([], "v1", 1, [(b"ss\x00b", b"ss\x00c\xff")])
    store.put("bb", 5)
    store.put("bz", 6)
    store.delete("x")
    state.flush("v1", 1, 10, CKPT)
    state.db.writePending([], "v1", 1, [(b"ss\x00bb", b"ss\x00bc")])

    def view():
        return MergedKeyValueView([readOnlyStore(kvStore(), state.db.db, *pendingChanges(state.db.db, state.db.meta))])

    expected = [("a", 1), ("bz", 6)]
    assert {k: view().get(k) for k in ("a", "b", "bb", "bz", "c", "x")} == {"a": 1, "b": None, "bb": None, "bz": 6,
                                                                            "c": None, "x": None}
    assert [(kv.key, kv.value) for kv in view().all()] == expected
    assert [(kv.key, kv.value) for kv in view().range("b", "c")] == [("bz", 6)]
    state.close()
    store = kvStore()
    state = taskState(tmp_path, [store])
    assert state.open(CKPT, "v1") is True  # committed: applied, the same entries as the view read
    assert [(kv.key, kv.value) for kv in store.all()] == expected
    state.close()


def test_tagged_pending_writes_of_an_earlier_kspark_are_applied_dropped_and_read_by_a_view(tmp_path):
    # kspark of rounds 24-32 wrote a key per pending write under \x00pend<8-byte tag>
    from kspark.state._persistent import MergedKeyValueView, readOnlyStore

    def earlier(version):
        store = kvStore()
        state = restoredState(tmp_path, [store])
        store.put("a", 1)
        store.put("x1", 2)
        state.flush("v0", 0, 10, CKPT)
        state.close()
        state = taskState(tmp_path, [kvStore()])
        assert state.open(CKPT, "v0") is True
        tag = (5).to_bytes(8, "big")
        state.db.db[b"\x00pend" + tag + b"ss\x00a"] = b"\x00"
        state.db.db[b"\x00pend" + tag + b"ss\x00b"] = b"\x01" + b"3"
        state.db.db[b"\x00penr" + tag + b"ss\x00x"] = b"ss\x00y"
        state.db._setMeta(rocksdict.WriteBatch(raw_mode=True), pending=version, pendingBatch=1, pendingTag=5,
                        pendingLayout=None)  # (an earlier kspark's meta has none)
        state.db.db[b"\x00meta"] = json.dumps(state.db.meta).encode()
        return state

    state = earlier("v1")
    view = MergedKeyValueView([readOnlyStore(kvStore(), state.db.db, *pendingChanges(state.db.db, state.db.meta))])
    assert view.get("a") is None and view.get("b") == 3 and view.get("x1") is None  # x1: in the pending range
    state.close()
    store = kvStore()
    state = taskState(tmp_path, [store])
    assert state.open(CKPT, "v1") is True  # committed: applied
    assert store.get("a") is None and store.get("b") == 3 and store.get("x1") is None
    assert list(state.db.items(b"\x00pend", b"\x00pens")) == []
    state.close()
    shutil.rmtree(tmp_path)
    state = earlier("v1")
    state.close()
    store = kvStore()
    state = taskState(tmp_path, [store])
    assert state.open(CKPT, "v0") is True  # not committed: dropped
    assert store.get("a") == 1 and store.get("b") is None and store.get("x1") == 2
    assert list(state.db.items(b"\x00pend", b"\x00pens")) == []
    state.close()


def test_a_flush_applied_at_once_leaves_the_stores_a_committed_pending_flush_leaves(tmp_path):
    # The continuous host's stream threads apply a commit's changes at once (applyNow): a failed
    # commit discards their database (the next attempt restores a new one). The general path
    # writes them pending and applies them once the batch committed. Same batches, both paths:
    # the same changelog records and the same store entries, a session store's expired
    # segments (range deletes) included, and no pending write left by either. The records written
    # at once carry no batch tag (Kafka Streams' changelog records have no headers): a commit that
    # fails aborts its transaction, so no restore has a replayed batch to skip.
    def run(name, applyNow):
        kv, sessions = kvStore(), sessionStore(retention=120_000)
        state = restoredState(tmp_path / name, [kv, sessions])
        batches = [
            lambda: (kv.put("a", 1), kv.put("b", 2), sessions._putEntry(10_000, b"k", 5_000, "k", 3),
                     sessions._putEntry(20_000, b"k", 20_000, "k", 1)),
            lambda: (kv.delete("a"), sessions._putEntry(400_000, b"j", 400_000, "j", 1)),  # segments below 4 expire
        ]
        logged, headers = [], set()
        for batch, changes in enumerate(batches):
            changes()
            records = state.flush(f"v{batch}", batch, 20_000 if batch == 0 else 400_000, CKPT, applyNow=applyNow)
            logged.append(sorted((topic, k, v, ts) for topic, k, v, ts, _ in records))
            headers |= {h for *_, h in records}
            if not applyNow:  # the batch committed: the next one applies its pending writes
                state.close()
                assert state.open(CKPT, f"v{batch}") is True
        entries = list(state.db.items(b"s", b"t"))
        assert pendingWrites(state.db.db, state.db.meta) == {} and state.db.get(b"\x00pbat") is None
        state.close()
        return logged, entries, headers

    logged, entries, headers = run("at-once", applyNow=True)
    pendingLogged, pendingEntries, pendingHeaders = run("pending", applyNow=False)
    assert (logged, entries) == (pendingLogged, pendingEntries)
    assert headers == {()}
    assert pendingHeaders == {((CHANGELOG_HEADER, b"ckpt-1:0"),), ((CHANGELOG_HEADER, b"ckpt-1:1"),)}
    assert [(k, v) for topic, k, v, _ in logged[0] if topic == "app-s-changelog"] == [(b"a", b"1"), (b"b", b"2")]
    assert [(k, v) for topic, k, v, _ in logged[1] if topic == "app-s-changelog"] == [(b"a", None)]
    assert [k for k, _ in entries if k.startswith(b"ss\x00")] == [b"ss\x00b"]
    # the session store's key index: only j's session is live, k's expired with their segments
    assert [k for k, _ in entries if k.startswith(b"ssessions\x00k")] == [b"ssessions\x00kj"]


def test_entries_a_flush_applied_at_once_evicted_are_read_back_from_the_database(tmp_path):
    # A store that starts empty answers its loads "absent" without a read (the fast path of a
    # store's first batch). The continuous host applies each commit's changes at once and keeps
    # the same stores open: once its working set evicted an entry, the next read must find it in
    # the database. Before this was fixed a store that started empty kept the fast path, and a
    # count over more keys than kspark.store.cache.max.entries restarted evicted keys at 1
    # (bench P5 over 10M keys in continuous mode, bench/README.md round 27). Rule E-2: get returns
    # the value put, null only when absent.
    kv, sessions = kvStore(), sessionStore(retention=120_000)
    state = restoredState(tmp_path, [kv, sessions], entries=1)
    for i in range(3):
        kv.put(f"k{i}", i)
        sessions._putEntry(1_000 * i, f"s{i}".encode(), 1_000 * i, f"s{i}", i)
    state.flush("", 0, 2_000, CKPT, applyNow=True)  # the working sets keep 1 entry each
    assert [kv.get(f"k{i}") for i in range(3)] == [0, 1, 2]
    assert [[(kv_.key.window().start(), kv_.value) for kv_ in sessions.fetch(f"s{i}")] for i in range(3)] == [
        [(0, 0)], [(1_000, 1)], [(2_000, 2)]]
    kv.put("k0", kv.get("k0") + 10)
    state.flush("", 1, 2_000, CKPT, applyNow=True)
    assert [kv.get(f"k{i}") for i in range(3)] == [10, 1, 2]
    state.close()


def test_another_checkpoint_or_an_unknown_version_needs_a_restore_and_wipes_the_store(tmp_path):
    store = kvStore()
    state = taskState(tmp_path, [store])
    state.open(CKPT, None)
    store.put("a", 1)
    state.flush("v1", 0, 10, CKPT)
    state.close()
    for checkpoint, version in (("ckpt-2", "v1"), (CKPT, "v9")):
        other = kvStore()
        state = taskState(tmp_path, [other])
        assert state.open(checkpoint, version) is False
        assert other.get("a") is None  # wiped: a restore fills it
        state.close()


def test_timestamped_values_use_kafkas_value_and_timestamp_layout(tmp_path):
    store = kvStore(timestamped=True, valueSerde=Serdes.Long())
    state = taskState(tmp_path, [store])
    state.open(CKPT, None)
    store.put("k", ValueAndTimestamp(7, 1_700_000_000_123))
    records = state.flush("v1", 0, 5, CKPT)
    pending = pendingWrites(state.db.db, state.db.meta)[b"ss\x00k"]
    state.close()
    # Kafka's ChangeLoggingTimestampedKeyValueBytesStore logs the value's bytes without its
    # timestamp, which becomes the record's timestamp (the local store keeps ValueAndTimestamp's
    # 8-byte big-endian timestamp + value, as Kafka's RocksDB does)
    assert [(k, v, ts) for _, k, v, ts, _ in records] == [(b"k", struct.pack(">q", 7), 1_700_000_000_123)]
    assert pending == struct.pack(">qq", 1_700_000_000_123, 7)
    state = taskState(tmp_path, [store])
    state.open(CKPT, "v1")
    assert store.get("k") == ValueAndTimestamp(7, 1_700_000_000_123)
    assert store._getValue("k") == 7
    state.close()


def test_reads_return_new_objects_after_a_reload(tmp_path):
    store = kvStore()
    state = taskState(tmp_path, [store], entries=0)  # nothing kept between batches: every read loads
    state.open(CKPT, None)
    store.put("a", {"n": [1]})
    state.flush("v1", 0, 0, CKPT)
    state.close()
    state.open(CKPT, "v1")
    first = store.get("a")
    first["n"].append(2)  # a caller changing what it read does not change the store
    assert store.get("a") == {"n": [1]}
    state.close()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_persistent_store_reads_what_the_in_memory_store_reads(tmp_path, seed):
    """The general path (in-memory KeyValueStore, TopologyTestDriver's) and the persistent one
    (working set over RocksDB), on the same random operations, micro-batches and replays."""
    rng = random.Random(seed)
    memory = kvStore()
    persistent = kvStore()
    state = taskState(tmp_path, [persistent], entries=rng.choice([0, 5, 1000]))
    committed, batch = None, 0
    state.open(CKPT, committed)
    keys = [f"k{i:02d}" for i in range(40)] + ["k", "k0", "k00\xff"]

    def check():
        assert [(kv.key, kv.value) for kv in persistent.all()] == [(kv.key, kv.value) for kv in memory.all()]
        lo, hi = sorted(rng.sample(keys, 2))
        assert list(persistent.range(lo, hi)) == list(memory.range(lo, hi))
        assert list(persistent.reverseRange(lo, None)) == list(memory.reverseRange(lo, None))
        assert list(persistent.prefixScan("k0", Serdes.String())) == list(memory.prefixScan("k0", Serdes.String()))
        assert persistent.approximateNumEntries() == memory.approximateNumEntries()

    for _ in range(12):
        before = [(kv.key, kv.value) for kv in memory.all()]
        for _ in range(rng.randrange(1, 40)):
            key, op = rng.choice(keys), rng.random()
            if op < 0.5:
                value = rng.choice([rng.randrange(100), f"s{rng.randrange(9)}", {"a": rng.randrange(5)}, [1, "x"]])
                memory.put(key, value)
                persistent.put(key, value)
            elif op < 0.65:
                assert persistent.delete(key) == memory.delete(key)
            elif op < 0.75:
                assert persistent.putIfAbsent(key, 1) == memory.putIfAbsent(key, 1)
            else:
                assert persistent.get(key) == memory.get(key)
            if rng.random() < 0.1:
                check()
        check()
        version = f"v{batch}"
        state.flush(version, batch, 0, CKPT)
        state.close()
        if rng.random() < 0.3:  # the batch failed: Spark replays it from the committed version
            memory = kvStore()
            memory.putAll(before)
            persistent = kvStore()
            state = taskState(tmp_path, [persistent], entries=rng.choice([0, 5, 1000]))
        else:
            committed = version
        assert state.open(CKPT, committed)
        batch += 1
    state.close()


def test_restore_reads_the_changelog_and_skips_the_replayed_batches(tmp_path):
    topics = LocalTopics(tmp_path / "topics")
    topics.createTopic("app-s-changelog", 1)

    def tag(checkpoint, batch):
        return encodeHeaders(((CHANGELOG_HEADER, f"{checkpoint}:{batch}".encode()),))

    rows = [
        (b"a", b"1", tag("old", 7)),  # another checkpoint: not this one's (local topics restart their input)
        (b"a", b"2", tag(CKPT, 0)),
        (b"b", b"3", tag(CKPT, 0)),
        (b"b", None, tag(CKPT, 1)),
        (b"c", b"4", tag(CKPT, 1)),
        (b"a", b"9", tag(CKPT, 2)),  # batch 2 reached the log but not Spark's commit log: replayed
    ]
    topics.append("app-s-changelog", 0, pa.table({
        "timestamp": [0] * len(rows), "key": [r[0] for r in rows], "value": [r[1] for r in rows],
        "headers": [r[2] for r in rows]}))
    store = kvStore()
    state = taskState(tmp_path, [store])
    assert state.open(CKPT, "v1") is False
    assert restoreStores(state, topics, 0, CKPT, 2, localTopics=True, taskId="0_0") == 4
    state.restored(CKPT, "v1")
    assert [(kv.key, kv.value) for kv in store.all()] == [("a", 2), ("c", 4)]
    state.close()


def test_which_changelog_records_a_restore_applies():
    def header(checkpoint, batch):
        return encodeHeaders(((CHANGELOG_HEADER, f"{checkpoint}:{batch}".encode()),))

    # Kafka: everything but this checkpoint's batches from the replayed one on (Kafka Streams'
    # own records have no header; another checkpoint resumes the group's offsets)
    assert _keepHeader(None, CKPT, 3, localTopics=False)
    assert _keepHeader(header("other", 9), CKPT, 3, localTopics=False)
    assert _keepHeader(header(CKPT, 2), CKPT, 3, localTopics=False)
    assert not _keepHeader(header(CKPT, 3), CKPT, 3, localTopics=False)
    assert not _keepHeader(header(CKPT, 4), CKPT, 3, localTopics=False)
    # local topics: only this checkpoint's committed batches
    assert not _keepHeader(None, CKPT, 3, localTopics=True)
    assert not _keepHeader(header("other", 0), CKPT, 3, localTopics=True)
    assert _keepHeader(header(CKPT, 2), CKPT, 3, localTopics=True)
    assert not _keepHeader(header(CKPT, 3), CKPT, 3, localTopics=True)


def test_a_store_without_logging_writes_no_changelog(tmp_path):
    store = kvStore()
    state = taskState(tmp_path, [store], logged=False)
    state.open(CKPT, None)
    store.put("a", 1)
    assert state.flush("v1", 0, 0, CKPT) == []
    state.close()
    state.open(CKPT, "v1")
    assert store.get("a") == 1
    state.close()


def test_stores_removed_from_the_topology_are_deleted_from_the_local_store(tmp_path):
    kept, dropped = kvStore("kept"), kvStore("dropped")
    state = taskState(tmp_path, [kept, dropped])
    state.open(CKPT, None)
    kept.put("a", 1)
    dropped.put("b", 2)
    state.flush("v1", 0, 0, CKPT)
    state.close()
    again = kvStore("kept")
    state = taskState(tmp_path, [again])
    assert state.open(CKPT, "v1")
    assert state.db.storeNames() == {"kept"}
    assert again.get("a") == 1
    state.close()


def sessionStore(name="sessions", retention=120_000, persistent=True):
    supplier = (Stores.persistentSessionStore if persistent else Stores.inMemorySessionStore)(name, retention)
    return Stores.sessionStoreBuilder(supplier, Serdes.String(), Serdes.Long()).build()


def sessionsOf(store):
    return [(kv.key.key(), kv.key.window().start(), kv.key.window().end(), kv.value)
            for kv in store.findSessionsByEnd(-(1 << 62), 1 << 62)]


@pytest.mark.parametrize("seed,persistentSemantics", [(1, True), (2, True), (3, False), (4, True)])
def test_a_persistent_session_store_reads_what_the_in_memory_one_reads(tmp_path, seed, persistentSemantics):
    """The in-memory SessionStore (TopologyTestDriver's) and the RocksDB one on the same random
    puts, removes, reads and expiry (ST-3..ST-7), over micro-batches, replays and restores from
    the task checkpoint's meta."""
    rng = random.Random(seed)

    def fresh():
        return sessionStore(persistent=persistentSemantics)

    memory, persistent = fresh(), fresh()
    path, changelog = tmp_path / "executor", []
    state = taskState(path, [persistent], entries=rng.choice([0, 3, 1000]))
    committed, batch = None, 0
    state.open(CKPT, committed)
    keys = ["a", "b", "ab", "a\x00", "zz"]
    now = 100_000

    def check():
        for key in keys:
            got = [(kv.key.window().start(), kv.key.window().end(), kv.value) for kv in persistent.fetch(key)]
            assert got == [(kv.key.window().start(), kv.key.window().end(), kv.value) for kv in memory.fetch(key)]
            lo = rng.randrange(max(0, now - 200_000), now + 1)
            assert list(persistent.findSessions(key, lo, lo + 50_000)) == list(memory.findSessions(key, lo, lo + 50_000))
            assert persistent._findSessionEntries(persistent._keyBytes(key), lo, lo + 50_000) == \
                memory._findSessionEntries(memory._keyBytes(key), lo, lo + 50_000)
        lo = rng.randrange(0, now + 1)
        assert list(persistent.findSessionsByEnd(lo, lo + 100_000)) == list(memory.findSessionsByEnd(lo, lo + 100_000))

    for _ in range(10):
        before = copy.deepcopy((memory.snapshot(), {"observed": memory._observed, "purgedBelow": memory._purgedBelow}))
        for _ in range(rng.randrange(1, 30)):
            key = rng.choice(keys)
            now += rng.randrange(0, 20_000)
            end = now - rng.randrange(0, 60_000)
            start = max(0, end - rng.randrange(0, 30_000))
            if rng.random() < 0.75:
                count = rng.randrange(1, 50)
                for store in (memory, persistent):
                    store._putEntry(end, store._keyBytes(key), start, key, count)
            else:
                existing = [kv.key for kv in memory.fetch(key)]
                if existing:
                    victim = rng.choice(existing)
                    memory.remove(victim)
                    persistent.remove(victim)
            if rng.random() < 0.2:
                check()
        check()
        assert persistent._observed == memory._observed and persistent._purgedBelow == memory._purgedBelow
        version = f"v{batch}"
        meta = persistent._metaSnapshot()
        records = state.flush(version, batch, now, CKPT)
        state.close()
        outcome = rng.random()
        if outcome < 0.3:  # failed: replay from the committed version and its checkpoint meta
            memory = fresh()
            memory.restore(before[0])
            persistent = fresh()
            state = taskState(path, [persistent], entries=rng.choice([0, 3, 1000]))
            assert makePersistent(persistent)
            persistent._metaRestore(before[1])
            assert state.open(CKPT, committed)
        else:
            committed = version
            changelog += [ChangelogRecord(k, v, ts) for _, k, v, ts, _ in records]
            if outcome < 0.5:  # the task is rebuilt from its checkpoint (another worker)
                persistent = fresh()
                state = taskState(path, [persistent], entries=rng.choice([0, 3, 1000]))
                persistent._metaRestore(meta)
                assert state.open(CKPT, committed)
            elif outcome < 0.65:  # a new executor: restored from the changelog (SessionKeySchema records)
                persistent = fresh()
                path = tmp_path / f"executor-{batch}"
                state = taskState(path, [persistent], entries=rng.choice([0, 3, 1000]))
                persistent._metaRestore(meta)
                assert not state.open(CKPT, committed)
                state.restoreRecords("sessions", changelog)
                state.restored(CKPT, committed)
            else:
                assert state.open(CKPT, committed)
        batch += 1
    state.close()


def test_a_session_store_restored_from_its_changelog_drops_the_expired_sessions(tmp_path):
    store = sessionStore(retention=120_000)
    state = taskState(tmp_path, [store])
    state.open(CKPT, None)
    kb = b"k"
    store._putEntry(10_000, kb, 5_000, "k", 3)
    store._putEntry(20_000, kb, 20_000, "k", 1)
    records = state.flush("v1", 0, 20_000, CKPT)
    # Kafka's SessionKeySchema: key + end + start (8-byte big-endian longs), the aggregate's bytes
    assert sorted((k, v) for _, k, v, _, _ in records) == [
        (b"k" + struct.pack(">qq", 10_000, 5_000), struct.pack(">q", 3)),
        (b"k" + struct.pack(">qq", 20_000, 20_000), struct.pack(">q", 1))]
    state.close()
    state.open(CKPT, "v1")
    store._putEntry(400_000, b"j", 400_000, "j", 1)  # segments below (400000 - 120000) // 60000 = 4 expire
    assert store._purgedBelow == 4
    state.flush("v2", 1, 400_000, CKPT)
    state.close()

    topics = LocalTopics(tmp_path / "topics")
    topics.createTopic("app-sessions-changelog", 1)
    tag = encodeHeaders(((CHANGELOG_HEADER, f"{CKPT}:0".encode()),))
    topics.append("app-sessions-changelog", 0, pa.table({
        "timestamp": [0, 0], "key": [k for _, k, _, _, _ in records], "value": [v for _, _, v, _, _ in records],
        "headers": [tag, tag]}))
    restored = sessionStore(retention=120_000)
    state = taskState(tmp_path / "elsewhere", [restored])
    restored._metaRestore(store._metaSnapshot())
    assert state.open(CKPT, "v1") is False
    restoreStores(state, topics, 0, CKPT, 1, localTopics=True, taskId="0_0")
    state.restored(CKPT, "v1")
    assert sessionsOf(restored) == []  # both sessions end before the expiry point
    assert list(state.db.items(b"s", b"t")) == []
    state.close()


def test_a_session_that_expires_in_its_own_batch_is_still_logged(tmp_path):
    """Kafka's ChangeLoggingSessionBytesStore logs every put, also of a session whose segment
    expires later in the same commit interval (issue 33: a Kafka Streams application's session
    changelog held sessions that kspark's lacked)."""
    store = sessionStore(retention=120_000)
    state = taskState(tmp_path, [store])
    state.open(CKPT, None)
    store._putEntry(10_000, b"k", 5_000, "k", 3)
    store._putEntry(400_000, b"j", 400_000, "j", 1)  # segment 0 expires
    records = state.flush("v1", 0, 400_000, CKPT)
    assert sorted((k, v) for _, k, v, _, _ in records) == [
        (b"j" + struct.pack(">qq", 400_000, 400_000), struct.pack(">q", 1)),
        (b"k" + struct.pack(">qq", 10_000, 5_000), struct.pack(">q", 3))]
    state.close()


def test_a_restore_without_the_tasks_checkpoint_takes_the_observed_time_from_the_changelog(tmp_path):
    """A store restored from changelogs a Kafka Streams application wrote (no kspark checkpoint:
    issue 33's take-over) observes the latest session end it restores, as Kafka's segmented
    stores do on restore, and drops the sessions of the segments expired at that time."""
    topics = LocalTopics(tmp_path / "topics")
    topics.createTopic("app-sessions-changelog", 1)
    keys = [b"k" + struct.pack(">qq", 10_000, 5_000), b"j" + struct.pack(">qq", 400_000, 400_000)]
    topics.append("app-sessions-changelog", 0, pa.table({
        "timestamp": [0, 0], "key": keys, "value": [struct.pack(">q", 3), struct.pack(">q", 1)],
        "headers": pa.nulls(2, pa.binary())}))
    restored = sessionStore(retention=120_000)
    state = taskState(tmp_path, [restored])
    assert state.open(CKPT, None) is False
    restoreStores(state, topics, 0, CKPT, 0, localTopics=False, taskId="0_0")
    state.restored(CKPT, None)
    assert restored._observed == 400_000 and restored._purgedBelow == 4
    assert sessionsOf(restored) == [("j", 400_000, 400_000, 1)]
    state.close()


def test_a_restore_on_local_topics_starts_from_the_newest_snapshot_and_reads_only_the_tail(tmp_path, monkeypatch):
    """Local changelogs are never compacted: a task snapshots its database once its changelogs
    grew by more records than it holds, and a restore reads the snapshot plus the records after it."""
    from kspark.state import _snapshots
    from kspark.state._snapshots import maybeSnapshot, restoreSnapshot

    monkeypatch.setattr(_snapshots, "_MIN_RECORDS", 50)
    # RocksDB's estimate-num-keys counts memtable entries until a background flush merges them:
    # the store's true size here, so that the snapshots fall on the same batches in every run
    monkeypatch.setattr(TaskStateDB, "estimatedKeys", lambda self: 20)
    root = str(tmp_path / "topics")
    topics = LocalTopics(root)
    topics.createTopic("app-s-changelog", 1)
    store = kvStore()
    state = taskState(tmp_path / "executor-1", [store])
    committed, snapshots = None, []
    for batch in range(8):
        if state.open(CKPT, committed) and committed is not None:
            snapshots.append(maybeSnapshot(state, topics, root, "app", "0_0", 0, CKPT, batch, committed))
        for i in range(30):  # 20 keys, rewritten again and again: the log outgrows the store
            store.put(f"k{(batch * 30 + i) % 20:02d}", batch * 100 + i)
        records = state.flush(f"v{batch}", batch, batch, CKPT)
        state.close()
        topics.append("app-s-changelog", 0, pa.table({
            "timestamp": [t for _, _, _, t, _ in records], "key": [k for _, k, _, _, _ in records],
            "value": [v for _, _, v, _, _ in records], "headers": [encodeHeaders(h) for *_, h in records]}))
        committed = f"v{batch}"
    assert True in snapshots and len(snapshots) == 7
    expected = [(kv.key, kv.value) for kv in (state.open(CKPT, committed), store.all())[1]]
    state.close()
    assert topics.endOffset("app-s-changelog", 0) == 8 * 20

    moved = kvStore()
    state = taskState(tmp_path / "executor-2", [moved])  # the task on an executor without its store
    assert state.open(CKPT, committed) is False
    offsets = restoreSnapshot(state, root, "app", "0_0", CKPT, 8)
    assert 0 < offsets["app-s-changelog"] < 8 * 20
    read = restoreStores(state, topics, 0, CKPT, 8, localTopics=True, taskId="0_0", startOffsets=offsets)
    state.restored(CKPT, committed)
    assert read == 8 * 20 - offsets["app-s-changelog"] < 8 * 20  # the tail only
    snapshotDirs = [n for n in os.listdir(tmp_path / "topics" / "~stores" / "app" / "0_0") if not n.startswith("~")]
    assert len(snapshotDirs) <= 2  # older snapshots are deleted
    assert [(kv.key, kv.value) for kv in moved.all()] == expected
    state.close()


def test_local_changelogs_drop_what_the_kept_snapshots_hold_and_restore_stays_exact(tmp_path, monkeypatch):
    """Issue 32: a restore costs in proportion to the live state, and so do the local changelogs on
    disk: once two snapshots are kept, the changelog segments below the older one's offsets are
    deleted (Kafka compacts its changelogs; local topics delete what snapshots hold, KIP-107's
    deleteRecords). The records after the snapshots stay, a restore gives the exact stores, and a
    restore that would need deleted records fails naming them."""
    from kspark.errors import StreamsException
    from kspark.state import _snapshots
    from kspark.state._snapshots import _snapshots as snapshotsOf
    from kspark.state._snapshots import maybeSnapshot, restoreSnapshot, snapshotRoot

    monkeypatch.setattr(_snapshots, "_MIN_RECORDS", 50)
    monkeypatch.setattr(TaskStateDB, "estimatedKeys", lambda self: 20)  # as in the test above
    root = str(tmp_path / "topics")
    topics = LocalTopics(root)
    topics.createTopic("app-s-changelog", 1)
    store = kvStore()
    state = taskState(tmp_path / "executor-1", [store])
    committed, appended = None, []
    for batch in range(12):
        if state.open(CKPT, committed) and committed is not None:
            maybeSnapshot(state, topics, root, "app", "0_0", 0, CKPT, batch, committed)
        for i in range(30):
            store.put(f"k{(batch * 30 + i) % 20:02d}", batch * 100 + i)
        records = state.flush(f"v{batch}", batch, batch, CKPT)
        state.close()
        table = pa.table({"timestamp": [t for _, _, _, t, _ in records], "key": [k for _, k, _, _, _ in records],
                          "value": [v for _, _, v, _, _ in records], "headers": [encodeHeaders(h) for *_, h in records]})
        topics.append("app-s-changelog", 0, table)
        appended += list(zip(table.column("key").to_pylist(), table.column("value").to_pylist()))
        committed = f"v{batch}"
    expected = [(kv.key, kv.value) for kv in (state.open(CKPT, committed), store.all())[1]]
    state.close()
    assert expected == [(f"k{k:02d}", 1110 + k) for k in range(20)]  # batch 11 wrote every key last

    kept = snapshotsOf(snapshotRoot(root, "app", "0_0"), CKPT)
    assert len(kept) == 2
    newest, oldest = kept[0][2]["offsets"]["app-s-changelog"], kept[1][2]["offsets"]["app-s-changelog"]
    end = topics.endOffset("app-s-changelog", 0)
    assert end == 12 * 20 and 0 < oldest < newest < end
    # whole segments (one per batch, 20 records each) below the older kept snapshot are gone
    assert topics.beginningOffsets("app-s-changelog") == {0: oldest}
    segments = sorted(n for n in os.listdir(tmp_path / "topics" / "app-s-changelog" / "0") if n.endswith(".arrow"))
    assert segments == [f"{o:020d}.arrow" for o in range(oldest, end, 20)]
    # the records after it are kept, as appended
    tail = topics.read("app-s-changelog", 0, oldest, end)
    assert list(zip(tail.column("key").to_pylist(), tail.column("value").to_pylist())) == appended[oldest:]

    moved = kvStore()
    state = taskState(tmp_path / "executor-2", [moved])
    assert state.open(CKPT, committed) is False
    offsets = restoreSnapshot(state, root, "app", "0_0", CKPT, 12)
    assert offsets["app-s-changelog"] == newest
    read = restoreStores(state, topics, 0, CKPT, 12, localTopics=True, taskId="0_0", startOffsets=offsets)
    state.restored(CKPT, committed)
    assert read == end - newest
    assert [(kv.key, kv.value) for kv in moved.all()] == expected
    state.close()

    # another checkpoint (a new state.dir) reads its own records only: the deletion is not its concern
    other = kvStore()
    state = taskState(tmp_path / "executor-3", [other])
    assert state.open("ckpt-2", None) is False
    assert restoreSnapshot(state, root, "app", "0_0", "ckpt-2", 0) == {}
    state.close()
    # the snapshots lost: the changelog alone no longer holds the stores, and a restore says so
    for _, path, _ in kept:
        shutil.rmtree(path)
    lost = kvStore()
    state = taskState(tmp_path / "executor-4", [lost])
    assert state.open(CKPT, committed) is False
    with pytest.raises(StreamsException, match=rf"app-s-changelog-0 below offset {oldest} were deleted"):
        restoreSnapshot(state, root, "app", "0_0", CKPT, 12)
    state.close()


def test_a_key_value_stores_flush_writes_and_logs_its_changed_keys_in_key_order(tmp_path):
    # round 38: the flush takes the changed keys in key order (the memtable inserts them faster),
    # not in the set's hash order, which changed with each process's hash seed; every key once,
    # with its last value, deletes included
    rng = random.Random(5)
    supplier = Stores.persistentTimestampedKeyValueStore("s")
    store = Stores.timestampedKeyValueStoreBuilder(supplier, Serdes.String(), Serdes.Long()).build()
    state = taskState(tmp_path / "db", [store])
    state.open(CKPT, None)
    last = {}
    for i in range(600):
        key = "k%03d" % rng.randrange(200)
        last[key] = None if rng.random() < 0.1 else ValueAndTimestamp(i, 1000 + i)
        store.put(key, last[key])
    records = state.flush("v1", 0, 77, CKPT)
    expected = [(k.encode(), None if v is None else struct.pack(">q", v.value), 77 if v is None else v.timestamp)
                for k, v in sorted(last.items())]
    assert [(k, v, ts) for _, k, v, ts, _ in records] == expected
    segments = pickle.loads(state.db.db.get(_PENDING_BATCH))
    assert [k for k, _ in segments[-1][1] if k.startswith(b"ss\x00")] == [b"ss\x00" + k for k, _, _ in expected]
    state.close()


def test_the_flush_of_long_values_writes_what_the_general_path_writes(tmp_path):
    """The flush's fast path for a timestamped store of Serdes.Long() values (a count) against the
    general path (taken for any other serde type, here a subclass of Long's): the same database
    writes and changelog records (Kafka's ValueAndTimestamp layout, rule T-17 timestamps), and the
    same error for a value Long cannot hold."""
    from kspark.errors import StreamsException
    from kspark.serialization import _LongSerde

    class SubLong(_LongSerde):
        pass

    def flushed(valueSerde, puts, name):
        supplier = Stores.persistentTimestampedKeyValueStore("s")
        store = Stores.timestampedKeyValueStoreBuilder(supplier, Serdes.String(), valueSerde).build()
        state = taskState(tmp_path / name, [store])
        state.open(CKPT, None)
        for key, value in puts:
            store.put(key, value)
        try:
            records = state.flush("v1", 0, 77, CKPT)
            pending = sorted(pendingWrites(state.db.db, state.db.meta).items())
        finally:
            state.close()
        return sorted(records), pending

    puts = [("a", ValueAndTimestamp(1, 10)), ("b", ValueAndTimestamp(-(2 ** 63), 0)), ("c", ValueAndTimestamp(2 ** 63 - 1, -5)),
            ("e", None), ("a", ValueAndTimestamp(2, 12))]
    fast, general = flushed(Serdes.Long(), puts, "fast"), flushed(SubLong(), puts, "general")
    assert fast == general
    records, pending = fast
    assert [(k, v, ts) for _, k, v, ts, _ in records] == [
        (b"a", struct.pack(">q", 2), 12), (b"b", struct.pack(">q", -(2 ** 63)), 0), (b"c", struct.pack(">q", 2 ** 63 - 1), -5),
        (b"e", None, 77)]
    assert pending[0] == (b"ss\x00a", struct.pack(">qq", 12, 2))
    for bad in (2 ** 63, True):  # out of range; a bool, which Serdes.Long() refuses
        errors = []
        for serde, name in ((Serdes.Long(), f"fast-{bad}"), (SubLong(), f"general-{bad}")):
            with pytest.raises(StreamsException) as raised:
                flushed(serde, [("bad", ValueAndTimestamp(bad, 1))], name)
            errors.append(str(raised.value).replace("SubLong", "_LongSerde"))
        assert errors[0] == errors[1] and errors[0].startswith(f"Store s: the value serde _LongSerde cannot serialize {bad!r}")


def test_a_task_database_opens_with_ksparks_rocksdb_options_when_new_and_when_reopened(tmp_path):
    # rocksdict reopens an existing database with the options stored in it unless told otherwise:
    # the block cache of kspark.store.memory.bytes, the tables' and the memtables' bloom filters
    # must hold on both opens
    path = str(tmp_path / "db")
    for memoryBytes in (24 << 20, 24 << 20, 40 << 20):
        db = TaskStateDB(path, memoryBytes)
        db.write([(b"s\x00k%d" % i, b"v") for i in range(100)])
        assert db.db.property_int_value("rocksdb.block-cache-capacity") == memoryBytes
        db.db.flush()
        options = max((f for f in os.listdir(path) if f.startswith("OPTIONS-")), key=lambda f: int(f[8:]))
        text = open(os.path.join(path, options)).read()
        assert "filter_policy=bloomfilter" in text
        assert "memtable_whole_key_filtering=true" in text
        assert "memtable_prefix_bloom_size_ratio=0.100000" in text
        # Kafka Streams' RocksDBStore: universal compaction, no compression
        assert "compaction_style=kCompactionStyleUniversal" in text
        assert "\n  compression=kNoCompression" in text
        assert "allow_mmap_reads=true" in text
        db.close()


def test_a_task_database_merges_its_sorted_runs_at_the_compaction_trigger_its_host_gives(tmp_path):
    # RocksDB's default (4, Kafka Streams'), and the micro-batch host's, whose database is opened
    # every batch and flushes a small run per open (MICRO_BATCH_COMPACTION_TRIGGER, round 37):
    # seven flushed runs stay seven below a trigger of 8 and are merged at 4
    import time

    from kspark.spark._task_processor import MICRO_BATCH_COMPACTION_TRIGGER

    assert MICRO_BATCH_COMPACTION_TRIGGER == 8
    runs = {}
    for trigger in (None, MICRO_BATCH_COMPACTION_TRIGGER):
        path = str(tmp_path / f"db-{trigger}")
        state = PersistentTaskState({}, {}, path, 24 << 20, 0, compactionTrigger=trigger)
        state.open("c", None)
        for run in range(7):
            state.db.write([(b"s\x00k%06d" % (run * 1000 + i), b"v") for i in range(1000)])
            state.db.db.flush()
        deadline = time.monotonic() + 30
        while (state.db.db.property_int_value("rocksdb.compaction-pending")
               or state.db.db.property_int_value("rocksdb.num-running-compactions")) and time.monotonic() < deadline:
            time.sleep(0.05)
        runs[trigger] = state.db.db.property_int_value("rocksdb.num-files-at-level0")
        assert len(dict(state.db.db.items(from_key=b"s\x00"))) == 7000
        options = max((f for f in os.listdir(path) if f.startswith("OPTIONS-")), key=lambda f: int(f[8:]))
        assert f"level0_file_num_compaction_trigger={trigger or 4}\n" in open(os.path.join(path, options)).read()
        state.close()
    assert runs[8] == 7 and runs[None] < 4


def test_a_database_written_with_leveled_compaction_and_snappy_opens_with_every_entry(tmp_path):
    # an earlier kspark wrote its task databases with leveled compaction and Snappy tables: they
    # open with universal compaction and uncompressed tables, keep every entry, and take writes
    # and compactions after it
    path = str(tmp_path / "db")
    old = rocksdict.Options(raw_mode=True)
    old.create_if_missing(True)
    old.set_write_buffer_size(256 << 10)
    old.set_compression_type(rocksdict.DBCompressionType.snappy())
    rng = random.Random(7)
    truth = {}
    db = rocksdict.Rdict(path, old, column_families={})
    for _ in range(12):
        batch = rocksdict.WriteBatch(raw_mode=True)
        for _ in range(5000):
            key, value = b"s\x00k%06d" % rng.randrange(30_000), b"%d" % rng.randrange(1 << 40)
            batch.put(key, value)
            truth[key] = value
        db.write(batch)
    db.flush()
    db.close()
    db = TaskStateDB(path, 24 << 20)
    assert [db.db.get(key) for key in truth] == list(truth.values())
    for _ in range(12):
        writes = [(b"s\x00k%06d" % rng.randrange(30_000), b"%d" % rng.randrange(1 << 40)) for _ in range(5000)]
        db.write(writes)
        truth.update(writes)
    db.db.flush()
    db.db.compact_range(None, None)
    assert dict(db.db.items(from_key=b"s\x00")) == truth
    db.close()

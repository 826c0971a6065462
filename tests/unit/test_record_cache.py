"""The DSL record cache: size-based eviction with flush-on-evict (rules SA-10, E-5; Kafka
``ThreadCache.maybeEvict``, ``NamedCache.evict/flush``, ``LRUNode.size``)."""

from datetime import timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from kspark import (Consumed, EmitStrategy, Materialized, Produced, Serdes, SessionWindows, StreamsBuilder, TimeWindows,
                    WindowedSerdes)
from kspark.config import StreamsConfig
from kspark.runtime.record_queue import RawRecord
from kspark.runtime.stream_task import StreamTask

SESSION_KEY = WindowedSerdes.sessionWindowedSerdeFrom(Serdes.String())


def countTopology():
    b = StreamsBuilder()
    (b.stream("in", Consumed.with_(Serdes.String(), Serdes.String())).groupByKey()
     .count(materialized=Materialized.as_("c")).toStream().to("out", Produced.with_(Serdes.String(), Serdes.Long())))
    return b.build()


def sessionTopology(gap, grace):
    b = StreamsBuilder()
    (b.stream("in", Consumed.with_(Serdes.String(), Serdes.String())).groupByKey()
     .windowedBy(SessionWindows.ofInactivityGapAndGrace(timedelta(milliseconds=gap), timedelta(milliseconds=grace)))
     .count(materialized=Materialized.as_("s")).toStream().to("out", Produced.with_(SESSION_KEY, Serdes.Long())))
    return b.build()


def newTask(topology, cacheBytes):
    task = StreamTask("0_0", topology.subtopologies()[0], topology.storeBuilders(),
                      StreamsConfig({"statestore.cache.max.bytes": cacheBytes}), 0, lambda t: t, lambda t: 1)
    task.initialize()
    return task


def produced(task, keySerde=Serdes.String()):
    return [(keySerde.deserialize("out", r.key), None if r.value is None else Serdes.Long().deserialize("out", r.value),
             r.timestamp) for r in task.drainProduced()]


# One count entry: key "a" (1 byte) + value 8 + timestamp 8 (timestamped store) + 45 bytes of
# LRUNode/LRUCacheEntry overhead + topic "in" (2 characters) = 64 bytes. 130 bytes hold two.
def test_e5_a_full_cache_evicts_the_least_recently_used_entry_and_flushes_all_dirty_entries_before_commit():
    task = newTask(countTopology(), 130)
    task.addRecords("in", [RawRecord(i, i, k.encode(), b"v") for i, k in enumerate("abaca")])
    task.processAll(0)
    # c is the third entry: b (least recently used, dirty) is evicted and the cache flushed:
    # the evicted entry first, then the other dirty entries in the order of their last update
    assert produced(task) == [("b", 1, 1), ("a", 2, 2), ("c", 1, 3)]
    task.commit()
    assert produced(task) == [("a", 3, 4)]           # a updated again after the eviction flush
    assert task.recordCache.evictions == 1


def test_e5_with_room_for_every_key_only_the_commit_forwards():
    task = newTask(countTopology(), 10 * 1024 * 1024)
    task.addRecords("in", [RawRecord(i, i, k.encode(), b"v") for i, k in enumerate("abaca")])
    task.processAll(0)
    assert produced(task) == []
    task.commit()
    assert produced(task) == [("b", 1, 1), ("c", 1, 3), ("a", 3, 4)]


def test_sa10_session_cache_eviction_flushes_dirty_sessions_and_evicting_a_clean_one_forwards_nothing():
    """Session entries: 8 (segment prefix) + key 1 + 16 (end, start) + value 8 + 45 + topic 2 =
    80 bytes, a tombstone 72; 200 bytes hold two sessions."""
    from kspark import SessionWindow, Windowed

    task = newTask(sessionTopology(10, 0), 200)
    task.addRecords("in", [RawRecord(0, 0, b"a", b"v"), RawRecord(1, 100, b"b", b"v"), RawRecord(2, 95, b"a", b"v"),
                           RawRecord(3, 96, b"a", b"v")])
    task.processAll(0)
    # a@95 is the third session: [0,0] (least recently used, dirty) is evicted, which flushes it
    # and every other dirty session; a@96 then merges [95,95] into [95,96]: the cache holds b
    # (clean), the tombstone of [95,95] and [95,96] = 232 bytes, so b is evicted, silently.
    assert produced(task, SESSION_KEY) == [(Windowed("a", SessionWindow(0, 0)), 1, 0),
                                           (Windowed("b", SessionWindow(100, 100)), 1, 100),
                                           (Windowed("a", SessionWindow(95, 95)), 1, 95)]
    task.commit()
    # [95,95] reached the store at the eviction flush, so its tombstone is forwarded (SA-8)
    assert produced(task, SESSION_KEY) == [(Windowed("a", SessionWindow(95, 95)), None, 95),
                                           (Windowed("a", SessionWindow(95, 96)), 2, 96)]
    assert task.recordCache.evictions == 2


def liveTable(updates, retention):
    """``finalTable`` restricted to sessions the store still shows: end > max end - retention."""
    table = finalTable(updates)
    maxEnd = max((k.window().end() for k, _, _ in updates), default=0)
    return {k: v for k, v in table.items() if k.window().end() > maxEnd - retention}


def finalTable(updates):
    table = {}
    for key, value, ts in updates:
        if value is None:
            table.pop(key, None)
        else:
            table[key] = (value, ts)
    return table


@settings(max_examples=150, deadline=None, derandomize=True)
@given(steps=st.lists(st.tuples(st.sampled_from(["a", "b", "c", "d"]), st.sampled_from([0, 1, 4, 9, 30, -3, -12])),
                      min_size=1, max_size=50),
       gap=st.integers(1, 15), grace=st.integers(0, 40), commitEvery=st.integers(2, 20))
def test_e5_st9_the_commit_interval_never_changes_the_final_table(steps, gap, grace, commitEvery):
    """With a cache that never fills, a flush only forwards (clean entries stay cached, ST-9
    lookups see the same sessions), so the last value forwarded per live windowed key is the same
    whether the task commits after every record (the driver) or every few records (a Spark
    micro-batch). Sessions past the store's retention may differ: when one is merged away, the
    flush finds no old value in the store and skips its tombstone, so a value forwarded at an
    earlier commit stays in the table, while with one later commit it was never forwarded (Kafka
    does the same). With eviction the cache's contents, hence ST-9 merges, depend on the commit
    pattern too, as in Kafka."""
    ts, raws = 300, []
    for n, (key, step) in enumerate(steps):
        ts = max(0, ts + step)
        raws.append(RawRecord(n, ts, key.encode(), b"v"))

    def run(every):
        task, out = newTask(sessionTopology(gap, grace), 10 * 1024 * 1024), []
        for start in range(0, len(raws), every):
            task.addRecords("in", raws[start:start + every])
            task.processAll(0)
            task.commit()
            out += produced(task, SESSION_KEY)
        return out

    perRecord, batched = run(1), run(commitEvery)
    assert liveTable(batched, gap + grace) == liveTable(perRecord, gap + grace)


def test_st9_a_task_rebuilt_from_its_checkpoint_keeps_the_session_cache():
    """A Spark micro-batch is a commit, not a restart: a task rebuilt from the checkpoint between
    batches must still see, through its cache, the session [0,0] the store hides at observed end
    20 (gap 10, retention 10), so k@10 merges all three as the live task does (ST-9), with the
    cache's size and LRU order restored."""
    import pickle

    from kspark import SessionWindow, Windowed

    def W(key, start, end):
        return Windowed(key, SessionWindow(start, end))

    topology = sessionTopology(10, 0)
    live = newTask(topology, 10 * 1024 * 1024)
    live.addRecords("in", [RawRecord(0, 0, b"k", b"v"), RawRecord(1, 20, b"k", b"v")])
    live.processAll(0)
    live.commit()
    assert produced(live, SESSION_KEY) == [(W("k", 0, 0), 1, 0), (W("k", 20, 20), 1, 20)]
    rebuilt = StreamTask("0_0", topology.subtopologies()[0], topology.storeBuilders(),
                         StreamsConfig({"statestore.cache.max.bytes": 10 * 1024 * 1024}), 0, lambda t: t, lambda t: 1)
    rebuilt.restore(pickle.loads(pickle.dumps(live.checkpoint())))
    rebuilt.initialize()
    assert rebuilt.recordCache.sizeBytes == live.recordCache.sizeBytes > 0
    for task in (live, rebuilt):
        task.addRecords("in", [RawRecord(2, 10, b"k", b"v")])
        task.processAll(0)
        task.commit()
        assert produced(task, SESSION_KEY) == [(W("k", 20, 20), None, 20), (W("k", 0, 20), 3, 20)]


def test_f17_a_task_rebuilt_from_its_checkpoint_keeps_the_emit_final_window_cache():
    """Emit on window close reads through its window cache (FINDINGS F17): after a@5 and a commit,
    a@35 (size 10, no grace, retention 10) makes the store hide [0,10) before it closes, the cache
    still holds it and the scan emits it. A task rebuilt from the checkpoint between two Spark
    micro-batches must do the same, so the cache is checkpointed like a session cache."""
    import pickle

    from kspark import TimeWindow, Windowed

    b = StreamsBuilder()
    key = WindowedSerdes.timeWindowedSerdeFrom(Serdes.String(), 10)
    (b.stream("in", Consumed.with_(Serdes.String(), Serdes.String())).groupByKey()
     .windowedBy(TimeWindows.ofSizeWithNoGrace(10)).emitStrategy(EmitStrategy.onWindowClose())
     .count(materialized=Materialized.as_("w")).toStream().to("out", Produced.with_(key, Serdes.Long())))
    topology = b.build()
    live = newTask(topology, 10 * 1024 * 1024)
    live.addRecords("in", [RawRecord(0, 5, b"a", b"v")])
    live.processAll(0)
    live.commit()
    assert produced(live, key) == []
    rebuilt = StreamTask("0_0", topology.subtopologies()[0], topology.storeBuilders(),
                         StreamsConfig({"statestore.cache.max.bytes": 10 * 1024 * 1024}), 0, lambda t: t, lambda t: 1)
    rebuilt.restore(pickle.loads(pickle.dumps(live.checkpoint())))
    rebuilt.initialize()
    assert rebuilt.recordCache.sizeBytes == live.recordCache.sizeBytes > 0
    for task in (live, rebuilt):
        task.addRecords("in", [RawRecord(1, 35, b"a", b"v")])
        task.processAll(0)
        task.commit()
        assert produced(task, key) == [(Windowed("a", TimeWindow(0, 10)), 1, 5)]

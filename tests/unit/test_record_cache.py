"""The DSL record cache: size-based eviction with flush-on-evict (rules SA-10, E-5; Kafka
``ThreadCache.maybeEvict``, ``NamedCache.evict/flush``, ``LRUNode.size``)."""

from datetime import timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from kspark import Consumed, Materialized, Produced, Serdes, SessionWindows, StreamsBuilder, WindowedSerdes
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
       gap=st.integers(1, 15), grace=st.integers(0, 40), cacheBytes=st.sampled_from([1, 100, 200, 300, 500, 10_000]),
       commitEvery=st.integers(1, 20))
def test_e5_any_cache_size_and_commit_interval_give_the_uncached_final_table(steps, gap, grace, cacheBytes, commitEvery):
    """Whatever the cache size and commit interval, the last value forwarded per windowed key is
    the value last written (eviction and commit both flush), so the table the output describes
    is the uncached one; and every forwarded record is one the uncached run forwards too."""
    ts, raws = 300, []
    for n, (key, step) in enumerate(steps):
        ts = max(0, ts + step)
        raws.append(RawRecord(n, ts, key.encode(), b"v"))

    def run(cache):
        task, out = newTask(sessionTopology(gap, grace), cache), []
        for start in range(0, len(raws), commitEvery):
            task.addRecords("in", raws[start:start + commitEvery])
            task.processAll(0)
            task.commit()
            out += produced(task, SESSION_KEY)
        return out

    uncached, cached = run(0), run(cacheBytes)
    assert finalTable(cached) == finalTable(uncached)
    assert set(cached) <= set(uncached)

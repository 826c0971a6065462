"""The session store's reads, expiry and checkpoint round trip against a plain model of rules
ST-3..ST-7 (one dict of sessions, every read a filter and a sort), for in-memory and persistent
stores, over random puts, removes and reads."""

import pickle

from hypothesis import given, settings
from hypothesis import strategies as st

from kspark import Serdes, Stores
from kspark.dsl import SessionWindow, Windowed


class Model:
    """ST-3..ST-7 stated directly: ``sessions`` maps (end, key bytes, start) -> (key, aggregate)."""

    def __init__(self, persistent: bool, retention: int) -> None:
        self.persistent, self.retention = persistent, retention
        self.interval = max(retention // 2, 60_000)
        self.sessions: dict = {}
        self.observed = -1
        self.dropped = 0

    def expired(self, end: int) -> bool:
        bound = self.observed - self.retention
        return end // self.interval < bound // self.interval if self.persistent else end <= bound

    def put(self, key: str, start: int, end: int, aggregate) -> None:
        self.observed = max(self.observed, end)
        entry = (end, key.encode(), start)
        if aggregate is None:
            self.sessions.pop(entry, None)
        elif self.expired(end):
            self.dropped += 1  # ST-7: dropped and counted
        else:
            self.sessions[entry] = (key, aggregate)
            if self.persistent:  # ST-6: a put deletes the segments older than the bound's segment
                self.sessions = {e: v for e, v in self.sessions.items() if not self.expired(e[0])}

    def byKey(self, key: str) -> list:
        live = self.observed - self.retention + 1
        return sorted(((e[0], e[2], v[1]) for e, v in self.sessions.items() if e[1] == key.encode() and e[0] >= live),
                      key=lambda s: (s[0], -s[1]))

    def reads(self, key: str, a: int, b: int) -> dict:
        live = self.observed - self.retention + 1
        byEnd = sorted(((e, v) for e, v in self.sessions.items()
                        if a <= e[0] <= b and (self.persistent or e[0] >= live)),
                       key=lambda ev: (ev[0][0], ev[0][1], -ev[0][2]))
        return {
            "findSessions": [s for s in self.byKey(key) if s[0] >= a and s[1] <= b],
            "fetch": self.byKey(key),
            "backwardFetch": self.byKey(key)[::-1],
            "fetchSession": None if b < live else self.sessions.get((b, key.encode(), a), (None, None))[1],
            "findSessionsByEnd": [(v[0], e[2], e[0], v[1]) for e, v in byEnd],
        }


def storeReads(store, key: str, a: int, b: int) -> dict:
    def triples(it):
        return [(kv.key.window().end(), kv.key.window().start(), kv.value) for kv in it]

    return {
        "findSessions": triples(store.findSessions(key, a, b)),
        "fetch": triples(store.fetch(key)),
        "backwardFetch": triples(store.backwardFetch(key)),
        "fetchSession": store.fetchSession(key, a, b),
        "findSessionsByEnd": [(kv.key.key(), kv.key.window().start(), kv.key.window().end(), kv.value)
                              for kv in store.findSessionsByEnd(a, b)],
    }


# ends on a coarse grid (sessions sharing an end are common) across several 60 s segments
ends = st.integers(0, 40).map(lambda i: i * 10_000)
lengths = st.sampled_from([0, 1, 5, 20_000, 65_000])
ops = st.lists(st.one_of(
    st.tuples(st.just("put"), st.sampled_from("ab"), ends, lengths, st.integers(0, 9)),
    st.tuples(st.just("remove"), st.sampled_from("ab"), ends, lengths),
    st.tuples(st.just("read"), st.sampled_from("ab"), st.integers(0, 400_000), st.integers(0, 400_000)),
    st.tuples(st.just("restore")),
), max_size=60)


def build(persistent: bool, retention: int):
    supplier = (Stores.persistentSessionStore if persistent else Stores.inMemorySessionStore)("s", retention)
    store = Stores.sessionStoreBuilder(supplier, Serdes.String(), Serdes.Long()).build(Serdes.String(), Serdes.Long())
    dropped = []
    store.droppedCounter = lambda: dropped.append(1)
    return store, dropped


@settings(max_examples=300, deadline=None, derandomize=True)
@given(ops=ops, persistent=st.booleans(), retention=st.sampled_from([10, 30_000, 200_000]))
def test_st3_st7_store_equals_the_model(ops, persistent, retention):
    store, dropped = build(persistent, retention)
    model = Model(persistent, retention)
    for op in ops:
        if op[0] == "put":
            _, key, end, length, value = op
            store.put(Windowed(key, SessionWindow(max(0, end - length), end)), value)
            model.put(key, max(0, end - length), end, value)
        elif op[0] == "remove":
            _, key, end, length = op
            store.remove(Windowed(key, SessionWindow(max(0, end - length), end)))
            model.put(key, max(0, end - length), end, None)
        elif op[0] == "read":
            _, key, a, b = op
            assert storeReads(store, key, a, b) == model.reads(key, a, b)
        else:  # the Spark host's checkpoint: the snapshot is pickled and restored into a new store
            restored, _ = build(persistent, retention)
            restored.restore(pickle.loads(pickle.dumps(store.snapshot())))
            restored.droppedCounter = store.droppedCounter
            store = restored
        assert len(dropped) == model.dropped
    for key in "ab":
        assert storeReads(store, key, 0, 500_000) == model.reads(key, 0, 500_000)


def test_st6_a_put_deletes_old_segments_and_a_remove_does_not():
    store, _ = build(True, 10)
    store.put(Windowed("a", SessionWindow(0, 3)), 1)
    store.remove(Windowed("b", SessionWindow(130_000, 130_000)))  # observed 130,000, nothing deleted
    assert [kv.key for kv in store.findSessionsByEnd(0, 200_000)] == [Windowed("a", SessionWindow(0, 3))]
    store.put(Windowed("b", SessionWindow(130_000, 130_000)), 2)  # segment 0 < segmentId(129,990) = 2
    assert [kv.key for kv in store.findSessionsByEnd(0, 200_000)] == [Windowed("b", SessionWindow(130_000, 130_000))]

"""Issue 19 item 8: TopologyTestDriver's store views read through the record cache as Kafka's
caching layers do (rule ST-9), with Kafka's iterator protocol. Expected values checked on Kafka
4.3.1's TopologyTestDriver (session gap 10 ms, retention 10 ms, records a@0 then b@100000)."""

import pytest

from kspark import KeyValue, Materialized, SessionWindow, SessionWindows, StreamsBuilder, Windowed


def sessions(cacheBytes):
    from kspark.testing import TopologyTestDriver

    b = StreamsBuilder()
    (b.stream("in").groupByKey().windowedBy(SessionWindows.ofInactivityGapWithNoGrace(10))
     .count(Materialized.as_("s").withRetention(10)))
    d = TopologyTestDriver(b.build(), {"statestore.cache.max.bytes": cacheBytes})
    d.createInputTopic("in").pipeKeyValueList([("a", "v"), ("b", "v")], 0, 100_000)
    return d


def test_session_past_retention_still_cached_is_read_through_the_cache():
    with sessions(10_000_000) as d:
        store = d.getSessionStore("s")
        assert list(store.fetch("a")) == [KeyValue(Windowed("a", SessionWindow(0, 0)), 1)]
        assert store.fetchSession("a", 0, 0) == 1
        assert list(store.findSessions("a", 0, 0)) == [KeyValue(Windowed("a", SessionWindow(0, 0)), 1)]


def test_session_past_retention_without_cache_is_gone():
    with sessions(0) as d:
        store = d.getSessionStore("s")
        assert list(store.fetch("a")) == [] and store.fetchSession("a", 0, 0) is None


def test_iterators_have_kafkas_protocol():
    with sessions(10_000_000) as d:
        it = d.getSessionStore("s").fetch("b")
        assert it.hasNext() and it.peekNextKey() == Windowed("b", SessionWindow(100_000, 100_000))
        assert it.next() == KeyValue(Windowed("b", SessionWindow(100_000, 100_000)), 1)
        assert not it.hasNext()
        with pytest.raises(LookupError):
            it.next()
        it.close()
        with d.getSessionStore("s").fetch("a") as it2:
            assert [kv.value for kv in it2] == [1]

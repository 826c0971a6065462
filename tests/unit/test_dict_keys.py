"""Keys compare by their serialized bytes, as in Kafka (issue 32).

Kafka Streams never hashes or compares a key object: its stores (rule E-2), record caches
(SA-10, E-5), suppression buffers (SU-2, SU-3), join stores and partitioners (DP-1) all hold the
key serde's bytes. So a ``dict`` or ``list`` key with the JSON serde (Kafka: a ``GenericRecord``
or a ``Map`` with an Avro or JSON serde) works as a grouping, join or store key, and two keys are
the same key exactly when they serialize to the same bytes:

- ``{"a": 1, "b": 2}`` and ``{"b": 2, "a": 1}`` are equal Python objects but kspark's JSON serde
  writes the items in their order (``'{"a":1,"b":2}'`` / ``'{"b":2,"a":1}'``): two keys;
- ``1``, ``1.0`` and ``True`` are equal Python objects (same hash) but write ``1``, ``1.0``,
  ``true``: three keys;
- the tuple ``(1, 2)`` and the list ``[1, 2]`` are unequal Python objects but both write
  ``[1,2]``: one key.

Each test states its expected records (key, value, timestamp), worked out from Kafka's rules.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from kspark import (Consumed, ContextualProcessor, Grouped, JoinWindows, KeyValue, Materialized, Produced, Serdes,
                    SessionWindow, SessionWindows, SlidingWindows, Stores, StreamJoined, StreamsBuilder, Suppressed,
                    TimeWindow, TimeWindows, Windowed, WindowedSerdes)
from kspark.config import StreamsConfig
from kspark.runtime.record_queue import RawRecord
from kspark.runtime.stream_task import StreamTask
from kspark.testing import TestRecord, TopologyTestDriver

J = Serdes.JSON()
LONG = Serdes.Long()
BYTES = Serdes.ByteArray()
DEFAULTS = {"default.key.serde": J, "default.value.serde": J}
CACHED = pytest.mark.parametrize("cached", [True, False], ids=["cached", "uncached"])


def config(cached: bool) -> dict:
    return dict(DEFAULTS) if cached else {**DEFAULTS, "statestore.cache.max.bytes": 0}


def drive(builder, inputs, cached=True, outKey=J, outValue=J, check=None, topic="in"):
    """Pipe ``inputs`` ((key, value, timestamp), JSON) into ``topic``; the records of "out"."""
    with TopologyTestDriver(builder.build(), config(cached)) as d:
        i = d.createInputTopic(topic, J, J)
        for k, v, ts in inputs:
            i.pipeInput(k, v, ts)
        out = d.createOutputTopic("out", outKey, outValue).readRecordsToList()
        if check is not None:
            check(d)
    return out


def triples(records):
    return [(r.key(), r.value(), r.timestamp()) for r in records]


# ---------------------------------------------------------------------------- TopArticlesLambdaExample
HOUR = 3_600_000


def topArticlesTopology(dictIndustryKey: bool):
    """Confluent's ``TopArticlesLambdaExample`` (kafka-streams-examples) with JSON for Avro: page
    views keyed by a record ``{user, page, industry}`` (a ``GenericRecord`` key there), counted per
    hour, re-grouped by ``Windowed(industry)`` (a ``{"industry": ...}`` dict with
    ``dictIndustryKey``) into a list of view stats per industry and hour, rendered as the
    top-N pages. The priority queue is a list; ``remove`` of an absent record is a no-op, as Java's
    ``PriorityQueue.remove`` returns false; the rendering orders by count, then page (Java's queue
    leaves ties in heap order)."""
    b = StreamsBuilder()
    views = b.stream("PageViews", Consumed.with_(BYTES, J))

    def clone(dummy, article):
        record = {"user": "user", "page": article["page"], "industry": article["industry"]}
        return KeyValue.pair(record, record)

    articleViews = views.filter(lambda dummy, record: "ARTICLE" in (record.get("flags") or "")).map(clone)
    viewCounts = (articleViews.groupByKey(Grouped.with_(J, J))
                  .windowedBy(TimeWindows.ofSizeWithNoGrace(timedelta(hours=1)))
                  .count(materialized=Materialized.as_("view-counts")))
    windowedIndustrySerde = WindowedSerdes.timeWindowedSerdeFrom(J if dictIndustryKey else Serdes.String(), HOUR)

    def byIndustry(windowedArticle, count):
        industry = windowedArticle.key()["industry"]
        windowedIndustry = Windowed({"industry": industry} if dictIndustryKey else industry, windowedArticle.window())
        viewStats = {"page": windowedArticle.key()["page"], "user": "user", "industry": industry, "count": count}
        return KeyValue.pair(windowedIndustry, viewStats)

    def add(windowedIndustry, record, queue):
        queue.append(record)
        return queue

    def remove(windowedIndustry, record, queue):
        if record in queue:
            queue.remove(record)
        return queue

    allViewCounts = viewCounts.groupBy(byIndustry, Grouped.with_(windowedIndustrySerde, J)).aggregate(
        list, add, remove, materialized=Materialized.with_(windowedIndustrySerde, J))
    topN = 100

    def render(queue):
        return "".join(r["page"] + "\n" for r in sorted(queue, key=lambda r: (-r["count"], r["page"]))[:topN])

    (allViewCounts.mapValues(render).toStream()
     .to("TopNewsPerIndustry", Produced.with_(windowedIndustrySerde, Serdes.String())))
    return b.build(), windowedIndustrySerde


PAGE_VIEWS = [  # (user, page, industry, flags, timestamp)
    ("alice", "p1", "eng", "ARTICLE", 0),
    ("bob", "p2", "eng", "ARTICLE", 1000),
    ("carol", "p1", "eng", "ARTICLE", 2000),
    ("dave", "home", "eng", "LANDING", 3000),  # not an article: filtered out
    ("erin", "p3", "fin", "ARTICLE", 4000),
    ("frank", "p2", "eng", "ARTICLE", 5000),
    ("gina", "p2", "eng", "ARTICLE", 6000),
    ("hank", "p1", "eng", "ARTICLE", HOUR + 1),  # the next hour's window
]


@CACHED
@pytest.mark.parametrize("dictIndustryKey", [False, True], ids=["industry-string", "industry-dict"])
def test_top_articles_lambda_example_groups_by_a_record_key(cached, dictIndustryKey):
    """Each view updates its article's hourly count (T-18: timestamp = the latest view), which
    replaces the article's old stats in its industry's list (one ``Change(new, old)`` per update:
    the re-grouped key is unchanged, KIP-904) at ``max(record, aggregate)`` time (T-17). In
    TopologyTestDriver the caches flush after every record (TTD-1): cached and uncached agree."""
    topology, serde = topArticlesTopology(dictIndustryKey)

    def W(industry, start):
        return Windowed({"industry": industry} if dictIndustryKey else industry, TimeWindow(start, start + HOUR))

    with TopologyTestDriver(topology, config(cached)) as d:
        views = d.createInputTopic("PageViews", BYTES, J)
        counts = d.getWindowStore("view-counts")
        for user, page, industry, flags, ts in PAGE_VIEWS:
            if ts == HOUR + 1:  # before the next hour's view moves hour 0 out of the store's retention
                assert counts.fetch({"user": "user", "page": "p1", "industry": "eng"}, 0) == 2
                assert counts.fetch({"user": "user", "page": "p2", "industry": "eng"}, 0) == 3
                # the same items in another order are another key (other bytes): no such window
                assert counts.fetch({"page": "p1", "user": "user", "industry": "eng"}, 0) is None
            views.pipeInput(None, {"user": user, "page": page, "industry": industry, "flags": flags}, ts)
        out = d.createOutputTopic("TopNewsPerIndustry", serde, Serdes.String()).readRecordsToList()
        assert counts.fetch({"user": "user", "page": "p1", "industry": "eng"}, HOUR) == 1
    assert triples(out) == [
        (W("eng", 0), "p1\n", 0),
        (W("eng", 0), "p1\np2\n", 1000),
        (W("eng", 0), "p1\np2\n", 2000),       # p1: 2, p2: 1
        (W("fin", 0), "p3\n", 4000),
        (W("eng", 0), "p1\np2\n", 5000),       # p1: 2, p2: 2
        (W("eng", 0), "p2\np1\n", 6000),       # p2: 3 overtakes p1
        (W("eng", HOUR), "p1\n", HOUR + 1),
    ]


# ---------------------------------------------------------------------------- groupBy + count/reduce/aggregate
VIEWS = [(None, {"user": "u1", "page": "a"}, 1), (None, {"user": "u2", "page": "a"}, 2),
         (None, {"user": "u1", "page": "b"}, 3), (None, {"user": "u3", "page": "a"}, 4)]
A, B = {"page": "a"}, {"page": "b"}


@CACHED
def test_group_by_a_dict_key_and_count(cached):
    b = StreamsBuilder()
    (b.stream("in").groupBy(lambda k, v: {"page": v["page"]}).count(materialized=Materialized.as_("counts"))
     .toStream().to("out", Produced.with_(J, LONG)))

    def check(d):
        store = d.getKeyValueStore("counts")
        assert store.get(A) == 3 and store.get(B) == 1
        assert list(store.all()) == [KeyValue(A, 3), KeyValue(B, 1)]  # E-2: '{"page":"a"}' < '{"page":"b"}'

    out = drive(b, VIEWS, cached, outValue=LONG, check=check)
    assert triples(out) == [(A, 1, 1), (A, 2, 2), (B, 1, 3), (A, 3, 4)]


@CACHED
def test_group_by_a_dict_key_and_reduce(cached):
    b = StreamsBuilder()
    (b.stream("in").groupBy(lambda k, user: {"user": user}, Grouped.with_(J, J))
     .reduce(lambda agg, user: agg + "," + user).toStream().to("out"))
    out = drive(b, [(None, "u1", 1), (None, "u2", 2), (None, "u1", 3), (None, "u3", 4)], cached)
    assert triples(out) == [({"user": "u1"}, "u1", 1), ({"user": "u2"}, "u2", 2), ({"user": "u1"}, "u1,u1", 3),
                            ({"user": "u3"}, "u3", 4)]


@CACHED
def test_group_by_a_dict_key_and_aggregate(cached):
    b = StreamsBuilder()
    (b.stream("in").groupBy(lambda k, v: {"page": v["page"]})
     .aggregate(list, lambda key, v, users: users + [v["user"]]).toStream().to("out"))
    out = drive(b, VIEWS, cached)
    assert triples(out) == [(A, ["u1"], 1), (A, ["u1", "u2"], 2), (B, ["u1"], 3), (A, ["u1", "u2", "u3"], 4)]


@CACHED
def test_group_by_a_list_key(cached):
    b = StreamsBuilder()
    (b.stream("in").groupBy(lambda k, v: [v["page"], len(v["user"])]).count().toStream()
     .to("out", Produced.with_(J, LONG)))
    out = drive(b, VIEWS, cached, outValue=LONG)
    assert triples(out) == [(["a", 2], 1, 1), (["a", 2], 2, 2), (["b", 2], 1, 3), (["a", 2], 3, 4)]


@CACHED
def test_equal_dicts_in_another_item_order_are_other_keys(cached):
    """Kafka: keys are their bytes; ``{"a":1,"b":2}`` and ``{"b":2,"a":1}`` serialize differently
    (the JSON serde keeps the item order), so they are counted apart."""
    b = StreamsBuilder()
    b.stream("in").groupBy(lambda k, v: v).count().toStream().to("out", Produced.with_(J, LONG))
    inputs = [(None, {"a": 1, "b": 2}, 1), (None, {"b": 2, "a": 1}, 2), (None, {"a": 1, "b": 2}, 3)]
    out = drive(b, inputs, cached, outKey=BYTES, outValue=LONG)
    assert triples(out) == [(b'{"a":1,"b":2}', 1, 1), (b'{"b":2,"a":1}', 1, 2), (b'{"a":1,"b":2}', 2, 3)]


@CACHED
def test_equal_numbers_with_other_bytes_are_other_keys(cached):
    """1 == 1.0 == True in Python (one hash), but they serialize to ``1``, ``1.0`` and ``true``:
    three keys, as in Kafka."""
    b = StreamsBuilder()
    b.stream("in").groupBy(lambda k, v: v["key"]).count().toStream().to("out", Produced.with_(J, LONG))
    inputs = [(None, {"key": 1}, 1), (None, {"key": 1.0}, 2), (None, {"key": True}, 3), (None, {"key": 1}, 4)]
    out = drive(b, inputs, cached, outKey=BYTES, outValue=LONG)
    assert triples(out) == [(b"1", 1, 1), (b"1.0", 1, 2), (b"true", 1, 3), (b"1", 2, 4)]


@CACHED
def test_a_tuple_and_a_list_with_the_same_bytes_are_one_key(cached):
    """``(1, 2)`` != ``[1, 2]`` in Python, but both serialize to ``[1,2]``: one key, as in Kafka."""
    b = StreamsBuilder()
    b.stream("in").groupBy(lambda k, v: tuple(v) if v[0] == 1 and len(v) == 2 and k == "t" else v).count() \
        .toStream().to("out", Produced.with_(J, LONG))
    out = drive(b, [("t", [1, 2], 1), ("l", [1, 2], 2)], cached, outValue=LONG)
    assert triples(out) == [([1, 2], 1, 1), ([1, 2], 2, 2)]


# ---------------------------------------------------------------------------- record cache by bytes (one commit)
def _task(topology, cacheBytes=10 * 1024 * 1024):
    config = StreamsConfig({**DEFAULTS, "statestore.cache.max.bytes": cacheBytes})
    task = StreamTask("0_0", topology.subtopologies()[0], topology.storeBuilders(), config, 0, lambda t: t, lambda t: 1)
    task.initialize()
    return task


def _produced(task, keySerde=BYTES):
    return [(keySerde.deserialize("out", r.key), None if r.value is None else LONG.deserialize("out", r.value),
             r.timestamp) for r in task.drainProduced()]


KEYS = [b"1", b"1.0", b"true", b'{"a":1,"b":2}', b'{"b":2,"a":1}', b"1", b'{"a":1,"b":2}', b"[1,2]"]


def test_e5_one_commit_forwards_each_key_by_bytes_once_in_last_update_order():
    """Many updates between two commits (a Spark micro-batch, Kafka's commit interval): the cache
    keeps one entry per serialized key (E-5, SA-10) and the commit forwards each once, with its
    latest value, in the order of each key's last update. Equal Python keys with other bytes
    (1 / 1.0 / True, dicts in another item order) are other entries."""
    b = StreamsBuilder()
    (b.stream("in").groupByKey().count(materialized=Materialized.as_("c")).toStream()
     .to("out", Produced.with_(J, LONG)))
    task = _task(b.build())
    task.addRecords("in", [RawRecord(n, n, key, b'"v"') for n, key in enumerate(KEYS)])
    task.processAll(0)
    assert _produced(task) == []  # nothing before the commit
    task.commit()
    assert _produced(task) == [(b"1.0", 1, 1), (b"true", 1, 2), (b'{"b":2,"a":1}', 1, 4), (b"1", 2, 5),
                               (b'{"a":1,"b":2}', 2, 6), (b"[1,2]", 1, 7)]


MS100 = timedelta(milliseconds=100)


@pytest.mark.parametrize("windows, keySerde", [
    (TimeWindows.ofSizeWithNoGrace(MS100), WindowedSerdes.timeWindowedSerdeFrom(J, 100)),
    (SessionWindows.ofInactivityGapWithNoGrace(MS100), WindowedSerdes.sessionWindowedSerdeFrom(J)),
    (SlidingWindows.ofTimeDifferenceWithNoGrace(MS100), WindowedSerdes.timeWindowedSerdeFrom(J, 100)),
], ids=["time", "session", "sliding"])
def test_e5_one_commit_of_a_windowed_count_keys_its_cache_by_bytes(windows, keySerde):
    """The same for a windowed count: at ts 200..207 every key has one window [200, ...] (time:
    [200, 300); session: [first, last]; sliding: the left window [ts - 100, ts] of its last
    record, with earlier left windows of the same key superseded), forwarded once per key."""
    b = StreamsBuilder()
    (b.stream("in").groupByKey().windowedBy(windows).count().toStream().to("out", Produced.with_(keySerde, LONG)))
    task = _task(b.build())
    task.addRecords("in", [RawRecord(n, 200 + n, key, b'"v"') for n, key in enumerate(KEYS)])
    task.processAll(0)
    task.commit()
    out = [(w.key(), w.window().start(), w.window().end(), count, ts)
           for w, count, ts in _produced(task, WindowedSerdes.timeWindowedSerdeFrom(BYTES, 100)
                                         if isinstance(windows, (TimeWindows, SlidingWindows))
                                         else WindowedSerdes.sessionWindowedSerdeFrom(BYTES))
           if count is not None]
    byKey = {}
    for key, start, end, count, ts in out:
        byKey.setdefault(key, []).append((start, end, count, ts))
    assert sorted(byKey) == sorted(set(KEYS))  # 1, 1.0 and true apart, the two dicts apart
    final = {key: max(windows_, key=lambda w: (w[3], w[2]))[2] for key, windows_ in byKey.items()}
    assert final == {b"1": 2, b"1.0": 1, b"true": 1, b'{"a":1,"b":2}': 2, b'{"b":2,"a":1}': 1, b"[1,2]": 1}


# ---------------------------------------------------------------------------- KTable source, toTable
TABLE_INPUTS = [({"id": 1}, "a", 1), ({"id": 2}, "b", 2), ({"id": 1}, "c", 3), ({"id": 1}, None, 4),
                ({"id": 3}, None, 5)]


@CACHED
def test_ktable_source_with_dict_keys(cached):
    """The table's store and cache are keyed by the key's bytes. The delete of a key the store
    never held forwards nothing through the cache (Kafka's ``CachingKeyValueStore``: old and new
    value null), a tombstone without it."""
    b = StreamsBuilder()
    table = b.table("in", materialized=Materialized.as_("t"))
    table.toStream().to("out")
    table.mapValues(str.upper, materialized=Materialized.as_("upper")).toStream().to("upper")

    def check(d):
        store = d.getKeyValueStore("t")
        assert store.get({"id": 2}) == "b" and store.get({"id": 1}) is None
        assert list(store.all()) == [KeyValue({"id": 2}, "b")]
        assert list(d.getKeyValueStore("upper").all()) == [KeyValue({"id": 2}, "B")]
        upper = d.createOutputTopic("upper", J, J).readRecordsToList()
        assert triples(upper) == [({"id": 1}, "A", 1), ({"id": 2}, "B", 2), ({"id": 1}, "C", 3),
                                  ({"id": 1}, None, 4)] + ([] if cached else [({"id": 3}, None, 5)])

    out = drive(b, TABLE_INPUTS, cached, check=check)
    assert triples(out) == [({"id": 1}, "a", 1), ({"id": 2}, "b", 2), ({"id": 1}, "c", 3),
                            ({"id": 1}, None, 4)] + ([] if cached else [({"id": 3}, None, 5)])


@CACHED
def test_to_table_with_dict_keys(cached):
    b = StreamsBuilder()
    b.stream("in").toTable(materialized=Materialized.as_("t")).toStream().to("out")
    def check(d):
        assert list(d.getKeyValueStore("t").all()) == [KeyValue({"id": 2}, "b")]

    out = drive(b, TABLE_INPUTS, cached, check=check)
    assert triples(out) == [({"id": 1}, "a", 1), ({"id": 2}, "b", 2), ({"id": 1}, "c", 3),
                            ({"id": 1}, None, 4)] + ([] if cached else [({"id": 3}, None, 5)])


# ---------------------------------------------------------------------------- joins
@CACHED
@pytest.mark.parametrize("left", [False, True], ids=["join", "leftJoin"])
def test_stream_table_join_on_dict_keys(cached, left):
    """J-2: the stream record looks the table up by the key's bytes; a dict with the same items
    in another order is another key and finds nothing (J-4: an inner join drops it, a left join
    joins it with null); output keeps the stream record's key and timestamp (T-19)."""
    b = StreamsBuilder()
    users = b.table("users")
    clicks = b.stream("in")
    joiner = lambda click, user: f"{None if user is None else user['name']}:{click}"  # noqa: E731
    (clicks.leftJoin(users, joiner) if left else clicks.join(users, joiner)).to("out")
    with TopologyTestDriver(b.build(), config(cached)) as d:
        d.createInputTopic("users", J, J).pipeInput({"id": 1, "region": "eu"}, {"name": "ann"}, 0)
        i = d.createInputTopic("in", J, J)
        i.pipeInput({"id": 1, "region": "eu"}, "c1", 1)
        i.pipeInput({"region": "eu", "id": 1}, "c2", 2)
        i.pipeInput({"id": 2, "region": "eu"}, "c3", 3)
        out = d.createOutputTopic("out", BYTES, J).readRecordsToList()
    expected = [(b'{"id":1,"region":"eu"}', "ann:c1", 1)]
    if left:
        expected += [(b'{"region":"eu","id":1}', "None:c2", 2), (b'{"id":2,"region":"eu"}', "None:c3", 3)]
    assert triples(out) == expected


@pytest.mark.parametrize("left", [False, True], ids=["join", "leftJoin"])
def test_stream_stream_join_on_dict_keys(left):
    """Both sides' window stores (and the left join's outer-join store) are keyed by bytes: L1 and
    R1 join at max(0, 5); L2 finds nothing and, in a left join, is emitted non-joined with its own
    timestamp once its window (6 + 10, no grace) has closed, at stream time 17."""
    b = StreamsBuilder()
    leftStream, rightStream = b.stream("in"), b.stream("right")
    windows = JoinWindows.ofTimeDifferenceWithNoGrace(timedelta(milliseconds=10))
    joiner = lambda lv, rv: f"{lv}+{rv}"  # noqa: E731
    (leftStream.leftJoin(rightStream, joiner, windows, StreamJoined.with_(J, J, J)) if left
     else leftStream.join(rightStream, joiner, windows, StreamJoined.with_(J, J, J))).to("out")
    with TopologyTestDriver(b.build(), config(True)) as d:
        i, r = d.createInputTopic("in", J, J), d.createInputTopic("right", J, J)
        i.pipeInput({"id": 1}, "L1", 0)
        r.pipeInput({"id": 1}, "R1", 5)
        i.pipeInput({"id": 2}, "L2", 6)
        r.pipeInput({"id": 3}, "R3", 17)
        out = d.createOutputTopic("out", J, J).readRecordsToList()
    assert triples(out) == [({"id": 1}, "L1+R1", 5)] + ([({"id": 2}, "L2+None", 6)] if left else [])


@CACHED
def test_table_table_join_on_dict_keys(cached):
    """Both sides look each other up by the key's bytes; an update of either side joins (T-19:
    timestamp = the later side's); a delete makes a tombstone."""
    b = StreamsBuilder()
    b.table("in").join(b.table("right"), lambda left, right: f"{left}+{right}").toStream().to("out")
    with TopologyTestDriver(b.build(), config(cached)) as d:
        left, right = d.createInputTopic("in", J, J), d.createInputTopic("right", J, J)
        left.pipeInput({"id": 1}, "L1", 1)
        right.pipeInput({"id": 1}, "R1", 2)
        right.pipeInput({"id": 2}, "R2", 3)
        left.pipeInput({"id": 1}, "L1b", 4)
        right.pipeInput({"id": 1}, None, 5)
        out = d.createOutputTopic("out", J, J).readRecordsToList()
    assert triples(out) == [({"id": 1}, "L1+R1", 2), ({"id": 1}, "L1b+R1", 4), ({"id": 1}, None, 5)]


def test_global_table_join_on_a_dict_key():
    """J-7: the stream record's mapped key (a dict) is looked up in the global store by its bytes."""
    b = StreamsBuilder()
    users = b.globalTable("users")
    b.stream("in").join(users, lambda k, v: {"id": v["user"]}, lambda v, user: f"{user}:{v['what']}").to("out")
    with TopologyTestDriver(b.build(), config(True)) as d:
        d.createInputTopic("users", J, J).pipeInput({"id": 7}, "ann", 0)
        i = d.createInputTopic("in", J, J)
        i.pipeInput("k1", {"user": 7, "what": "click"}, 1)
        i.pipeInput("k2", {"user": 8, "what": "click"}, 2)
        i.pipeInput("k3", {"user": 7.0, "what": "buy"}, 3)  # {"id":7.0}: other bytes, no match
        out = d.createOutputTopic("out", J, J).readRecordsToList()
    assert triples(out) == [("k1", "ann:click", 1)]


@CACHED
def test_foreign_key_join_with_dict_keys(cached):
    """KIP-213 with dict primary and foreign keys: subscriptions are keyed by the combined key's
    bytes and answered by prefix scan; the result table is keyed by the primary key."""
    b = StreamsBuilder()
    orders, customers = b.table("in"), b.table("customers")
    orders.join(customers, lambda order: order["customer"], lambda order, customer: f"{order['item']}@{customer}") \
        .toStream().to("out")
    with TopologyTestDriver(b.build(), config(cached)) as d:
        d.createInputTopic("customers", J, J).pipeInput({"cid": "c1"}, "ann", 0)
        i = d.createInputTopic("in", J, J)
        i.pipeInput({"order": 1}, {"item": "pen", "customer": {"cid": "c1"}}, 1)
        i.pipeInput({"order": 2}, {"item": "ink", "customer": {"cid": "c2"}}, 2)
        d.createInputTopic("customers", J, J).pipeInput({"cid": "c2"}, "bob", 3)
        d.createInputTopic("customers", J, J).pipeInput({"cid": "c1"}, "ann2", 4)
        out = d.createOutputTopic("out", J, J).readRecordsToList()
    assert triples(out) == [({"order": 1}, "pen@ann", 1), ({"order": 2}, "ink@bob", 3), ({"order": 1}, "pen@ann2", 4)]


@CACHED
def test_cogroup_with_dict_keys(cached):
    b = StreamsBuilder()
    clicks = b.stream("in").groupByKey()
    buys = b.stream("buys").groupByKey()
    (clicks.cogroup(lambda k, v, agg: {**agg, "clicks": agg["clicks"] + 1})
     .cogroup(buys, lambda k, v, agg: {**agg, "buys": agg["buys"] + 1})
     .aggregate(lambda: {"clicks": 0, "buys": 0}).toStream().to("out"))
    with TopologyTestDriver(b.build(), config(cached)) as d:
        i, buy = d.createInputTopic("in", J, J), d.createInputTopic("buys", J, J)
        i.pipeInput({"u": 1}, "x", 1)
        buy.pipeInput({"u": 1}, "y", 2)
        i.pipeInput({"u": 2}, "x", 3)
        out = d.createOutputTopic("out", J, J).readRecordsToList()
    assert triples(out) == [({"u": 1}, {"clicks": 1, "buys": 0}, 1), ({"u": 1}, {"clicks": 1, "buys": 1}, 2),
                            ({"u": 2}, {"clicks": 1, "buys": 0}, 3)]


# ---------------------------------------------------------------------------- windowed aggregations
KA, KB = {"user": "a", "page": "p"}, {"user": "b", "page": "p"}
GRACE = timedelta(milliseconds=100)


@CACHED
def test_time_windowed_count_with_dict_keys(cached):
    """T-18 per window of the dict key; the store is read by the key's bytes (a grace of 100 ms
    keeps the windows in the store's retention)."""
    serde = WindowedSerdes.timeWindowedSerdeFrom(J, 10)
    b = StreamsBuilder()
    (b.stream("in").groupByKey().windowedBy(TimeWindows.ofSizeAndGrace(timedelta(milliseconds=10), GRACE))
     .count(materialized=Materialized.as_("tw")).toStream().to("out", Produced.with_(serde, LONG)))

    def check(d):
        store = d.getWindowStore("tw")
        assert store.fetch(KA, 0) == 2 and store.fetch(KA, 10) == 1
        assert list(store.fetch(KA, 0, 100)) == [KeyValue(0, 2), KeyValue(10, 1)]
        assert store.fetch({"page": "p", "user": "a"}, 0) is None  # other bytes: another key
        assert list(store.fetch({"page": "p", "user": "a"}, 0, 100)) == []

    out = drive(b, [(KA, "v", 1), (KB, "v", 2), (KA, "v", 3), (KA, "v", 12)], cached, outKey=serde, outValue=LONG,
                check=check)
    assert triples(out) == [(Windowed(KA, TimeWindow(0, 10)), 1, 1), (Windowed(KB, TimeWindow(0, 10)), 1, 2),
                            (Windowed(KA, TimeWindow(0, 10)), 2, 3), (Windowed(KA, TimeWindow(10, 20)), 1, 12)]


@CACHED
def test_session_windowed_count_with_dict_keys(cached):
    """SA-5..SA-9: a@3 merges a's session [1,1] (tombstone at its end, then [1,3] at 3); a@30 is
    past the gap: a new session (a grace of 100 ms keeps [1,3] in the store's retention)."""
    serde = WindowedSerdes.sessionWindowedSerdeFrom(J)
    b = StreamsBuilder()
    (b.stream("in").groupByKey().windowedBy(SessionWindows.ofInactivityGapAndGrace(timedelta(milliseconds=10), GRACE))
     .count(materialized=Materialized.as_("sw")).toStream().to("out", Produced.with_(serde, LONG)))

    def S(key, start, end):
        return Windowed(key, SessionWindow(start, end))

    def check(d):
        store = d.getSessionStore("sw")
        assert list(store.fetch(KA)) == [KeyValue(S(KA, 1, 3), 2), KeyValue(S(KA, 30, 30), 1)]
        assert list(store.fetch({"page": "p", "user": "a"})) == []
        assert store.fetchSession(KB, 2, 2) == 1

    out = drive(b, [(KA, "v", 1), (KB, "v", 2), (KA, "v", 3), (KA, "v", 30)], cached, outKey=serde, outValue=LONG,
                check=check)
    assert triples(out) == [(S(KA, 1, 1), 1, 1), (S(KB, 2, 2), 1, 2), (S(KA, 1, 1), None, 1), (S(KA, 1, 3), 2, 3),
                            (S(KA, 30, 30), 1, 30)]


@CACHED
def test_sliding_windowed_count_with_dict_keys(cached):
    """KIP-450 with d = 10: a@20 makes [10,20]; a@25 creates a@20's right window [21,31] (with
    a@25 in it), then its own left window [15,25] from [10,20]'s aggregate; b@26 its left window."""
    serde = WindowedSerdes.timeWindowedSerdeFrom(J, 10)
    b = StreamsBuilder()
    (b.stream("in").groupByKey().windowedBy(SlidingWindows.ofTimeDifferenceWithNoGrace(timedelta(milliseconds=10)))
     .count().toStream().to("out", Produced.with_(serde, LONG)))
    out = drive(b, [(KA, "v", 20), (KA, "v", 25), (KB, "v", 26)], cached, outKey=serde, outValue=LONG)
    assert triples(out) == [(Windowed(KA, TimeWindow(10, 20)), 1, 20), (Windowed(KA, TimeWindow(21, 31)), 1, 25),
                            (Windowed(KA, TimeWindow(15, 25)), 2, 25), (Windowed(KB, TimeWindow(16, 26)), 1, 26)]


# ---------------------------------------------------------------------------- suppress
@CACHED
def test_suppress_until_window_closes_with_dict_keys(cached):
    """SU-2/SU-3: one buffered entry per windowed key's bytes, evicted when stream time (12)
    reaches the window end (10), by (buffer time, serialized key): a before b, each with the
    timestamp of its latest update."""
    serde = WindowedSerdes.timeWindowedSerdeFrom(J, 10)
    b = StreamsBuilder()
    (b.stream("in").groupByKey().windowedBy(TimeWindows.ofSizeWithNoGrace(timedelta(milliseconds=10)))
     .count(materialized=Materialized.with_(J, LONG))
     .suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded()))
     .toStream().to("out", Produced.with_(serde, LONG)))
    out = drive(b, [(KB, "v", 1), (KA, "v", 2), (KA, "v", 3), ({"user": "c"}, "v", 12)], cached, outKey=serde,
                outValue=LONG)
    assert triples(out) == [(Windowed(KA, TimeWindow(0, 10)), 2, 3), (Windowed(KB, TimeWindow(0, 10)), 1, 1)]


@CACHED
def test_suppress_until_time_limit_keeps_keys_with_other_bytes_apart(cached):
    """SU-5: buffer time = the key's first buffered record's time; at stream time 10 the entries
    buffered at or before 10 - 5 leave by (buffer time, serialized key). 1 and 1.0 (equal in
    Python) are two keys, two entries; {"k": "a"} is updated in place (its first time stays 2)."""
    b = StreamsBuilder()
    (b.stream("in").groupByKey().count(materialized=Materialized.with_(J, LONG))
     .suppress(Suppressed.untilTimeLimit(timedelta(milliseconds=5), Suppressed.BufferConfig.unbounded()))
     .toStream().to("out", Produced.with_(J, LONG)))
    out = drive(b, [(1, "v", 1), ({"k": "a"}, "v", 2), (1.0, "v", 3), ({"k": "a"}, "v", 4), ({"k": "z"}, "v", 10)],
                cached, outKey=BYTES, outValue=LONG)
    assert triples(out) == [(b"1", 1, 1), (b'{"k":"a"}', 2, 4), (b"1.0", 1, 3)]


# ---------------------------------------------------------------------------- Processor API store
class PutAndScan(ContextualProcessor):
    """Puts each record under its dict key, then forwards what the store shows: the value read
    back, the keys of a range over the user's keys and of a prefix scan of the user's prefix."""

    def init(self, context):
        super().init(context)
        self.store = context.getStateStore("kv")

    def process(self, record):
        key = record.key()
        self.store.put(key, record.value())
        user, n = key["user"], key["n"]
        lo, hi = {"user": user, "n": 0}, {"user": user, "n": 9}
        ranged = [kv.key["n"] for kv in self.store.range(lo, hi)]
        prefixed = [kv.key["n"] for kv in self.store.prefixScan('{"user":"%s",' % user, Serdes.String())]
        key["n"] = -1  # a key changed after the put changes nothing stored (Kafka stores its bytes)
        self.context().forward(record.withValue({"get": self.store.get({"user": user, "n": n}),
                                                 "range": ranged, "prefix": prefixed}))


def test_processor_api_key_value_store_with_dict_keys():
    """E-2: a key-value store keyed by the JSON bytes of dict keys: get, range and prefixScan by
    serialized key, iteration in unsigned byte order."""
    b = StreamsBuilder()
    b.addStateStore(Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore("kv"), J, J))
    b.stream("in").process(PutAndScan, "kv").to("out")
    with TopologyTestDriver(b.build(), config(True)) as d:
        i = d.createInputTopic("in", J, J)
        i.pipeInput({"user": "a", "n": 2}, 2, 1)
        i.pipeInput({"user": "b", "n": 1}, 1, 2)
        i.pipeInput({"user": "a", "n": 1}, 1, 3)
        i.pipeInput({"user": "a", "n": 2}, 22, 4)
        out = d.createOutputTopic("out", J, J).readRecordsToList()
        store = d.getKeyValueStore("kv")
        assert list(store.all()) == [KeyValue({"user": "a", "n": 1}, 1), KeyValue({"user": "a", "n": 2}, 22),
                                     KeyValue({"user": "b", "n": 1}, 1)]
        assert store.get({"n": 1, "user": "a"}) is None  # other bytes
        assert [kv.key for kv in store.prefixScan('{"user":"a"', Serdes.String())] == [{"user": "a", "n": 1},
                                                                                      {"user": "a", "n": 2}]
    assert [r.value() for r in out] == [
        {"get": 2, "range": [2], "prefix": [2]},
        {"get": 1, "range": [1], "prefix": [1]},
        {"get": 1, "range": [1, 2], "prefix": [1, 2]},
        {"get": 22, "range": [1, 2], "prefix": [1, 2]},
    ]
    assert [r.key() for r in out] == [{"user": "a", "n": -1}, {"user": "b", "n": -1}, {"user": "a", "n": -1},
                                      {"user": "a", "n": -1}]


def test_windowed_keys_of_unhashable_keys_are_hashable():
    """Java's ``Windowed.hashCode`` works for any key: a ``Windowed`` of a dict goes into a set."""
    w1, w2 = Windowed({"a": 1}, TimeWindow(0, 10)), Windowed({"a": 1}, TimeWindow(0, 10))
    assert w1 == w2 and hash(w1) == hash(w2) and len({w1, w2, Windowed({"a": 2}, TimeWindow(0, 10))}) == 2


def test_store_views_read_cached_windows_by_key_bytes():
    """TopologyTestDriver's window and session store views (store + cache, ST-9) find a key by
    its bytes: an equal dict in another item order finds nothing."""
    b = StreamsBuilder()
    grouped = b.stream("in").groupByKey()
    grouped.windowedBy(TimeWindows.ofSizeWithNoGrace(timedelta(milliseconds=10))).count(
        materialized=Materialized.as_("tw"))
    grouped.windowedBy(SessionWindows.ofInactivityGapWithNoGrace(timedelta(milliseconds=10))).count(
        materialized=Materialized.as_("sw"))
    with TopologyTestDriver(b.build(), config(True)) as d:
        d.createInputTopic("in", J, J).pipeInput(KA, "v", 1)
        assert list(d.getWindowStore("tw").fetch(KA, 0, 10)) == [KeyValue(0, 1)]
        assert list(d.getWindowStore("tw").fetch({"page": "p", "user": "a"}, 0, 10)) == []
        assert [kv.value for kv in d.getSessionStore("sw").fetch(KA)] == [1]
        assert list(d.getSessionStore("sw").fetch({"page": "p", "user": "a"})) == []


def test_st9_a_task_rebuilt_from_its_checkpoint_keeps_a_dict_keyed_session_cache():
    """Between two Spark micro-batches a task may be rebuilt from the checkpoint; its session cache
    (whose entries are keyed by the key's bytes) comes back from it. Gap 10, no grace: after k@0 and
    k@20, [0,0] is past the store's retention but still cached, so k@10 merges all three (ST-9), in
    the live task and in the rebuilt one alike."""
    import pickle

    serde = WindowedSerdes.sessionWindowedSerdeFrom(J)
    b = StreamsBuilder()
    (b.stream("in").groupByKey().windowedBy(SessionWindows.ofInactivityGapWithNoGrace(timedelta(milliseconds=10)))
     .count(materialized=Materialized.as_("s")).toStream().to("out", Produced.with_(serde, LONG)))
    topology = b.build()
    key = b'{"user":"a","page":"p"}'

    def S(start, end):
        return Windowed(KA, SessionWindow(start, end))

    live = _task(topology)
    live.addRecords("in", [RawRecord(0, 0, key, b'"v"'), RawRecord(1, 20, key, b'"v"')])
    live.processAll(0)
    live.commit()
    assert _produced(live, serde) == [(S(0, 0), 1, 0), (S(20, 20), 1, 20)]
    config = StreamsConfig({**DEFAULTS, "statestore.cache.max.bytes": 10 * 1024 * 1024})
    rebuilt = StreamTask("0_0", topology.subtopologies()[0], topology.storeBuilders(), config, 0, lambda t: t,
                         lambda t: 1)
    rebuilt.restore(pickle.loads(pickle.dumps(live.checkpoint())))
    rebuilt.initialize()
    assert rebuilt.recordCache.sizeBytes == live.recordCache.sizeBytes > 0
    for task in (live, rebuilt):
        task.addRecords("in", [RawRecord(2, 10, key, b'"v"')])
        task.processAll(0)
        task.commit()
        assert _produced(task, serde) == [(S(20, 20), None, 20), (S(0, 20), 3, 20)]

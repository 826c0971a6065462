"""kspark's changelog records and topic configs (``kspark.state._changelog``) against Kafka
Streams 4.3's own.

``java/changelog/ChangelogLayouts.java`` builds one small topology per store kind, pipes a fixed
input through Kafka's ``TopologyTestDriver`` and prints every changelog record the driver captured
(key, value, timestamp, headers) and each changelog topic's configs as Kafka computes them. Each
test states the logical entries the input must leave in a changelog, checks that ``_changelog``
encodes them to exactly Kafka's records, and that it decodes Kafka's bytes back to them.

The JVM run (compiled at test time, ~10 s) is skipped only when the JVM artifacts of ``make jvm``
or a JDK are missing. No Spark.
"""

from __future__ import annotations

import re
import struct
from datetime import timedelta
from pathlib import Path

import pytest

from _java_programs import runJavaProgram

from kspark.state import _changelog as cl

JAVA_SOURCES = Path(__file__).parent / "java" / "changelog"
APP = "cl"  # the Java program's application.id


def L(n: int) -> bytes:
    """Serdes.Long()'s bytes."""
    return struct.pack(">q", n)


def S(s: str) -> bytes:
    """Serdes.String()'s bytes."""
    return s.encode()


@pytest.fixture(scope="module")
def kafka() -> dict:
    return runJavaProgram(JAVA_SOURCES, "changelog.ChangelogLayouts")


def records(kafka: dict, scenario: str, store: str) -> list[cl.ChangelogRecord]:
    """The records Kafka wrote to ``store``'s changelog in ``scenario``."""
    out = []
    for r in kafka[scenario]["records"][cl.changelogTopic(APP, store)]:
        out.append(cl.ChangelogRecord(bytes.fromhex(r["k"]), None if r["v"] is None else bytes.fromhex(r["v"]),
                                      r["ts"], tuple((k, None if v is None else bytes.fromhex(v)) for k, v in r["h"])))
    return out


# ------------------------------------------------------------------------------ key-value stores
def test_count_store_logs_the_value_without_its_timestamp(kafka):
    """groupByKey().count(): a timestamped store; the changelog holds the plain Long with the
    value's timestamp as record timestamp, not the processed record's (T-17: the count of a@10
    and a@5 has timestamp 10)."""
    expected = [cl.timestampedKeyValueRecord(S("a"), L(1), 10, 10),
                cl.timestampedKeyValueRecord(S("b"), L(1), 20, 20),
                cl.timestampedKeyValueRecord(S("a"), L(2), 10, 5)]
    got = records(kafka, "count", "counts")
    assert got == expected
    assert got[2] == cl.ChangelogRecord(b"a", bytes.fromhex("0000000000000002"), 10, ())
    # restored into the store as ValueAndTimestamp bytes: 8-byte timestamp, then the value
    assert cl.restoreValueAndTimestamp(got[2]) == bytes.fromhex("000000000000000a" "0000000000000002")
    assert cl.decodeValueAndTimestamp(cl.restoreValueAndTimestamp(got[2])) == (L(2), 10)


def test_table_source_store_logs_tombstones_with_the_record_timestamp(kafka):
    expected = [cl.timestampedKeyValueRecord(S("a"), S("v1"), 5, 5),
                cl.timestampedKeyValueRecord(S("b"), S("w"), 7, 7),
                cl.timestampedKeyValueRecord(S("a"), None, None, 9),
                cl.timestampedKeyValueRecord(S("a"), S("v2"), 3, 3)]  # out of order: a plain table accepts it
    got = records(kafka, "table", "table-store")
    assert got == expected
    assert got[2] == cl.ChangelogRecord(b"a", None, 9, ())
    assert cl.restoreValueAndTimestamp(got[2]) is None


def test_versioned_store_logs_each_version_at_its_valid_from(kafka):
    """A versioned KTable (E-4: persistentVersionedKeyValueStore): plain values, record timestamp =
    the version's validFrom, a delete is a tombstone at its timestamp."""
    got = records(kafka, "versionedJoin", "vstore")
    assert got == [cl.versionedRecord(S("a"), S("t1"), 10), cl.versionedRecord(S("a"), S("t0"), 5),
                   cl.versionedRecord(S("a"), None, 20)]
    assert [(r.key, r.value, r.timestamp) for r in got] == [(b"a", b"t1", 10), (b"a", b"t0", 5), (b"a", None, 20)]


# ------------------------------------------------------------------------------ window and session stores
@pytest.mark.parametrize("scenario, store", [("windowed", "win"), ("windowedFinal", "win-final")])
def test_time_window_store_keys_are_key_start_seqnum_zero(kafka, scenario, store):
    """TimeWindows(10, grace 5).count(), emitting updates or final results (the time-ordered store
    logs the same key-first keys): seqnum 0, the plain Long, the window's max record timestamp
    (T-18: 7 after a@6); the record at 8 is late for [0,10) and writes nothing."""
    expected = [cl.timestampedWindowRecord(S("a"), 0, 0, L(1), 3, 3),
                cl.timestampedWindowRecord(S("a"), 0, 0, L(2), 7, 7),
                cl.timestampedWindowRecord(S("a"), 0, 0, L(3), 7, 6),
                cl.timestampedWindowRecord(S("b"), 10, 0, L(1), 12, 12),
                cl.timestampedWindowRecord(S("a"), 20, 0, L(1), 25, 25)]
    got = records(kafka, scenario, store)
    assert got == expected
    assert got[2] == cl.ChangelogRecord(bytes.fromhex("61" "0000000000000000" "00000000"), L(3), 7, ())
    assert got[3].key == bytes.fromhex("62" "000000000000000a" "00000000")
    assert [cl.decodeWindowKey(r.key) for r in got] == [(b"a", 0, 0)] * 3 + [(b"b", 10, 0), (b"a", 20, 0)]


def test_sliding_window_store(kafka):
    """SlidingWindows(10, grace 5).count(): a@5 makes [0,5]; a@12 makes a@5's right window [6,16]
    and [2,12] with both records."""
    expected = [cl.timestampedWindowRecord(S("a"), 0, 0, L(1), 5, 5),
                cl.timestampedWindowRecord(S("a"), 6, 0, L(1), 12, 12),
                cl.timestampedWindowRecord(S("a"), 2, 0, L(2), 12, 12),
                cl.timestampedWindowRecord(S("b"), 20, 0, L(1), 30, 30)]
    assert records(kafka, "sliding", "slide") == expected


@pytest.mark.parametrize("scenario, store", [("session", "sess"), ("sessionFinal", "sess-final")])
def test_session_store_keys_are_key_end_start(kafka, scenario, store):
    """SessionWindows(gap 5, grace 2).count(), updates or final results: a merge removes the old
    session (a tombstone at the merging record's time, SA-8) and puts the merged one; a@12 is late
    (SA-7) and writes nothing. Session values are not timestamped: context timestamps."""
    expected = [cl.sessionRecord(S("a"), 0, 0, L(1), 0),
                cl.sessionRecord(S("a"), 0, 0, None, 4),
                cl.sessionRecord(S("a"), 0, 4, L(2), 4),
                cl.sessionRecord(S("b"), 10, 10, L(1), 10),
                cl.sessionRecord(S("a"), 20, 20, L(1), 20),
                cl.sessionRecord(S("a"), 20, 20, None, 16),
                cl.sessionRecord(S("a"), 16, 20, L(2), 16)]
    got = records(kafka, scenario, store)
    assert got == expected
    assert got[6].key == bytes.fromhex("61" "0000000000000014" "0000000000000010")  # end first
    assert cl.decodeSessionKey(got[6].key) == (b"a", 16, 20)


# ------------------------------------------------------------------------------ stream-stream joins
def windowStoreRecords(entries, retainDuplicates=True):
    """``windowRecord``s of ``(key, timestamp, value)`` puts, numbered as Kafka numbers them."""
    seqnum, out = 0, []
    for key, ts, value in entries:
        seqnum = cl.nextSeqnum(seqnum, retainDuplicates)
        out.append(cl.windowRecord(S(key), ts, seqnum, S(value), ts))
    return out


JOIN_STORES = {"innerJoin": ("KSTREAM-JOINTHIS-0000000004-store", "KSTREAM-JOINOTHER-0000000005-store"),
               "leftJoin": ("KSTREAM-JOINTHIS-0000000004-store", "KSTREAM-OUTEROTHER-0000000005-store"),
               "outerJoin": ("KSTREAM-OUTERTHIS-0000000004-store", "KSTREAM-OUTEROTHER-0000000005-store")}


@pytest.mark.parametrize("scenario", sorted(JOIN_STORES))
def test_stream_join_window_stores_number_duplicates_from_one(kafka, scenario):
    this, other = JOIN_STORES[scenario]
    got = records(kafka, scenario, this)
    assert got == windowStoreRecords([("a", 0, "l1"), ("a", 0, "l1b"), ("c", 6, "l2"), ("z", 100, "late")])
    assert [cl.decodeWindowKey(r.key)[2] for r in got] == [1, 2, 3, 4]
    assert got[1] == cl.ChangelogRecord(bytes.fromhex("61" "0000000000000000" "00000002"), b"l1b", 0, ())
    assert records(kafka, scenario, other) == windowStoreRecords([("b", 3, "r1"), ("a", 5, "r2")])


def test_outer_join_store_logs_the_whole_list(kafka):
    """The shared outer store of a left join: key (timestamp, side, key), value the key's full
    list of LeftOrRightValues after each append; removed (tombstone) when the right record at 5
    matches a@0, and when stream time 100 emits c@6."""
    a, c, z = S("a"), S("c"), S("z")
    expected = [cl.outerJoinRecord(a, 0, True, [S("l1")], 0),
                cl.outerJoinRecord(a, 0, True, [S("l1"), S("l1b")], 0),
                cl.outerJoinRecord(a, 0, True, None, 5),
                cl.outerJoinRecord(c, 6, True, [S("l2")], 6),
                cl.outerJoinRecord(c, 6, True, None, 100),
                cl.outerJoinRecord(z, 100, True, [S("late")], 100)]
    got = records(kafka, "leftJoin", "KSTREAM-OUTERSHARED-0000000004-store")
    assert got == expected
    assert got[1] == cl.ChangelogRecord(bytes.fromhex("0000000000000000" "01" "61"),
                                        bytes.fromhex("01" "00000002" "00000003" "016c31" "00000004" "016c3162"), 0, ())
    assert cl.decodeTimestampedKeyAndJoinSide(got[1].key) == (b"a", 0, True)
    assert [cl.decodeLeftOrRightValue(v) for v in cl.decodeListValue(got[1].value)] == [(b"l1", True), (b"l1b", True)]


def test_outer_join_store_right_side(kafka):
    a, b, c, z = S("a"), S("b"), S("c"), S("z")
    expected = [cl.outerJoinRecord(a, 0, True, [S("l1")], 0),
                cl.outerJoinRecord(a, 0, True, [S("l1"), S("l1b")], 0),
                cl.outerJoinRecord(b, 3, False, [S("r1")], 3),
                cl.outerJoinRecord(a, 0, True, None, 5),
                cl.outerJoinRecord(c, 6, True, [S("l2")], 6),
                cl.outerJoinRecord(b, 3, False, None, 100),
                cl.outerJoinRecord(c, 6, True, None, 100),
                cl.outerJoinRecord(z, 100, True, [S("late")], 100)]
    got = records(kafka, "outerJoin", "KSTREAM-OUTERSHARED-0000000004-store")
    assert got == expected
    assert got[2].key == bytes.fromhex("0000000000000003" "00" "62")
    assert cl.decodeTimestampedKeyAndJoinSide(got[2].key) == (b"b", 3, False)
    assert cl.decodeListValue(got[2].value) == [bytes.fromhex("00") + b"r1"]


# ------------------------------------------------------------------------------ suppression buffer
def test_suppress_until_window_closes_buffer(kafka):
    """The buffer key is the windowed serde's (key, start); buffer time = window end (SU-2); each
    flush logs the key's latest state with header v=3 and no timestamp, and an emitted key (SU-3)
    a bare tombstone. The count's first update of a window carries the initializer (0) as old
    value, so prior = old = 0 is written as the -2 sentinel."""
    ctx = cl.RecordContext
    a0, b0, c10 = S("a") + L(0), S("b") + L(0), S("c") + L(10)
    expected = [
        cl.suppressionBufferRecord(a0, 10, ctx(1, 0, "in", 0, (("h", b"\x01\x02"),)), L(0), L(0), L(1)),
        cl.suppressionBufferRecord(a0, 10, ctx(2, 1, "in", 0), L(0), L(1), L(2)),
        cl.suppressionBufferRecord(b0, 10, ctx(5, 2, "in", 0), L(0), L(0), L(1)),
        cl.suppressionBufferTombstone(a0),
        cl.suppressionBufferTombstone(b0),
        cl.suppressionBufferRecord(c10, 20, ctx(12, 3, "in", 0), L(0), L(0), L(1)),
    ]
    got = records(kafka, "suppressFinal", "KTABLE-SUPPRESS-STATE-STORE-0000000005")
    assert got == expected
    assert got[0] == cl.ChangelogRecord(a0, bytes.fromhex(
        "0000000000000001" "0000000000000000" "00000002" "696e" "00000000"  # timestamp, offset, topic, partition
        "00000001" "00000001" "68" "00000002" "0102"                          # one header h = 0102
        "00000008" "0000000000000000" "fffffffe" "00000008" "0000000000000001"  # prior 0, old = prior, new 1
        "000000000000000a"), None, (("v", b"\x03"),))                          # buffer time 10
    assert cl.decodeSuppressionBufferRecord(got[1]) == (10, ctx(2, 1, "in", 0), L(0), L(1), L(2))
    assert cl.decodeSuppressionBufferRecord(got[3]) is None


def test_suppress_until_time_limit_buffer(kafka):
    """A KTable mapValues(first character).suppress(untilTimeLimit 10 ms): buffer time = the
    first buffered update's timestamp and stays while the key is buffered (195 for a); the prior
    value is the old value of the key's first buffered update; header values may be null."""
    ctx = cl.RecordContext
    expected = [
        cl.suppressionBufferRecord(S("a"), 100, ctx(100, 0, "tin", 0), None, None, S("k")),
        cl.suppressionBufferTombstone(S("a")),
        cl.suppressionBufferRecord(S("b"), 200, ctx(200, 1, "tin", 0), None, None, S("x")),
        cl.suppressionBufferRecord(S("a"), 195, ctx(195, 2, "tin", 0), S("k"), S("k"), S("k")),
        cl.suppressionBufferRecord(S("a"), 195, ctx(196, 3, "tin", 0), S("k"), S("k"), S("k")),
        cl.suppressionBufferRecord(S("a"), 195, ctx(197, 4, "tin", 0), S("k"), S("k"), S("m")),
        cl.suppressionBufferRecord(S("c"), 198, ctx(198, 5, "tin", 0, (("hk", b"hv"), ("nul", None))),
                                   None, None, S("z")),
    ]
    got = records(kafka, "suppressTimeLimit", "KTABLE-SUPPRESS-STATE-STORE-0000000005")
    assert got == expected
    assert got[0].value.endswith(bytes.fromhex("ffffffff" "ffffffff" "00000001" "6b" "0000000000000064"))
    assert cl.decodeSuppressionBufferRecord(got[5]) == (195, ctx(197, 4, "tin", 0), b"k", b"k", b"m")
    assert cl.decodeSuppressionBufferRecord(got[6])[1].headers == (("hk", b"hv"), ("nul", None))
    # the mapped table's source, materialized because suppress needs old values
    assert records(kafka, "suppressTimeLimit", "tin-STATE-STORE-0000000000") == [
        cl.timestampedKeyValueRecord(S(k), S(v), ts, ts)
        for k, v, ts in [("a", "k0", 100), ("b", "x0", 200), ("a", "k1", 195), ("a", "k2", 196), ("a", "m", 197),
                         ("c", "z9", 198)]]


def test_suppression_buffer_reads_only_format_3():
    record = cl.ChangelogRecord(b"a", b"\x00" * 40, None, (("v", b"\x02"),))
    with pytest.raises(ValueError, match="format 3"):
        cl.decodeSuppressionBufferRecord(record)


# ------------------------------------------------------------------------------ stream-table join buffer
def test_stream_table_join_buffer(kafka):
    """A stream-table join with grace 10 on a versioned table (J-5): each buffered stream record
    is logged at once under a time-first key, seqnum counting from 1; evicting (joining) s1 at
    stream time 30 logs its tombstone. No timestamps, no headers."""
    ctx = cl.RecordContext
    expected = [cl.streamTableJoinBufferRecord(S("a"), 12, 1, ctx(12, 0, "sin", 0), S("s1")),
                cl.streamTableJoinBufferRecord(S("a"), 30, 2, ctx(30, 1, "sin", 0), S("s2")),
                cl.streamTableJoinBufferTombstone(S("a"), 12, 1)]
    store = "KSTREAM-JOIN-0000000003-Buffer"
    got = records(kafka, "versionedJoin", store)
    assert got == expected
    assert got[0] == cl.ChangelogRecord(bytes.fromhex("00" "000000000000000c" "61" "00000001"), bytes.fromhex(
        "000000000000000c" "0000000000000000" "00000003" "73696e" "00000000" "00000000"
        "ffffffff" "ffffffff" "00000002" "7331" "0000000000000000"), None, ())
    assert [cl.decodeStreamTableJoinBufferRecord(r) for r in got] == [
        (b"a", 12, 1, ctx(12, 0, "sin", 0), b"s1"), (b"a", 30, 2, ctx(30, 1, "sin", 0), b"s2"), (b"a", 12, 1, None, None)]
    # Kafka 4.3.1 restores this changelog parsing its keys as key-first window keys: it reads
    # timestamp 0x0c61 (3169) from the key 00|000000000000000c|61|00000001, not 12
    restored = kafka["versionedJoin"]["records"][cl.changelogTopic(APP, store)][0]["restoredAs"]
    assert restored["ts"] == 0x0C61
    assert bytes.fromhex(restored["storeKey"]) != got[0].key


# ------------------------------------------------------------------------------ FK join
def test_fk_join_subscription_store(kafka):
    """The subscription store: key (fk, pk) as CombinedKey, value the bare SubscriptionWrapper v1
    (hash of the left value's bytes, instruction, pk, partition) with the left record's timestamp;
    a foreign-key change or a left delete removes the old subscription (tombstone)."""
    from kspark.dsl._internals.fk_join import Instruction, SubscriptionWrapper, SubscriptionWrapperSerde, murmur3Hash128
    from kspark.serialization import Serdes

    serde = SubscriptionWrapperSerde(Serdes.String(), "pseudo-pk")

    def put(fk, pk, left, instruction, ts):
        return cl.subscriptionRecord(S(fk), S(pk), SubscriptionWrapper(murmur3Hash128(S(left)), instruction, pk, 0),
                                     serde, ts, ts)

    expected = [put("f1", "p1", "f1|x", Instruction.PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE, 1),
                put("f1", "p2", "f1|y", Instruction.PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE, 2),
                cl.subscriptionRecord(S("f1"), S("p1"), None, serde, None, 4),
                put("f2", "p1", "f2|x", Instruction.PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE, 4),
                cl.subscriptionRecord(S("f1"), S("p2"), None, serde, None, 5)]
    got = records(kafka, "fkJoin", "KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-0000000010")
    assert got == expected
    assert got[0].key == bytes.fromhex("00000002" "6631" "7031")
    assert got[0].value[:2] == b"\x01\x03" and got[0].value[-6:] == bytes.fromhex("7031" "00000000")
    fk, pk, wrapper, ts = cl.decodeSubscriptionRecord(got[3], serde)
    assert (fk, pk, ts) == (b"f2", b"p1", 4)
    assert wrapper == SubscriptionWrapper(murmur3Hash128(b"f2|x"), Instruction.PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE,
                                          "p1", 0)
    assert cl.decodeSubscriptionRecord(got[2], serde) == (b"f1", b"p1", None, 4)


# ------------------------------------------------------------------------------ Processor API stores
def test_processor_api_stores(kafka):
    """Plain key-value, window (no duplicates: seqnum 0; duplicates: 1, 2, ...), timestamped
    window with duplicates (the value's timestamp) and session stores; a store with logging
    disabled has no changelog."""
    got = kafka["papi"]["records"]
    assert records(kafka, "papi", "papi-kv") == [
        cl.keyValueRecord(S("a"), S("v1"), 10), cl.keyValueRecord(S("b"), S("v2"), 20), cl.keyValueRecord(S("a"), None, 30)]
    assert records(kafka, "papi", "papi-win") == [
        cl.windowRecord(S("a"), 10, 0, S("v1"), 10), cl.windowRecord(S("b"), 20, 0, S("v2"), 20),
        cl.windowRecord(S("a"), 10, 0, None, 30)]
    assert records(kafka, "papi", "papi-dup") == windowStoreRecords(
        [("a", 10, "v1"), ("a", 10, "v1'"), ("b", 20, "v2"), ("b", 20, "v2'")])
    assert records(kafka, "papi", "papi-tdup") == [
        cl.timestampedWindowRecord(S("a"), 10, 1, S("v1"), 11, 10),
        cl.timestampedWindowRecord(S("b"), 20, 2, S("v2"), 21, 20)]
    assert records(kafka, "papi", "papi-sess") == [
        cl.sessionRecord(S("a"), 5, 10, S("v1"), 10), cl.sessionRecord(S("b"), 15, 20, S("v2"), 20),
        cl.sessionRecord(S("a"), 5, 10, None, 30)]
    assert cl.changelogTopic(APP, "papi-nolog") not in got


def test_position_headers_with_consistency_vectors(kafka):
    """internal.iq.consistency.offset.vector.enabled: every logged change carries v=0 and the
    store's position, Kafka's PositionSerde bytes padded to the bit count it allocates."""
    got = records(kafka, "consistency", "counts")
    assert got == [cl.timestampedKeyValueRecord(S("a"), L(1), 10, 10)._replace(headers=cl.positionHeaders({"in": {0: 0}})),
                   cl.timestampedKeyValueRecord(S("a"), L(2), 11, 11)._replace(headers=cl.positionHeaders({"in": {0: 1}}))]
    position = dict(got[1].headers)["c"]
    assert len(position) == 8 + 32 + 32 + 2 + 32 + 96 == 202
    assert position[:27] == bytes.fromhex("00" "00000001" "00000002" "696e" "00000001" "00000000" "0000000000000001")
    assert position[27:] == bytes(175)
    assert cl.decodePosition(position) == {"in": {0: 1}}


# ------------------------------------------------------------------------------ topic configs
W = "WindowedChangelogTopicConfig"
U = "UnwindowedUnversionedChangelogTopicConfig"
V = "VersionedChangelogTopicConfig"

# scenario -> store -> (kind, changelogTopicConfig keyword arguments)
CONFIGS = {
    "count": {"counts": ("timestampedKeyValue", {})},
    "table": {"table-store": ("timestampedKeyValue", {})},
    "windowed": {"win": ("timestampedWindow", {"retentionMs": 1000})},
    "windowedFinal": {"win-final": ("timestampedWindow", {"retentionMs": 10 + 5})},
    "session": {"sess": ("session", {"retentionMs": 5 + 2})},
    "sessionFinal": {"sess-final": ("session", {"retentionMs": 5 + 2})},
    "sliding": {"slide": ("timestampedWindow", {"retentionMs": 2 * 10 + 5})},
    "innerJoin": {"KSTREAM-JOINTHIS-0000000004-store": ("streamJoinWindow", {"retentionMs": 20 + 5}),
                  "KSTREAM-JOINOTHER-0000000005-store": ("streamJoinWindow", {"retentionMs": 20 + 5})},
    "leftJoin": {"KSTREAM-JOINTHIS-0000000004-store": ("streamJoinWindow", {"retentionMs": 25}),
                 "KSTREAM-OUTEROTHER-0000000005-store": ("streamJoinWindow", {"retentionMs": 25}),
                 "KSTREAM-OUTERSHARED-0000000004-store": ("outerJoin", {})},
    "outerJoin": {"KSTREAM-OUTERTHIS-0000000004-store": ("streamJoinWindow", {"retentionMs": 25}),
                  "KSTREAM-OUTEROTHER-0000000005-store": ("streamJoinWindow", {"retentionMs": 25}),
                  "KSTREAM-OUTERSHARED-0000000004-store": ("outerJoin", {})},
    "suppressFinal": {"KSTREAM-AGGREGATE-STATE-STORE-0000000002": ("timestampedWindow", {"retentionMs": 10}),
                      "KTABLE-SUPPRESS-STATE-STORE-0000000005": ("suppressionBuffer", {})},
    "suppressTimeLimit": {"KTABLE-SUPPRESS-STATE-STORE-0000000005": ("suppressionBuffer", {}),
                          "tin-STATE-STORE-0000000000": ("timestampedKeyValue", {})},
    "versionedJoin": {"vstore": ("versioned", {"historyRetentionMs": 100}),
                      "KSTREAM-JOIN-0000000003-Buffer": ("streamTableJoinBuffer", {})},
    "fkJoin": {"KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-0000000010": ("subscription", {}),
               "lin-STATE-STORE-0000000000": ("timestampedKeyValue", {}),
               "rin-STATE-STORE-0000000003": ("timestampedKeyValue", {})},
    "papi": {"papi-kv": ("keyValue", {}),
             "papi-win": ("window", {"retentionMs": 100, "logConfig": {"retention.ms": "7777", "segment.bytes": "1048576"}}),
             "papi-dup": ("window", {"retentionMs": 100, "retainDuplicates": True}),
             "papi-tdup": ("timestampedWindow", {"retentionMs": 100, "retainDuplicates": True}),
             "papi-sess": ("session", {"retentionMs": 100})},
    "consistency": {"counts": ("timestampedKeyValue", {})},
}
# the papi scenario's application configs
PAPI_APP_CONFIG = {"topic.min.insync.replicas": "2", "topic.retention.ms": "999",
                   "windowstore.changelog.additional.retention.ms": 1000}


@pytest.mark.parametrize("scenario", sorted(CONFIGS))
def test_changelog_topic_configs(kafka, scenario):
    """Every changelog topic of every scenario, as Kafka's InternalTopicConfig computes its configs."""
    javaConfigs = kafka[scenario]["configs"]
    assert set(javaConfigs) == {cl.changelogTopic(APP, store) for store in CONFIGS[scenario]}
    for store, (kind, kwargs) in CONFIGS[scenario].items():
        java = javaConfigs[cl.changelogTopic(APP, store)]
        if scenario == "papi":
            kwargs = {**kwargs, "topicConfigs": cl.topicPrefixConfigs(PAPI_APP_CONFIG), "additionalRetentionMs": 1000}
        assert java["class"] == cl.STORE_KINDS[kind].topicConfigClass, store
        assert cl.changelogTopicConfig(kind, **kwargs) == java["properties"], store


def test_changelog_topic_configs_concrete(kafka):
    def props(scenario, store):
        return kafka[scenario]["configs"][cl.changelogTopic(APP, store)]["properties"]

    assert props("count", "counts") == {"cleanup.policy": "compact", "message.timestamp.type": "CreateTime"}
    assert props("windowed", "win") == {"cleanup.policy": "compact,delete", "message.timestamp.type": "CreateTime",
                                        "retention.ms": "86401000"}
    assert props("session", "sess")["retention.ms"] == "86400007"
    assert props("innerJoin", "KSTREAM-JOINTHIS-0000000004-store") == {
        "cleanup.policy": "delete", "message.timestamp.type": "CreateTime", "retention.ms": "86400025"}
    assert props("versionedJoin", "vstore") == {"cleanup.policy": "compact", "message.timestamp.type": "CreateTime",
                                                "min.compaction.lag.ms": "86400100"}
    # an application's topic.retention.ms reaches unwindowed changelogs only; the store's own wins
    assert props("papi", "papi-kv") == {"cleanup.policy": "compact", "message.timestamp.type": "CreateTime",
                                        "min.insync.replicas": "2", "retention.ms": "999"}
    assert props("papi", "papi-sess")["retention.ms"] == "1100"
    assert props("papi", "papi-win")["retention.ms"] == "7777"
    assert props("papi", "papi-dup")["cleanup.policy"] == "delete"
    assert props("papi", "papi-tdup")["cleanup.policy"] == "compact,delete"


def test_changelog_topic_config_edges():
    assert cl.changelogTopicConfig("window", retentionMs=(1 << 63) - 10)["retention.ms"] == str((1 << 63) - 1)
    assert cl.changelogTopicConfig("versioned", historyRetentionMs=5,
                                   logConfig={"min.compaction.lag.ms": 7})["min.compaction.lag.ms"] == "7"
    # a stream-stream join store is always delete-only, whatever its StreamJoined log config says
    assert cl.changelogTopicConfig("streamJoinWindow", retentionMs=1,
                                   logConfig={"cleanup.policy": "compact"})["cleanup.policy"] == "delete"
    assert cl.changelogTopicConfig("window", retentionMs=1, retainDuplicates=True,
                                   logConfig={"cleanup.policy": "compact"})["cleanup.policy"] == "compact"
    assert cl.topicPrefixConfigs({"topic.a": True, "topic.b": None, "c": 1}) == {"a": "true"}
    with pytest.raises(ValueError, match="retentionMs"):
        cl.changelogTopicConfig("session")
    with pytest.raises(ValueError, match="unknown store kind"):
        cl.changelogTopicConfig("lru")


# ------------------------------------------------------------------------------ store names
def ksparkStoreNames() -> dict[str, list[str]]:
    """The stores of kspark's port of each DSL scenario, from its describe() text."""
    from kspark import (
        EmitStrategy, JoinWindows, Joined, Materialized, Serdes, SessionWindows, SlidingWindows, Stores, StreamsBuilder,
        Suppressed, TimeWindows,
    )

    def ms(n):
        return timedelta(milliseconds=n)

    builds = {}

    def scenario(name):
        def register(build):
            builds[name] = build
        return register

    @scenario("count")
    def _(b):
        b.stream("in").groupByKey().count(Materialized.as_("counts"))

    @scenario("table")
    def _(b):
        b.table("tin", Materialized.as_("table-store"))

    @scenario("windowed")
    def _(b):
        (b.stream("in").groupByKey().windowedBy(TimeWindows.ofSizeAndGrace(ms(10), ms(5)))
         .count(Materialized.as_("win").withRetention(ms(1000))))

    @scenario("windowedFinal")
    def _(b):
        (b.stream("in").groupByKey().windowedBy(TimeWindows.ofSizeAndGrace(ms(10), ms(5)))
         .emitStrategy(EmitStrategy.onWindowClose()).count(Materialized.as_("win-final")))

    @scenario("session")
    def _(b):
        b.stream("in").groupByKey().windowedBy(SessionWindows.ofInactivityGapAndGrace(ms(5), ms(2))).count(
            Materialized.as_("sess"))

    @scenario("sessionFinal")
    def _(b):
        (b.stream("in").groupByKey().windowedBy(SessionWindows.ofInactivityGapAndGrace(ms(5), ms(2)))
         .emitStrategy(EmitStrategy.onWindowClose()).count(Materialized.as_("sess-final")))

    @scenario("sliding")
    def _(b):
        b.stream("in").groupByKey().windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(ms(10), ms(5))).count(
            Materialized.as_("slide"))

    for name, method in (("innerJoin", "join"), ("leftJoin", "leftJoin"), ("outerJoin", "outerJoin")):
        @scenario(name)
        def _(b, method=method):
            left, right = b.stream("L"), b.stream("R")
            getattr(left, method)(right, lambda x, y: f"{x}+{y}", JoinWindows.ofTimeDifferenceAndGrace(ms(10), ms(5))).to("out")

    @scenario("suppressFinal")
    def _(b):
        (b.stream("in").groupByKey().windowedBy(TimeWindows.ofSizeWithNoGrace(ms(10)))
         .count(Materialized.with_(Serdes.String(), Serdes.Long()))
         .suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded())).toStream().to("out"))

    @scenario("suppressTimeLimit")
    def _(b):
        (b.table("tin").mapValues(lambda v: v[:1])
         .suppress(Suppressed.untilTimeLimit(ms(10), Suppressed.BufferConfig.maxRecords(100).emitEarlyWhenFull()))
         .toStream().to("out"))

    @scenario("versionedJoin")
    def _(b):
        table = b.table("vin", Materialized.as_(Stores.persistentVersionedKeyValueStore("vstore", ms(100))))
        b.stream("sin").join(table, lambda s, v: s + "+" + v,
                             Joined.with_(Serdes.String(), Serdes.String(), Serdes.String()).withGracePeriod(ms(10))).to("out")

    @scenario("fkJoin")
    def _(b):
        b.table("lin").join(b.table("rin"), lambda v: v.split("|")[0], lambda x, y: x + "+" + y).toStream().to("out")

    names = {}
    for name, build in builds.items():
        b = StreamsBuilder()
        build(b)
        text = str(b.build().describe())
        names[name] = sorted({s.strip() for group in re.findall(r"stores: \[([^\]]*)\]", text)
                              for s in group.split(",") if s.strip()})
    return names


def test_kspark_store_names_are_kafkas(kafka):
    """kspark's ports of the DSL scenarios name their stores as Kafka does, so the changelog
    topics are the same (E-4: <application.id>-<store>-changelog; every DSL store here is logged)."""
    for scenario, stores in ksparkStoreNames().items():
        assert stores == kafka[scenario]["stores"], scenario
        assert {cl.changelogTopic(APP, s) for s in stores} == set(kafka[scenario]["configs"]), scenario


# ------------------------------------------------------------------------------ every record decodes
def reencode(kind: str, r: cl.ChangelogRecord) -> cl.ChangelogRecord:
    """``r`` decoded as a ``kind`` store's changelog record, then encoded again."""
    from kspark.dsl._internals.fk_join import SubscriptionWrapperSerde
    from kspark.serialization import Serdes

    ts = r.timestamp
    if kind == "keyValue":
        out = cl.keyValueRecord(r.key, r.value, ts)
    elif kind == "versioned":
        out = cl.versionedRecord(r.key, r.value, ts)
    elif kind == "timestampedKeyValue":
        restored = cl.decodeValueAndTimestamp(cl.restoreValueAndTimestamp(r))
        out = (cl.timestampedKeyValueRecord(r.key, None, None, ts) if restored is None
               else cl.timestampedKeyValueRecord(r.key, *restored, contextTimestamp=-1))
    elif kind in ("window", "timestampedWindow", "streamJoinWindow"):
        out = cl.windowRecord(*cl.decodeWindowKey(r.key), r.value, ts)
    elif kind == "session":
        out = cl.sessionRecord(*cl.decodeSessionKey(r.key), r.value, ts)
    elif kind == "outerJoin":
        key, timestamp, left = cl.decodeTimestampedKeyAndJoinSide(r.key)
        values = None if r.value is None else [cl.decodeLeftOrRightValue(v) for v in cl.decodeListValue(r.value)]
        assert values is None or {side for _, side in values} == {left}
        out = cl.outerJoinRecord(key, timestamp, left, None if values is None else [v for v, _ in values], ts)
    elif kind == "suppressionBuffer":
        decoded = cl.decodeSuppressionBufferRecord(r)
        out = (cl.suppressionBufferTombstone(r.key) if decoded is None
               else cl.suppressionBufferRecord(r.key, decoded[0], *decoded[1:]))
    elif kind == "streamTableJoinBuffer":
        key, timestamp, seqnum, context, value = cl.decodeStreamTableJoinBufferRecord(r)
        out = (cl.streamTableJoinBufferTombstone(key, timestamp, seqnum) if context is None
               else cl.streamTableJoinBufferRecord(key, timestamp, seqnum, context, value))
    elif kind == "subscription":
        serde = SubscriptionWrapperSerde(Serdes.String(), "pseudo-pk")
        fk, pk, wrapper, timestamp = cl.decodeSubscriptionRecord(r, serde)
        out = cl.subscriptionRecord(fk, pk, wrapper, serde, timestamp, timestamp)
    else:
        raise AssertionError(kind)
    headers = dict(r.headers)
    if "c" in headers:  # consistency vectors
        out = out._replace(headers=cl.positionHeaders(cl.decodePosition(headers["c"])))
    return out


@pytest.mark.parametrize("scenario", sorted(CONFIGS))
def test_every_kafka_record_decodes_and_encodes_back(kafka, scenario):
    for store, (kind, _) in CONFIGS[scenario].items():
        got = records(kafka, scenario, store)
        assert got, store
        for r in got:
            assert reencode(kind, r) == r, (store, r)


def test_a_timestamped_duplicates_window_store_logs_what_kafkas_logs(kafka, tmp_path):
    """kspark's persistent store built by ``Stores.timestampedWindowStoreBuilder`` over
    ``Stores.persistentTimestampedWindowStore(..., retainDuplicates=True)`` (rule E-4), given the
    puts ChangelogLayouts.java's processor makes into ``papi-tdup``, writes Kafka's records byte for
    byte (applied at once, as the stream threads flush: no kspark batch tag), and reads the values
    back as ``ValueAndTimestamp``."""
    from kspark import Serdes
    from kspark.state import Stores, ValueAndTimestamp
    from kspark.state._persistent import PersistentTaskState, makePersistent

    store = Stores.timestampedWindowStoreBuilder(
        Stores.persistentTimestampedWindowStore("papi-tdup", timedelta(milliseconds=100), timedelta(milliseconds=10),
                                                True), Serdes.String(), Serdes.String()).build()
    assert makePersistent(store)
    state = PersistentTaskState({"papi-tdup": store}, {"papi-tdup": cl.changelogTopic(APP, "papi-tdup")},
                                str(tmp_path / "0_0"), 8 << 20, 1000)
    state.open("ckpt", None)
    state.restored("ckpt", None)
    store.put("a", ValueAndTimestamp("v1", 11), 10)
    store.put("b", ValueAndTimestamp("v2", 21), 20)
    got = [cl.ChangelogRecord(k, v, ts, h) for _, k, v, ts, h in state.flush("", 0, 30, "ckpt", applyNow=True)]
    assert got == records(kafka, "papi", "papi-tdup")
    assert [(kv.key, kv.value) for kv in store.fetch("a", 0, 100)] == [(10, ValueAndTimestamp("v1", 11))]
    state.close()

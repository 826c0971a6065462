"""Moving a running Kafka Streams application to kspark with its state, and back (issue 33).

One input (two co-partitioned topics, three waves of records) and three applications of one
topology: ``java/migration/Migration.java`` and its line-by-line port ``buildTopology`` (a
KTable from a plain key-value store, a stream-table join, a KTable aggregation through a
repartition topic, time windows, session windows and a suppression buffer), all
exactly_once_v2 with caches off:

- ``mig``: Java Kafka Streams 4.3 processes wave A, then wave B with its commits held, so what it
  writes to the repartition topic stays unread, and closes; kspark takes over and processes the
  rest (the repartition records and wave C);
- ``back``: kspark processes waves A and B; Java takes over and processes wave C;
- ``ref``: Java processes everything;
- then kspark starts ``back`` again on its old state.dir, which Java moved past: that checkpoint is
  wiped and restored from the changelogs (nothing is processed twice).

The outputs of ``mig`` and ``back`` (read read_committed) equal ``ref``'s, and so do their
stores (the last record of every key in every changelog topic: Kafka's bytes). A fourth output,
each order's stream time, shows that a task taken over starts at the partition times committed
in Kafka Streams' offset metadata.
"""

import logging
import subprocess
import time
from collections import defaultdict
from pathlib import Path

import pytest

from kspark import (
    Consumed, Grouped, Joined, KafkaStreams, KeyValue, Materialized, Named, Produced, Serdes, SessionWindows,
    StreamsBuilder, StreamsException, Stores, Suppressed, TimeWindows,
)
from kspark.processor import ContextualFixedKeyProcessor
from kspark.runtime.partitioner import partitionForKey
from kspark.testing._jvm import compileJava, javaExecutable
from kspark.topics import openTopics
from kspark.topics._kafka import decodeStreamsMetadata, groupMembers

JAVA_SOURCES = Path(__file__).parent / "java"
CLASS_CACHE = Path.home() / ".cache" / "kspark" / "interop"
PARTITIONS = 2
GAP_MS, GRACE_MS, WINDOW_MS = 5_000, 2_000, 10_000  # as in Migration.java
BASE_MS = (int(time.time() * 1000) - 3_600_000) // 1000 * 1000  # an hour ago: inside every retention
STRING, LONG = Serdes.String(), Serdes.Long()
OUTPUTS = ("totals", "windows", "sessions", "times")


# ---------------------------------------------------------------------------- the topology
class CommitRequests(ContextualFixedKeyProcessor):
    """Migration.java's ``CommitRequests`` (a commit request after every record): kspark commits
    once per micro-batch, so here it only forwards."""

    def process(self, record):
        self.context().forward(record)


class StreamTime(ContextualFixedKeyProcessor):
    """The task's stream time as each order is processed."""

    def process(self, record):
        self.context().forward(record.withValue(self.context().currentStreamTimeMs()))


def buildTopology(inPrefix="in-", outPrefix="mig-out-"):
    """The line-by-line port of ``Migration.topology``."""
    s, l = STRING, LONG
    b = StreamsBuilder()
    users = b.table(inPrefix + "users", Consumed.with_(s, s),
                    Materialized.as_(Stores.persistentKeyValueStore("user-regions")).withKeySerde(s).withValueSerde(s))
    orders = b.stream(inPrefix + "orders", Consumed.with_(s, l)).processValues(
        CommitRequests, named=Named.as_("commit-requests"))
    (orders.join(users, lambda amount, region: f"{region}:{amount}", Joined.with_(s, l, s))
     .groupBy(lambda user, v: v.split(":")[0], Grouped.with_(s, s))
     .aggregate(lambda: 0, lambda region, v, total: total + int(v.split(":")[1]), materialized=Materialized.with_(s, l))
     .toStream().processValues(CommitRequests, named=Named.as_("commit-requests-totals"))
     .to(outPrefix + "totals", Produced.with_(s, l)))
    (orders.groupByKey(Grouped.with_(s, l)).windowedBy(TimeWindows.ofSizeAndGrace(WINDOW_MS, GRACE_MS))
     .reduce(lambda a, b_: a + b_)
     .toStream().map(lambda w, v: KeyValue(f"{w.key()}@{w.window().start()}", v))
     .to(outPrefix + "windows", Produced.with_(s, l)))
    (orders.groupByKey(Grouped.with_(s, l)).windowedBy(SessionWindows.ofInactivityGapAndGrace(GAP_MS, GRACE_MS))
     .count()
     .suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded()))
     .toStream().map(lambda w, c: KeyValue(f"{w.key()}@{w.window().start()}/{w.window().end()}", c))
     .to(outPrefix + "sessions", Produced.with_(s, l)))
    orders.processValues(StreamTime, named=Named.as_("stream-time")).to(outPrefix + "times", Produced.with_(s, l))
    return b.build()


# ---------------------------------------------------------------------------- the input
def _namesByPartition(prefix, n=2):
    found = defaultdict(list)
    for name in (f"{prefix}{i}" for i in range(40)):
        found[partitionForKey(STRING.serialize("", name), PARTITIONS)].append(name)
    return {p: names[:n] for p, names in found.items()}


def waves():
    """(users, orders) per wave: (key, value, timestamp) records.

    Per partition two users and two regions that hash to it, each user only ever in those
    regions: each region's updates then come from one task, in one order, in every run. Orders
    are a second apart with a 10 s pause every 12 (sessions close); every ninth is 4 s late
    (past the 2 s grace: dropped by a window or a session, or merged into an open one). A user
    moves to the other region in waves A and C. No wave starts with an order past the grace:
    Kafka Streams' window and suppress processors keep their stream time in memory, so after a
    restart a late order would be judged by its own time."""
    regions, users = _namesByPartition("region"), _namesByPartition("user")
    allUsers = [u for p in range(PARTITIONS) for u in users[p]]
    regionOf = {u: regions[p][i] for p in range(PARTITIONS) for i, u in enumerate(users[p])}
    other = {u: regions[p][1 - i] for p in range(PARTITIONS) for i, u in enumerate(users[p])}
    orders = []
    for i in range(72):
        ts = BASE_MS + 1000 * i + 10_000 * (i // 12) - (4000 if i % 9 == 4 else 0)
        orders.append((allUsers[i % len(allUsers)], i + 1, ts))
    # wave C starts partition 1 with an order a second behind the partition's time: its stream
    # time is the committed partition time, not the order's (Kafka's StreamTask restores it from
    # the offset metadata); within the grace, so the restarted window processors keep it too
    orders[46] = (orders[46][0], orders[46][1], orders[43][2] - 1000)
    first, moved = allUsers[0], allUsers[-1]
    usersA = [(u, regionOf[u], BASE_MS - 1000) for u in allUsers] + [(first, other[first], orders[20][2] + 500)]
    usersC = [(moved, other[moved], orders[50][2] + 500)]
    assert partitionForKey(STRING.serialize("", orders[46][0]), PARTITIONS) == partitionForKey(
        STRING.serialize("", orders[43][0]), PARTITIONS)
    return [(usersA, orders[:30]), ([], orders[30:46]), (usersC, orders[46:])]


# ---------------------------------------------------------------------------- helpers
def readAll(servers, names, partitions=PARTITIONS):
    """Topic -> partition -> [(key, value, timestamp, headers)] in offset order, read_committed."""
    from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

    consumer = Consumer({"bootstrap.servers": servers, "group.id": "migration-test-reader", "enable.auto.commit": False,
                         "isolation.level": "read_committed", "enable.partition.eof": True,
                         "auto.offset.reset": "error", "fetch.wait.max.ms": 10})
    consumer.assign([TopicPartition(t, p, 0) for t in names for p in range(partitions)])
    records = {t: {p: [] for p in range(partitions)} for t in names}
    pending, deadline = {(t, p) for t in names for p in range(partitions)}, time.monotonic() + 30
    try:
        while pending:
            assert time.monotonic() < deadline, f"reading {sorted(pending)} made no progress in 30 s"
            for m in consumer.consume(10_000, 0.05):
                if m.error() is None:
                    records[m.topic()][m.partition()].append((m.key(), m.value(), m.timestamp()[1], m.headers()))
                elif m.error().code() == KafkaError._PARTITION_EOF:
                    pending.discard((m.topic(), m.partition()))
                else:
                    raise KafkaException(m.error())
    finally:
        consumer.close()
    return records


def byKey(partitions):
    """Key -> [(value, timestamp)] in offset order (each key's records come from one task)."""
    out = defaultdict(list)
    for records in partitions.values():
        for k, v, ts, _ in records:
            out[STRING.deserialize("", k)].append((LONG.deserialize("", v), ts))
    return dict(out)


def withoutTombstones(bufferContents):
    """A suppression buffer's entries (``storeContents``) whose change has a new value."""
    from kspark.state._changelog import decodeBufferValue

    return {k: v for k, v in bufferContents.items() if decodeBufferValue(v)[3] is not None}


def differences(got, expected):
    """Per key, the first (index, got, expected) where two byKey() results differ (relative times)."""
    out = {}
    for key in sorted(set(got) | set(expected)):
        a, b = got.get(key, []), expected.get(key, [])
        if a != b:
            i = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            rel = lambda r: None if r is None else (r[0] - BASE_MS if r[0] > BASE_MS // 2 else r[0], r[1] - BASE_MS)
            out[key] = (i, rel(a[i] if i < len(a) else None), rel(b[i] if i < len(b) else None))
    return out


def storeContents(partitions, withTimestamps):
    """A changelog's store contents: (partition, key bytes) -> value bytes of its last record,
    with the record's timestamp where it is part of the store (a timestamped store's value
    timestamp)."""
    last = {}
    for p, records in partitions.items():
        for k, v, ts, _ in records:
            last[p, k] = (v, ts) if withTimestamps else v
    return {k: v for k, v in last.items() if (v[0] if withTimestamps else v) is not None}


class JavaApps:
    """The JVM of Migration.java: one process, applications started and closed by commands."""

    def __init__(self, broker, tmp_path):
        java, classpath = javaExecutable(), compileJava(JAVA_SOURCES, CLASS_CACHE)
        self.logPath = tmp_path / "java.log"
        self.log = self.logPath.open("w")
        self.process = subprocess.Popen(
            [java, "-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
             "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", classpath, "migration.Migration",
             broker.bootstrapServers, str(tmp_path / "java-state"), "240"],
            stdin=subprocess.PIPE, stdout=self.log, stderr=subprocess.STDOUT, text=True)

    def text(self):
        return self.logPath.read_text(errors="replace")

    def send(self, command):
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()

    def awaitLine(self, line, timeoutS=60):
        deadline = time.monotonic() + timeoutS
        while line not in self.text().splitlines():
            assert self.process.poll() is None, f"Java exited ({self.process.returncode}):\n{self.text()[-6000:]}"
            assert time.monotonic() < deadline, f"no line {line!r} from Java in {timeoutS} s:\n{self.text()[-6000:]}"
            time.sleep(0.1)

    def describe(self, appId):
        text = self.text()
        return text.split(f"topology {appId}\n", 1)[1].split("end of topology", 1)[0]

    def stop(self):
        if self.process.poll() is None:
            self.process.stdin.close()
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.log.close()
        assert self.process.returncode == 0, f"Java failed ({self.process.returncode}):\n{self.text()[-6000:]}"


def awaitRecords(servers, topic, count, java, timeoutS=60):
    """Wait until ``topic`` holds ``count`` committed records."""
    deadline = time.monotonic() + timeoutS
    while True:
        got = sum(map(len, readAll(servers, [topic])[topic].values()))
        if got == count:
            return
        assert got < count, f"{topic} holds {got} records, more than the {count} expected"
        assert java.process.poll() is None, f"Java exited ({java.process.returncode}):\n{java.text()[-6000:]}"
        assert time.monotonic() < deadline, f"{topic}: {got} of {count} records after {timeoutS} s\n{java.text()[-3000:]}"
        time.sleep(0.3)


def awaitNoMembers(servers, groupId, timeoutS=30):
    """Wait until a closed Kafka Streams application's member has left the group. Migration.java
    closes with ``CloseOptions`` ``LEAVE_GROUP``, so it has left when its close returned; a plain
    close stays a member until its session (6 s) expires, and the wait was that long."""
    deadline = time.monotonic() + timeoutS
    while groupMembers({"bootstrap.servers": servers}, groupId):
        assert time.monotonic() < deadline, f"group {groupId} still has members after {timeoutS} s"
        time.sleep(0.5)


def produce(topics, wave, prefix="in-"):
    usersWave, ordersWave = wave
    if usersWave:
        topics.produce(prefix + "users", [(STRING.serialize("", k), STRING.serialize("", v), ts) for k, v, ts in usersWave],
                       partitioner=partitionForKey)
    topics.produce(prefix + "orders", [(STRING.serialize("", k), LONG.serialize("", v), ts) for k, v, ts in ordersWave],
                   partitioner=partitionForKey)


def runKspark(spark, servers, appId, stateDir, **extra):
    streams = KafkaStreams(buildTopology(outPrefix=f"{appId}-out-"), {
        "application.id": appId, "bootstrap.servers": servers, "state.dir": str(stateDir),
        "processing.guarantee": "exactly_once_v2", "statestore.cache.max.bytes": 0, **extra}, spark=spark)
    streams.start()
    streams.awaitTermination()
    streams.close()
    return streams


# ---------------------------------------------------------------------------- the test
def test_take_over_a_java_application_and_hand_it_back(spark, kafkaBroker, tmp_path, caplog):
    """Java -> kspark and kspark -> Java, each half way through the input, give the output and
    the stores of Java over all of it (issue 33)."""
    servers = kafkaBroker.bootstrapServers
    topics = openTopics({"bootstrap.servers": servers})
    for topic in ("in-users", "in-orders", *(f"{app}-out-{o}" for app in ("mig", "back", "ref") for o in OUTPUTS)):
        topics.createTopic(topic, PARTITIONS)
    (usersA, ordersA), waveB, waveC = waves()
    produce(topics, (usersA, ordersA))
    java = JavaApps(kafkaBroker, tmp_path)
    try:
        # 1. Java processes wave A, then wave B without committing until it closes
        java.send("start mig in- mig-out-")
        awaitRecords(servers, "mig-out-totals", len(ordersA), java)
        # refused while the Java application runs: it is a member of the group (a clear error, no processing)
        with pytest.raises(StreamsException, match="Another instance of application.id mig is running"):
            KafkaStreams(buildTopology(), {"application.id": "mig", "bootstrap.servers": servers,
                                           "state.dir": str(tmp_path / "kspark-mig")}, spark=spark).start()
        java.send("hold mig")
        java.awaitLine("holding mig")
        produce(topics, waveB)
        java.awaitLine(f"seen mig {len(ordersA) + len(waveB[1])}")
        java.send("close mig")
        java.awaitLine("closed mig NOT_RUNNING")
        assert java.describe("mig").strip() == str(buildTopology().describe()).strip()

        # Kafka Streams' offset metadata holds each input partition's time (kspark starts its tasks there)
        for p, (_, metadata) in topics.committedOffsets("mig", "in-orders").items():
            assert decodeStreamsMetadata(metadata)[0] == max(
                ts for k, _, ts in ordersA + waveB[1] if partitionForKey(STRING.serialize("", k), PARTITIONS) == p)

        # what Java wrote to the repartition topic and had not read when it stopped
        repartition = next(t for t in topics.listTopics() if t.startswith("mig-") and t.endswith("-repartition"))
        committed = {p: o for p, (o, _) in topics.committedOffsets("mig", repartition).items()}
        unread = sum(end - committed.get(p, 0) for p, end in topics.endOffsets(repartition).items())
        assert unread > 0, "Java read every record of its repartition topic: nothing is left to take over"

        # 2. kspark (back) processes waves A and B, and commits Kafka Streams' offset metadata
        runKspark(spark, servers, "back", tmp_path / "kspark-back")
        for p, (_, metadata) in topics.committedOffsets("back", "in-orders").items():
            assert decodeStreamsMetadata(metadata)[0] == max(
                ts for k, _, ts in ordersA + waveB[1] if partitionForKey(STRING.serialize("", k), PARTITIONS) == p)

        # 3. wave C; kspark takes mig over; Java takes back over; Java runs ref over everything
        produce(topics, waveC)
        java.send("start back in- back-out-")
        java.send("start ref in- ref-out-")
        runKspark(spark, servers, "mig", tmp_path / "kspark-mig")
        total = len(ordersA) + len(waveB[1]) + len(waveC[1])
        for app in ("ref", "back"):
            awaitRecords(servers, f"{app}-out-totals", total, java)
        java.send("close back")
        java.send("close ref")
        java.awaitLine("closed ref NOT_RUNNING")
        java.awaitLine("closed back NOT_RUNNING")
    finally:
        java.stop()
    # kspark's offset metadata is Kafka Streams' byte for byte (no NUL after it, see sendOffsetsToTransaction)
    assert "Unsupported offset metadata" not in java.text()

    # 4. kspark starts back again on its old state.dir, which Java moved past (wave C): that
    # checkpoint's stores and positions are stale, so it is wiped and restored from the changelogs
    # at the group's offsets (Kafka Streams: local state behind its changelog is restored); resuming
    # it would process wave C a second time (back's outputs would then differ from ref's below)
    awaitNoMembers(servers, "back")
    with caplog.at_level(logging.WARNING, logger="kspark.spark"):
        runKspark(spark, servers, "back", tmp_path / "kspark-back")
    stale = [r.getMessage() for r in caplog.records if "is behind consumer group back" in r.getMessage()]
    assert stale and "another application (Kafka Streams, or kspark on another state.dir) committed offset" in stale[0]

    # the outputs
    problems = []
    outputs = readAll(servers, [f"{app}-out-{o}" for app in ("mig", "back", "ref") for o in OUTPUTS])
    for o in OUTPUTS:
        ref = byKey(outputs[f"ref-out-{o}"])
        assert ref, o
        for app in ("mig", "back"):
            # back/times: handed back, Kafka Streams starts each task at the partition time kspark
            # committed (wave C's first order on partition 1 is a second behind it), which it can
            # only read if the metadata is exactly its Base64 text (TopicPartitionMetadata.decode)
            got = byKey(outputs[f"{app}-out-{o}"])
            if got != ref:
                problems.append((app, o, differences(got, ref)))
    # the stores: every changelog's last record per key. The record timestamps of session store
    # and suppression buffer changelogs are not part of the stores (Kafka's restore ignores them):
    # Kafka writes the put's record time, kspark the task's stream time at the commit.
    changelogs = {store: f"{store}-changelog" for store in buildTopology().storeBuilders()}
    suppress = next(store for store in changelogs if store.startswith("KTABLE-SUPPRESS"))
    logs = readAll(servers, [f"{app}-{c}" for app in ("mig", "back", "ref") for c in changelogs.values()])
    for store, c in changelogs.items():
        withTimestamps = not store.startswith(("KSTREAM-AGGREGATE-STATE-STORE-0000000017", "KTABLE-SUPPRESS"))
        ref = storeContents(logs[f"ref-{c}"], withTimestamps)
        assert ref, store
        for app in ("mig", "back"):
            got = storeContents(logs[f"{app}-{c}"], withTimestamps)
            if (app, store) == ("mig", suppress):
                # Open (see the README): after the take-over, one buffered tombstone (a merged-away
                # session, which untilWindowCloses never emits) was in Java's buffer, not kspark's;
                # the entries the buffer will emit are compared
                got, expected = withoutTombstones(got), withoutTombstones(ref)
                assert expected, store
                if got != expected:
                    problems.append((app, store, sorted(set(got.items()) ^ set(expected.items()))[:6]))
                continue
            if got != ref:
                problems.append((app, store, [("only " + (app if k in got and got[k] == v else "ref"), k, v)
                                              for k, v in sorted(set(got.items()) ^ set(ref.items()))][:6]))
    assert problems == []


# ---------------------------------------------------------------------------- refusals
def commitOffsets(servers, groupId, offsets):
    """Commit ``{(topic, partition): offset}`` for ``groupId`` as a stopped Kafka Streams
    application left them (with its offset metadata: the partition time)."""
    from confluent_kafka import Consumer, TopicPartition

    from kspark.topics._kafka import encodeStreamsMetadata

    consumer = Consumer({"bootstrap.servers": servers, "group.id": groupId, "enable.auto.commit": False})
    try:
        consumer.commit(offsets=[TopicPartition(t, p, o, encodeStreamsMetadata(BASE_MS, {}))
                                 for (t, p), o in offsets.items()], asynchronous=False)
    finally:
        consumer.close()


def test_refuses_state_it_cannot_take_over_before_processing(spark, kafkaBroker, tmp_path):
    """A new checkpoint on a group with committed offsets (an application that ran before) starts
    only if every store's changelog is there, in a layout kspark reads, and every internal topic
    is one of the topology's; else the error names each store, topic and reason (issue 33)."""
    from kspark.spark._takeover import checkTakeover

    servers = kafkaBroker.bootstrapServers
    topics = openTopics({"bootstrap.servers": servers})
    for topic in ("rf-users", "rf-orders", *(f"rf-out-{o}" for o in OUTPUTS)):
        topics.createTopic(topic, PARTITIONS)
    topology = buildTopology(inPrefix="rf-", outPrefix="rf-out-")
    stores = sorted(topology.storeBuilders())
    suppress = next(n for n in stores if n.startswith("KTABLE-SUPPRESS"))
    session = "KSTREAM-AGGREGATE-STATE-STORE-0000000017"

    def check(appId, **extra):
        streams = KafkaStreams(topology, {"application.id": appId, "bootstrap.servers": servers, **extra})
        plans = streams._plan()
        checkTakeover(streams._topics, streams._config, topology, plans, {plan["subtopology"].id for plan in plans})

    # a group without committed offsets: nothing to take over, missing changelogs are created later
    check("rf-new")

    # committed offsets but no changelog at all: every store is named; the config key allows empty stores
    commitOffsets(servers, "rf-missing", {("rf-orders", 0): 0, ("rf-users", 1): 0})
    with pytest.raises(StreamsException) as missing:
        check("rf-missing")
    for store in stores:
        assert f"store {store}: its changelog topic rf-missing-{store}-changelog does not exist" in str(missing.value)
    assert "kspark.allow.missing.changelogs=true" in str(missing.value)
    check("rf-missing", **{"kspark.allow.missing.changelogs": "true"})

    # changelogs present, two in a layout kspark cannot read, one of a store the topology lacks,
    # a repartition topic it does not use with records in it
    for store in stores:
        topics.createTopic(f"rf-bad-{store}-changelog", PARTITIONS)
    topics.createTopic("rf-bad-KSTREAM-AGGREGATE-STATE-STORE-0000000099-changelog", PARTITIONS)
    topics.createTopic("rf-bad-KSTREAM-MAP-0000000042-repartition", PARTITIONS)
    topics.produce(f"rf-bad-{suppress}-changelog", [(b"key", b"\x00" * 40, BASE_MS, (("v", b"\x02"),))],
                   partitioner=lambda key, n: 1)
    topics.produce(f"rf-bad-{session}-changelog", [(b"k", b"\x00" * 8, BASE_MS)], partitioner=lambda key, n: 0)
    topics.produce("rf-bad-KSTREAM-MAP-0000000042-repartition", [(b"k", b"v", BASE_MS)], partitioner=lambda key, n: 0)
    commitOffsets(servers, "rf-bad", {("rf-orders", 0): 0})
    expected = [
        f"store {suppress}: changelog topic rf-bad-{suppress}-changelog-1 offset 0: suppression buffer changelog "
        "format with header v=02: kspark reads format 3 (Kafka 2.6 and later) only",
        f"store {session}: changelog topic rf-bad-{session}-changelog-0 offset 0: a key of 1 bytes: Kafka's session "
        "key is [key][end: 8 bytes][start: 8 bytes]",
        "changelog topic rf-bad-KSTREAM-AGGREGATE-STATE-STORE-0000000099-changelog: no store "
        "KSTREAM-AGGREGATE-STATE-STORE-0000000099 in this topology",
        "internal topic rf-bad-KSTREAM-MAP-0000000042-repartition: this topology neither reads nor writes it",
    ]
    with pytest.raises(StreamsException) as bad:
        check("rf-bad")
    for line in expected:
        assert line in str(bad.value)

    # the same through KafkaStreams.start(): refused before any record is processed
    produce(topics, ([("user0", "region0", BASE_MS)], [("user0", 5, BASE_MS)]), prefix="rf-")
    streams = KafkaStreams(topology, {"application.id": "rf-bad", "bootstrap.servers": servers,
                                      "state.dir": str(tmp_path / "state")}, spark=spark)
    with pytest.raises(StreamsException, match="kspark cannot take over the state of application.id rf-bad") as e:
        streams.start()
    assert expected[0] in str(e.value)
    streams.close()
    assert not any(readAll(servers, [f"rf-out-{o}" for o in OUTPUTS])[f"rf-out-{o}"][p]
                   for o in OUTPUTS for p in range(PARTITIONS))
    assert {p: o for p, (o, _) in topics.committedOffsets("rf-bad", "rf-orders").items()} == {0: 0}


# ---------------------------------------------------------------------------- the reset tool
def test_kafka_streams_application_reset_works_on_a_kspark_application(spark, kafkaBroker, tmp_path):
    """Kafka's ``kafka-streams-application-reset`` (``StreamsResetter`` of kafka-tools 4.3.1) on a
    kspark application, as on a Kafka Streams one: it resets the group's input offsets to the
    earliest and deletes the internal topics; with its state.dir deleted (the tool's instruction
    for Kafka Streams' local state), kspark then reprocesses the input from the start, recreates
    the internal topics, and writes the same output again (issue 33)."""
    from kspark.testing._jvm import jvmClasspath, jvmLibDir

    assert list(jvmLibDir().glob("kafka-tools-*.jar")), f"no kafka-tools jar in {jvmLibDir()}: run `make jvm`"
    servers = kafkaBroker.bootstrapServers
    topics = openTopics({"bootstrap.servers": servers})
    topics.createTopic("appreset-in", PARTITIONS)
    topics.createTopic("appreset-out", PARTITIONS)
    words = ["a", "b", "a", "c", "b", "a"]
    topics.produce("appreset-in", [(STRING.serialize("", f"k{i}"), STRING.serialize("", w), BASE_MS + i)
                                for i, w in enumerate(words)], partitioner=partitionForKey)
    b = StreamsBuilder()
    (b.stream("appreset-in", Consumed.with_(STRING, STRING)).groupBy(lambda k, v: v, Grouped.with_(STRING, STRING))
     .count().toStream().to("appreset-out", Produced.with_(STRING, LONG)))
    topology = b.build()
    internal = ["rs-KSTREAM-AGGREGATE-STATE-STORE-0000000002-changelog",
                "rs-KSTREAM-AGGREGATE-STATE-STORE-0000000002-repartition"]

    def run(stateDir):
        streams = KafkaStreams(topology, {"application.id": "rs", "bootstrap.servers": servers,
                                          "state.dir": str(stateDir), "processing.guarantee": "exactly_once_v2"},
                               spark=spark)
        streams.start()
        streams.awaitTermination()
        streams.close()

    def counts():
        return sorted((STRING.deserialize("", k), LONG.deserialize("", v))
                      for records in readAll(servers, ["appreset-out"])["appreset-out"].values() for k, v, _, _ in records)

    once = [("a", 3), ("b", 2), ("c", 1)]  # the record cache (on by default) forwards each batch's last count
    run(tmp_path / "state")
    assert counts() == once
    assert set(internal) <= set(topics.listTopics())
    assert sum(o for o, _ in topics.committedOffsets("rs", "appreset-in").values()) == len(words)

    reset = subprocess.run(
        [javaExecutable(), "-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp", jvmClasspath(),
         "org.apache.kafka.tools.StreamsResetter", "--bootstrap-server", servers, "--application-id", "rs",
         "--input-topics", "appreset-in"], capture_output=True, text=True, timeout=120)
    assert reset.returncode == 0, reset.stdout + reset.stderr
    assert not set(internal) & set(topics.listTopics()), reset.stdout
    assert {p: o for p, (o, _) in topics.committedOffsets("rs", "appreset-in").items()} == {0: 0, 1: 0}

    run(tmp_path / "state-after-reset")  # state.dir deleted, as the tool says (KafkaStreams#cleanUp in Java)
    assert counts() == sorted(once + once)  # counted from 0 again (a: 3, not 6): the stores start empty
    assert set(internal) <= set(topics.listTopics())
    assert sum(o for o, _ in topics.committedOffsets("rs", "appreset-in").values()) == len(words)

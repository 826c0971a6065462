"""kspark and Java Kafka Streams applications on the same topics of a real broker (issue 18,
item 3): the bytes on the wire are Kafka's for every built-in serde, for windowed keys and for the
Change records on a KTable groupBy's repartition topic.

One kspark run on Spark (exactly_once_v2) writes a topic per serde; one JVM runs two Kafka
Streams applications (``java/interop/Interop.java``, exactly_once_v2): the first reads each topic
with Kafka's serde, writes it back through the same serde and reports what it decoded; the second
runs the same KTable groupBy().count() as kspark's run, over the same input table.
"""

import json
import math
import random
import struct
import subprocess
import time
import uuid
from collections import Counter, defaultdict
from pathlib import Path

from kspark import (
    Consumed, Grouped, KafkaStreams, Produced, Serdes, SessionWindows, StreamsBuilder, TimeWindows, Windowed,
    WindowedSerdes,
)
from kspark.runtime.partitioner import partitionForKey
from kspark.testing._jvm import compileJava, javaExecutable
from kspark.topics import openTopics

JAVA_SOURCES = Path(__file__).parent / "java"
CLASS_CACHE = Path.home() / ".cache" / "kspark" / "interop"
PARTITIONS = 2
WINDOW_MS, GAP_MS, GRACE_MS = 10_000, 5_000, 86_400_000
DEADLINE_S = 60  # for the Java applications' output, once kspark's run has ended
# realistic timestamps (librdkafka sends 0 as "now"): the last full hour a day ago, in ms
BASE_MS = (int(time.time() * 1000) - 86_400_000) // 3_600_000 * 3_600_000
N = 40  # seed records


def f32(x):
    """``x`` rounded to a Java float, as Serdes.Float() writes it."""
    return struct.unpack(">f", struct.pack(">f", x))[0]


def cycle(values, n=N):
    return [values[i % len(values)] for i in range(n)]


# Per serde: kspark's serde, N keys and N values (None: a null record, a tombstone)
NASTY_STRINGS = ["", "plain", "ünïcödé ✓", "🙂 astral", "nul\x00byte", "line\nbreak\ttab", "x" * 1000, "ключ"]
DOUBLES = [0.0, -0.0, 1.5, -2.25e-300, 1e300, math.inf, -math.inf, math.nan, 0.1, 5e-324, -7.0]
FLOATS = [f32(x) for x in (0.0, -0.0, 1.5, -0.1, 3.4028234663852886e38, 1.401298464324817e-45, math.inf, math.nan, 1e-3)]
BYTES = [b"", b"\x00", bytes(range(256)), b"\xff\xfe\xfd", b"kspark"]
UUIDS = [uuid.UUID(int=0), uuid.UUID(int=2 ** 128 - 1), uuid.uuid5(uuid.NAMESPACE_URL, "kspark"),
         uuid.UUID("123e4567-e89b-12d3-a456-426614174000")]
JSONS = [{"a": 1, "b": [1, 2.5, "x", None, True, False], "c": {"nested": {"deep": []}}}, [], {}, "just a string", 0,
         -1.5e-7, 2 ** 70, 1e20, {"ü": "🙂", "quote\"": "back\\slash"}, [0.1, -0.0, 123456789.125]]
SERDES = {
    "string": (Serdes.String(), cycle(NASTY_STRINGS[1:] + [f"k{i}" for i in range(9)]), cycle(NASTY_STRINGS + [None])),
    "long": (Serdes.Long(), [i * 1_000_003 - 2 ** 40 for i in range(N)],
             cycle([0, 1, -1, 2 ** 63 - 1, -2 ** 63, 1_234_567_890_123, None])),
    "integer": (Serdes.Integer(), [i * 7919 - 100_000 for i in range(N)], cycle([0, -1, 2 ** 31 - 1, -2 ** 31, 42, None])),
    "short": (Serdes.Short(), [i * 601 - 9_000 for i in range(N)], cycle([0, -1, 32767, -32768, 300, None])),
    "double": (Serdes.Double(), cycle(DOUBLES[::-1]), cycle(DOUBLES + [None])),
    "float": (Serdes.Float(), cycle(FLOATS[::-1]), cycle(FLOATS + [None])),
    "boolean": (Serdes.Boolean(), cycle([True, False]), cycle([False, True, None])),
    "bytes": (Serdes.ByteArray(), [b"key-%d" % i for i in range(N)], cycle(BYTES + [None])),
    "uuid": (Serdes.UUID(), [uuid.UUID(int=i * 2 ** 100 + i) for i in range(N)], cycle(UUIDS + [None])),
    "void": (Serdes.Void(), [None] * N, [None] * N),
    "json": (Serdes.JSON(), [{"id": i, "name": NASTY_STRINGS[i % 8]} for i in range(N)], cycle(JSONS + [None])),
}
WINDOWED = {"twin": WindowedSerdes.timeWindowedSerdeFrom(Serdes.String(), WINDOW_MS),
            "swin": WindowedSerdes.sessionWindowedSerdeFrom(Serdes.String())}
# seed i: key g<i % 4>, value i, at a shuffled second in [0, 80) s: out-of-order records, time
# windows of several records, sessions that merge (tombstones for the merged ones)
SEED = [(f"g{i % 4}", i, BASE_MS + 1000 * s) for i, s in enumerate(random.Random(18).sample(range(80), N))]


def canon(name, o):
    """A decoded key or value as JSON, as ``Interop.canon`` renders the Java object."""
    if o is None:
        return None
    if isinstance(o, Windowed):
        return {"w": [o.key(), o.window().start(), o.window().end()]}
    if name == "double":
        return {"f64": struct.pack(">d", o).hex()}
    if name == "float":
        return {"f32": struct.pack(">f", o).hex()}
    if name == "bytes":
        return {"b": o.hex()}
    if name == "uuid":
        return {"u": str(o)}
    if name == "json":
        return {"j": o}
    return o


def canonSorted(name, pairs):
    return sorted(json.dumps([canon(name, k), canon(name, v)], sort_keys=True) for k, v in pairs)


# ---------------------------------------------------------------------------- the KTable groupBy
def _regionsAndUsers():
    """Per partition two regions and three users that all hash to it: each repartition partition
    then gets its records from one task only, so their order is the same in both runs."""
    key = Serdes.String()
    regions, users = defaultdict(list), defaultdict(list)
    for name in (f"region{i}" for i in range(40)):
        regions[partitionForKey(key.serialize("", name), PARTITIONS)].append(name)
    for name in (f"user{i}" for i in range(40)):
        users[partitionForKey(key.serialize("", name), PARTITIONS)].append(name)
    return {p: (regions[p][:2], users[p][:3]) for p in range(PARTITIONS)}


def tableUpdates():
    """(user, "region:tier" or None, timestamp): a new row (Change with a new value only), a row
    moving to another region (an old-value Change to one key, a new-value Change to the other), a
    change within a region (old and new value in one Change), an unchanged row sent again, a
    delete, a delete of a missing row, a row coming back."""
    updates = []
    for p, ((r1, r2), (u1, u2, u3)) in sorted(_regionsAndUsers().items()):
        updates += [(u1, f"{r1}:gold"), (u2, f"{r1}:silver"), (u3, f"{r2}:gold"), (u1, f"{r2}:gold"),
                    (u2, f"{r1}:bronze"), (u2, f"{r1}:bronze"), (u3, None), (u3, None), (u1, f"{r1}:gold")]
    return [(user, value, BASE_MS + 1000 * i) for i, (user, value) in enumerate(updates)]


def buildTopology():
    """kspark's run: the groupBy first (its generated names are then those of Interop's own
    topology of it alone), then the serde topics."""
    b = StreamsBuilder()
    (b.table("interop-table-in", Consumed.with_(Serdes.String(), Serdes.String()))
     .groupBy(lambda user, v: (v.split(":")[0], v), Grouped.with_(Serdes.String(), Serdes.String()))
     .count().toStream().to("interop-change-out-kspark", Produced.with_(Serdes.String(), Serdes.Long())))

    seed = b.stream("interop-seed", Consumed.with_(Serdes.String(), Serdes.Long()))
    for name, (serde, keys, values) in SERDES.items():
        seed.map(lambda k, i, keys=keys, values=values: (keys[i], values[i])).to(
            f"interop-k-{name}", Produced.with_(serde, serde))
    grouped = seed.groupByKey()
    (grouped.windowedBy(TimeWindows.ofSizeAndGrace(WINDOW_MS, GRACE_MS)).count().toStream()
     .to("interop-k-twin", Produced.with_(WINDOWED["twin"], Serdes.Long())))
    (grouped.windowedBy(SessionWindows.ofInactivityGapAndGrace(GAP_MS, GRACE_MS)).count().toStream()
     .to("interop-k-swin", Produced.with_(WINDOWED["swin"], Serdes.Long())))
    return b.build()


# ---------------------------------------------------------------------------- helpers
def readAll(servers, names):
    """Topic -> partition -> [(key bytes, value bytes, timestamp)] in offset order, as a
    read_committed consumer reads them.

    One consumer for all partitions, with short waits: ``KafkaTopics.read`` costs a second per
    partition (``consume(timeout=1.0)`` waits out its timeout when the range holds fewer records
    than asked for, and the end of a transactional partition needs one more fetch, which the
    broker holds for ``fetch.wait.max.ms``)."""
    from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

    consumer = Consumer({"bootstrap.servers": servers, "group.id": "interop-test-reader", "enable.auto.commit": False,
                         "isolation.level": "read_committed", "enable.partition.eof": True,
                         "auto.offset.reset": "error", "fetch.wait.max.ms": 10})
    consumer.assign([TopicPartition(t, p, 0) for t in names for p in range(PARTITIONS)])
    records = {t: {p: [] for p in range(PARTITIONS)} for t in names}
    pending, deadline = {(t, p) for t in names for p in range(PARTITIONS)}, time.monotonic() + 30
    try:
        while pending:
            assert time.monotonic() < deadline, f"reading {sorted(pending)} made no progress in 30 s"
            for m in consumer.consume(10_000, 0.05):
                if m.error() is None:
                    records[m.topic()][m.partition()].append((m.key(), m.value(), m.timestamp()[1]))
                elif m.error().code() == KafkaError._PARTITION_EOF:
                    pending.discard((m.topic(), m.partition()))
                else:  # a purged log start (OFFSET_OUT_OF_RANGE) included: fail, never skip
                    raise KafkaException(m.error())
    finally:
        consumer.close()
    return records


def decode(raw, keySerde, valueSerde, topic):
    return [(keySerde.deserialize(topic, k), valueSerde.deserialize(topic, v), ts)
            for records in raw.values() for k, v, ts in records]


def startJava(broker, tmp_path):
    java, classpath = javaExecutable(), compileJava(JAVA_SOURCES, CLASS_CACHE)
    args = {"bootstrap": broker.bootstrapServers, "stateDir": tmp_path / "java-state", "maxSeconds": 180,
            "serdeApp": "interop-java-serdes", "in": "interop-k-", "out": "interop-j-", "seen": "interop-j-seen",
            "windowSize": WINDOW_MS, "changeApp": "interop-java-change", "tableIn": "interop-table-in",
            "changeOut": "interop-change-out-java"}
    with (tmp_path / "java.log").open("w") as log:
        return subprocess.Popen(
            [java, "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
             "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", classpath, "interop.Interop",
             *(f"{k}={v}" for k, v in args.items())],
            stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT)


def javaLog(tmp_path):
    return (tmp_path / "java.log").read_text(errors="replace")[-6000:]


def awaitCounts(topics, expected, java, tmp_path):
    """Poll the Java applications' output topics until each holds ``expected[topic]`` records (a
    Java failure or the deadline fails the test, with the Java log)."""
    deadline = time.monotonic() + DEADLINE_S
    while True:
        existing = set(topics.listTopics()) & set(expected)
        got = {t: sum(map(len, partitions.values())) for t, partitions in readAll(topics.servers, existing).items()}
        if got == expected:
            return
        assert java.poll() is None, f"the Java applications exited ({java.returncode}):\n{javaLog(tmp_path)}"
        assert time.monotonic() < deadline, (
            f"the Java applications' output is incomplete after {DEADLINE_S} s: records {got}, expected {expected}, "
            f"missing topics {sorted(set(expected) - existing)}\n{javaLog(tmp_path)}")
        time.sleep(0.5)


def stopJava(java, tmp_path):
    java.stdin.close()
    try:
        java.wait(timeout=30)
    except subprocess.TimeoutExpired:
        java.kill()
        raise AssertionError(f"the Java applications did not stop within 30 s:\n{javaLog(tmp_path)}") from None
    assert java.returncode == 0, f"the Java applications failed ({java.returncode}):\n{javaLog(tmp_path)}"


# ---------------------------------------------------------------------------- the test
def test_kspark_and_java_kafka_streams_read_each_others_bytes(spark, kafkaBroker, tmp_path):
    """Every built-in serde, windowed keys (time and session) and the Change format of a KTable
    groupBy's repartition topic, between kspark on Spark and Kafka Streams 4.3.1, both
    exactly_once_v2 on one broker (issue 18, item 3)."""
    topics = openTopics({"bootstrap.servers": kafkaBroker.bootstrapServers})
    names = [*SERDES, *WINDOWED]
    for topic in ("interop-seed", "interop-table-in", "interop-j-seen", "interop-change-out-kspark",
                  "interop-change-out-java", *(f"interop-{side}-{n}" for side in "kj" for n in names)):
        topics.createTopic(topic, PARTITIONS)
    string, long_ = Serdes.String(), Serdes.Long()
    topics.produce("interop-seed", [(string.serialize("", k), long_.serialize("", i), ts) for k, i, ts in SEED],
                   partitioner=partitionForKey)
    topics.produce("interop-table-in",
                   [(string.serialize("", u), string.serialize("", v), ts) for u, v, ts in tableUpdates()],
                   partitioner=partitionForKey)

    java = startJava(kafkaBroker, tmp_path)  # its groups form while Spark runs
    try:
        streams = KafkaStreams(buildTopology(), {
            "application.id": "interop-kspark", "bootstrap.servers": kafkaBroker.bootstrapServers,
            "state.dir": str(tmp_path / "kspark-state"), "processing.guarantee": "exactly_once_v2",
            "statestore.cache.max.bytes": 0}, spark=spark)
        streams.start()
        streams.awaitTermination()
        streams.close()
        assert java.poll() is None, f"the Java applications exited ({java.returncode}):\n{javaLog(tmp_path)}"

        internal = [t for t in topics.listTopics() if t.startswith("interop-kspark-")]
        # issue 32: a changelog topic per store, named as Kafka Streams names them
        changelogs = sorted(t for t in internal if t.endswith("-changelog"))
        assert changelogs == sorted(f"interop-kspark-{store}-changelog" for store in buildTopology().storeBuilders())
        internal = [t for t in internal if t not in changelogs]
        assert len(internal) == 1 and internal[0].endswith("-repartition"), internal
        repartition = internal[0]
        javaRepartition = "interop-java-change-" + repartition.removeprefix("interop-kspark-")  # Kafka's generated name
        ksparkTopics = [*(f"interop-k-{n}" for n in names), repartition, "interop-change-out-kspark"]
        kspark = readAll(kafkaBroker.bootstrapServers, ksparkTopics)
        counts = {t: sum(map(len, kspark[t].values())) for t in ksparkTopics}
        awaitCounts(topics, {**{f"interop-j-{n}": counts[f"interop-k-{n}"] for n in names},
                             "interop-j-seen": sum(counts[f"interop-k-{n}"] for n in names),
                             javaRepartition: counts[repartition],
                             "interop-change-out-java": counts["interop-change-out-kspark"]}, java, tmp_path)
    finally:
        if java.poll() is None:
            stopJava(java, tmp_path)
    javaTopics = [*(f"interop-j-{n}" for n in names), "interop-j-seen", javaRepartition, "interop-change-out-java"]
    back = readAll(kafkaBroker.bootstrapServers, javaTopics)

    # 1. kspark wrote what the topology says, with the seed's timestamps
    for name, (serde, keys, values) in SERDES.items():
        got = decode(kspark[f"interop-k-{name}"], serde, serde, name)
        assert sorted(json.dumps([canon(name, k), canon(name, v), ts]) for k, v, ts in got) == sorted(
            json.dumps([canon(name, keys[i]), canon(name, values[i]), ts]) for _, i, ts in SEED), name
    final = {}
    for key, count, _ in decode(kspark["interop-k-twin"], WINDOWED["twin"], long_, "twin"):
        final[key.key(), key.window().start()] = count  # a windowed key's updates: one partition, in order
    assert final == Counter((k, (ts - BASE_MS) // WINDOW_MS * WINDOW_MS + BASE_MS) for k, _, ts in SEED)
    swin = decode(kspark["interop-k-swin"], WINDOWED["swin"], long_, "swin")
    assert any(count is None for _, count, _ in swin), "no session merged: no tombstone with a session key"

    # 2. Kafka's serdes decode kspark's bytes as the same values (as Java renders them)
    seen = defaultdict(list)
    for records in back["interop-j-seen"].values():
        for k, v, _ in records:
            seen[string.deserialize("", k)].append(json.loads(v))
    for name in names:
        keySerde, valueSerde = (SERDES[name][0],) * 2 if name in SERDES else (WINDOWED[name], long_)
        original = [(k, v) for k, v, _ in decode(kspark[f"interop-k-{name}"], keySerde, valueSerde, name)]
        assert sorted(json.dumps(pair, sort_keys=True) for pair in seen[name]) == canonSorted(name, original), name

    # 3. what Kafka wrote back through the same serdes, kspark reads as the originals
    for name in names:
        written, returned = kspark[f"interop-k-{name}"], back[f"interop-j-{name}"]
        if name == "json":  # Jackson writes numbers its own way (1.0E20): equal values, not bytes
            serde = SERDES[name][0]
            assert canonSorted(name, [(k, v) for k, v, _ in decode(returned, serde, serde, name)]) == canonSorted(
                name, [(k, v) for k, v, _ in decode(written, serde, serde, name)])
        elif name == "void":  # null keys: the partitions are the producers' choice
            assert sorted(r for rs in returned.values() for r in rs) == sorted(r for rs in written.values() for r in rs)
        else:  # the same bytes, partitions (Kafka's partitioner on the same key bytes) and order
            assert returned == written, name

    # 4. KTable groupBy: the same Change records on the repartition topic (every encoding: old
    # value only, new value only, both), the same counts
    assert {v[-1] for rs in kspark[repartition].values() for _, v, _ in rs} == {0, 1, 2}
    assert back[javaRepartition] == kspark[repartition]
    assert back["interop-change-out-java"] == kspark["interop-change-out-kspark"]

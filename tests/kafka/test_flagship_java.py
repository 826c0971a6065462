"""The flagship job ported to Java Kafka Streams (bench/java/bench/Flagship.java, issue 34 item 3)
gives the example's signals byte for byte: on the whole KRX input of ``make demo-kafka`` (540
signals), Kafka Streams 4.3 on the test broker (exactly_once_v2, 2 stream threads) writes the
records that kspark's topology writes on TopologyTestDriver (the reference the example's Spark
runs are checked against), with the same keys, JSON value bytes, timestamps and partitions.
This is what lets bench/run.py's P2-vs-Java comparison (``--only p2-java``) require identical
outputs (rules J-1, J-7: stream-table joins output the stream record's timestamp; TTD-4).
Marked slow (about 40 s with the Java compile): it checks the benchmark's port, and the suite is
over its 20-minute budget; run it with ``pytest -m slow tests/kafka/test_flagship_java.py``.
"""

import subprocess
import sys
import time
from pathlib import Path

import pytest

from kspark import Serdes
from kspark.runtime.partitioner import partitionForKey
from kspark.testing import TopologyTestDriver
from kspark.testing._jvm import compileJava, javaExecutable
from kspark.topics import openTopics

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))

import valuation_signals as vs  # noqa: E402

JAVA_SOURCES = ROOT / "bench" / "java"
CLASS_CACHE = Path.home() / ".cache" / "kspark" / "bench"  # as bench/run.py's


class Prefixed:
    """The example's topics under ``prefix`` (the session broker is shared with other tests)."""

    def __init__(self, topics, prefix):
        self.topics, self.prefix = topics, prefix

    def createTopic(self, name, partitions):
        self.topics.createTopic(self.prefix + name, partitions)

    def produce(self, name, records, partitioner=None):
        self.topics.produce(self.prefix + name, records, partitioner=partitioner)


def driverRecords(prices, valuations):
    """(partition, key bytes, value bytes, timestamp) of kspark's topology on TopologyTestDriver,
    every input in timestamp order (as ``vs.driverRun``), per partition in output order."""
    events = [(ts, "companies", k, v) for k, v, ts in vs.companyRecords(valuations)]
    events += [(vs.epochMs(p["snapshot_ts"]), "prices", p["code"], p) for p in prices]
    events += [(ts, "valuations", k, v) for k, v, ts in map(vs.valuationRecord, valuations)]
    events.sort(key=lambda e: e[0])
    key, value = Serdes.String(), Serdes.JSON()
    with TopologyTestDriver(vs.buildTopology()) as d:
        inputs = {t: d.createInputTopic(t) for t in ("prices", "valuations", "companies")}
        for ts, topic, k, v in events:
            inputs[topic].pipeInput(k, v, ts)
        out = d.createOutputTopic("signals").readRecordsToList()
    rows = [(key.serialize("signals", r.key()), value.serialize("signals", r.value()), r.timestamp()) for r in out]
    return sorted(((partitionForKey(k, vs.SIGNAL_PARTITIONS), k, v, ts) for k, v, ts in rows), key=lambda r: r[0])


def readTopic(topics, name):
    rows = []
    for p, end in sorted(topics.endOffsets(name).items()):
        t = topics.read(name, p, 0, end)
        rows += [(p, k, v, ts) for k, v, ts in zip(t["key"].to_pylist(), t["value"].to_pylist(),
                                                     t["timestamp"].to_pylist())]
    return rows


def test_java_port_of_the_flagship_writes_the_examples_540_signals(kafkaBroker, tmp_path):
    prefix = "flagship-java-"
    topics = openTopics({"bootstrap.servers": kafkaBroker.bootstrapServers})
    prices, valuations = vs.readPrices(), vs.readValuations()  # make demo-kafka's input
    vs.loadTopics(Prefixed(topics, prefix), prices, valuations)
    expected = driverRecords(prices, valuations)
    assert len(expected) == 540  # make demo-kafka's count (README.md)

    names = {t: prefix + t for t in ("prices", "valuations", "companies", "signals")}
    done = subprocess.run(
        [javaExecutable(), "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp",
         compileJava(JAVA_SOURCES, CLASS_CACHE), "bench.Flagship", f"bootstrap={kafkaBroker.bootstrapServers}",
         "appId=flagship-java", f"stateDir={tmp_path / 'java-state'}", *(f"{t}={n}" for t, n in names.items())],
        capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]

    got = readTopic(topics, names["signals"])  # read_committed
    assert len(got) == len(expected)
    assert got == expected


def javaFlagship(servers, appId, stateDir, **args):
    """Run bench.Flagship until the group's committed offsets reach the inputs' ends, then close."""
    done = subprocess.run(
        [javaExecutable(), "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp",
         compileJava(JAVA_SOURCES, CLASS_CACHE), "bench.Flagship", f"bootstrap={servers}", f"appId={appId}",
         f"stateDir={stateDir}", *(f"{k}={v}" for k, v in args.items())],
        capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]


def test_java_first_half_then_kspark_second_half_gives_the_540_signals(spark, kafkaBroker, tmp_path, request):
    """Issue 33, the flagship the same way as tests/kafka/test_migration.py: Kafka Streams 4.3
    (bench.Flagship, exactly_once_v2) processes the inputs stamped before the middle price and is
    closed; the rest is produced; kspark, with the same application.id and the example's
    topology, takes the application over (the group's offsets, the KTable's and the dedup store's
    changelogs, the repartition topic's unread records, the global topic) and processes the rest.
    The signals read read_committed are the 540 of one run over all the input, byte for byte."""
    from kspark import KafkaStreams
    from kspark.topics._kafka import groupMembers

    topics = openTopics({"bootstrap.servers": kafkaBroker.bootstrapServers})
    for name in ("prices", "valuations", "companies", "signals"):
        if topics.partitionsFor(name) is not None:
            topics.deleteTopic(name)
    request.addfinalizer(lambda: [topics.deleteTopic(t) for t in ("prices", "valuations", "companies", "signals")])
    prices, valuations = vs.readPrices(), vs.readValuations()
    expected = driverRecords(prices, valuations)
    assert len(expected) == 540

    middle = sorted(vs.epochMs(p["snapshot_ts"]) for p in prices)[len(prices) // 2]
    companies = vs.companyRecords(valuations)  # as driverRecords: latest name and sector, first publication time
    halves = [([p for p in prices if (vs.epochMs(p["snapshot_ts"]) < middle) == early],
               [v for v in map(vs.valuationRecord, valuations) if (v[2] < middle) == early],
               [c for c in companies if (c[2] < middle) == early]) for early in (True, False)]
    for name, partitions in (("prices", vs.PRICE_PARTITIONS), ("valuations", vs.VALUATION_PARTITIONS),
                             ("signals", vs.SIGNAL_PARTITIONS), ("companies", 1)):
        topics.createTopic(name, partitions)

    def produce(half):  # as vs.loadTopics: prices stamped when loaded (event time in the payload)
        key, value, now = Serdes.String(), Serdes.JSON(), int(time.time() * 1000)
        pricesHalf, valuationsHalf, companiesHalf = half
        topics.produce("prices", [(key.serialize("prices", p["code"]), value.serialize("prices", p), now)
                                  for p in pricesHalf], partitioner=partitionForKey)
        for name, records in (("valuations", valuationsHalf), ("companies", companiesHalf)):
            topics.produce(name, [(key.serialize(name, k), value.serialize(name, v), ts) for k, v, ts in records],
                           partitioner=partitionForKey)

    produce(halves[0])
    appId = "flagship-migration"
    javaFlagship(kafkaBroker.bootstrapServers, appId, tmp_path / "java-state", sessionTimeoutMs=6000)
    javaSignals = len(readTopic(topics, "signals"))
    produce(halves[1])
    deadline = time.monotonic() + 30  # Java's close does not leave the group: its 6 s session expires
    while groupMembers({"bootstrap.servers": kafkaBroker.bootstrapServers}, appId):
        assert time.monotonic() < deadline, "Kafka Streams' member is still in the group"
        time.sleep(0.5)

    streams = KafkaStreams(vs.buildTopology(), {
        "application.id": appId, "bootstrap.servers": kafkaBroker.bootstrapServers,
        "state.dir": str(tmp_path / "kspark-state"), "processing.guarantee": "exactly_once_v2"}, spark=spark)
    streams.start()
    streams.awaitTermination()
    streams.close()

    got = readTopic(topics, "signals")  # read_committed
    assert 0 < javaSignals < len(expected)  # each system wrote a part
    assert len(got) == len(expected)
    assert sorted(got) == sorted(expected)

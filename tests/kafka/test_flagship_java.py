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

"""The flagship job on Spark over a slice of the real KRX data: same signals (and sector report,
from the company-master GlobalKTable) as TopologyTestDriver, none twice per company and day, and
a restart from the checkpoint that neither loses nor duplicates (rules J-1..J-8, E-3, T-11..T-14,
RP-5)."""

import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))

import valuation_signals as vs  # noqa: E402
from kspark import KafkaStreams, TopologyException  # noqa: E402
from kspark.testing import TopologyTestDriver  # noqa: E402
from kspark.topics import LocalTopics  # noqa: E402

PRICE_ROWS = 12_000  # the first trading day and a half: 2026-03-09 sell-off and 03-10 rebound


@pytest.fixture(scope="module")
def inputs():
    prices = vs.readPrices(PRICE_ROWS)
    last = prices[-1]["trade_date"]
    valuations = [v for v in vs.readValuations() if v["date"] <= last]
    return prices, valuations


@pytest.fixture(scope="module")
def driverRun(inputs):
    """Signals and dedup store of TopologyTestDriver when records arrive in timestamp order."""
    prices, valuations = inputs
    # the company master first: on equal timestamps a global update precedes the stream record
    events = [(ts, "companies", k, v) for k, v, ts in vs.companyRecords(valuations)]
    events += [(vs.epochMs(p["snapshot_ts"]), "prices", p["code"], p) for p in prices]
    events += [(ts, "valuations", k, v) for k, v, ts in map(vs.valuationRecord, valuations)]
    events.sort(key=lambda e: e[0])
    with TopologyTestDriver(vs.buildTopology()) as d:
        topics = {t: d.createInputTopic(t) for t in ("prices", "valuations", "companies")}
        for ts, topic, key, value in events:
            topics[topic].pipeInput(key, value, ts)
        records = d.createOutputTopic("signals").readRecordsToList()
        store = list(d.getKeyValueStore(vs.SIGNAL_STORE).all())
    return sorted((r.key(), r.timestamp(), tuple(sorted(r.value().items()))) for r in records), store


@pytest.fixture(scope="module")
def expected(driverRun):
    return driverRun[0]


@pytest.fixture(scope="module")
def driverStore(driverRun):
    return driverRun[1]


def signalsOf(topics):
    return sorted((s["code"], s.pop("timestamp"), tuple(sorted(s.items()))) for s in vs.readSignals(topics))


def props(work, maxRecords=None):
    p = {"application.id": "valuation-signals-test", "kspark.topics.dir": str(work / "topics"),
         "state.dir": str(work / "state"), "kspark.spark.master": "local[2]"}
    if maxRecords:
        p["kspark.max.records.per.trigger"] = maxRecords
    return p


def test_spark_run_gives_the_driver_signals_once_per_company_and_day(spark, tmp_path, inputs, expected):
    topics = LocalTopics(tmp_path / "topics")
    vs.loadTopics(topics, *inputs)
    streams = KafkaStreams(vs.buildTopology(), props(tmp_path), spark=spark)
    streams.start()
    streams.awaitTermination()
    streams.close()
    got = signalsOf(topics)
    assert len(expected) > 100
    assert got == expected
    perDay = {}
    for code, _, value in got:
        day = dict(value)["trade_date"]
        perDay[(code, day)] = perDay.get((code, day), 0) + 1
    assert max(perDay.values()) == 1
    # the sector report (sector from the company master GlobalKTable) equals the driver's
    report = vs.sectorReport(vs.readSignals(topics))
    assert report.equals(vs.sectorReport([dict(value) for _, _, value in expected]))
    assert report.loc["total", "total"] == len(expected) and len(report) > 10
    metrics = streams.metrics()
    joined = sum(v for m, v in metrics.items() if m.name == "process-total" and m.tag("processor-node-id") == "per-below-threshold")
    assert 0 < joined < len(inputs[0])


def test_restart_from_checkpoint_continues_without_loss_or_duplicates(spark, tmp_path, inputs, expected):
    topics = LocalTopics(tmp_path / "topics")
    vs.loadTopics(topics, *inputs)
    first = KafkaStreams(vs.buildTopology(), props(tmp_path, maxRecords=2_000), spark=spark)
    first.start()
    deadline = time.time() + 240
    while time.time() < deadline:  # stop once the join sub-topology has committed a few batches
        queries = first.queries()
        if len(queries) == 2 and queries[1].lastProgress and queries[1].lastProgress["batchId"] >= 2:
            break
        time.sleep(0.2)
    first.close()
    partial = signalsOf(topics)
    assert 0 < len(partial) < len(expected)

    second = KafkaStreams(vs.buildTopology(), props(tmp_path, maxRecords=2_000), spark=spark)
    second.start()
    second.awaitTermination()
    second.close()
    assert signalsOf(topics) == expected


def test_seed_004_join_without_repartition_is_rejected_before_spark_runs(tmp_path, inputs):
    topics = LocalTopics(tmp_path / "topics")
    vs.loadTopics(topics, inputs[0][:10], inputs[1][:10])
    with pytest.raises(TopologyException, match=r"^Invalid topology: Topics not co-partitioned: \[\{prices=5, valuations=1\}\]$"):
        KafkaStreams(vs.buildTopology(repartition=False), props(tmp_path)).start()


def test_sigkill_at_random_points_then_restart_loses_and_duplicates_nothing(spark, tmp_path, inputs, expected, driverStore):
    """Issue 8: kill -9 the whole Spark run (driver, JVM, Python workers) twice at random points
    of its micro-batches, restart from the checkpoint each time; the final signals and the dedup
    store equal an uninterrupted run's (the driver's)."""
    import random
    import subprocess

    from _crash_runner import config
    from _processes import checkpointFiles, killRun, runUntilCheckpointFiles

    topics = LocalTopics(tmp_path / "topics")
    vs.loadTopics(topics, *inputs)
    runner = Path(__file__).with_name("_crash_runner.py")
    appDir = tmp_path / "state" / "valuation-signals-crash"
    rng = random.Random(2026)
    kills = 0
    for _ in range(2):
        # an uninterrupted run writes 24 checkpoint files (the offsets and commit of sub-topology 0's
        # 2 micro-batches and sub-topology 1's 10): kill once it wrote a random number of them (at
        # least 4 left) and up to 1 s more, mid-batch or between batches, however fast the machine
        count, delay = rng.randint(1, max(1, 24 - 4 - len(checkpointFiles(appDir)))), rng.uniform(0, 1)
        proc = subprocess.Popen([sys.executable, str(runner), str(tmp_path)], start_new_session=True,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if runUntilCheckpointFiles(proc, appDir, count):
            time.sleep(delay)
        if proc.poll() is not None:
            break
        killRun(proc)  # and its pyspark daemons, so that the next run does not overlap them
        kills += 1
        print(f"killed {delay:.2f} s after its checkpoint file #{count}; written: {sorted(checkpointFiles(appDir))}")
    assert kills == 2, "a run ended before its kill point"
    # the run after the crashes, in this process on the session's SparkSession (a process of its
    # own paid ~9 s of Spark start-up for nothing the test checks)
    final = KafkaStreams(vs.buildTopology(), config(tmp_path), spark=spark)
    final.start()
    try:
        assert final.awaitTermination(600), "the final run did not end within 600 s"
    finally:
        final.close()

    assert signalsOf(topics) == expected
    # what killed writer attempts staged was removed when their batches committed again
    assert [f for d in (tmp_path / "topics" / "~staging").iterdir() for f in d.iterdir()] == []
    streams = KafkaStreams(vs.buildTopology(), {**props(tmp_path), "application.id": "valuation-signals-crash"}, spark=spark)
    assert list(streams.checkpointedStore(vs.SIGNAL_STORE).all()) == driverStore

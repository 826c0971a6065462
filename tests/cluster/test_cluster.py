"""kspark on a Spark standalone cluster (issue 21): executors are separate processes with their
own working directories and Python workers, as on other machines.

The flagship job (examples/valuation_signals.py's topology) runs on Kafka topics, driven from a
process of its own, submitted with ``spark-submit``, kspark shipped to the executors as
``--py-files`` (the executors' interpreter does not have it), while one worker and its executor
are SIGKILLed mid-run. It gives exactly TopologyTestDriver's signals and dedup store (rules J-1..J-8, T-11..T-14), read
back read_committed.
"""

import json
import re
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import pytest
from _processes import alive, descendants, killRun

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "examples"))

import valuation_signals as vs  # noqa: E402
from kspark.topics import openTopics  # noqa: E402

APP = Path(__file__).with_name("_flagship_app.py")
PRICE_ROWS = 3_000  # 5,081 records into sub-topology 1 (prices and the repartitioned valuations)
TOPICS = ("prices", "valuations", "companies", "signals")


@pytest.fixture(scope="module")
def flagship(kafkaBroker):
    """The job's input topics on the session's broker, and TopologyTestDriver's signals and dedup
    store for them; the topics are deleted afterwards (other tests load their own)."""
    prices = vs.readPrices(PRICE_ROWS)
    valuations = [v for v in vs.readValuations() if v["date"] <= prices[-1]["trade_date"]]
    topics = openTopics({"bootstrap.servers": kafkaBroker.bootstrapServers})
    vs.loadTopics(topics, prices, valuations)
    signals, store = vs.driverRun(prices, valuations)
    assert len(signals) > 300 and len(store) > 100
    yield topics, signals, store
    for name in TOPICS:
        if topics.partitionsFor(name) is not None:
            topics.deleteTopic(name)


def emptySignals(topics):
    """A new, empty ``signals`` topic (each run writes its own)."""
    topics.deleteTopic("signals")
    topics.createTopic("signals", vs.SIGNAL_PARTITIONS)


def checkResult(path: Path, signals, store):
    result = json.loads(path.read_text())
    assert result["signals"] == signals
    assert result["store"] == store
    return result


@pytest.fixture(scope="module")
def ksparkZip(tmp_path_factory):
    """kspark as users ship it: a wheel built from the repository (``pip wheel``), named .zip
    (pyspark puts only .zip, .egg and .jar --py-files on the workers' path)."""
    out = tmp_path_factory.mktemp("dist")
    # the build backend (setuptools, of the [test] extra) from this environment: an isolated
    # build installs setuptools into a new environment first, 5 of the 8 s here (and a download
    # on a fresh CI machine); the wheel is the same
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(out),
                    str(REPO)], check=True, capture_output=True)
    wheel, = out.glob("kspark-*.whl")
    return wheel.rename(out / "kspark.zip")


@pytest.fixture(scope="module")
def pythonWithoutKspark(tmp_path_factory):
    """An interpreter with kspark's dependencies but not kspark: a venv whose site-packages
    point at this one's (a .pth line; the editable kspark's own .pth there is not read)."""
    env = tmp_path_factory.mktemp("executor-env")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    python = env / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    Path(purelib, "kspark-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    probe = subprocess.run([str(python), "-c", "import pandas, pyarrow, pyspark, confluent_kafka, orjson\nimport kspark"],
                           capture_output=True, text=True)
    assert "No module named 'kspark'" in probe.stderr, probe.stderr
    return python


def test_spark_submit_with_kspark_as_py_files_and_a_worker_killed_mid_run(
        sparkCluster, kafkaBroker, flagship, ksparkZip, pythonWithoutKspark, tmp_path):
    """README's way of submitting: ``spark-submit --master spark://... --py-files kspark.zip,<the
    job's modules>``, the driver and the executors running an interpreter without kspark. The
    job's config names no master: it runs on spark-submit's. Its state.dir is a ``file:`` URI
    (read and written through Spark's filesystem API).

    Mid-run, worker 1 and its executor are SIGKILLed while it runs a stateful task of
    sub-topology 1's second micro-batch: Spark runs the lost task again on worker 2's executor
    (its state from the checkpoint, the Kafka transaction of the lost attempt aborted or fenced),
    and the output is exact. (One run covers both: each cluster run of the flagship costs a
    minute of the suite.)"""
    topics, signals, store = flagship
    emptySignals(topics)
    sparkHome = Path(sparkCluster.environment()["SPARK_HOME"])
    state = tmp_path / "state"
    command = [str(sparkHome / "bin" / "spark-submit"), "--master", sparkCluster.masterUrl,
               "--py-files", f"{ksparkZip},{REPO / 'examples' / 'valuation_signals.py'}",
               "--conf", f"spark.pyspark.python={pythonWithoutKspark}",
               "--conf", f"spark.pyspark.driver.python={pythonWithoutKspark}",
               str(APP), kafkaBroker.bootstrapServers, state.as_uri(), "flagship-submitted",
               str(tmp_path / "result.json"), "3000"]  # two batches of sub-topology 1
    log = (tmp_path / "driver.log").open("w")  # a file, not a pipe nobody reads while the test polls
    driver = subprocess.Popen(command, env=sparkCluster.environment(), stdout=log, stderr=subprocess.STDOUT,
                              start_new_session=True)
    try:
        # kill while worker 1's executor runs a stateful task (kspark's tasks: transformWithState
        # over its stores) of sub-topology 1's second micro-batch; the first one committed, so
        # the state that task loaded is in the checkpoint
        checkpoint = state / "flagship-submitted" / "subtopology-1"
        deadline, running = time.monotonic() + 240, set()
        while driver.poll() is None and time.monotonic() < deadline:
            if ((checkpoint / "offsets" / "1").exists() and not (checkpoint / "commits" / "1").exists()
                    and (running := _statefulTasksInFlight(sparkCluster, 1))):
                break
            time.sleep(0.02)
        assert driver.poll() is None and running, "no stateful task of the second batch ran on worker 1"
        assert not (checkpoint / "commits" / "1").exists()
        executors = sparkCluster.executorPids(1)
        pythonWorkers = [p for e in executors for p in descendants(e)]
        killed = sparkCluster.killWorker(1)
        assert len(killed) >= 2 and executors  # the worker and (at least) its executor
        killedAt = time.monotonic()
        driver.wait(timeout=300)
        finishedAfter = time.monotonic() - killedAt
        aliveWorkers = [w["host"] + ":" + str(w["port"]) for w in sparkCluster.aliveWorkers()]
    finally:
        if driver.poll() is None:
            killRun(driver)  # spark-submit's JVM and its Python processes too
        log.close()
        # worker 1 stays dead: the sparkCluster fixture starts it again for a next cluster test
    err = (tmp_path / "driver.log").read_text(errors="replace")
    assert driver.returncode == 0, err[-4000:]
    assert "Lost executor" in err, err[-4000:]  # the driver saw it
    # the tasks lost with the executor ran again on worker 2's: as a new attempt of the task
    # ("1.1 in stage 5.0"), or of its stage ("1.0 in stage 5.1") when Spark resubmitted the stage
    # for the map outputs lost with worker 1 (a fetch of them failed)
    retried, reruns = _taskLog(sparkCluster, 2), []
    for task in running:
        index, stage = re.match(r"(\d+)\.0 in stage (\d+)\.0$", task).groups()
        attempts = [m for m in re.finditer(rf"(\S+) INFO Executor: Running task ({index}\.(\d+) in stage {stage}\.(\d+)) ",
                                           retried) if m[3] != "0" or m[4] != "0"]
        done = [(m, f) for m in attempts
                if (f := re.search(rf"(\S+) INFO Executor: Finished task {re.escape(m[2])} ", retried))]
        assert done, (task, [m[2] for m in attempts])  # an attempt may fail first (FetchFailed), one must succeed
        reruns += [f"{m[2]} {m[1]}..{f[1]}" for m, f in done]
    assert len(aliveWorkers) == 1  # the master knew worker 1 lost while the run finished on worker 2
    result = checkResult(tmp_path / "result.json", signals, store)
    assert result["master"] == sparkCluster.masterUrl
    # the killed executor's Python workers end by themselves (their JVM's sockets closed)
    deadline = time.monotonic() + 15
    while any(alive(p) for p in pythonWorkers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [p for p in pythonWorkers if alive(p)]
    print(f"worker 1 killed (pids {killed}) running {sorted(running)}; rerun on worker 2: {reruns}; "
          f"the run finished {finishedAfter:.1f} s after the kill")


def _taskLog(cluster, worker):
    """The executor log (stderr) of ``worker``'s newest application."""
    apps = sorted((cluster.clusterDir / "work" / f"worker-{worker}").glob("app-*"))
    return "".join(log.read_text(errors="replace") for log in apps[-1].glob("*/stderr")) if apps else ""


def _statefulTasksInFlight(cluster, worker):
    """The tasks (``"<index>.<attempt> in stage <stage>"``) that ``worker``'s executor started, has
    not finished, and that loaded a state store (Spark's RocksDB state machine logs the task
    that acquires a store)."""
    text = _taskLog(cluster, worker)
    started = dict(re.findall(r"Running task (\S+ in stage \S+) \(TID (\d+)\)", text))
    finished = set(re.findall(r"Finished task (\S+ in stage \S+) ", text))
    stateful = set(re.findall(r"RELEASED to ACQUIRED .*by TaskID (\d+)", text))
    return {task for task, tid in started.items() if task not in finished and tid in stateful}


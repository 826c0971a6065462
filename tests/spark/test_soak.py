"""Soak test (issue 22, "nothing grows without bound"): a count per key runs in continuous mode
(1 s trigger) for 10 minutes (``KSPARK_SOAK_SECONDS``) while input is appended all the time;
the run's resident memory (driver, JVM and Python workers), ``state.dir`` with ``metrics/``, and
the topics' staging area must stay bounded, and every record must be counted.

Marked slow: outside the default suite. Run it with
``flock /tmp/kspark-heavy.lock .venv/bin/python -m pytest -m slow tests/spark/test_soak.py -s``;
it prints its figures every 30 s."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from _processes import killRun, treeRss
from kspark import Serdes
from kspark.runtime.partitioner import partitionForKey
from kspark.topics import LocalTopics

pytestmark = pytest.mark.slow

RUNNER = Path(__file__).with_name("_soak_runner.py")
SECONDS = int(os.environ.get("KSPARK_SOAK_SECONDS", "600"))
KEYS = 100
RATE = 200  # records appended per second


def size(path: Path) -> tuple[int, int]:
    """(files, bytes) under ``path``."""
    files = total = 0
    for root, _, names in os.walk(path):
        for name in names:
            try:
                total += os.path.getsize(os.path.join(root, name))
                files += 1
            except FileNotFoundError:
                pass
    return files, total


def test_continuous_run_stays_bounded(tmp_path):
    topics = LocalTopics(tmp_path / "topics")
    topics.createTopic("in", 2)
    topics.createTopic("out", 2)
    key, value = Serdes.String(), Serdes.JSON()
    proc = subprocess.Popen([sys.executable, str(RUNNER), str(tmp_path)], start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    samples = []
    appended = 0
    started = time.time()
    nextSample = started + 30
    try:
        while time.time() - started < SECONDS:
            batch = [(key.serialize("in", f"k{(appended + i) % KEYS}"), value.serialize("in", appended + i),
                      int(time.time() * 1000)) for i in range(RATE)]
            topics.produce("in", batch, partitioner=partitionForKey)
            appended += RATE
            assert proc.poll() is None, proc.stderr.read().decode()[-3000:]
            if time.time() >= nextSample:
                state = tmp_path / "state" / "soak"
                sample = {"t": round(time.time() - started), "rssMB": treeRss(proc.pid) / 2**20,
                          "state": size(state), "metrics": size(state / "metrics"),
                          "staging": size(tmp_path / "topics" / "~staging"), "appended": appended,
                          "out": sum(topics.endOffsets("out").values())}
                samples.append(sample)
                print(f"t={sample['t']:4d}s rss={sample['rssMB']:7.1f} MB state.dir={sample['state'][0]:5d} files "
                      f"{sample['state'][1] / 2**20:6.2f} MB metrics/={sample['metrics'][0]} files {sample['metrics'][1]} B "
                      f"staging={sample['staging'][0]} files {sample['staging'][1]} B in={appended} out={sample['out']}",
                      flush=True)
                nextSample += 30
            time.sleep(max(0.0, started + appended / RATE - time.time()))
        # caught up: every key's last count is the number of its records
        expected = {f"k{k}": len(range(k, appended, KEYS)) for k in range(KEYS)}
        deadline = time.time() + 120
        while time.time() < deadline:
            last = {}
            for p in range(2):
                for r in topics.read("out", p, 0, topics.endOffset("out", p)).to_pylist():
                    last[r["key"].decode()] = Serdes.Long().deserialize("out", r["value"])
            if last == expected:
                break
            time.sleep(2)
        assert last == expected
        (tmp_path / "stop").touch()
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()[-3000:]
    finally:
        if proc.poll() is None:
            killRun(proc)

    # Bounded: the last third of the run holds no more than the middle third (Spark keeps its last
    # 100 batches, so state.dir fills for the first ~100-200 s, depending on the machine's pace,
    # then saw-tooths as old batches are purged; a leak grows through every third)
    third = len(samples) // 3
    middle, last = samples[third:2 * third], samples[2 * third:]
    assert middle and last
    for measure, slack in ((lambda s: s["rssMB"], 1.1), (lambda s: s["state"][0], 1.15), (lambda s: s["state"][1], 1.15)):
        assert max(map(measure, last)) <= slack * max(map(measure, middle)), samples
    assert all(s["metrics"][0] <= 2 and s["metrics"][1] < 10_000 for s in samples)  # one file (and its .crc)
    assert all(s["staging"][0] <= 4 for s in samples)  # at most the batch being written: 2 tasks x 2 partitions

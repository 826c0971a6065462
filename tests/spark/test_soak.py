"""Soak test (issue 22, "nothing grows without bound"; issue 37 item 3, "Spark's state-store
directory stays bounded"): a count per key runs in continuous mode (1 s trigger) while input is
appended all the time; Spark's checkpoint (offsets, commits, state store) and kspark's task
stores must level off, the run's resident memory (driver, JVM and Python workers),
``state.dir``'s ``metrics/`` and the topics' staging area must stay bounded, and every record
must be counted.

Marked slow: outside the default suite, since on a loaded machine 90 s are too few batches for
the checkpoint to level off (it failed so in a CI check: 244 files in the last third against 182).
It runs 180 s by default (``KSPARK_SOAK_SECONDS``): kspark keeps Spark's last 10
batches (``spark.sql.streaming.minBatchesToRetain``) with a state snapshot every 10 s (state
maintenance), so the checkpoint levels off after about 40 batches; with Spark's defaults (100
batches, 60 s) it grew for the first 220 batches (2 files a batch and partition), which a
3-minute run took for a leak. The 10-minute run (``KSPARK_SOAK_SECONDS=600``) is the memory soak:
``flock /tmp/kspark-heavy.lock .venv/bin/python -m pytest -m slow tests/spark/test_soak.py -s`` prints
its figures as it goes."""

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
SECONDS = int(os.environ.get("KSPARK_SOAK_SECONDS", "180"))
INTERVAL = max(5, SECONDS // 18)  # seconds between samples: 6 in each third of the run
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
    nextSample = started + INTERVAL
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
                          "checkpoint": size(state / "subtopology-0"), "stores": size(state / "stores"),
                          "staging": size(tmp_path / "topics" / "~staging"), "appended": appended,
                          "out": sum(topics.endOffsets("out").values())}
                samples.append(sample)
                print(f"t={sample['t']:4d}s rss={sample['rssMB']:7.1f} MB state.dir={sample['state'][0]:5d} files "
                      f"{sample['state'][1] / 2**20:6.2f} MB (checkpoint {sample['checkpoint'][0]} files "
                      f"{sample['checkpoint'][1] / 2**10:.0f} KB, stores {sample['stores'][0]} files "
                      f"{sample['stores'][1] / 2**10:.0f} KB) metrics/={sample['metrics'][0]} files {sample['metrics'][1]} B "
                      f"staging={sample['staging'][0]} files {sample['staging'][1]} B in={appended} out={sample['out']}",
                      flush=True)
                nextSample += INTERVAL
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

    # Bounded: the last third of the run holds no more than the middle third. Spark's checkpoint
    # fills for its first ~40 batches (10 kept, snapshots 10 s apart, old ones purged by the next
    # maintenance), then saw-tooths by up to ~15%; growth that goes on through the run (2 files a
    # batch and partition, as with Spark's defaults before their first purge) ends the last third
    # at 1.5 times the middle third's maximum. Measured (90 s, 2 partitions): 238 files and 73 KB
    # at most in the middle third, 248 files and 81 KB in the last; with Spark's defaults 330
    # files, then 626 (and 1,112 after 180 s)
    third = len(samples) // 3
    middle, last = samples[third:2 * third], samples[2 * third:]
    assert len(middle) >= 3 and len(last) >= 3, samples
    for name, measure, slack in (("checkpoint files", lambda s: s["checkpoint"][0], 1.25),
                                 ("checkpoint bytes", lambda s: s["checkpoint"][1], 1.25),
                                 ("stores files", lambda s: s["stores"][0], 1.25),
                                 ("stores bytes", lambda s: s["stores"][1], 1.25),
                                 ("state.dir files", lambda s: s["state"][0], 1.25),
                                 ("state.dir bytes", lambda s: s["state"][1], 1.25),
                                 ("resident memory", lambda s: s["rssMB"], 1.1)):
        assert max(map(measure, last)) <= slack * max(map(measure, middle)), (name, samples)
    # Spark's offsets and commits logs keep 10 batches (each file with its .crc), not Spark's default 100
    checkpoint = tmp_path / "state" / "soak" / "subtopology-0"
    assert size(checkpoint / "offsets")[0] <= 2 * 11 and size(checkpoint / "commits")[0] <= 2 * 11
    assert all(s["metrics"][0] <= 2 and s["metrics"][1] < 10_000 for s in samples)  # one file (and its .crc)
    assert all(s["staging"][0] <= 4 for s in samples)  # at most the batch being written: 2 tasks x 2 partitions

"""state.dir through Spark's filesystem API (issue 21; issue 22): the lock against a second
instance, the topology fingerprint kept next to each checkpoint, the checks before any record is
processed, the counters of metrics() in one file per sub-topology, and one end-to-end run on a
file: URI with a relative kspark.topics.dir."""

import json
import os
import socket
import subprocess
import sys

import pytest

from kspark import KafkaStreams, Materialized, Serdes, StreamsBuilder, StreamsException
from kspark.runtime.partitioner import partitionForKey
from kspark.spark._statedir import StateDir, StateDirLock
from kspark.topics import LocalTopics


def props(tmp_path, **extra):
    return {"application.id": "app", "kspark.topics.dir": str(tmp_path / "topics"),
            "state.dir": str(tmp_path / "state"), **extra}


def counting(withFilter=False):
    """in -> selectKey -> count (through a repartition topic) -> out."""
    b = StreamsBuilder()
    s = b.stream("in")
    if withFilter:
        s = s.filter(lambda k, v: True)
    s.selectKey(lambda k, v: v).groupByKey().count().toStream().to("out")
    return b.build()


@pytest.fixture
def topics(tmp_path):
    t = LocalTopics(tmp_path / "topics")
    t.createTopic("in", 2)
    t.createTopic("out", 2)
    return t


def prepare(spark, tmp_path, topology):
    """What start() does before the queries run: checks, fingerprints, repartition topics."""
    streams = KafkaStreams(topology, props(tmp_path), spark=spark)
    plans = streams._plan()
    streams._checkCheckpoints(plans)
    streams._createInternalTopics(plans)
    return streams


def test_relative_state_dir_and_file_uri_resolve_on_the_driver(spark, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the driver's directory; the JVM's stays where it started
    assert StateDir(spark, "state", "app").uri == f"file:{tmp_path}/state/app"
    assert StateDir(spark, f"file://{tmp_path}/state", "app").uri == f"file:{tmp_path}/state/app"
    d = StateDir(spark, f"file://{tmp_path}/state/", "app")
    d.write("a/b.json", b'{"x": 1}')
    d.write("a/b.json", b'{"x": 2}')  # replaced atomically
    assert d.readJson("a/b.json") == {"x": 2} and (tmp_path / "state" / "app" / "a" / "b.json").exists()
    assert d.read("a/missing") is None and d.list("a") == ["b.json"] and d.list("nope") == []
    assert d.createNew("a/c", b"1") and not d.createNew("a/c", b"2") and d.read("a/c") == b"1"
    d.delete("a")
    assert not d.exists("a/b.json")


def test_batch_counters_are_added_once_per_batch_of_a_checkpoint(spark, tmp_path):
    d = StateDir(spark, str(tmp_path), "app")
    d.addBatchCounters(0, "q1", 0, {"a": 1})
    d.addBatchCounters(0, "q1", 1, {"a": 2, "b": 1})
    d.addBatchCounters(0, "q1", 1, {"a": 2, "b": 1})  # the same event again: nothing
    d.addBatchCounters(0, "q2", 0, {"a": 4})  # a new checkpoint starts at batch 0 again
    d.addBatchCounters(1, "q3", 0, {"b": 10})
    assert d.counters() == {"a": 7, "b": 11}
    assert d.list("metrics") == ["subtopology-0.json", "subtopology-1.json"]  # one file each, however long the run


def lockOwner(tmp_path, **owner):
    path = tmp_path / "state" / "app" / "kspark.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"token": "other", "host": socket.gethostname(), "pid": os.getpid(),
                                "since": 1_700_000_000_000, **owner}))
    return path


def test_a_running_instance_holds_the_state_dir_lock(spark, tmp_path, topics):
    """Issue 22: two instances with the same application.id started together; the second failed
    with TopicExistsException for an internal topic. It is refused, naming the running one."""
    lock = lockOwner(tmp_path)  # held by a live process of this host (this one, another instance)
    with pytest.raises(StreamsException, match=rf"^Another instance of application.id app is running on this state.dir: "
                                               rf"file:{lock} is held by process {os.getpid()} on host "):
        KafkaStreams(counting(), props(tmp_path), spark=spark).start()
    assert LocalTopics(tmp_path / "topics").listTopics() == ["in", "out"]  # before any repartition topic

    first = StateDirLock(StateDir(spark, str(tmp_path / "state"), "other-app"))
    first.acquire()
    with pytest.raises(StreamsException, match="is held by process"):
        StateDirLock(StateDir(spark, str(tmp_path / "state"), "other-app")).acquire()
    first.release()
    again = StateDirLock(StateDir(spark, str(tmp_path / "state"), "other-app"))
    again.acquire()  # released at close(): free again
    again.release()


def test_a_stale_lock_is_taken_over(spark, tmp_path):
    d = StateDir(spark, str(tmp_path / "state"), "app")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    lockOwner(tmp_path, pid=int(dead.stdout))  # a killed run of this host: taken over at once
    lock = StateDirLock(d)
    lock.acquire()
    assert json.loads(d.read("kspark.lock"))["pid"] == os.getpid()
    lock.release()
    assert not d.exists("kspark.lock")

    path = lockOwner(tmp_path, host="elsewhere", pid=1)  # another host's: stale after 60 s without a heartbeat
    with pytest.raises(StreamsException, match="held by process 1 on host elsewhere"):
        StateDirLock(d).acquire()
    os.utime(path, (path.stat().st_atime, path.stat().st_mtime - 61))
    lock = StateDirLock(d)
    lock.acquire()
    lock.release()


def test_checkpoint_of_a_different_topology_is_refused_by_its_fingerprint(spark, tmp_path, topics):
    """Issue 22: the check depended only on kspark-application.json; with it deleted, another
    topology resumed the checkpoint. The fingerprint lives in each checkpoint directory."""
    prepare(spark, tmp_path, counting())
    fingerprint = tmp_path / "state" / "app" / "subtopology-0" / "kspark-topology.json"
    assert json.loads(fingerprint.read_text())["partitions"] == {"in": 2, "out": 2}
    assert not (tmp_path / "state" / "app" / "kspark-application.json").exists()
    with pytest.raises(StreamsException, match="holds the checkpoint of a different topology for application.id app"):
        KafkaStreams(counting(withFilter=True), props(tmp_path), spark=spark).start()
    # a Spark checkpoint without a fingerprint (and no kspark-application.json of older versions)
    fingerprint.unlink()
    (fingerprint.parent / "offsets").mkdir()
    with pytest.raises(StreamsException, match=r"subtopology-0 has no kspark-topology.json: kspark cannot tell which "
                                               "topology wrote it"):
        KafkaStreams(counting(), props(tmp_path), spark=spark).start()
    assert not (tmp_path / "state" / "app" / "kspark.lock").exists()  # released by the failed start


def test_partition_count_changed_names_the_source_topic(spark, tmp_path, topics):
    """Issue 22: the message named the repartition topic, not the source topic that changed."""
    prepare(spark, tmp_path, counting())
    assert topics.partitionsFor("app-KSTREAM-AGGREGATE-STATE-STORE-0000000002-repartition") == 2
    topics.deleteTopic("in")
    topics.createTopic("in", 3)
    with pytest.raises(StreamsException, match=r"^Topic in has 3 partitions, but had 2 when the checkpoint "
                                               rf"file:{tmp_path}/state/app/subtopology-0 was written"):
        KafkaStreams(counting(), props(tmp_path), spark=spark).start()
    # without the checkpoint, the repartition topic is named with the source counts it follows
    for fingerprint in (tmp_path / "state" / "app").glob("subtopology-*/kspark-topology.json"):
        fingerprint.unlink()
    with pytest.raises(StreamsException, match=r"repartition has 2 partitions but the topology needs 3 \(from its "
                                               r"source topics' partition counts: in=3\)"):
        KafkaStreams(counting(), props(tmp_path), spark=spark).start()


def test_run_on_a_file_uri_state_dir_with_a_relative_topics_dir(spark, tmp_path, monkeypatch):
    """Issue 21: a state.dir on a Hadoop filesystem URI works through Spark's filesystem API (the
    checkpoint, the lock, the fingerprint, metrics(), checkpointedStore() and a restart). Issue 22
    item 6: a relative kspark.topics.dir is resolved on the driver; the Python workers run in the
    JVM's directory, where it named nothing (UnknownTopicOrPartitionException)."""
    monkeypatch.chdir(tmp_path)
    topics = LocalTopics("topics")
    topics.createTopic("in", 2)
    topics.createTopic("out", 2)
    key, value = Serdes.String(), Serdes.JSON()

    def produce(records):
        topics.produce("in", [(key.serialize("in", k), value.serialize("in", v), ts) for k, v, ts in records],
                       partitioner=partitionForKey)

    def run():
        b = StreamsBuilder()
        b.stream("in").groupByKey().count(Materialized.as_("counts")).toStream().to("out")
        streams = KafkaStreams(b.build(), {"application.id": "uri", "kspark.topics.dir": "topics",
                                           "state.dir": f"file://{tmp_path}/state", "statestore.cache.max.bytes": 0,
                                           "kspark.max.records.per.trigger": 4}, spark=spark)
        streams.start()
        streams.awaitTermination()
        streams.close()
        return streams

    def output():
        rows = [r for p in range(2) for r in topics.read("out", p, 0, 100).to_pylist()]
        return sorted((r["key"].decode(), Serdes.Long().deserialize("out", r["value"]), r["timestamp"]) for r in rows)

    produce([(f"k{i % 3}", i, 1_000 + i) for i in range(9)])
    streams = run()
    assert output() == sorted((f"k{i % 3}", i // 3 + 1, 1_000 + i) for i in range(9))
    appDir = tmp_path / "state" / "uri"
    # the lock is released; the tasks' local stores (kspark.store.dir's default with a local master)
    assert sorted(p.name for p in appDir.iterdir()) == ["metrics", "stores", "subtopology-0"]
    assert (appDir / "subtopology-0" / "kspark-topology.json").exists() and (appDir / "subtopology-0" / "commits").is_dir()
    def written(streams):  # by the sink, over the tasks
        return sum(v for m, v in streams.metrics().items()
                   if m.name == "process-total" and (m.tag("processor-node-id") or "").startswith("KSTREAM-SINK"))

    assert written(streams) == 9

    produce([("k0", 9, 2_000), ("k3", 10, 2_001)])
    streams = run()  # resumes the checkpoint at the URI
    assert output() == sorted([(f"k{i % 3}", i // 3 + 1, 1_000 + i) for i in range(9)] + [("k0", 4, 2_000), ("k3", 1, 2_001)])
    assert written(streams) == 11  # both runs' counters
    store = streams.checkpointedStore("counts")
    assert sorted((k, v.value, v.timestamp) for k, v in store.all()) == [("k0", 4, 2_000), ("k1", 3, 1_007), ("k2", 3, 1_008),
                                                                          ("k3", 1, 2_001)]


def test_a_first_batch_offsets_write_interrupted_by_a_kill_does_not_block_the_restart(spark, tmp_path):
    """A process killed while Spark wrote a new checkpoint's offsets/0 leaves the write's
    temporary file; Spark's log ignores it but refuses to start a query on a non-empty log
    directory (STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY, seen in the EOS crash test). kspark
    removes such leftovers while the checkpoint has no batch, and keeps them once it has one."""
    topics = LocalTopics(tmp_path / "topics")
    topics.createTopic("in", 1)
    topics.createTopic("out", 1)
    streams = KafkaStreams(counting(), props(tmp_path), spark=spark)
    stateDir = streams._stateDir()
    leftovers = ["subtopology-1/offsets/.0.3f2a.tmp", "subtopology-1/offsets/..0.3f2a.tmp.crc",
                 "subtopology-1/commits/.0.77b1.tmp"]
    for name in leftovers:
        stateDir.write(name, b"{}")
    options = {"root": str(tmp_path / "topics"), "topics": "in"}
    assert streams._initialOffsets("subtopology-1", options)["in/0"] == 0
    assert not any(os.path.exists(tmp_path / "state" / "app" / name) for name in leftovers)
    # once offsets/0 is in the log, a leftover file is Spark's business (it reads the log)
    stateDir.write("subtopology-1/offsets/0", b"v1\n{}\n{}")
    stateDir.write(leftovers[0], b"{}")
    assert streams._initialOffsets("subtopology-1", options)["in/0"] == 0
    assert os.path.exists(tmp_path / "state" / "app" / leftovers[0])


def test_a_corrupt_segment_fails_the_run_with_its_corrupt_record_exception_first(spark, tmp_path, topics):
    """Issue 37 item 3: a flipped byte in a segment read by a Spark task failed the run with
    Spark's [STREAM_FAILED] ... [PYTHON_EXCEPTION] trace, the CorruptRecordException buried in it.
    The error starts with the exception's message (file, topic-partition, offsets); Spark's report
    follows it."""
    import pyarrow as pa

    for p in (0, 1):
        topics.append("in", p, pa.table({"timestamp": list(range(100)), "key": [f"k{i}".encode() for i in range(100)],
                                         "value": [f'"value-{i:04d}"'.encode() for i in range(100)], "headers": [None] * 100}))
    segment = tmp_path / "topics" / "in" / "1" / f"{0:020d}.arrow"
    data = bytearray(segment.read_bytes())
    data[data.find(b"value-0050") + 6] ^= 1
    segment.write_bytes(bytes(data))
    b = StreamsBuilder()
    b.stream("in").mapValues(lambda v: v).to("out")
    streams = KafkaStreams(b.build(), props(tmp_path), spark=spark)
    streams.start()
    with pytest.raises(StreamsException) as failure:
        streams.awaitTermination()
    streams.close()
    headline, _, report = str(failure.value).partition("\n\nSpark's report: ")
    assert headline == (f"The streams application app failed: CorruptRecordException: Segment file {segment} of in-1 "
                        "(offsets 0..99) fails the CRC-32 check of its record batch 0 (offsets 0..99)")
    assert report.startswith("[STREAM_FAILED]")
    assert topics.endOffsets("out") == {0: 0, 1: 0}


def test_a_runs_whole_output_never_holds_a_secret(spark, tmp_path, topics, caplog, capfd):
    """Issue 37 item 4: values of Kafka's PASSWORD-type keys show as [hidden] in every error,
    warning, progress line, summary and log line of a run, verbose (the kspark logger at DEBUG,
    Spark at INFO, the JVM's stderr unfiltered) and failing."""
    import logging

    import pyarrow as pa

    from kspark.spark import _quiet

    secrets = {"sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required username="bob" '
                                   'password="bob-Pl41n-secret";',
               "ssl.key.password": "key-S3cret-pw", "main.consumer.ssl.truststore.password": "trust-S3cret-pw"}
    topics.append("in", 0, pa.table({"timestamp": [1, 2], "key": [b'"k"', b'"k"'], "value": [b'"a"', b"not json"],
                                     "headers": [None, None]}))
    b = StreamsBuilder()
    b.stream("in").mapValues(lambda v: v).to("out")
    _quiet.setVerbose(True)
    try:
        with caplog.at_level(logging.DEBUG):
            streams = KafkaStreams(b.build(), props(tmp_path, **secrets, **{"kspark.progress": "plain"}), spark=spark)
            streams.start()
            with pytest.raises(StreamsException) as failure:  # the second record cannot be deserialized
                streams.awaitTermination()
            streams.close()
    finally:
        _quiet.setVerbose(False)
    out, err = capfd.readouterr()
    output = "\n".join([caplog.text, out, err, str(failure.value), str(streams.metrics())])
    assert "SerializationException" in str(failure.value) and "== app: summary ==" in out  # the run printed its reports
    assert "Configuration ssl.key.password=[hidden] has no effect" in caplog.text
    for secret in ("bob-Pl41n-secret", "key-S3cret-pw", "trust-S3cret-pw"):
        assert secret not in output


def test_a_new_checkpoint_runs_its_tasks_as_many_spark_tasks_as_cores_and_an_old_one_keeps_its_count(spark, tmp_path):
    """Issue 34: a new checkpoint gets min(kspark tasks, Spark's default parallelism) shuffle
    partitions (local[2]: two Spark tasks of two kspark tasks each, one wave), recorded in its
    fingerprint; Spark keeps a checkpoint's shuffle partitions for its life, so a checkpoint whose
    fingerprint predates the record keeps one Spark task per kspark task (the task keys must land
    on the partitions its state is in), and a recorded count is kept whatever the cores."""
    from kspark.spark._placement import balancedTaskKeys, sparkHashInt

    t = LocalTopics(tmp_path / "topics")
    t.createTopic("in", 4)
    t.createTopic("out", 4)
    b = StreamsBuilder()
    b.stream("in").groupByKey().count().toStream().to("out")
    topology = b.build()
    streams = KafkaStreams(topology, props(tmp_path), spark=spark)
    [plan] = streams._place(streams._plan())
    assert spark.sparkContext.defaultParallelism == 2
    assert plan["shufflePartitions"] == 2 and plan["numTasks"] == 4
    assert sorted(plan["taskOfKey"].values()) == [0, 1, 2, 3]
    assert {t: sparkHashInt(k) % 2 for k, t in plan["taskOfKey"].items()} == {0: 0, 1: 1, 2: 0, 3: 1}
    streams._checkCheckpoints([plan])
    fingerprint = tmp_path / "state" / "app" / "subtopology-0" / "kspark-topology.json"
    assert json.loads(fingerprint.read_text())["shufflePartitions"] == 2

    saved = json.loads(fingerprint.read_text())
    saved["shufflePartitions"] = 3  # recorded: kept
    path = "subtopology-0/kspark-topology.json"  # written through Spark's filesystem (its .crc file)
    streams._stateDir().write(path, json.dumps(saved).encode())
    [plan] = streams._place(streams._plan())
    assert plan["shufflePartitions"] == 3 and plan["taskOfKey"] == {k: t for t, k in enumerate(balancedTaskKeys(4, 3))}
    del saved["shufflePartitions"]  # written before kspark recorded it: one Spark task per kspark task
    streams._stateDir().write(path, json.dumps(saved).encode())
    [plan] = streams._place(streams._plan())
    assert plan["shufflePartitions"] == 4 and plan["taskOfKey"] == {k: t for t, k in enumerate(balancedTaskKeys(4, 4))}

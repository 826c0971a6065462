"""The kspark-topics streaming source and sink, end to end on a local SparkSession."""

import json
import os
import re

import pyarrow as pa
import pytest

from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows
from pyspark.sql.types import StructType

from kspark.spark._datasource import (
    SINK_CHUNK_SCHEMA,
    SINK_SCHEMA,
    SOURCE_CHUNK_SCHEMA,
    SOURCE_SCHEMA,
    TopicsDataSource,
    TopicsStreamReader,
    LocalTopicsStreamWriter,
    SegmentStager,
    StagedSegment,
    TopicPartitionRange,
    TopicPartitionRanges,
    chunkTable,
    decodeChunk,
    readReference,
    registerDataSource,
)
from kspark.topics import LocalTopics, OffsetOutOfRangeException, UnknownTopicOrPartitionException

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def session(spark):
    """The shared session (see conftest) with 2 shuffle partitions and the data source registered."""
    previous = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", "2")
    registerDataSource(spark)
    registerDataSource(spark)  # idempotent
    yield spark
    spark.conf.set("spark.sql.shuffle.partitions", previous)


def rows(partition, first, count):
    """Records ``k<p>-<i>`` / ``v<p>-<i>`` at ``1000 * i + p`` ms for i in [first, first + count)."""
    indices = range(first, first + count)
    return pa.table(
        {
            "timestamp": [1000 * i + partition for i in indices],
            "key": [f"k{partition}-{i}".encode() for i in indices],
            "value": [f"v{partition}-{i}".encode() for i in indices],
            "headers": [b"h" if i % 2 else None for i in indices],
        }
    )


def copyInToOut(spark, root, checkpoint, source="in", maxRecords=8, options=None):
    """Copy topic ``source`` to ``out`` partition by partition; each marker becomes a metrics row,
    collected per batch with ``observe``. Returns ``{batch id: summed counters}`` and the query id."""
    rows = (
        spark.readStream.format("kspark-topics")
        .option("root", root)
        .option("topics", source)
        .option("maxRecordsPerTrigger", str(maxRecords))
        .options(**(options or {}))
        .load()
    )
    mapped = rows.selectExpr(
        "CASE WHEN offset >= 0 THEN 'out' END AS topic",
        "partition",
        "timestamp",
        "key",
        "value",
        "headers",
        "CASE WHEN offset < 0 THEN to_json(map('markers', 1L, concat('lag_', partition), lag)) END AS metrics",
    ).observe("m", F.collect_list("metrics").alias("metrics"))
    query = (
        mapped.writeStream.format("kspark-topics")
        .option("root", root)
        .option("producer", "p1")
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(120)
    assert query.exception() is None
    metrics = {}
    for progress in query.recentProgress:
        total = {}
        for text in progress.observedMetrics["m"].metrics:
            for name, value in json.loads(text).items():
                total[name] = total.get(name, 0) + value
        metrics[progress.batchId] = dict(sorted(total.items()))
    return metrics, str(query.id)


def manifestIds(root, topic, partition):
    with open(os.path.join(root, topic, str(partition), "manifest.jsonl")) as f:
        return [(e["producer"], e["sequence"], e["index"], e["start"], e["count"]) for e in map(json.loads, f)]


def threePartitionInput(root):
    """Topics ``in`` (3 partitions, 4 records each; partition 0 in two segments) and an empty ``out``."""
    topics = LocalTopics(root)
    topics.createTopic("in", 3)
    topics.createTopic("out", 3)
    topics.append("in", 0, rows(0, 0, 2))
    topics.append("in", 0, rows(0, 2, 2))  # partition 0 spans two segments
    topics.append("in", 1, rows(1, 0, 4))
    topics.append("in", 2, rows(2, 0, 4))
    return topics


def test_copy_topic_exactly_once_with_markers_and_metrics(session, tmp_path):
    root, checkpoint = str(tmp_path / "topics"), str(tmp_path / "checkpoint")
    topics = threePartitionInput(root)

    metrics, queryId = copyInToOut(session, root, checkpoint)

    for p in range(3):
        assert topics.read("out", p, 0, 100).drop_columns("offset").to_pydict() == rows(p, 0, 4).to_pydict()
    # 8 records per trigger shared over 3 partitions: ends (3,3,2), then (4,4,4)
    assert metrics == {
        0: {"lag_0": 1, "lag_1": 1, "lag_2": 2, "markers": 3},
        1: {"lag_0": 0, "lag_1": 0, "lag_2": 0, "markers": 3},
    }
    producer = f"p1/{queryId}"  # the query's name and its checkpoint's id
    assert manifestIds(root, "out", 2) == [(producer, 0, 0, 0, 2), (producer, 1, 0, 2, 2)]

    # more input: a restart from the checkpoint copies only the new records
    topics.append("in", 1, rows(1, 4, 2))
    assert copyInToOut(session, root, checkpoint)[0] == {2: {"lag_0": 0, "lag_1": 0, "lag_2": 0, "markers": 3}}
    assert topics.endOffsets("out") == {0: 4, 1: 6, 2: 4}
    assert topics.read("out", 1, 0, 100).column("value").to_pylist() == [f"v1-{i}".encode() for i in range(6)]

    # a crash after the sink committed batch 2 but before Spark recorded it: the replay appends nothing
    for name in ("2", ".2.crc"):
        os.remove(os.path.join(checkpoint, "commits", name))
    copyInToOut(session, root, checkpoint)
    assert topics.endOffsets("out") == {0: 4, 1: 6, 2: 4}
    assert manifestIds(root, "out", 1) == [(producer, 0, 0, 0, 3), (producer, 1, 0, 3, 1), (producer, 2, 0, 4, 2)]
    assert os.listdir(topics.stagingDir("p1")) == []


def copyStagedByTask(spark, root, checkpoint):
    """``copyInToOut``'s copy (without metrics), but each Spark task stages its records itself
    with a ``SegmentStager`` (as the KafkaStreams host's tasks do on local topics) and hands the
    sink only ``staged`` rows. Returns the query id."""
    import pyarrow.compute as pc

    from pyspark.sql.pandas.types import to_arrow_schema

    schema = to_arrow_schema(SINK_CHUNK_SCHEMA)

    def stage(batches):
        topics = LocalTopics(root)
        for batch in batches:
            data = pa.Table.from_batches([batch])
            data = data.filter(pc.greater_equal(data.column("offset"), 0))
            for p in sorted(set(data.column("partition").to_pylist())):
                part = data.filter(pc.equal(data.column("partition"), p)).select(["timestamp", "key", "value", "headers"])
                stager = SegmentStager(topics, "p1")
                stager.write("out", p, part)
                [(_, _, segment)] = stager.close()
                yield pa.RecordBatch.from_pylist([{"topic": "out", "partition": p, "records": None, "metrics": None,
                                                   "positions": None, "staged": segment.encoded()}], schema=schema)

    query = (
        spark.readStream.format("kspark-topics").option("root", root).option("topics", "in")
        .option("maxRecordsPerTrigger", "8").load()
        .mapInArrow(stage, SINK_CHUNK_SCHEMA)
        .writeStream.format("kspark-topics").option("layout", "chunks").option("root", root).option("producer", "p1")
        .option("checkpointLocation", checkpoint).trigger(availableNow=True).start()
    )
    assert query.awaitTermination(120)
    assert query.exception() is None
    return str(query.id)


def test_segments_staged_by_the_tasks_are_committed_exactly_once(session, tmp_path):
    root, checkpoint = str(tmp_path / "topics"), str(tmp_path / "checkpoint")
    topics = threePartitionInput(root)

    queryId = copyStagedByTask(session, root, checkpoint)

    # the records copyInToOut copies, in the same order, appended by the sink's commit
    for p in range(3):
        assert topics.read("out", p, 0, 100).drop_columns("offset").to_pydict() == rows(p, 0, 4).to_pydict()
    producer = f"p1/{queryId}"
    assert manifestIds(root, "out", 2) == [(producer, 0, 0, 0, 2), (producer, 1, 0, 2, 2)]
    # a crash after the sink committed batch 1 but before Spark recorded it: the replay stages
    # the records again and appends nothing
    for name in ("1", ".1.crc"):
        os.remove(os.path.join(checkpoint, "commits", name))
    copyStagedByTask(session, root, checkpoint)
    assert topics.endOffsets("out") == {0: 4, 1: 4, 2: 4}
    assert manifestIds(root, "out", 2) == [(producer, 0, 0, 0, 2), (producer, 1, 0, 2, 2)]
    assert os.listdir(topics.stagingDir("p1")) == []


def test_sink_takes_only_file_names_of_its_own_staging_directory_and_keeps_the_order(tmp_path):
    topics = LocalTopics(tmp_path)
    topics.createTopic("out", 1)
    stager = SegmentStager(topics, "p1")
    stager.write("out", 0, rows(0, 0, 3))
    [(_, _, segment)] = stager.close()
    assert segment.rows == 3 and os.listdir(topics.stagingDir("p1")) == [segment.file]
    assert StagedSegment.decode(segment.encoded(), "out", 0) == segment
    for bad in ("../../out/0/x.arrow", "/etc/passwd", "..", ""):
        with pytest.raises(ValueError, match="not a file of the staging directory"):
            StagedSegment.decode(json.dumps({"file": bad, "rows": 1, "checksums": []}), "out", 0)
    with pytest.raises(ValueError, match="Bad staged-segment description for out-0"):
        StagedSegment.decode("{}", "out", 0)
    with pytest.raises(UnknownTopicOrPartitionException, match="out-1"):
        SegmentStager(topics, "p1").write("out", 1, rows(0, 0, 1))


def test_task_output_staged_or_sent_as_chunks_is_the_same_records(tmp_path):
    """Both output paths of a KafkaStreams task (_outputFrame) on the same produced records:
    chunks for the sink to write, or each topic-partition's records staged by a
    ``SegmentStager``, part of them while the task runs (``_stage``) and the rest at the end."""
    import numpy as np

    from kspark.runtime.stream_task import ProducedColumns, ProducedRecord
    from kspark.spark._task_processor import _outputFrame, _stage

    produced = [
        ProducedRecord("a", 1, 10, b"k1", b"v1", ()),
        ProducedRecord("b", 0, 11, None, b"v2", (("h", b"x"),)),
        ProducedColumns("a", np.array([0, 1, 1]), np.array([12, 13, 14]), pa.array([b"k3", b"k4", None], pa.binary()),
                        pa.array([b"v3", None, b"v5"], pa.binary()), None),
        ProducedRecord("a", 1, 15, b"k6", b"v6", ()),
    ]
    chunked = _outputFrame(produced, {"m": 1}, {"in/0": 7})
    topics = LocalTopics(tmp_path)
    topics.createTopic("a", 2)
    topics.createTopic("b", 1)
    stager = SegmentStager(topics, "p1")
    _stage(produced[:2], stager)
    direct = _outputFrame(produced[2:], {"m": 1}, {"in/0": 7}, stager)
    fromChunks, fromStaged = {}, {}
    for topic, partition, blob in zip(chunked["topic"], chunked["partition"], chunked["records"]):
        if isinstance(topic, str):  # not the metrics row
            fromChunks.setdefault((topic, int(partition)), []).extend(decodeChunk(blob).to_pylist())
    stagingDir = topics.stagingDir("p1")
    for topic, partition, staged in zip(direct["topic"], direct["partition"], direct["staged"]):
        if isinstance(topic, str):
            segment = StagedSegment.decode(staged, topic, int(partition))
            with pa.memory_map(segment.pathIn(stagingDir)) as source:
                records = pa.ipc.open_file(source).read_all().to_pylist()
            assert segment.rows == len(records)
            fromStaged[(topic, int(partition))] = records
    assert fromStaged == fromChunks
    assert [r["key"] for r in fromChunks[("a", 1)]] == [b"k1", b"k4", None, b"k6"]  # produced order
    assert list(direct["topic"][:-1]) == ["a", "b", "a"]  # one row per segment, in order of first write
    assert direct["records"].isna().all()
    assert direct.iloc[-1]["metrics"] == chunked.iloc[-1]["metrics"] == json.dumps({"m": 1})


def test_a_failed_task_leaves_nothing_staged(tmp_path):
    topics = LocalTopics(tmp_path)
    topics.createTopic("out", 2)
    stager = SegmentStager(topics, "p1")
    stager.write("out", 0, rows(0, 0, 3))
    stager.write("out", 1, rows(1, 0, 2))
    assert len(os.listdir(topics.stagingDir("p1"))) == 2
    with pytest.raises(UnknownTopicOrPartitionException, match="out-2"):
        stager.write("out", 2, rows(0, 0, 1))
    stager.abort()
    assert os.listdir(topics.stagingDir("p1")) == []


def test_new_checkpoint_on_the_same_topics_appends_everything(session, tmp_path):
    """Issue 22 item 1: with state.dir reset (a new checkpoint), the sink's appends of batches
    0, 1, ... were taken for replays of the old checkpoint's and dropped (0 of 559 appended)."""
    root = str(tmp_path / "topics")
    topics = LocalTopics(root)
    topics.createTopic("in", 1)
    topics.createTopic("out", 1)
    topics.append("in", 0, rows(0, 0, 6))
    copyInToOut(session, root, str(tmp_path / "checkpoint"))
    assert topics.endOffset("out", 0) == 6
    copyInToOut(session, root, str(tmp_path / "checkpoint-new"))
    assert topics.endOffset("out", 0) == 12
    assert topics.read("out", 0, 6, 12).drop_columns("offset").to_pydict() == rows(0, 0, 6).to_pydict()


def test_staged_files_of_killed_attempts_are_removed_when_a_batch_commits(session, tmp_path):
    """Issue 22: staging files of killed or retried writer attempts were never removed."""
    root = str(tmp_path / "topics")
    topics = LocalTopics(root)
    topics.createTopic("in", 1)
    topics.createTopic("out", 1)
    topics.append("in", 0, rows(0, 0, 3))
    staging = topics.stagingDir("p1")
    leftovers = [f"{0:020d}.old-checkpoint.a.arrow", f"{5:020d}.old-checkpoint.b.arrow"]
    for name in leftovers:  # attempts killed in a run of another checkpoint
        open(os.path.join(staging, name), "wb").close()
    checkpoint = str(tmp_path / "checkpoint")
    _, queryId = copyInToOut(session, root, checkpoint)
    assert os.listdir(staging) == []
    killed, later = f"{1:020d}.{queryId}.c.arrow", f"{9:020d}.{queryId}.d.arrow"
    for name in (killed, later):  # an attempt of batch 1 that was killed; a file of a batch still to run
        open(os.path.join(staging, name), "wb").close()
    topics.append("in", 0, rows(0, 3, 3))
    copyInToOut(session, root, checkpoint)  # batch 1
    assert os.listdir(staging) == [later]
    assert topics.endOffset("out", 0) == 6


def test_recreated_input_topic_is_read_from_the_reset_position(session, tmp_path):
    """Issue 22 item 2: a topic deleted and created again with 6,000 records, resumed from a
    checkpoint that had read 3,000: only 3,000 were read, with no error and no counter. Its new
    id tells it from the old one; auto.offset.reset (earliest) applies, with a WARNING."""
    root, checkpoint = str(tmp_path / "topics"), str(tmp_path / "checkpoint")
    topics = LocalTopics(root)
    topics.createTopic("in", 1)
    topics.createTopic("out", 1)
    topics.append("in", 0, rows(0, 0, 3_000))
    copyInToOut(session, root, checkpoint, maxRecords=10_000)
    topics.deleteTopic("in")
    topics.createTopic("in", 1)
    topics.append("in", 0, rows(0, 10_000, 6_000))
    copyInToOut(session, root, checkpoint, maxRecords=10_000)
    assert topics.endOffset("out", 0) == 9_000
    assert topics.read("out", 0, 3_000, 9_000).drop_columns("offset").to_pydict() == rows(0, 10_000, 6_000).to_pydict()

    # under auto.offset.reset=none it is an error naming the topic-partition and the offset
    topics.deleteTopic("in")
    topics.createTopic("in", 1)
    topics.append("in", 0, rows(0, 0, 10))
    with pytest.raises(Exception, match=r"OffsetOutOfRangeException: Topic in was deleted and created again \(its id "
                                        r"changed\) since offset 6000 for in-0, and the offset reset policy"):
        copyInToOut(session, root, checkpoint, options={"autoOffsetReset": "none"})


def _restoreBackup(topics, topic, partition, backup):
    """Replace the partition's directory by ``backup`` (an older copy, same topic id)."""
    import shutil

    partDir = topics.root / topic / str(partition)
    shutil.rmtree(partDir)
    shutil.copytree(backup, partDir)


def test_log_rewritten_under_the_checkpoint_is_read_again_from_the_reset_position(session, tmp_path):
    """Issue 37 item 2: a partition restored from an older backup (1,500 records, same topic id)
    then appended 6,000 new records, resumed from a checkpoint that had read 3,000: the 1,500 new
    records at offsets 1,500..2,999 were never read, without a word. The chain of the manifest
    line before the checkpointed position no longer matches (Kafka's leader-epoch check, KIP-320),
    so auto.offset.reset (earliest) applies: every new record is read."""
    import shutil

    root, checkpoint = str(tmp_path / "topics"), str(tmp_path / "checkpoint")
    topics = LocalTopics(root)
    topics.createTopic("in", 1)
    topics.createTopic("out", 1)
    topics.append("in", 0, rows(0, 0, 1_500))
    shutil.copytree(topics.root / "in" / "0", tmp_path / "backup")
    topics.append("in", 0, rows(0, 1_500, 1_500))
    copyInToOut(session, root, checkpoint, maxRecords=10_000)
    assert topics.endOffset("out", 0) == 3_000
    _restoreBackup(topics, "in", 0, tmp_path / "backup")
    topics.append("in", 0, rows(0, 10_000, 6_000))
    copyInToOut(session, root, checkpoint, maxRecords=10_000)
    assert topics.endOffset("out", 0) == 3_000 + 7_500
    assert topics.read("out", 0, 3_000, 10_500).drop_columns("offset").to_pydict() == \
        pa.concat_tables([rows(0, 0, 1_500), rows(0, 10_000, 6_000)]).to_pydict()


def test_reader_tells_a_rewritten_log_from_an_appended_one(tmp_path, caplog):
    """Issue 37 item 2, at the reader: appends keep the chain below a position (no WARNING), a log
    restored from a backup and appended to again does not: a WARNING naming the offsets read again
    (earliest) or skipped (latest), or under none Kafka's OffsetOutOfRangeException."""
    import logging
    import shutil

    topics = LocalTopics(tmp_path / "topics")
    topics.createTopic("in", 1)
    topics.append("in", 0, rows(0, 0, 1_500))
    shutil.copytree(topics.root / "in" / "0", tmp_path / "backup")
    topics.append("in", 0, rows(0, 1_500, 1_500))
    options = {"root": str(topics.root), "topics": "in"}
    reader = TopicsStreamReader(options)
    checkpointed = reader.latestOffset(reader.initialOffset(), ReadMaxRows(2_000))  # in the middle of a segment
    assert checkpointed["in/0"] == 2_000 and checkpointed["in/0@chain"] is not None
    topics.append("in", 0, rows(0, 3_000, 10))
    with caplog.at_level(logging.WARNING, logger="kspark"):
        resumed = reader.latestOffset(checkpointed, ReadAllAvailable())
    assert caplog.records == [] and "in/0@from" not in resumed and resumed["in/0"] == 3_010

    _restoreBackup(topics, "in", 0, tmp_path / "backup")
    topics.append("in", 0, rows(0, 10_000, 6_000))
    with caplog.at_level(logging.WARNING, logger="kspark"):
        resumed = reader.latestOffset(checkpointed, ReadAllAvailable())
    assert [r.getMessage() for r in caplog.records] == [
        "The log below offset 2000 was rewritten since it was read up to there (the chain of the manifest line "
        "holding offset 1999 changed: restored from an older backup, or truncated and appended to again) for in-0: "
        "reading continues at offset 0 (auto.offset.reset=earliest); offsets 0..1999 are read again"]
    assert (resumed["in/0@from"], resumed["in/0"]) == (0, 7_500)
    [planned] = reader.partitions(checkpointed, resumed)
    read = pa.Table.from_batches(list(reader.read(planned))).filter(pa.compute.field("offset") >= 0)
    assert read.column("value").to_pylist() == rows(0, 0, 1_500)["value"].to_pylist() + \
        rows(0, 10_000, 6_000)["value"].to_pylist()
    # the next batch resumes from the rewritten log's chain: no second WARNING
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="kspark"):
        assert "in/0@from" not in reader.latestOffset(resumed, ReadAllAvailable())
    assert caplog.records == []

    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="kspark"):
        skipped = TopicsStreamReader({**options, "autoOffsetReset": "latest"}).latestOffset(checkpointed, ReadAllAvailable())
    assert skipped["in/0@from"] == 7_500
    assert caplog.records[0].getMessage().endswith(
        "reading continues at offset 7500 (auto.offset.reset=latest); offsets 2000..7499 are skipped")
    with pytest.raises(OffsetOutOfRangeException, match=r"The log below offset 2000 was rewritten .* for in-0, and the "
                                                        r"offset reset policy \(auto.offset.reset\) is none"):
        TopicsStreamReader({**options, "autoOffsetReset": "none"}).latestOffset(checkpointed, ReadAllAvailable())


# ---------------------------------------------------------------------- reader and writer without a query


def test_reader_start_positions_follow_each_topics_reset_policy(tmp_path):
    """A new checkpoint starts each topic at its own policy's position (offsetResetPolicies, from
    Consumed.withOffsetResetPolicy), else autoOffsetReset's: earliest, latest, by_duration:<ms>
    (the first record at or after now - ms: LocalTopics.offsetsForTimes scans the timestamps)."""
    import time

    now = int(time.time() * 1000)
    topics = LocalTopics(tmp_path)
    for name in ("a", "b", "c"):
        topics.createTopic(name, 1)
        topics.append(name, 0, pa.table({"timestamp": [now - 7_200_000, now - 60_000, now - 3_000_000],
                                         "key": [b"k"] * 3, "value": [b"v"] * 3, "headers": [None] * 3}))
    reader = TopicsStreamReader({"root": str(tmp_path), "topics": "a,b,c", "autoOffsetReset": "earliest",
                                 "offsetResetPolicies": json.dumps({"b": "latest", "c": "by_duration:3600000"})})
    start = reader.initialOffset()
    assert {k: v for k, v in start.items() if "@" not in k} == {"a/0": 0, "b/0": 3, "c/0": 1}
    assert topics.offsetsForTimes("c", now) == {0: 3}  # none that late: the end offset
    # a checkpoint's first positions, kept by KafkaStreams, are the start whatever the policies say
    kept = {"a/0": 2, "b/0": 0, "c/0": 3, "a@id": topics.topicId("a")}
    assert TopicsStreamReader({"root": str(tmp_path), "topics": "a,b,c", "autoOffsetReset": "latest",
                               "initialOffsets": json.dumps(kept)}).initialOffset() == kept
    with pytest.raises(ValueError, match=r"must be one of earliest, latest, none or by_duration:<ms>, got 'by_duration:pt1h'"):
        TopicsStreamReader({"root": str(tmp_path), "topics": "a", "autoOffsetReset": "by_duration:PT1H"})


def test_reader_offsets_partitions_and_marker_rows(tmp_path):
    topics = LocalTopics(tmp_path)
    topics.createTopic("a", 2)
    topics.append("a", 0, rows(0, 0, 3))
    reader = TopicsStreamReader({"root": str(tmp_path), "topics": "a", "maxRecordsPerTrigger": "2"})
    start = reader.initialOffset()
    topicId = {"a@id": topics.topicId("a")}  # tells a recreated topic from this one
    assert start == {"a/0": 0, "a/1": 0, **topicId}
    assert reader.getDefaultReadLimit() == ReadMaxRows(2)
    chain = topics.logChains("a", 0, [2, 3])  # of the manifest line holding the record before the position
    assert chain[2] == chain[3] is not None  # one segment holds offsets 0..2
    assert reader.latestOffset(start, ReadAllAvailable()) == {"a/0": 3, "a/1": 0, "a/0@logEnd": 3, "a/1@logEnd": 0,
                                                              "a/0@chain": chain[3], **topicId}
    end = reader.latestOffset(start, ReadMaxRows(2))
    assert end == {"a/0": 2, "a/1": 0, "a/0@logEnd": 3, "a/1@logEnd": 0, "a/0@chain": chain[2], **topicId}
    planned = reader.partitions(start, end)
    assert planned == [TopicPartitionRange("a", 0, 0, 2, 1), TopicPartitionRange("a", 1, 0, 0, 0)]

    batches = list(reader.read(planned[0]))
    assert all(b.schema.equals(to_arrow_schema(SOURCE_SCHEMA, timezone="UTC")) for b in batches)
    assert pa.Table.from_batches(batches).to_pydict() == {
        "topic": ["a", "a", "a"],
        "partition": [0, 0, 0],
        "offset": [0, 1, -1],
        "timestamp": [0, 1000, 0],
        "key": [b"k0-0", b"k0-1", None],
        "value": [b"v0-0", b"v0-1", None],
        "headers": [None, b"h", None],
        "lag": [None, None, 1],
    }
    marker = pa.Table.from_batches(list(reader.read(planned[1])))
    assert marker.to_pylist() == [
        {"topic": "a", "partition": 1, "offset": -1, "timestamp": 0, "key": None, "value": None, "headers": None,
         "lag": 0}
    ]


def test_reader_with_chunk_layout_yields_the_same_records_as_arrow_chunks_then_the_marker(tmp_path):
    topics = LocalTopics(tmp_path)
    topics.createTopic("a", 1)
    topics.append("a", 0, rows(0, 0, 5))
    assert TopicsDataSource({"layout": "chunks"}).schema() == SOURCE_CHUNK_SCHEMA
    assert TopicsDataSource({}).schema() == SOURCE_SCHEMA
    reader = TopicsStreamReader({"root": str(tmp_path), "topics": "a", "layout": "chunks"})
    table = pa.Table.from_batches(list(reader.read(TopicPartitionRange("a", 0, 1, 4, 1))))
    assert table.schema.equals(to_arrow_schema(SOURCE_CHUNK_SCHEMA, timezone="UTC"))
    assert table.select(["topic", "partition", "offset", "lag", "end"]).to_pylist() == [
        {"topic": "a", "partition": 0, "offset": 1, "lag": None, "end": None},
        {"topic": "a", "partition": 0, "offset": -1, "lag": 1, "end": 4},
    ]
    chunk, marker = table.column("records").to_pylist()
    assert marker is None
    assert decodeChunk(chunk).to_pydict() == {
        "offset": [1, 2, 3],
        "timestamp": [1000, 2000, 3000],
        "key": [b"k0-1", b"k0-2", b"k0-3"],
        "value": [b"v0-1", b"v0-2", b"v0-3"],
        "headers": [b"h", None, b"h"],
    }
    empty = pa.Table.from_batches(list(reader.read(TopicPartitionRange("a", 0, 5, 5, 0))))
    assert empty.to_pylist() == [{"topic": "a", "partition": 0, "offset": -1, "records": None, "lag": 0, "end": 5}]


def test_chunk_layout_splits_a_long_range_over_tasks_that_yield_its_records_and_one_marker(tmp_path, monkeypatch):
    """layout=chunks: a range of more than SPLIT_OFFSETS offsets is planned as consecutive parts
    of about equal size; together they yield the range's records in offset order and its marker
    once (from the last part), as one part did. Other layouts keep one range per partition."""
    import kspark.spark._datasource as ds

    monkeypatch.setattr(ds, "SPLIT_OFFSETS", 4)
    topics = LocalTopics(tmp_path)
    topics.createTopic("a", 2)
    topics.append("a", 0, rows(0, 0, 12))
    topics.append("a", 1, rows(1, 0, 3))
    options = {"root": str(tmp_path), "topics": "a"}
    reader = TopicsStreamReader({**options, "layout": "chunks"})
    start, end = {"a/0": 1, "a/1": 0}, {"a/0": 11, "a/1": 3, "a/0@logEnd": 12, "a/1@logEnd": 3}
    planned = reader.partitions(start, end)
    assert [(r.partition, r.start, r.end, r.lag, r.marker) for r in planned] == [
        (0, 1, 4, 1, False), (0, 4, 7, 1, False), (0, 7, 11, 1, True), (1, 0, 3, 0, True)]
    got = [row for r in reversed(planned) for row in pa.Table.from_batches(list(reader.read(r))).to_pylist()]
    dataRows = sorted((r for r in got if r["offset"] >= 0 and r["partition"] == 0), key=lambda r: r["offset"])
    whole = pa.Table.from_batches(list(reader.read(TopicPartitionRange("a", 0, 1, 11, 1))))
    assert pa.concat_tables([decodeChunk(r["records"]) for r in dataRows]).equals(decodeChunk(whole.column("records")[0].as_py()))
    assert [r for r in got if r["offset"] < 0] == [
        {"topic": "a", "partition": 1, "offset": -1, "records": None, "lag": 0, "end": 3},
        {"topic": "a", "partition": 0, "offset": -1, "records": None, "lag": 1, "end": 11}]
    for layout in ("records", "refs"):
        assert [(r.start, r.end) for r in TopicsStreamReader({**options, "layout": layout}).partitions(start, end)] == [
            (1, 11), (0, 3)]


def test_read_tasks_pack_the_ranges_and_yield_the_same_rows_as_one_task_per_range(tmp_path, monkeypatch):
    """Option readTasks (issue 34: one wave of read tasks per batch): the planned ranges are
    packed into at most that many Spark partitions, largest first into the emptiest; each yields
    its ranges' rows in turn, markers included, the same rows as one Spark partition per range."""
    import kspark.spark._datasource as ds

    monkeypatch.setattr(ds, "SPLIT_OFFSETS", 4)
    topics = LocalTopics(tmp_path)
    topics.createTopic("a", 3)
    topics.append("a", 0, rows(0, 0, 12))
    topics.append("a", 1, rows(1, 0, 3))
    options = {"root": str(tmp_path), "topics": "a", "layout": "chunks"}
    start, end = {"a/0": 1, "a/1": 0, "a/2": 0}, {"a/0": 11, "a/1": 3, "a/2": 0}
    ranges = TopicsStreamReader(options).partitions(start, end)
    packed = TopicsStreamReader({**options, "readTasks": "2"}).partitions(start, end)
    assert [[(r.partition, r.start, r.end) for r in group.ranges] for group in packed] == [
        [(0, 7, 11), (1, 0, 3)],  # 4 + 3 offsets
        [(0, 1, 4), (0, 4, 7), (2, 0, 0)]]  # 3 + 3 + an empty range (its marker)
    reader = TopicsStreamReader(options)

    def rowsOf(partitions):
        got = [row for p in partitions for row in pa.Table.from_batches(list(reader.read(p))).to_pylist()]
        return sorted(got, key=lambda r: (r["partition"], r["offset"] < 0, r["offset"]))
    assert rowsOf(packed) == rowsOf(ranges)
    assert len([r for r in rowsOf(packed) if r["offset"] < 0]) == 3  # one marker per partition
    assert TopicsStreamReader({**options, "readTasks": "9"}).partitions(start, end) == ranges  # fewer ranges: as planned
    assert isinstance(packed[0], TopicPartitionRanges)


def test_heartbeat_plans_a_batch_per_trigger_or_per_interval(tmp_path, monkeypatch):
    """heartbeat=true: every latestOffset has a new "@heartbeat" (a batch per trigger, for
    wall-clock punctuators); heartbeat=N (a trigger of 0): the value changes once per N ms, so an
    idle query with a trigger of 0 does not plan batches back to back."""
    import kspark.spark._datasource as ds

    LocalTopics(tmp_path).createTopic("a", 1)
    clock = [1_700_000_000_050_000_000]
    monkeypatch.setattr(ds.time, "time_ns", lambda: clock[0])
    options = {"root": str(tmp_path), "topics": "a"}
    everyTrigger = TopicsStreamReader({**options, "heartbeat": "true"})
    per100 = TopicsStreamReader({**options, "heartbeat": "100"})
    beats = []
    for ms in (0, 30, 49, 50, 170):
        clock[0] = 1_700_000_000_050_000_000 + ms * 1_000_000
        beats.append((everyTrigger.latestOffset({}, ReadAllAvailable())["@heartbeat"],
                      per100.latestOffset({}, ReadAllAvailable())["@heartbeat"]))
    assert beats == [(1700000000050, 1700000000000), (1700000000080, 1700000000000), (1700000000099, 1700000000000),
                     (1700000000100, 1700000000100), (1700000000220, 1700000000200)]
    assert "@heartbeat" not in TopicsStreamReader(options).latestOffset({}, ReadAllAvailable())


def test_reader_with_refs_layout_yields_a_reference_to_the_range_which_reads_the_chunks_records(tmp_path):
    """Local topics, layout=refs: a non-empty range is one reference row (null records), then the
    marker; readReference gives the records the chunk layout would have carried."""
    topics = LocalTopics(tmp_path)
    topics.createTopic("a", 1)
    topics.append("a", 0, rows(0, 0, 2))
    topics.append("a", 0, rows(0, 2, 3))  # the range spans two segments
    assert TopicsDataSource({"layout": "refs"}).schema() == SOURCE_CHUNK_SCHEMA
    reader = TopicsStreamReader({"root": str(tmp_path), "topics": "a", "layout": "refs"})
    table = pa.Table.from_batches(list(reader.read(TopicPartitionRange("a", 0, 1, 4, 1))))
    assert table.schema.equals(to_arrow_schema(SOURCE_CHUNK_SCHEMA, timezone="UTC"))
    assert table.to_pylist() == [
        {"topic": "a", "partition": 0, "offset": 1, "records": None, "lag": None, "end": 4},
        {"topic": "a", "partition": 0, "offset": -1, "records": None, "lag": 1, "end": 4},
    ]
    chunks = TopicsStreamReader({"root": str(tmp_path), "topics": "a", "layout": "chunks"})
    chunk = pa.Table.from_batches(list(chunks.read(TopicPartitionRange("a", 0, 1, 4, 1)))).column("records")[0].as_py()
    assert readReference(topics, "a", 0, 1, 4).equals(decodeChunk(chunk))
    assert readReference(topics, "a", 0, 1, 4).column("key").to_pylist() == [b"k0-1", b"k0-2", b"k0-3"]
    empty = pa.Table.from_batches(list(reader.read(TopicPartitionRange("a", 0, 5, 5, 0))))
    assert empty.to_pylist() == [{"topic": "a", "partition": 0, "offset": -1, "records": None, "lag": 0, "end": 5}]
    # a range no longer all in the log (the topic was created again meanwhile): an error, not fewer records
    with pytest.raises(OffsetOutOfRangeException, match=r"Offsets 3\.\.5 of a-0 are no longer all in its log"):
        readReference(topics, "a", 0, 3, 6)


def test_refs_layout_is_for_the_local_topics_source_only(tmp_path):
    with pytest.raises(ValueError, match="refs reads local topics only"):
        TopicsStreamReader({"backend": "kafka", "topics": "a", "layout": "refs"})
    with pytest.raises(ValueError, match="refs is for the source only"):
        LocalTopicsStreamWriter({"root": str(tmp_path), "producer": "p", "layout": "refs"}, SINK_CHUNK_SCHEMA)


def test_chunks_are_bounded_by_rows_and_bytes_and_keep_the_order():
    table = pa.table({"timestamp": list(range(10)), "key": [b"x" * 10] * 10, "value": [None] * 9 + [b"y" * 50]})
    assert [c.num_rows for c in chunkTable(table, maxRows=4, maxBytes=1 << 20)] == [4, 4, 2]
    # 10 bytes per row, 60 for the last: 3 rows fit in 30 bytes; the big row goes alone
    bySize = list(chunkTable(table, maxRows=100, maxBytes=30))
    assert [c.num_rows for c in bySize] == [3, 3, 3, 1]
    assert pa.concat_tables(bySize).equals(table)
    assert list(chunkTable(table.slice(0, 0))) == []


def test_reader_under_available_now_stops_at_its_targets(tmp_path):
    topics = LocalTopics(tmp_path)
    topics.createTopic("a", 2)
    topics.append("a", 0, rows(0, 0, 3))
    reader = TopicsStreamReader({"root": str(tmp_path), "topics": "a"})
    reader.prepareForTriggerAvailableNow()
    topics.append("a", 1, rows(1, 0, 2))  # arrives after the targets were taken
    end = reader.latestOffset(reader.initialOffset(), ReadAllAvailable())
    assert end == {"a/0": 3, "a/1": 0, "a/0@logEnd": 3, "a/1@logEnd": 0, "a/0@chain": topics.logChains("a", 0, [3])[3],
                   "a@id": topics.topicId("a")}
    assert reader.latestOffset(end, ReadAllAvailable()) == end  # so the run ends
    # records that arrived after the run started are neither read nor waited for
    assert [r.lag for r in reader.partitions(reader.initialOffset(), end)] == [0, 0]


def test_reader_records_the_log_end_in_the_offsets_so_a_replay_gets_the_same_lag(tmp_path):
    topics = LocalTopics(tmp_path)
    topics.createTopic("a", 1)
    topics.append("a", 0, rows(0, 0, 5))
    reader = TopicsStreamReader({"root": str(tmp_path), "topics": "a", "maxRecordsPerTrigger": "2"})
    end = reader.latestOffset(reader.initialOffset(), ReadMaxRows(2))
    assert end == {"a/0": 2, "a/0@logEnd": 5, "a/0@chain": topics.logChains("a", 0, [2])[2], "a@id": topics.topicId("a")}
    topics.append("a", 0, rows(0, 5, 4))  # more data before the batch is (re)planned
    assert [r.lag for r in reader.partitions(reader.initialOffset(), end)] == [3]


def test_reader_reads_each_log_end_once_per_batch_and_reports_the_ends_it_planned_with(tmp_path):
    """Spark asks ``reportLatestOffset`` (progress ``latestOffset``) right after ``latestOffset``:
    the reader answers with the log ends it just read, not with a second request per topic
    (issue 34 §1: the driver's calls per batch); asked without a ``latestOffset`` before, it reads."""
    topics = LocalTopics(tmp_path)
    topics.createTopic("a", 2)
    topics.append("a", 0, rows(0, 0, 5))
    reader = TopicsStreamReader({"root": str(tmp_path), "topics": "a", "maxRecordsPerTrigger": "2"})
    reads = []
    endOffsets, topicId = topics.endOffsets, topics.topicId
    reader._topics.endOffsets = lambda name: reads.append(("end", name)) or endOffsets(name)
    reader._topics.topicId = lambda name: reads.append(("id", name)) or topicId(name)
    end = reader.latestOffset(reader.initialOffset(), ReadMaxRows(2))
    assert end["a/0"] == 2 and end["a/0@logEnd"] == 5
    topics.append("a", 1, rows(1, 0, 3))  # after the batch was planned
    reads.clear()
    assert reader.reportLatestOffset() == {"a/0": 5, "a/1": 0}  # the ends the batch was planned with
    assert reads == []
    end = reader.latestOffset(end, ReadMaxRows(2))
    assert sorted(reads) == [("end", "a"), ("id", "a")]  # one read of each per batch
    assert (end["a/0"], end["a/1"], end["a/1@logEnd"]) == (3, 1, 3)
    assert reader.reportLatestOffset() == {"a/0": 5, "a/1": 3}
    topics.append("a", 1, rows(1, 3, 1))
    assert reader.reportLatestOffset() == {"a/0": 5, "a/1": 4}  # no latestOffset before: read now


def test_reader_and_writer_reject_bad_options(tmp_path):
    LocalTopics(tmp_path).createTopic("a", 1)
    with pytest.raises(UnknownTopicOrPartitionException, match="^This server does not host this topic-partition: nope$"):
        TopicsStreamReader({"root": str(tmp_path), "topics": "a,nope"})
    with pytest.raises(ValueError, match="Option 'topics' is required"):
        TopicsStreamReader({"root": str(tmp_path)})
    with pytest.raises(ValueError, match="'maxRecordsPerTrigger' must be a positive integer"):
        TopicsStreamReader({"root": str(tmp_path), "topics": "a", "maxRecordsPerTrigger": "many"})
    with pytest.raises(ValueError, match="'readTasks' must be a positive integer, got '0'"):
        TopicsStreamReader({"root": str(tmp_path), "topics": "a", "readTasks": "0"})
    with pytest.raises(ValueError, match="Option 'layout' must be one of records, chunks"):
        TopicsStreamReader({"root": str(tmp_path), "topics": "a", "layout": "rows"})
    with pytest.raises(ValueError, match="missing or mistyped: records binary"):
        LocalTopicsStreamWriter({"root": str(tmp_path), "producer": "p", "layout": "chunks"}, SINK_SCHEMA)
    LocalTopicsStreamWriter({"root": str(tmp_path), "producer": "p", "layout": "chunks"}, SINK_CHUNK_SCHEMA)
    with pytest.raises(ValueError, match="Option 'producer' is required"):
        LocalTopicsStreamWriter({"root": str(tmp_path)}, SINK_SCHEMA)
    withoutMetrics = StructType(SINK_SCHEMA.fields[:-1])
    with pytest.raises(ValueError, match="missing or mistyped: metrics string"):
        LocalTopicsStreamWriter({"root": str(tmp_path), "producer": "p"}, withoutMetrics)


def test_progress_log_counts_records_from_the_source_offsets_not_chunk_rows():
    from kspark.spark._progress import _recordsRead

    start = json.dumps({"a/0": 3, "a/1": 0, "a/0@logEnd": 9, "a/1@logEnd": 4})
    end = json.dumps({"a/0": 7, "a/1": 4, "a/0@logEnd": 9, "a/1@logEnd": 4, "@heartbeat": 1700000000000})
    assert _recordsRead(start, end) == 8
    assert _recordsRead(None, json.dumps({"a/0": 5, "a/0@logEnd": 5})) == 5
    # the listener's bridge reads the progress as one JSON document: offsets arrive parsed
    assert _recordsRead(json.loads(start), json.loads(end)) == 8


def test_progress_listener_prints_each_batch_from_the_progress_json(spark, tmp_path, capsys):
    """The listener's own Py4J bridge (one JSON document per event, not pyspark's field-by-field
    conversion) prints one plain line per micro-batch when stdout is not a terminal, with the
    records read from the offsets, then kspark's summary at close()."""
    from kspark import KafkaStreams, StreamsBuilder

    topics = LocalTopics(tmp_path / "topics")
    topics.createTopic("in", 2)
    topics.createTopic("out", 2)
    topics.produce("in", [(b"a", b"1", 1_000), (b"b", b"2", 1_001), (b"c", b"3", 1_002), (b"d", b"4", 1_003),
                          (b"e", b"5", 1_004)], partitioner=lambda key, n: 0 if key < b"d" else 1)
    b = StreamsBuilder()
    b.stream("in").to("out")
    streams = KafkaStreams(b.build(), {"application.id": "progress", "kspark.topics.dir": str(tmp_path / "topics"),
                                       "state.dir": str(tmp_path / "state"),
                                       "kspark.max.records.per.trigger": 4}, spark=spark)
    streams.start()
    streams.awaitTermination()
    streams.close()  # waits for the last batch's progress event
    lines = capsys.readouterr().out.splitlines()
    batches = [line for line in lines if " batch " in line]
    assert [line.split(" in ")[0] for line in batches] == [
        "progress sub-topology 0 batch 0: 4 records", "progress sub-topology 0 batch 1: 1 records"]
    assert re.search(r"\), lag 1, 0 dropped, 0 punctuations, e2e p50 [\d,]+ ms, p95 [\d,]+ ms$", batches[0])
    assert re.search(r"\), lag 0, 0 dropped, 0 punctuations, e2e p50 [\d,]+ ms, p95 [\d,]+ ms$", batches[1])
    summary = lines[lines.index("== progress: summary =="):]
    assert summary[2].split() == ["topic", "read", "written"]
    assert summary[3].split() == ["in", "5", "-"] and summary[4].split() == ["out", "-", "5"]
    assert summary[5:7] == ["records dropped: 0", "punctuations: 0"]
    assert re.fullmatch(r"end-to-end latency of output records: p50 [\d,]+ ms, p95 [\d,]+ ms", summary[7])
    assert sum(topics.endOffsets("out").values()) == 5

"""LocalTopics: the file-backed partitioned topic logs (no Spark)."""

import json
import multiprocessing
import os

import pyarrow as pa
import pytest

from kspark.topics import (RECORD_SCHEMA, CorruptRecordException, LocalTopics, TopicExistsException,
                           UnknownTopicOrPartitionException)


def records(*values: str, ts: int = 1000) -> pa.Table:
    """One row per value: key ``k-<value>``, value ``<value>``, timestamps ts, ts+1, ..."""
    return pa.table(
        {
            "timestamp": pa.array(range(ts, ts + len(values)), pa.int64()),
            "key": pa.array([f"k-{v}".encode() for v in values], pa.binary()),
            "value": pa.array([v.encode() for v in values], pa.binary()),
            "headers": pa.nulls(len(values), pa.binary()),
        },
        schema=RECORD_SCHEMA,
    )


def manifest(root, topic, partition):
    with open(os.path.join(root, topic, str(partition), "manifest.jsonl")) as f:
        return [json.loads(line) for line in f]


def segmentFiles(root, topic, partition):
    return sorted(n for n in os.listdir(os.path.join(root, topic, str(partition))) if n.endswith(".arrow"))


@pytest.fixture
def topics(tmp_path):
    t = LocalTopics(tmp_path)
    t.createTopic("orders", 3)
    return t


# ---------------------------------------------------------------------- admin


def test_create_list_describe_delete(tmp_path, topics):
    topics.createTopic("a.b_c-1", 1)
    assert topics.listTopics() == ["a.b_c-1", "orders"]
    assert topics.partitionsFor("orders") == 3
    assert topics.partitionsFor("missing") is None
    meta = json.loads((tmp_path / "orders" / "topic.json").read_text())
    assert meta == {"name": "orders", "partitions": 3, "config": {}, "id": topics.topicId("orders")}
    assert topics.endOffsets("orders") == {0: 0, 1: 0, 2: 0}
    topics.deleteTopic("orders")
    assert topics.listTopics() == ["a.b_c-1"]
    assert sorted(os.listdir(tmp_path)) == ["a.b_c-1"]
    with pytest.raises(UnknownTopicOrPartitionException, match="^This server does not host this topic-partition: orders$"):
        topics.deleteTopic("orders")


def test_create_existing_topic(topics):
    with pytest.raises(TopicExistsException, match=r"^Topic 'orders' already exists\.$"):
        topics.createTopic("orders", 3)
    topics.createTopic("orders", 3, ifNotExists=True)  # no-op
    with pytest.raises(TopicExistsException, match=r"^Topic 'orders' already exists\. It has 3 partitions, not 4\.$"):
        topics.createTopic("orders", 4, ifNotExists=True)


@pytest.mark.parametrize(
    "name, message",
    [
        ("bad/name", "Topic name \"bad/name\" is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'"),
        ("", "Topic name is illegal, it can't be empty"),
        ("..", 'Topic name cannot be "." or ".."'),
        ("x" * 250, "Topic name is illegal, it can't be longer than 249 characters, topic name: " + "x" * 250),
    ],
)
def test_illegal_topic_names(topics, name, message):
    with pytest.raises(ValueError) as err:
        topics.createTopic(name, 1)
    assert str(err.value) == message


def test_longest_legal_name(topics):
    name = "x" * 249
    topics.createTopic(name, 2)
    assert topics.partitionsFor(name) == 2
    topics.deleteTopic(name)
    assert topics.listTopics() == ["orders"]


def test_partition_count_must_be_positive(topics):
    with pytest.raises(ValueError, match="at least 1"):
        topics.createTopic("empty", 0)


# ---------------------------------------------------------------------- append / read


def test_offsets_are_dense_across_appends(tmp_path, topics):
    assert topics.append("orders", 1, records("a", "b")) == 0
    assert topics.append("orders", 1, records("c").to_batches()[0]) == 2
    assert topics.append("orders", 1, records()) == 3  # empty: nothing written
    assert topics.append("orders", 1, records("d", "e", "f")) == 3
    assert topics.endOffsets("orders") == {0: 0, 1: 6, 2: 0}
    assert segmentFiles(tmp_path, "orders", 1) == [f"{0:020d}.arrow", f"{2:020d}.arrow", f"{3:020d}.arrow"]
    assert [(e["segment"], e["start"], e["count"]) for e in manifest(tmp_path, "orders", 1)] == [
        ("00000000000000000000.arrow", 0, 2),
        ("00000000000000000002.arrow", 2, 1),
        ("00000000000000000003.arrow", 3, 3),
    ]
    with pa.memory_map(str(tmp_path / "orders" / "1" / f"{3:020d}.arrow")) as source:
        segment = pa.ipc.open_file(source)
        assert segment.schema.equals(RECORD_SCHEMA)
        assert segment.read_all().column("value").to_pylist() == [b"d", b"e", b"f"]


def test_read_ranges_span_segments_and_clamp(topics):
    topics.append("orders", 0, records("a", "b", ts=10))
    topics.append("orders", 0, records("c", ts=20))
    topics.append("orders", 0, records("d", "e", "f", ts=30))
    middle = topics.read("orders", 0, 1, 4)
    assert middle.schema.names == ["offset", "timestamp", "key", "value", "headers"]
    assert middle.to_pydict() == {
        "offset": [1, 2, 3],
        "timestamp": [11, 20, 30],
        "key": [b"k-b", b"k-c", b"k-d"],
        "value": [b"b", b"c", b"d"],
        "headers": [None, None, None],
    }
    assert topics.read("orders", 0, 4, 1000).column("value").to_pylist() == [b"e", b"f"]  # clamped to 6
    assert topics.read("orders", 0, 0, 6).column("offset").to_pylist() == [0, 1, 2, 3, 4, 5]
    assert topics.read("orders", 0, 3, 3).num_rows == 0
    assert topics.read("orders", 0, 7, 9).num_rows == 0
    empty = topics.read("orders", 2, 0, 10)
    assert empty.num_rows == 0 and empty.schema.names == ["offset", "timestamp", "key", "value", "headers"]


def test_append_casts_and_validates_columns(topics):
    loose = pa.table(
        {
            "value": pa.array([b"v"], pa.large_binary()),
            "headers": pa.array([None], pa.binary()),
            "key": pa.array(["k"], pa.string()),
            "timestamp": pa.array([7], pa.int32()),
        }
    )
    topics.append("orders", 0, loose)
    assert topics.read("orders", 0, 0, 1).to_pydict() == {
        "offset": [0], "timestamp": [7], "key": [b"k"], "value": [b"v"], "headers": [None],
    }
    with pytest.raises(ValueError, match=r"^Records for orders-0 must have exactly the columns \['timestamp', 'key', 'value', 'headers'\], got \['timestamp', 'value'\]$"):
        topics.append("orders", 0, pa.table({"timestamp": [1], "value": [b"v"]}))
    nullTimestamp = records("x").set_column(0, "timestamp", pa.array([None], pa.int64()))
    with pytest.raises(ValueError, match="^Records for orders-0 do not fit"):
        topics.append("orders", 0, nullTimestamp)
    assert topics.endOffset("orders", 0) == 1


def test_unknown_topic_or_partition(topics):
    with pytest.raises(UnknownTopicOrPartitionException, match="^This server does not host this topic-partition: orders-3$"):
        topics.append("orders", 3, records("a"))
    with pytest.raises(UnknownTopicOrPartitionException, match="^This server does not host this topic-partition: orders-3$"):
        topics.read("orders", 3, 0, 1)
    with pytest.raises(UnknownTopicOrPartitionException, match="^This server does not host this topic-partition: nope-0$"):
        topics.endOffset("nope", 0)
    with pytest.raises(UnknownTopicOrPartitionException, match="^This server does not host this topic-partition: nope$"):
        topics.endOffsets("nope")


def test_idempotent_append_writes_once(tmp_path, topics):
    assert topics.append("orders", 2, records("a", "b"), producer="app-1", sequence=0, index=0) == 0
    assert topics.append("orders", 2, records("c"), producer="app-1", sequence=0, index=1) == 2
    assert topics.append("orders", 2, records("d"), producer="app-1", sequence=1, index=0) == 3
    # replays of the same (producer, sequence, index) return the first base offset
    assert topics.append("orders", 2, records("a", "b"), producer="app-1", sequence=0, index=0) == 0
    assert topics.append("orders", 2, records("c"), producer="app-1", sequence=0, index=1) == 2
    # another producer with the same sequence is a different append
    assert topics.append("orders", 2, records("e"), producer="app-2", sequence=0, index=0) == 4
    assert topics.endOffset("orders", 2) == 5
    assert len(segmentFiles(tmp_path, "orders", 2)) == 4
    assert topics.read("orders", 2, 0, 5).column("value").to_pylist() == [b"a", b"b", b"c", b"d", b"e"]
    assert [(e["producer"], e["sequence"], e["index"]) for e in manifest(tmp_path, "orders", 2)] == [
        ("app-1", 0, 0), ("app-1", 0, 1), ("app-1", 1, 0), ("app-2", 0, 0),
    ]


def test_orphan_segment_of_a_crashed_append_is_overwritten(tmp_path, topics):
    topics.append("orders", 0, records("a"))
    partDir = tmp_path / "orders" / "0"
    # a crash after placing segment 1, before the manifest was replaced
    with pa.OSFile(str(partDir / f"{1:020d}.arrow"), "wb") as sink, pa.ipc.new_file(sink, RECORD_SCHEMA) as w:
        w.write_table(records("orphan"))
    assert topics.endOffset("orders", 0) == 1
    assert topics.read("orders", 0, 0, 10).column("value").to_pylist() == [b"a"]
    assert topics.append("orders", 0, records("b", "c")) == 1  # overwrites the orphan
    assert topics.read("orders", 0, 0, 10).column("value").to_pylist() == [b"a", b"b", b"c"]
    assert [e["start"] for e in manifest(tmp_path, "orders", 0)] == [0, 1]


def test_recreated_topic_gets_a_new_id(topics):
    """Issue 22 item 2: the id tells a topic deleted and created again from the old one."""
    first = topics.topicId("orders")
    assert first and topics.topicId("orders") == first
    topics.deleteTopic("orders")
    topics.createTopic("orders", 3)
    assert topics.topicId("orders") not in (None, first)
    assert topics.topicId("missing") is None


def test_topic_created_before_ids_has_none_and_still_works(tmp_path, topics):
    (tmp_path / "old" / "0").mkdir(parents=True)  # as older versions laid it out: no id, no manifest yet
    (tmp_path / "old" / "topic.json").write_text(json.dumps({"name": "old", "partitions": 1}))
    assert topics.topicId("old") is None and topics.endOffset("old", 0) == 0
    topics.append("old", 0, records("a"))
    assert topics.read("old", 0, 0, 5).column("value").to_pylist() == [b"a"]


@pytest.mark.parametrize("damage, message", [
    (lambda p: p.write_bytes(p.read_bytes()[:-1]), r"line 2 has no final newline"),
    (lambda p: p.write_bytes(p.read_bytes().replace(b'"start": 2', b'"start": 3')),
     r"line 2 starts at offset 3, but the lines before it end at offset 2"),
    (lambda p: p.write_bytes(b"{not json\n" + p.read_bytes()), r"line 1 cannot be parsed: b'\{not json'"),
    (lambda p: p.unlink(), r"is missing, but the partition holds 2 segment files"),
])
def test_damaged_manifest_is_an_error_naming_the_file_and_line(tmp_path, topics, damage, message):
    """Issue 22 item 3: a manifest deleted or missing its final newline read as an empty partition."""
    topics.append("orders", 0, records("a", "b"))
    topics.append("orders", 0, records("c"))
    path = tmp_path / "orders" / "0" / "manifest.jsonl"
    damage(path)
    calls = [lambda: topics.read("orders", 0, 0, 3), lambda: topics.append("orders", 0, records("d"))]
    if "parsed" not in message and "starts at" not in message:  # endOffset reads the last line only
        calls.append(lambda: topics.endOffset("orders", 0))
    for call in calls:
        with pytest.raises(CorruptRecordException, match=rf"manifest {path} of orders-0 (is damaged: )?{message}"):
            call()


def test_manifest_of_a_new_topic_deleted_is_an_error(tmp_path, topics):
    (tmp_path / "orders" / "1" / "manifest.jsonl").unlink()
    with pytest.raises(CorruptRecordException, match=r"manifest .*/orders/1/manifest.jsonl of orders-1 is missing;"):
        topics.endOffset("orders", 1)


def flipByte(path, position):
    data = bytearray(path.read_bytes())
    data[position] ^= 0x01
    path.write_bytes(bytes(data))


def test_corrupt_or_truncated_segment_is_an_error_naming_topic_partition_offsets_and_file(tmp_path, topics):
    """Issue 22 item 4: a one-byte change in a segment altered the output with no error."""
    topics.append("orders", 0, records("a"))
    topics.append("orders", 0, pa.concat_tables([records("b", "c"), records("d", "e")]))  # two record batches
    segment = tmp_path / "orders" / "0" / f"{1:020d}.arrow"
    original = segment.read_bytes()
    assert len(manifest(tmp_path, "orders", 0)[1]["crc32"]) == 2
    position = original.index(b"k-d")  # a key of the second record batch
    flipByte(segment, position)
    with pytest.raises(CorruptRecordException, match=rf"^Segment file {segment} of orders-0 \(offsets 1..4\) fails the "
                                                     r"CRC-32 check of its record batch 1 \(offsets 3..4\)$"):
        topics.read("orders", 0, 0, 5)
    # records of the sound batches are still readable
    assert topics.read("orders", 0, 0, 3).column("value").to_pylist() == [b"a", b"b", b"c"]
    segment.write_bytes(original[: len(original) // 2])
    with pytest.raises(CorruptRecordException, match=rf"^Segment file {segment} of orders-0 \(offsets 1..4\) has "
                                                     rf"{len(original) // 2} bytes, not the {len(original)}"):
        topics.read("orders", 0, 2, 3)
    segment.unlink()
    with pytest.raises(CorruptRecordException, match=r"\(offsets 1..4\) is missing$"):
        topics.read("orders", 0, 0, 1 + 1)


def test_relative_root_and_file_uri_resolve_to_the_same_absolute_directory(tmp_path, monkeypatch):
    """Issue 22 item 6: a relative kspark.topics.dir is resolved where the topics are opened (the driver)."""
    monkeypatch.chdir(tmp_path)
    assert LocalTopics("topics").root == tmp_path / "topics"
    assert LocalTopics(f"file://{tmp_path}/topics").root == tmp_path / "topics"
    assert LocalTopics(f"file:{tmp_path}/topics").root == tmp_path / "topics"
    with pytest.raises(ValueError, match="Local topics need a local or mounted directory, not hdfs://nn/topics"):
        LocalTopics("hdfs://nn/topics")


def test_end_offset_with_a_long_manifest(topics):
    for i in range(60):  # > 4 KiB of manifest lines
        topics.append("orders", 0, records(str(i)), producer="p" * 40, sequence=i)
    assert topics.endOffset("orders", 0) == 60
    assert topics.read("orders", 0, 58, 100).column("value").to_pylist() == [b"58", b"59"]


# ---------------------------------------------------------------------- appendFile


def stage(topics, partition, name, table):
    path = os.path.join(topics.stagingDir("sink"), name)
    with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, RECORD_SCHEMA) as writer:
        writer.write_table(table)
    return path


def test_append_file_moves_the_staged_segment(tmp_path, topics):
    assert topics.stagingDir("sink") == str(tmp_path / "~staging" / "sink")
    assert topics.listTopics() == ["orders"]
    topics.append("orders", 1, records("a"))
    staged = stage(topics, 1, "s0.arrow", records("b", "c"))
    assert topics.appendFile("orders", 1, staged, producer="sink", sequence=7, index=0) == 1
    assert not os.path.exists(staged)
    assert segmentFiles(tmp_path, "orders", 1) == [f"{0:020d}.arrow", f"{1:020d}.arrow"]
    assert topics.read("orders", 1, 0, 3).column("value").to_pylist() == [b"a", b"b", b"c"]
    # a replay of the same commit deletes the new staged file and returns the old base
    replay = stage(topics, 1, "s1.arrow", records("b", "c"))
    assert topics.appendFile("orders", 1, replay, producer="sink", sequence=7, index=0) == 1
    assert not os.path.exists(replay)
    assert topics.endOffset("orders", 1) == 3
    # an empty staged file writes nothing
    empty = stage(topics, 1, "s2.arrow", records())
    assert topics.appendFile("orders", 1, empty, producer="sink", sequence=8, index=0) == 3
    assert not os.path.exists(empty) and topics.endOffset("orders", 1) == 3
    assert os.listdir(topics.stagingDir("sink")) == []


def test_append_file_rejects_a_foreign_schema(topics):
    path = os.path.join(topics.stagingDir("sink"), "bad.arrow")
    table = pa.table({"value": [b"v"]})
    with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    with pytest.raises(ValueError, match="for orders-0 has schema"):
        topics.appendFile("orders", 0, path)
    assert topics.endOffset("orders", 0) == 0


# ---------------------------------------------------------------------- produce


def test_produce_groups_records_per_partition(tmp_path, topics):
    def byFirstByte(key, numPartitions):
        return 0 if key is None else key[0] % numPartitions

    counts = topics.produce(
        "orders",
        [(b"\x01a", b"1", 100), (None, b"2", 101), (b"\x04b", b"3", 102), (b"\x02c", None, 103)],
        partitioner=byFirstByte,
    )
    assert counts == {0: 1, 1: 2, 2: 1}
    assert topics.read("orders", 1, 0, 10).to_pydict() == {
        "offset": [0, 1], "timestamp": [100, 102], "key": [b"\x01a", b"\x04b"], "value": [b"1", b"3"],
        "headers": [None, None],
    }
    assert topics.read("orders", 0, 0, 10).column("key").to_pylist() == [None]
    assert topics.read("orders", 2, 0, 10).column("value").to_pylist() == [None]
    assert [len(manifest(tmp_path, "orders", p)) for p in range(3)] == [1, 1, 1]
    with pytest.raises(ValueError, match="Partitioner returned partition 3 for topic orders with 3 partitions"):
        topics.produce("orders", [(b"k", b"v", 1)], partitioner=lambda key, n: 3)
    with pytest.raises(UnknownTopicOrPartitionException):
        topics.produce("nope", [], partitioner=byFirstByte)


# ---------------------------------------------------------------------- concurrency


def appendMany(root, worker, rounds):
    topics = LocalTopics(root)
    for i in range(rounds):
        topics.append("orders", 0, records(*(f"{worker}-{i}-{j}" for j in range(3))))


def test_concurrent_appends_from_two_processes_keep_offsets_dense(tmp_path, topics):
    ctx = multiprocessing.get_context("fork")
    workers = [ctx.Process(target=appendMany, args=(str(tmp_path), w, 25)) for w in ("x", "y")]
    for p in workers:
        p.start()
    for p in workers:
        p.join(60)
        assert p.exitcode == 0
    assert topics.endOffset("orders", 0) == 150
    table = topics.read("orders", 0, 0, 150)
    assert table.column("offset").to_pylist() == list(range(150))
    values = [v.decode() for v in table.column("value").to_pylist()]
    assert sorted(values) == sorted(f"{w}-{i}-{j}" for w in "xy" for i in range(25) for j in range(3))
    # every segment is contiguous and each writer's segments are in its own order
    entries = manifest(tmp_path, "orders", 0)
    assert [e["start"] for e in entries] == list(range(0, 150, 3))
    for w in "xy":
        mine = [v for v in values if v.startswith(w)]
        assert mine == [f"{w}-{i}-{j}" for i in range(25) for j in range(3)]


def test_log_append_time_topic_replaces_producer_timestamps_with_the_append_time(tmp_path):
    """Issue 3: a topic's metadata timestamp is the producer's (CreateTime) or the log's (LogAppendTime)."""
    import time

    topics = LocalTopics(tmp_path)
    topics.createTopic("create", 1)
    topics.createTopic("append", 1, config={"message.timestamp.type": "LogAppendTime"})
    before = time.time_ns() // 1_000_000
    for name in ("create", "append"):
        topics.produce(name, [(b"k", b"v", 5), (b"k", b"w", 6)], partitioner=lambda key, n: 0)
    after = time.time_ns() // 1_000_000
    assert topics.timestampType("create") == "CreateTime"
    assert topics.read("create", 0, 0, 2).column("timestamp").to_pylist() == [5, 6]
    stamps = topics.read("append", 0, 0, 2).column("timestamp").to_pylist()
    assert stamps[0] == stamps[1] and before <= stamps[0] <= after
    with pytest.raises(ValueError, match="Unsupported topic config"):
        topics.createTopic("bad", 1, config={"message.timestamp.type": "Now"})


def test_delete_records_removes_whole_segments_below_the_offset_and_moves_the_log_start(tmp_path, topics):
    """Kafka's Admin.deleteRecords (KIP-107), at segment granularity: the log start offset moves
    to the first kept segment, reads below it fail, offsets and the end offset do not change."""
    from kspark.topics import OffsetOutOfRangeException

    for values in (("a", "b"), ("c", "d", "e"), ("f",)):  # segments [0, 2), [2, 5), [5, 6)
        topics.append("orders", 1, records(*values))
    assert topics.deleteRecords("orders", 1, 4) == 2  # offset 4 is inside [2, 5): that segment stays
    assert topics.beginningOffsets("orders") == {0: 0, 1: 2, 2: 0}
    assert segmentFiles(tmp_path, "orders", 1) == ["00000000000000000002.arrow", "00000000000000000005.arrow"]
    assert topics.read("orders", 1, 2, 6).column("value").to_pylist() == [b"c", b"d", b"e", b"f"]
    with pytest.raises(OffsetOutOfRangeException, match=r"Offset 1 of orders-1 is below its log start offset 2"):
        topics.read("orders", 1, 1, 6)
    assert topics.deleteRecords("orders", 1, 1) == 2  # never backwards
    assert topics.deleteRecords("orders", 1, 5) == 5
    topics.append("orders", 1, records("g"))  # appends go on at the end offset
    assert topics.endOffset("orders", 1) == 7
    assert topics.read("orders", 1, 5, 7).column("offset").to_pylist() == [5, 6]
    assert [e["start"] for e in manifest(tmp_path, "orders", 1)] == [0, 2, 5, 6]  # the manifest keeps its lines
    assert segmentFiles(tmp_path, "orders", 1) == ["00000000000000000005.arrow", "00000000000000000006.arrow"]
    assert topics.read("orders", 0, 0, 10).num_rows == 0  # other partitions untouched

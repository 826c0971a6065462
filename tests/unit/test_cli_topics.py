"""Issue 36 item 13: ``kspark topics create|produce|consume|list|describe`` on local topics, as a
user puts input in and reads output (Kafka's console tools' options and output). No Spark."""

import io
import struct
import threading

import pytest

from kspark.cli import main
from kspark.runtime.partitioner import partitionForKey
from kspark.topics import LocalTopics


def kspark(capsys, monkeypatch, *argv, stdin=None):
    if stdin is not None:
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_create_produce_describe_consume_on_local_topics(tmp_path, capsys, monkeypatch):
    d = str(tmp_path / "topics")
    assert kspark(capsys, monkeypatch, "topics", "create", "--topics-dir", d, "--topic", "words", "--partitions", "3") \
        == (0, "Created topic words.\n", "")
    status, out, err = kspark(capsys, monkeypatch, "topics", "create", "--topics-dir", d, "--topic", "words",
                              "--partitions", "3")
    assert (status, out, err) == (1, "", "kspark topics: Topic 'words' already exists.\n")
    assert kspark(capsys, monkeypatch, "topics", "create", "--topics-dir", d, "--topic", "words", "--partitions", "3",
                  "--if-not-exists")[0] == 0

    # the line is key<TAB>value (parse.key=true), serialized with the default serdes (String, JSON)
    status, out, err = kspark(capsys, monkeypatch, "topics", "produce", "--topics-dir", d, "--topic", "words",
                              "--property", "parse.key=true", "--property", "null.marker=null",
                              stdin='a\t{"n": 1}\nb\t{"n": 2}\n\nc\tnull\n')
    assert (status, out) == (0, "")
    # DP-2: Kafka's partition of each key's String bytes (murmur2): a, c -> 1 and b -> 2 of 3
    assert [partitionForKey(k, 3) for k in (b"a", b"b", b"c")] == [1, 2, 1]
    assert err == "Produced 3 records to words (partition 1: 2, partition 2: 1).\n"
    topics = LocalTopics(d)
    one = topics.read("words", 1, 0, 2)
    assert one.column("key").to_pylist() == [b"a", b"c"]
    assert one.column("value").to_pylist() == [b'{"n":1}', None]  # null.marker: a tombstone
    assert topics.read("words", 2, 0, 1).column("value").to_pylist() == [b'{"n":2}']

    # kspark's parse.timestamp=true: ts:key:value, here with Long values
    status, out, err = kspark(capsys, monkeypatch, "topics", "produce", "--topics-dir", d, "--topic", "words",
                              "--property", "parse.key=true", "--property", "parse.timestamp=true",
                              "--property", "key.separator=:", "--value-serde", "Long", stdin="5:y:1\n7:b:-2\n")
    assert status == 0, err
    assert partitionForKey(b"y", 3) == 0
    zero = topics.read("words", 0, 0, 1)
    assert (zero.column("key").to_pylist(), zero.column("value").to_pylist(), zero.column("timestamp").to_pylist()) \
        == ([b"y"], [struct.pack(">q", 1)], [5])

    status, out, err = kspark(capsys, monkeypatch, "topics", "describe", "--topics-dir", d, "--topic", "words")
    assert out == ("Topic: words\tPartitionCount: 3\tRecords: 5\n"
                   "\tTopic: words\tPartition: 0\tStartOffset: 0\tEndOffset: 1\n"
                   "\tTopic: words\tPartition: 1\tStartOffset: 0\tEndOffset: 2\n"
                   "\tTopic: words\tPartition: 2\tStartOffset: 0\tEndOffset: 2\n")
    assert kspark(capsys, monkeypatch, "topics", "list", "--topics-dir", d) == (0, "words\n", "")

    # partition 1 from offset 0, print.* as Kafka's console consumer prints them
    status, out, err = kspark(capsys, monkeypatch, "topics", "consume", "--topics-dir", d, "--topic", "words",
                              "--partition", "1", "--offset", "0", "--max-messages", "2", "--property", "print.key=true",
                              "--property", "print.partition=true", "--property", "print.offset=true")
    assert (status, out, err) == (0, 'Partition:1\tOffset:0\ta\t{"n":1}\nPartition:1\tOffset:1\tc\tnull\n',
                                  "Processed a total of 2 messages\n")
    # a record the value serde cannot read is an error naming topic, partition and offset
    status, out, err = kspark(capsys, monkeypatch, "topics", "consume", "--topics-dir", d, "--topic", "words",
                              "--from-beginning", "--timeout-ms", "0")
    assert status == 1 and out == ""
    assert err.startswith("kspark topics: the record at words-0 offset 0 does not deserialize with Serdes.String() / "
                          "Serdes.JSON(): SerializationException")
    status, out, err = kspark(capsys, monkeypatch, "topics", "consume", "--topics-dir", d, "--topic", "words",
                              "--partition", "2", "--from-beginning", "--timeout-ms", "0", "--value-serde", "ByteArray",
                              "--property", "print.timestamp=true", "--property", "print.key=true")
    first, second = out.splitlines()
    assert first.split("\t")[1:] == ["b", '{"n":2}'] and first.startswith("CreateTime:")
    assert second == "CreateTime:7\tb\t" + "\ufffd" * 7 + "\ufffd"  # Long -2's bytes ff..fe, shown as UTF-8
    assert err == "Processed a total of 2 messages\n"


def test_consume_waits_for_new_records_from_the_end_as_kafkas_console_consumer(tmp_path, capsys, monkeypatch):
    d = str(tmp_path / "topics")
    topics = LocalTopics(d)
    topics.createTopic("out", 1)
    topics.produce("out", [(b"old", b'"o"', 1)], partitioner=lambda k, n: 0)
    # without --from-beginning only records produced after it started count: it waits for them
    later = threading.Timer(0.3, lambda: topics.produce("out", [(b"new", b'"n"', 2)], partitioner=lambda k, n: 0))
    later.start()
    assert kspark(capsys, monkeypatch, "topics", "consume", "--topics-dir", d, "--topic", "out", "--timeout-ms", "5000",
                  "--max-messages", "1", "--property", "print.key=true") == (0, "new\tn\n", "Processed a total of 1 messages\n")
    later.join()
    assert kspark(capsys, monkeypatch, "topics", "consume", "--topics-dir", d, "--topic", "out", "--timeout-ms", "300") \
        == (0, "", "Processed a total of 0 messages\n")


def test_errors_name_what_is_wrong(tmp_path, capsys, monkeypatch):
    d = str(tmp_path / "topics")
    status, out, err = kspark(capsys, monkeypatch, "topics", "produce", "--topics-dir", d, "--topic", "nope", stdin="x\n")
    assert (status, err) == (1, f"kspark topics: Topic 'nope' does not exist (kspark.topics.dir={d}); create it with: "
                                "kspark topics create --topic nope --partitions N\n")
    LocalTopics(d).createTopic("n", 1)
    status, out, err = kspark(capsys, monkeypatch, "topics", "produce", "--topics-dir", d, "--topic", "n",
                              "--value-serde", "Long", stdin="12\nseven\n")
    assert (status, err) == (1, "kspark topics: line 2: the value 'seven' is not a Serdes.Long() value for topic n: "
                                "invalid literal for int() with base 10: 'seven'\n")
    assert LocalTopics(d).endOffsets("n") == {0: 0}  # nothing written when a line is bad
    status, out, err = kspark(capsys, monkeypatch, "topics", "produce", "--topics-dir", d, "--topic", "n",
                              "--property", "parse.keys=true", stdin="x\n")
    assert (status, err) == (1, "kspark topics: unknown --property parse.keys for produce; known: parse.key, "
                                "parse.timestamp, key.separator, null.marker\n")
    status, out, err = kspark(capsys, monkeypatch, "topics", "consume", "--topics-dir", d, "--topic", "n",
                              "--partition", "0", "--offset", "-5", "--timeout-ms", "0")
    assert (status, err) == (1, "kspark topics: Offset -5 for n-0 is negative\n")
    status, out, err = kspark(capsys, monkeypatch, "topics", "consume", "--topics-dir", d, "--topic", "n",
                              "--value-serde", "Nope", "--timeout-ms", "0")
    assert status == 1 and err.startswith("kspark topics: --value-serde Nope: not a serde (")


def test_the_config_file_gives_the_topics_dir_and_the_serdes(tmp_path, capsys, monkeypatch):
    d = tmp_path / "topics"
    props = tmp_path / "app.properties"
    props.write_text(f"application.id=app\nkspark.topics.dir={d}\n"
                     "default.key.serde=org.apache.kafka.common.serialization.Serdes$LongSerde\n"
                     "default.value.serde=Serdes.String\n")
    LocalTopics(d).createTopic("in", 2)
    assert kspark(capsys, monkeypatch, "topics", "produce", "-c", str(props), "--topic", "in",
                  "--property", "parse.key=true", stdin="42\tforty-two\n")[0] == 0
    [partition] = [p for p, end in LocalTopics(d).endOffsets("in").items() if end == 1]
    assert partition == partitionForKey(struct.pack(">q", 42), 2)
    assert kspark(capsys, monkeypatch, "topics", "consume", "-c", str(props), "--topic", "in", "--from-beginning",
                  "--max-messages", "1", "--property", "print.key=true", "--property", "key.separator=|") \
        == (0, "42|forty-two\n", "Processed a total of 1 messages\n")

"""The librdkafka configuration of kspark's range reader (``kspark.topics._kafka._readerConfig``):
large fetches unless the user set a fetch size, no 1 s fetch backoff between ranges unless the
configuration sets one; never commits; stops at the end of its range.
What it reads is checked against a plain consumer in tests/kafka/test_kafka_topics.py."""

from kspark.topics._kafka import _readerConfig

BASE = {"bootstrap.servers": "127.0.0.1:9092", "isolation.level": "read_committed"}


def test_the_reader_fetches_up_to_16_mb_per_partition_by_default():
    config = _readerConfig(BASE)
    assert config["max.partition.fetch.bytes"] == str(16 * 1024 * 1024)
    assert config["fetch.max.bytes"] == str(64 * 1024 * 1024)
    assert config["isolation.level"] == "read_committed" and config["fetch.wait.max.ms"] == "10"
    assert config["enable.auto.commit"] == "false" and config["auto.offset.reset"] == "error"
    assert config["group.id"] == "kspark-reader"


def test_a_fetch_size_the_user_set_is_kept_and_the_other_left_to_librdkafka():
    # consumer.fetch.max.bytes alone: our 16 MB per partition could exceed it
    config = _readerConfig({**BASE, "fetch.max.bytes": "1048576"})
    assert config["fetch.max.bytes"] == "1048576" and "max.partition.fetch.bytes" not in config
    config = _readerConfig({**BASE, "max.partition.fetch.bytes": "262144", "fetch.wait.max.ms": "100"})
    assert config["max.partition.fetch.bytes"] == "262144" and "fetch.max.bytes" not in config
    assert config["fetch.wait.max.ms"] == "100"


def test_the_reader_postpones_a_full_queues_next_fetch_by_10_ms_unless_its_configuration_says_otherwise():
    # librdkafka's 1000 ms made the pooled reader wait about 1 s at the start of a range
    assert _readerConfig(BASE)["fetch.queue.backoff.ms"] == "10"
    assert _readerConfig({**BASE, "fetch.queue.backoff.ms": "500"})["fetch.queue.backoff.ms"] == "500"

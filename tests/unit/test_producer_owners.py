"""The Kafka sink's transactional producers when a writer task moves between Python workers
(issue 34): a worker drops its cached producer once another process on the machine has
initialized the same transactional id (which fenced it), and makes the new one before the
batch's records arrive, instead of failing its first request as fenced and writing the batch
again. The transactions themselves are tested against a broker in tests/kafka/test_kafka_spark.py."""

import tempfile

import pytest

import kspark.topics._kafka as kafka


class FakeProducer:
    made: list = []

    def __init__(self, config):
        self.config = config
        FakeProducer.made.append(self)

    def list_topics(self, timeout=None):
        self.metadataFirst = not getattr(self, "initialized", False)

    def init_transactions(self, timeout):
        self.initialized = True


@pytest.fixture
def owners(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(kafka, "_OWNERS", None)
    monkeypatch.setattr(kafka, "_PRODUCERS", {})
    import confluent_kafka

    monkeypatch.setattr(confluent_kafka, "Producer", FakeProducer)
    FakeProducer.made = []
    return tmp_path


def test_a_process_knows_when_another_one_claimed_a_transactional_id(owners):
    here, there = kafka._ProducerOwners(), kafka._ProducerOwners()  # two processes' registries
    assert here.mine("app-0") and there.mine("app-0")  # nothing recorded: the broker will tell
    here.claim("app-0")
    assert here.mine("app-0") and not there.mine("app-0")
    there.claim("app-0")
    assert not here.mine("app-0") and there.mine("app-0")
    assert here.mine("app-1")  # ids are independent
    assert list(owners.glob("kspark-producer-owners-*/*")) and not list(owners.glob("**/*.tmp"))


def test_a_cached_producer_is_replaced_before_the_records_once_another_process_took_its_id(owners):
    writer = kafka.KafkaSinkWriter({"bootstrap.servers": "127.0.0.1:1"}, {}, "app", True, "app-sub-0")
    writer.prepare(0)
    first = kafka._PRODUCERS["app-sub-0-0"]
    assert first.initialized and first.config["transactional.id"] == "app-sub-0-0"
    assert first.metadataFirst  # a broker connection up before init_transactions (topics._kafka.initTransactions)
    writer.prepare(0)
    assert kafka._PRODUCERS["app-sub-0-0"] is first and len(FakeProducer.made) == 1  # still this process's
    kafka._ProducerOwners().claim("app-sub-0-0")  # another Python worker ran writer 0 since
    writer.prepare(0)
    assert kafka._PRODUCERS["app-sub-0-0"] is not first and len(FakeProducer.made) == 2
    kafka.KafkaSinkWriter({}, {}, "app", False, "app-sub-0").prepare(0)  # at_least_once: no transactions
    assert len(FakeProducer.made) == 2

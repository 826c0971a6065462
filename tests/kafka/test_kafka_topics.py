"""kspark's Kafka backend (``kspark.topics.KafkaTopics``) against a real broker: what it reads is
what a ``read_committed`` Kafka consumer reads, gaps included (issue 18)."""

import time

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from kspark import StreamsConfig
from kspark.errors import StreamsException
from kspark.topics import KafkaTopics, OffsetOutOfRangeException, TopicExistsException, openTopics
from kspark.runtime.stream_task import decodeHeaders


@pytest.fixture()
def topics(kafkaBroker):
    return openTopics({"bootstrap.servers": kafkaBroker.bootstrapServers})


def consumerRead(servers, topic, partition, isolation="read_committed"):
    """(offset, timestamp, key, value, headers) of every record, as a plain Kafka consumer sees them."""
    consumer = Consumer({"bootstrap.servers": servers, "group.id": "plain-reader", "enable.auto.commit": False,
                         "isolation.level": isolation, "enable.partition.eof": True, "auto.offset.reset": "earliest",
                         "log_level": 0})
    consumer.assign([TopicPartition(topic, partition, 0)])
    out = []
    try:
        while True:
            m = consumer.poll(10)
            assert m is not None, "no end of partition within 10 s"
            if m.error():
                assert m.error().code() == KafkaError._PARTITION_EOF, m.error()
                return out
            out.append((m.offset(), m.timestamp()[1], m.key(), m.value(), tuple(m.headers() or ())))
    finally:
        consumer.close()


def keptRead(topics, topic, partition):
    table = topics.read(topic, partition, 0, topics.endOffsets(topic)[partition])
    return [(r["offset"], r["timestamp"], r["key"], r["value"], decodeHeaders(r["headers"])) for r in table.to_pylist()]


def test_aborted_and_open_transactions_leave_gaps_read_as_a_read_committed_consumer_reads(kafkaBroker, topics):
    servers = kafkaBroker.bootstrapServers
    topics.createTopic("txn-gaps", 1)
    plain = Producer({"bootstrap.servers": servers, "log_level": 0})
    plain.produce("txn-gaps", b"v0", b"k0", timestamp=1_000, headers=[("h", b"x"), ("nil", None)])
    plain.flush()
    aborted = Producer({"bootstrap.servers": servers, "transactional.id": "gaps-aborted", "log_level": 0})
    aborted.init_transactions()
    aborted.begin_transaction()
    for i in range(3):
        aborted.produce("txn-gaps", f"aborted{i}".encode(), b"ka", timestamp=2_000 + i)
    aborted.flush()  # in the log, then aborted
    aborted.abort_transaction()
    committed = Producer({"bootstrap.servers": servers, "transactional.id": "gaps-committed", "log_level": 0})
    committed.init_transactions()
    committed.begin_transaction()
    committed.produce("txn-gaps", b"v1", b"k1", timestamp=3_000)
    committed.commit_transaction()
    committed.begin_transaction()  # left open: its records lie beyond the last stable offset
    committed.produce("txn-gaps", b"open", b"k2", timestamp=4_000)
    committed.flush()

    got = keptRead(topics, "txn-gaps", 0)
    # offsets 1-3 aborted, 4 their abort marker, 6 the commit marker: read_committed skips them
    assert got == [(0, 1_000, b"k0", b"v0", (("h", b"x"), ("nil", None))), (5, 3_000, b"k1", b"v1", ())]
    assert topics.endOffsets("txn-gaps") == {0: 7}  # the open transaction starts at 7: the LSO
    assert got == consumerRead(servers, "txn-gaps", 0)
    committed.abort_transaction()
    # a range that starts and ends inside the aborted records holds nothing
    assert topics.read("txn-gaps", 0, 1, 4).num_rows == 0


def test_compacted_topic_offsets_have_gaps_and_are_read_as_the_consumer_reads_them(kafkaBroker, topics):
    servers = kafkaBroker.bootstrapServers
    topics.createTopic("compacted", 1, config={"cleanup.policy": "compact", "segment.ms": "100",
                                               "min.cleanable.dirty.ratio": "0.001", "min.compaction.lag.ms": "0",
                                               "delete.retention.ms": "100"})
    producer = Producer({"bootstrap.servers": servers, "log_level": 0})
    deadline = time.time() + 60
    got = []
    rounds = 0
    while time.time() < deadline:
        # the same 4 keys again and again around a key of its own per round (which compaction
        # keeps between the removed ones); a new segment rolls every 100 ms
        for i in range(20):
            key = f"only-{rounds}" if i == 10 else f"k{i % 4}"
            producer.produce("compacted", f"v{i}".encode(), key.encode())  # timestamp now: the cleaner's clock
        producer.flush()
        rounds += 1
        time.sleep(0.3)
        got = keptRead(topics, "compacted", 0)
        offsets = [r[0] for r in got]
        if offsets and offsets[-1] + 1 - offsets[0] > len(offsets):  # the cleaner removed records
            break
    else:
        pytest.fail("the broker did not compact the topic within 60 s")
    while True:  # the cleaner may still be at work: compare once the log stays as it is
        time.sleep(1.5)
        again = keptRead(topics, "compacted", 0)
        if again == got:
            break
        assert time.time() < deadline + 30, "the compacted log kept changing"
        got = again
    assert got == consumerRead(servers, "compacted", 0)
    assert len({r[0] for r in got}) == len(got) and [r[0] for r in got] == sorted(r[0] for r in got)


def test_log_append_time_replaces_the_producer_timestamp(kafkaBroker, topics):
    topics.createTopic("appended", 1, config={"message.timestamp.type": "LogAppendTime"})
    before = int(time.time() * 1000)
    topics.produce("appended", [(b"k", b"v", 5)], partitioner=lambda key, n: 0)
    [(offset, timestamp, key, value, headers)] = keptRead(topics, "appended", 0)
    assert before - 1_000 <= timestamp <= int(time.time() * 1000) + 1_000
    assert [(offset, timestamp, key, value, headers)] == consumerRead(kafkaBroker.bootstrapServers, "appended", 0)


def test_records_deleted_by_retention_raise_offset_out_of_range_naming_the_partition(kafkaBroker, topics):
    from confluent_kafka.admin import AdminClient

    topics.createTopic("retained", 1)
    topics.produce("retained", [(b"k", f"v{i}".encode(), i) for i in range(10)], partitioner=lambda key, n: 0)
    admin = AdminClient({"bootstrap.servers": kafkaBroker.bootstrapServers})
    for future in admin.delete_records([TopicPartition("retained", 0, 6)]).values():
        future.result()
    assert topics.beginningOffsets("retained") == {0: 6}
    with pytest.raises(OffsetOutOfRangeException, match="Offset 2 of retained-0 is out of range"):
        topics.read("retained", 0, 2, 10)
    assert topics.read("retained", 0, 6, 10).column("value").to_pylist() == [b"v6", b"v7", b"v8", b"v9"]


def test_admin_calls_and_topic_ids(kafkaBroker, topics):
    topics.createTopic("admin-a", 3)
    assert topics.partitionsFor("admin-a") == 3
    assert topics.partitionsFor("admin-missing") is None
    assert topics.endOffsets("admin-a") == {0: 0, 1: 0, 2: 0}
    with pytest.raises(TopicExistsException, match="^Topic 'admin-a' already exists. It has 3 partitions, not 2.$"):
        topics.createTopic("admin-a", 2)
    topics.createTopic("admin-a", 3, ifNotExists=True)
    first = topics.topicId("admin-a")
    topics.deleteTopic("admin-a")
    topics.createTopic("admin-a", 3)
    assert topics.topicId("admin-a") not in (None, first)  # a recreated topic is told apart by its id


def test_unreachable_bootstrap_servers_fail_with_a_clear_error_within_the_timeout():
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    from kspark import KafkaStreams, StreamsBuilder

    b = StreamsBuilder()
    b.stream("in").to("out")
    config = StreamsConfig({"application.id": "unreachable", "bootstrap.servers": f"127.0.0.1:{port}",
                            "admin.default.api.timeout.ms": 3000})  # the default is 30 s
    started = time.monotonic()
    with pytest.raises(StreamsException, match=rf"The Kafka cluster at bootstrap.servers=127.0.0.1:{port} did not answer "
                                               r"within 3 s"):
        KafkaStreams(b.build(), config).start()  # before Spark starts
    assert time.monotonic() - started < 10


def test_an_admin_request_left_unanswered_fails_naming_bootstrap_servers(monkeypatch):
    """A broker stopped mid-run can leave an admin future unresolved: the timeout names the
    cluster (a CI run once failed with a bare ``TimeoutError`` from ``committedOffsets``)."""
    from concurrent.futures import Future

    class Silent:  # an admin client whose requests never get an answer
        def list_consumer_group_offsets(self, requests, **_):
            return {r.group_id: Future() for r in requests}

        def list_offsets(self, requests, **_):
            return {tp: Future() for tp in requests}

    topics = KafkaTopics({"bootstrap.servers": "127.0.0.1:1", "default.api.timeout.ms": 200})
    monkeypatch.setattr(topics, "_adminClient", Silent)
    monkeypatch.setattr(topics, "partitionsFor", lambda name: 2)
    message = r"The Kafka cluster at bootstrap.servers=127.0.0.1:1 did not answer within 0.2 s: no answer"
    with pytest.raises(StreamsException, match=message):
        topics.committedOffsets("app", "in")
    with pytest.raises(StreamsException, match=message):
        topics.endOffsets("in")


def test_an_admin_read_left_unanswered_is_asked_again_within_the_timeout(monkeypatch):
    """A request sent to a broker that then stopped is not answered even once the broker is back
    (the crash test's 10 s outage failed the run 30 s later on it): an offsets read not answered
    within ``_ATTEMPT_S`` is made again, and the second answer taken."""
    from concurrent.futures import Future
    from types import SimpleNamespace

    from confluent_kafka import ConsumerGroupTopicPartitions

    import kspark.topics._kafka as kafkaModule

    monkeypatch.setattr(kafkaModule, "_ATTEMPT_S", 0.1)
    asked = []

    def answeredSecondTime(kind, value):
        asked.append(kind)
        future = Future()
        if asked.count(kind) > 1:
            future.set_result(value)
        return future

    class Recovering:  # the first request of each kind is never answered
        def list_consumer_group_offsets(self, requests, **_):
            return {r.group_id: answeredSecondTime("group", ConsumerGroupTopicPartitions(
                r.group_id, [TopicPartition("in", 0, 7), TopicPartition("in", 1, -1001)])) for r in requests}

        def list_offsets(self, requests, **_):
            return {tp: answeredSecondTime(f"offsets-{tp.partition}", SimpleNamespace(offset=40 + tp.partition))
                    for tp in requests}

    topics = KafkaTopics({"bootstrap.servers": "127.0.0.1:1", "default.api.timeout.ms": 5000})
    monkeypatch.setattr(topics, "_adminClient", Recovering)
    monkeypatch.setattr(topics, "partitionsFor", lambda name: 2)
    assert {p: offset for p, (offset, _) in topics.committedOffsets("app", "in").items()} == {0: 7}
    assert asked == ["group", "group"]
    assert topics.endOffsets("in") == {0: 40, 1: 41}


def test_java_only_client_keys_are_dropped_renamed_ones_mapped_and_sasl_jaas_credentials_mapped():
    from kspark.topics._kafka import librdkafkaConfig

    conf = librdkafkaConfig({"bootstrap.servers": "127.0.0.1:1", "max.poll.records": "5", "fetch.max.wait.ms": "50",
                             "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                             "sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required '
                                                 'username="alice" password="s3cret";'}, "consumer")
    assert conf == {"bootstrap.servers": "127.0.0.1:1", "fetch.wait.max.ms": "50",
                    "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                    "sasl.username": "alice", "sasl.password": "s3cret"}
    assert isinstance(KafkaTopics({"bootstrap.servers": "127.0.0.1:1"}), KafkaTopics)


def test_kspark_topics_cli_on_kafka(kafkaBroker, capsys, monkeypatch):
    """Issue 36 item 13: ``kspark topics ... --bootstrap-server`` creates, fills and reads a Kafka
    topic; a plain Kafka consumer reads the records at Kafka's partitions for their keys (DP-2)."""
    import io

    from kspark.cli import main
    from kspark.runtime.partitioner import partitionForKey

    server = ["--bootstrap-server", kafkaBroker.bootstrapServers]
    assert main(["topics", "create", *server, "--topic", "cli-words", "--partitions", "3"]) == 0
    monkeypatch.setattr("sys.stdin", io.StringIO("1000\ta\t{\"n\": 1}\n2000\tb\t{\"n\": 2}\n"))
    assert main(["topics", "produce", *server, "--topic", "cli-words", "--property", "parse.key=true",
                 "--property", "parse.timestamp=true"]) == 0
    assert main(["topics", "list", *server]) == 0
    capsys.readouterr()
    assert main(["topics", "consume", *server, "--topic", "cli-words", "--from-beginning", "--max-messages", "2",
                 "--property", "print.key=true", "--property", "print.partition=true"]) == 0
    out, err = capsys.readouterr()
    assert sorted(out.splitlines()) == [f'Partition:{partitionForKey(b"a", 3)}\ta\t{{"n":1}}',
                                        f'Partition:{partitionForKey(b"b", 3)}\tb\t{{"n":2}}']
    assert err == "Processed a total of 2 messages\n"
    read = {p: consumerRead(kafkaBroker.bootstrapServers, "cli-words", p) for p in range(3)}
    assert [(p, r[1:4]) for p in range(3) for r in read[p]] == sorted(
        [(partitionForKey(b"a", 3), (1000, b"a", b'{"n":1}')), (partitionForKey(b"b", 3), (2000, b"b", b'{"n":2}'))])


def test_producers_report_failed_records_only_and_a_refused_record_still_fails_the_write(kafkaBroker, topics):
    """kspark's producers take librdkafka's delivery reports of failed records only
    (``FAILED_DELIVERIES_ONLY``; their callbacks act on errors alone): 3 records the broker
    accepts give no report, one it refuses (over the topic's ``max.message.bytes``) gives its
    error, and a write with such a record fails naming the topic, as before."""
    from kspark.topics._kafka import FAILED_DELIVERIES_ONLY

    topics.createTopic("small-records", 1, config={"max.message.bytes": "1000"})
    reports = []
    producer = Producer({**FAILED_DELIVERIES_ONLY, "bootstrap.servers": kafkaBroker.bootstrapServers})
    for values in ([b"a", b"b"], [b"x" * 5_000], [b"c"]):  # the broker refuses a refused record's whole request
        for value in values:
            producer.produce("small-records", value, b"k", 0, lambda err, msg: reports.append((err, msg.value())))
        assert producer.flush(30) == 0
    assert [(err.code(), value) for err, value in reports] == [(KafkaError.MSG_SIZE_TOO_LARGE, b"x" * 5_000)]
    with pytest.raises(StreamsException, match=r"^Producing to small-records failed: .*[Mm]essage size too large"):
        topics.produce("small-records", [(b"k", b"d", 5), (b"k", b"y" * 5_000, 6)], partitioner=lambda key, n: 0)

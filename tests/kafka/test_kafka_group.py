"""One owner per application on Kafka (issue 37 item 1): the driver is a member of the consumer
group application.id, as a Kafka Streams instance's threads are; a second instance is refused at
start, naming the member; a transactional writer fenced by another instance fails with Kafka's
ProducerFencedException text instead of taking its transactional id back."""

import pyarrow as pa
import pytest
from confluent_kafka import Producer

from kspark import Consumed, KafkaStreams, Produced, Serdes, StreamsBuilder, StreamsException
from kspark.topics import openTopics
from kspark.topics._kafka import GroupMember, KafkaSinkWriter, _librdkafkaLog, groupMembers


def test_a_second_instance_is_refused_while_the_first_is_a_member_of_the_group(spark, kafkaBroker, tmp_path):
    """Two instances with the same application.id and different state.dirs each processed every
    partition (641 signals instead of 362, both exiting 0). The first one's driver is a member of
    group application.id (what kafka-consumer-groups --describe lists); the second is refused
    before it processes a record, naming that member; the first's output is exact."""
    topics = openTopics({"bootstrap.servers": kafkaBroker.bootstrapServers})
    topics.createTopic("owner-in", 2)
    topics.createTopic("owner-out", 2)
    strings = Serdes.String()
    topics.produce("owner-in", [(strings.serialize("t", f"k{i}"), strings.serialize("t", f"v{i}"), 1_000 + i)
                                for i in range(40)], partitioner=lambda key, n: int(key[1:]) % n)
    b = StreamsBuilder()
    (b.stream("owner-in", Consumed.with_(Serdes.String(), Serdes.String())).mapValues(str.upper)
     .to("owner-out", Produced.with_(Serdes.String(), Serdes.String())))

    def props(stateDir):
        return {"application.id": "owner-app", "bootstrap.servers": kafkaBroker.bootstrapServers,
                "state.dir": str(tmp_path / stateDir), "processing.guarantee": "exactly_once_v2"}

    first = KafkaStreams(b.build(), props("state-1"), spark=spark)
    first.start()
    try:
        [member] = groupMembers(topics.adminConfig, "owner-app")
        assert member.client_id.startswith("owner-app-") and "-kspark-driver-" in member.client_id
        assert sorted((tp.topic, tp.partition) for tp in member.assignment.topic_partitions) == [
            ("owner-in", 0), ("owner-in", 1)]
        second = KafkaStreams(b.build(), props("state-2"), spark=spark)
        with pytest.raises(StreamsException, match=rf"^Another instance of application.id owner-app is running: its "
                                                   rf"consumer group has the live member {member.client_id} on host "
                                                   rf"127.0.0.1 \(member id {member.member_id}\)"):
            second.start()
        first.awaitTermination()
    finally:
        first.close()
    assert groupMembers(topics.adminConfig, "owner-app") == []  # left at close, not after the session timeout
    out = sorted((r["key"].decode(), r["value"].decode()) for p, end in topics.endOffsets("owner-out").items()
                 for r in topics.read("owner-out", p, 0, end).to_pylist())
    assert out == sorted((f"k{i}", f"V{i}") for i in range(40))  # each record once: only the first instance wrote


def test_a_writer_fenced_by_another_instance_fails_with_producer_fenced_exception(kafkaBroker):
    """A writer fenced by a newer producer of this instance (a task that moved to another Python
    worker) takes its transactional id back; one fenced while another instance is a member of the
    group fails with Kafka's ProducerFencedException text and does not re-init (which would fence
    the other instance in turn and interleave their transactions)."""
    topics = openTopics({"bootstrap.servers": kafkaBroker.bootstrapServers})
    topics.createTopic("fence-in", 1)
    topics.createTopic("fence-out", 1)
    transactionalId = "fence-app-subtopology-0-0"

    def record(value):
        return [("fence-out", 0, pa.table({"timestamp": [1_000], "key": [b"k"], "value": [value], "headers": [None]}))]

    def newerProducer():
        producer = Producer({**topics.producerConfig, "transactional.id": transactionalId, "logger": _librdkafkaLog})
        producer.init_transactions(30)  # fences the writer's producer
        return producer

    ours = GroupMember(topics, "fence-app", "instance-a", ["fence-in"])
    ours.join()
    writer = KafkaSinkWriter(topics.producerConfig, topics.consumerConfig, "fence-app", True, "fence-app-subtopology-0",
                             ownerClientId="instance-a")
    assert writer.write(0, "ckpt", 0, record(b"a0"), {("fence-in", 0): 1}) == 1
    newerProducer()  # this instance's own: no other member in the group
    assert writer.write(0, "ckpt", 1, record(b"a1"), {("fence-in", 0): 2}) == 1

    ours.close()  # this instance lost the group (e.g. stalled past its session timeout) ...
    theirs = GroupMember(topics, "fence-app", "instance-b", ["fence-in"])
    theirs.join()  # ... and another instance took it over
    try:
        other = newerProducer()
        with pytest.raises(StreamsException, match=r"^Writing to Kafka with fence-app-subtopology-0-0 failed: "
                                                   r"ProducerFencedException: There is a newer producer with the same "
                                                   r"transactionalId which fences the current one\. \(consumer group "
                                                   r"fence-app has the member instance-b on host 127\.0\.0\.1"):
            writer.write(0, "ckpt", 2, record(b"a2"), {("fence-in", 0): 3})
        other.begin_transaction()  # not fenced back: the failed writer did not take the id again
        other.produce("fence-out", key=b"k", value=b"b2", partition=0, timestamp=2_000)
        other.commit_transaction(30)
    finally:
        theirs.close()
    assert topics.read("fence-out", 0, 0, topics.endOffset("fence-out", 0)).column("value").to_pylist() == [
        b"a0", b"a1", b"b2"]

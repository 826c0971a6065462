"""kspark on Spark over Kafka topics (issue 18): the same records as TopologyTestDriver, Kafka's
errors for missing topics and changed partition counts, poison records under each handler."""

import sys
from datetime import timedelta
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))

import valuation_signals as vs  # noqa: E402
from kspark import (  # noqa: E402
    AutoOffsetReset, Consumed, KafkaStreams, LogAndContinueExceptionHandler, MissingSourceTopicException, Produced, Serdes,
    SessionWindows, StreamsBuilder, StreamsException,
)
from kspark.runtime.partitioner import partitionForKey  # noqa: E402
from kspark.testing import TopologyTestDriver  # noqa: E402
from kspark.topics import openTopics  # noqa: E402

PRICE_ROWS = 6_000


def kafkaProps(broker, tmp_path, appId, **more):
    return {"application.id": appId, "bootstrap.servers": broker.bootstrapServers, "state.dir": str(tmp_path / "state"),
            "processing.guarantee": "exactly_once_v2", **more}


def run(topology, props, spark):
    streams = KafkaStreams(topology, props, spark=spark)
    streams.start()
    streams.awaitTermination()
    streams.close()
    return streams


def readAll(topics, topic):
    """(partition, key, value, timestamp) of every record, read_committed, in offset order per partition."""
    rows = []
    for p, end in sorted(topics.endOffsets(topic).items()):
        t = topics.read(topic, p, 0, end)
        rows += [(p, r["key"], r["value"], r["timestamp"]) for r in t.to_pylist()]
    return rows


def test_flagship_job_on_kafka_gives_the_drivers_signals(spark, kafkaBroker, tmp_path, request):
    """Seed 004's job with prices (5 partitions), valuations (1) and companies on a real broker,
    exactly_once_v2: the signals read back read_committed equal TopologyTestDriver's (rules
    J-1..J-8, T-11..T-14). Its topics are deleted afterwards: the cluster tests load their own."""
    prices = vs.readPrices(PRICE_ROWS)
    valuations = [v for v in vs.readValuations() if v["date"] <= prices[-1]["trade_date"]]
    topics = openTopics({"bootstrap.servers": kafkaBroker.bootstrapServers})
    vs.loadTopics(topics, prices, valuations)
    request.addfinalizer(lambda: [topics.deleteTopic(t) for t in ("prices", "valuations", "companies", "signals")])
    expected = vs.driverSignals(prices, valuations)

    run(vs.buildTopology(), kafkaProps(kafkaBroker, tmp_path, "flagship-kafka", **{"kspark.max.records.per.trigger": 2_000}),
        spark)
    got = vs.readSignals(topics)
    assert len(expected) > 50
    assert got == expected
    # Kafka Streams' repartition topic name, created by kspark with the input's partition count
    assert topics.partitionsFor("flagship-kafka-valuations-by-code-repartition") == 5
    # the input offsets were committed to the group application.id in the batches' transactions
    committed = topics.committedOffsets("flagship-kafka", "prices")
    assert {p: o for p, (o, _) in committed.items()} == {p: e for p, e in topics.endOffsets("prices").items()}
    # in Kafka Streams' offset metadata: the partition's time, and the writing checkpoint and batch
    # (issue 33: a Kafka Streams application taking over resumes with the partition times)
    from kspark.topics._kafka import decodeStreamsMetadata

    for p, (_, meta) in committed.items():
        partitionTime, processorMetadata = decodeStreamsMetadata(meta)
        assert partitionTime > 0 and [k.split(":")[0] for k in processorMetadata] == ["kspark1"], (p, meta)


def test_session_window_counts_on_kafka_equal_the_drivers(spark, kafkaBroker, tmp_path):
    """Session count with every update and tombstone (cache off): Kafka-backed Spark == driver
    (rules SA-4, SA-5, SA-12)."""
    # a host's requests 7 s apart (one session each with an 8 s gap), a 20 s pause every 100 records
    # (from 1 s: librdkafka produces a timestamp of 0 as "now")
    records = [(f"host{i % 7}", 1_000 * (i + 1) + (i // 100) * 20_000 + (i % 5) * 250, i) for i in range(400)]
    topics = openTopics({"bootstrap.servers": kafkaBroker.bootstrapServers})
    topics.createTopic("sessions-in", 3)
    topics.createTopic("sessions-out", 3)
    key, value = Serdes.String(), Serdes.Long()
    topics.produce("sessions-in", [(key.serialize("t", k), value.serialize("t", v), ts) for k, ts, v in records],
                   partitioner=partitionForKey)

    def topology():
        b = StreamsBuilder()
        (b.stream("sessions-in", Consumed.with_(Serdes.String(), Serdes.Long()))
         .groupByKey().windowedBy(SessionWindows.ofInactivityGapWithNoGrace(8_000)).count()
         .toStream().to("sessions-out"))
        return b.build()

    config = {"statestore.cache.max.bytes": 0}
    with TopologyTestDriver(topology(), config) as d:
        src = d.createInputTopic("sessions-in", Serdes.String(), Serdes.Long())
        for k, ts, v in sorted(records, key=lambda r: r[1]):
            src.pipeInput(k, v, ts)
        raw = d.createOutputTopic("sessions-out", Serdes.ByteArray(), Serdes.ByteArray()).readRecordsToList()
    expected = sorted(((r.key(), r.value(), r.timestamp()) for r in raw), key=_tombstonesFirst)

    run(topology(), kafkaProps(kafkaBroker, tmp_path, "sessions-kafka", **config, **{"kspark.max.records.per.trigger": 150}),
        spark)
    got = sorted(((k, v, ts) for _, k, v, ts in readAll(topics, "sessions-out")), key=_tombstonesFirst)
    assert len(expected) > 400 and any(v is None for _, v, _ in expected)  # updates and tombstones
    assert got == expected


def _tombstonesFirst(record):
    key, value, timestamp = record
    return key, value is not None, value or b"", timestamp


def test_missing_source_topic_is_refused_with_kafkas_text(kafkaBroker, tmp_path):
    b = StreamsBuilder()
    b.stream("nowhere-to-be-found").to("nowhere-out")
    with pytest.raises(MissingSourceTopicException, match=r"^Missing source topics. \[nowhere-to-be-found\]$"):
        KafkaStreams(b.build(), kafkaProps(kafkaBroker, tmp_path, "missing")).start()


def test_a_partition_count_changed_since_the_checkpoint_is_an_error(spark, kafkaBroker, tmp_path):
    topics = openTopics({"bootstrap.servers": kafkaBroker.bootstrapServers})
    topics.createTopic("resized-in", 2)
    topics.createTopic("resized-out", 2)
    topics.produce("resized-in", [(b"a", b"1", 1), (b"b", b"2", 2)], partitioner=partitionForKey)
    b = StreamsBuilder()
    b.stream("resized-in").to("resized-out")
    props = kafkaProps(kafkaBroker, tmp_path, "resized")
    run(b.build(), props, spark)
    topics.deleteTopic("resized-in")
    topics.createTopic("resized-in", 3)
    with pytest.raises(StreamsException, match=r"Topic resized-in has 3 partitions, but had 2 when the checkpoint"):
        KafkaStreams(b.build(), props, spark=spark).start()


def test_each_source_reads_from_its_own_offset_reset_policy(spark, kafkaBroker, tmp_path):
    """Consumed.withOffsetResetPolicy / Consumed.with_(AutoOffsetReset) override auto.offset.reset
    (earliest here) per source topic when the group has no committed offset, as Kafka's
    StreamThread resets each topic by its source's policy: ``latest`` reads nothing of the
    backlog, ``byDuration(1 h)`` starts at the first record of the last hour (offsetsForTimes),
    the default source reads everything."""
    import time

    now = int(time.time() * 1000)
    topics = openTopics({"bootstrap.servers": kafkaBroker.bootstrapServers})
    for name in ("reset-all", "reset-latest", "reset-recent", "reset-out"):
        topics.createTopic(name, 1)
    for name in ("reset-all", "reset-latest", "reset-recent"):
        topics.produce(name, [(b"k", f"{name}-old".encode(), now - 7_200_000), (b"k", f"{name}-new".encode(), now - 60_000)],
                       partitioner=partitionForKey)
    b = StreamsBuilder()
    strings = Consumed.with_(Serdes.String(), Serdes.String())
    b.stream("reset-all", strings).to("reset-out", Produced.with_(Serdes.String(), Serdes.String()))
    b.stream("reset-latest", strings.withOffsetResetPolicy(AutoOffsetReset.latest())).to(
        "reset-out", Produced.with_(Serdes.String(), Serdes.String()))
    b.stream("reset-recent", Consumed.with_(Serdes.String(), Serdes.String(), None,
                                            AutoOffsetReset.byDuration(timedelta(hours=1)))).to(
        "reset-out", Produced.with_(Serdes.String(), Serdes.String()))
    run(b.build(), kafkaProps(kafkaBroker, tmp_path, "reset", **{"auto.offset.reset": "earliest"}), spark)
    assert sorted(v.decode() for _, _, v, _ in readAll(topics, "reset-out")) == [
        "reset-all-new", "reset-all-old", "reset-recent-new"]
    assert topics.offsetsForTimes("reset-recent", now - 3_600_000) == {0: 1}
    assert topics.offsetsForTimes("reset-recent", now) == {0: 2}  # none that late: the end offset


def test_a_first_batch_that_failed_after_one_task_committed_is_replayed_from_the_same_offsets(spark, kafkaBroker,
                                                                                              tmp_path):
    """Exactly once across a failure in a new checkpoint's first micro-batch: one task's
    transaction committed its records and its partition's group offset, the other task failed.
    Spark asks the source for its initial offsets again on restart; they are the ones kept in
    subtopology-0/kspark-initial-offsets.json, not the group's offsets that the failed batch
    committed, so the replayed batch rebuilds the committed task's counts (written once), and
    the count goes on from them."""
    import os
    import time

    topics = openTopics({"bootstrap.servers": kafkaBroker.bootstrapServers})
    for name in ("first-in", "first-out"):
        topics.createTopic(name, 2)
    strings = Serdes.String()
    fast, slow = (next(k for k in "abcdefgh" if partitionForKey(strings.serialize("t", k), 2) == p) for p in (0, 1))
    flag = str(tmp_path / "fail")
    open(flag, "w").close()

    def failWhileFlagged(key, value):
        if key == slow and os.path.exists(flag):
            time.sleep(5)  # the other task commits its transaction first
            raise RuntimeError("injected failure")
        return value

    def produce(records):
        topics.produce("first-in", [(strings.serialize("t", k), strings.serialize("t", v), ts) for k, v, ts in records],
                       partitioner=partitionForKey)

    b = StreamsBuilder()
    (b.stream("first-in", Consumed.with_(Serdes.String(), Serdes.String())).mapValues(failWhileFlagged)
     .groupByKey().count().toStream().mapValues(str).to("first-out", Produced.with_(Serdes.String(), Serdes.String())))
    props = kafkaProps(kafkaBroker, tmp_path, "first-batch", **{"statestore.cache.max.bytes": 0})
    produce([(fast, "x", 1), (fast, "x", 2), (fast, "x", 3), (slow, "x", 4)])
    streams = KafkaStreams(b.build(), props, spark=spark)
    streams.start()
    with pytest.raises(StreamsException, match="injected failure"):
        streams.awaitTermination()
    streams.close()
    # the precondition: the fast task's transaction committed batch 0 before the slow one failed
    assert {p: o for p, (o, _) in topics.committedOffsets("first-batch", "first-in").items()} == {0: 3}

    os.remove(flag)
    produce([(fast, "x", 5)])  # after batch 0's planned end: the next batch
    run(b.build(), props, spark)
    got = [(k.decode(), v.decode(), ts) for _, k, v, ts in readAll(topics, "first-out")]
    assert got == [(fast, "1", 1), (fast, "2", 2), (fast, "3", 3), (fast, "4", 5), (slow, "1", 4)]
    with TopologyTestDriver(b.build(), {"statestore.cache.max.bytes": 0}) as d:  # an uninterrupted run
        source = d.createInputTopic("first-in")
        for key, ts in ((fast, 1), (fast, 2), (fast, 3), (slow, 4), (fast, 5)):
            source.pipeInput(key, "x", ts)
        driver = [(r.key(), r.value(), r.timestamp()) for r in d.createOutputTopic("first-out").readRecordsToList()]
    assert sorted(got) == sorted(driver)  # the same records; Spark's are read back partition by partition


@pytest.mark.parametrize("handler", ["LogAndFailExceptionHandler", "LogAndContinueExceptionHandler", "dead-letter"])
def test_poison_records_under_each_handler(spark, kafkaBroker, tmp_path, handler):
    """A value that is not a Long: the task fails naming topic, partition and offset
    (LogAndFail), or the record is skipped and counted (LogAndContinue), its original bytes in
    the dead-letter topic with KIP-1034's headers (issue 8 on Kafka)."""
    name = handler.lower()[:12]
    topics = openTopics({"bootstrap.servers": kafkaBroker.bootstrapServers})
    for t in ("in", "out", "dlq"):
        topics.createTopic(f"poison-{name}-{t}", 1)
    good = [(b"k%d" % i, i.to_bytes(8, "big"), 100 + i) for i in range(4)]
    poison = (b"k9", b"not-a-long", 200)
    topics.produce(f"poison-{name}-in", [*good[:2], poison, *good[2:]], partitioner=lambda key, n: 0)
    b = StreamsBuilder()
    (b.stream(f"poison-{name}-in", Consumed.with_(Serdes.String(), Serdes.Long())).mapValues(lambda v: v * 10)
     .to(f"poison-{name}-out", Produced.with_(Serdes.String(), Serdes.Long())))
    props = kafkaProps(kafkaBroker, tmp_path, f"poison-{name}")
    if handler != "LogAndFailExceptionHandler":
        props["deserialization.exception.handler"] = LogAndContinueExceptionHandler
    if handler == "dead-letter":
        props["errors.dead.letter.queue.topic.name"] = f"poison-{name}-dlq"
    streams = KafkaStreams(b.build(), props, spark=spark)
    streams.start()
    if handler == "LogAndFailExceptionHandler":
        with pytest.raises(StreamsException, match=rf"topic=poison-{name}-in, partition=0, offset=2: SerializationException"):
            streams.awaitTermination()
        streams.close()
        assert readAll(topics, f"poison-{name}-out") == []  # the failed batch's transaction never committed
        return
    streams.awaitTermination()
    streams.close()
    assert [(k, v, ts) for _, k, v, ts in readAll(topics, f"poison-{name}-out")] == [
        (k, (int.from_bytes(v, "big") * 10).to_bytes(8, "big"), ts) for k, v, ts in good]
    drops = {m.tag("reason"): v for m, v in streams.metrics().items() if m.group == "kspark-dropped-records"}
    assert drops == {"deserialization error": 1}
    dlq = topics.read(f"poison-{name}-dlq", 0, 0, topics.endOffsets(f"poison-{name}-dlq")[0]).to_pylist()
    if handler == "dead-letter":
        from kspark.runtime.stream_task import decodeHeaders

        [record] = dlq
        assert (record["key"], record["value"], record["timestamp"]) == poison
        headers = dict(decodeHeaders(record["headers"]))
        assert headers["__streams.errors.topic"] == f"poison-{name}-in".encode()
        assert headers["__streams.errors.offset"] == b"2"
    else:
        assert dlq == []

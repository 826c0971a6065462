"""A KStream-KStream outer join on Spark gives, per partition, TopologyTestDriver's records: the
two window stores, the outer-join store and the join's shared stream time live in the task's
checkpointed state across micro-batches (issue 20 item 1; J-6 co-partitioned inputs)."""

import random

from kspark import JoinWindows, KafkaStreams, Serdes, StreamJoined, StreamsBuilder
from kspark.runtime.partitioner import partitionForKey
from kspark.testing import TopologyTestDriver
from kspark.topics import LocalTopics

PARTITIONS = 2
CONFIG = {"default.key.serde": Serdes.String(), "default.value.serde": Serdes.String()}


def records(seed: int, parity: int):
    """(key, value, timestamp): mostly rising, some late; left even, right odd timestamps, so the
    task's choice between the two queues (smallest head timestamp) has no ties."""
    rng, ts, out = random.Random(seed), 0, []
    for i in range(70):
        ts += rng.choice([2, 10, 40, 400])
        t = max(0, ts - rng.choice([0, 0, 0, 300]))
        out.append((rng.choice("abcdef"), f"{'LR'[parity]}{i}", t - t % 2 + parity))
    return out


LEFT, RIGHT = records(1, 0), records(2, 1)


def topology():
    b = StreamsBuilder()
    (b.stream("left").outerJoin(b.stream("right"), lambda l, r: f"{l}+{r}", JoinWindows.ofTimeDifferenceAndGrace(60, 100),
                                StreamJoined.with_(Serdes.String(), Serdes.String(), Serdes.String()))
     .to("joined"))
    return b.build()


def processingOrder(left, right):
    """The order a task processes two partitions' records: the queue with the smaller head timestamp first."""
    i = j = 0
    while i < len(left) or j < len(right):
        if j == len(right) or (i < len(left) and left[i][2] < right[j][2]):
            yield "left", left[i]
            i += 1
        else:
            yield "right", right[j]
            j += 1


def test_outer_join_on_spark_matches_the_driver_per_partition(spark, tmp_path):
    key = Serdes.String()
    part = {name: [[r for r in rows if partitionForKey(key.serialize(name, r[0]), PARTITIONS) == p] for p in range(PARTITIONS)]
            for name, rows in (("left", LEFT), ("right", RIGHT))}
    expected = []
    for p in range(PARTITIONS):
        with TopologyTestDriver(topology(), CONFIG) as d:
            inputs = {"left": d.createInputTopic("left"), "right": d.createInputTopic("right")}
            for topic, (k, v, ts) in processingOrder(part["left"][p], part["right"][p]):
                inputs[topic].pipeInput(k, v, ts)
            expected.append([(r.key(), r.value(), r.timestamp()) for r in d.createOutputTopic("joined").readRecordsToList()])
    assert sum(map(len, expected)) > 100 and any("+None" in r[1] for rows in expected for r in rows)

    topics = LocalTopics(tmp_path / "topics")
    for name in ("left", "right", "joined"):
        topics.createTopic(name, PARTITIONS)
    for name, rows in (("left", LEFT), ("right", RIGHT)):
        topics.produce(name, [(key.serialize(name, k), key.serialize(name, v), ts) for k, v, ts in rows],
                       partitioner=partitionForKey)
    props = {"application.id": "stream-join", "kspark.topics.dir": str(tmp_path / "topics"),
             "state.dir": str(tmp_path / "state"), "kspark.max.records.per.trigger": 40, **CONFIG}
    streams = KafkaStreams(topology(), props, spark=spark)
    streams.start()
    streams.awaitTermination()
    streams.close()
    got = []
    for p in range(PARTITIONS):
        t = topics.read("joined", p, 0, topics.endOffset("joined", p))
        got.append([(k.decode(), v.decode(), ts) for k, v, ts in
                    zip(t.column("key").to_pylist(), t.column("value").to_pylist(), t.column("timestamp").to_pylist())])
    assert got == expected

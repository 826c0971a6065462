"""``__emit.interval.ms.kstreams.windowed.aggregation__`` on Spark (issue 36 item 4): a task's wall
clock is the time its micro-batch starts (as a Kafka stream thread's is per processing loop), so
with an interval of 1 ms an emit-final aggregation runs its emit pass at the first record of each
micro-batch only. TopologyTestDriver gives the same records when its wall clock moves 1 ms at each
batch's first record (Kafka's ``shouldEmitFinal``; the driver's behaviour is checked against Kafka
4.3.1 in tests/unit/test_emit_interval.py and the conformance catalogue)."""

import random
from datetime import timedelta

from kspark import (EmitStrategy, KafkaStreams, KeyValue, Produced, Serdes, StreamsBuilder, TimeWindows)
from kspark.runtime.partitioner import partitionForKey
from kspark.testing import TopologyTestDriver
from kspark.topics import LocalTopics

KEY = "__emit.interval.ms.kstreams.windowed.aggregation__"
PER_BATCH = 20
CONFIG = {"default.key.serde": Serdes.String(), "default.value.serde": Serdes.String()}
rng, ts = random.Random(36), 0
RECORDS = []
for _ in range(3 * PER_BATCH):
    ts += rng.choice([5, 20, 40])
    RECORDS.append((rng.choice("abc"), "x", ts))


def topology():
    b = StreamsBuilder()
    (b.stream("in").groupByKey().windowedBy(TimeWindows.ofSizeWithNoGrace(timedelta(milliseconds=100)))
     .emitStrategy(EmitStrategy.onWindowClose()).count().toStream()
     .map(lambda w, c: KeyValue.pair(f"{w.key()}@{w.window().start()}", c))
     .to("out", Produced.with_(Serdes.String(), Serdes.Long())))
    return b.build()


def onDriver(intervalMs):
    with TopologyTestDriver(topology(), {**CONFIG, KEY: intervalMs}, initialWallClockTime=0) as d:
        inp = d.createInputTopic("in")
        for i, (k, v, t) in enumerate(RECORDS):
            if i and i % PER_BATCH == 0:  # a new micro-batch: its clock is later
                d.advanceWallClockTime(timedelta(milliseconds=1))
            inp.pipeInput(k, v, t)
        return [(r.key(), r.value(), r.timestamp())
                for r in d.createOutputTopic("out", Serdes.String(), Serdes.Long()).readRecordsToList()]


def test_emit_interval_throttles_per_micro_batch_on_spark(spark, tmp_path):
    expected = onDriver(1)
    assert len(expected) > 3 and expected != onDriver(0)  # the throttle holds windows back
    key = Serdes.String()
    topics = LocalTopics(tmp_path / "topics")
    topics.createTopic("in", 1)
    topics.createTopic("out", 1)
    topics.produce("in", [(key.serialize("in", k), key.serialize("in", v), t) for k, v, t in RECORDS],
                   partitioner=partitionForKey)
    props = {"application.id": "emit-interval", "kspark.topics.dir": str(tmp_path / "topics"),
             "state.dir": str(tmp_path / "state"), "kspark.max.records.per.trigger": PER_BATCH, KEY: 1, **CONFIG}
    streams = KafkaStreams(topology(), props, spark=spark)
    streams.start()
    streams.awaitTermination()
    streams.close()
    t = topics.read("out", 0, 0, topics.endOffset("out", 0))
    got = [(k.decode(), Serdes.Long().deserialize("out", v), ts_) for k, v, ts_ in
           zip(t.column("key").to_pylist(), t.column("value").to_pylist(), t.column("timestamp").to_pylist())]
    assert got == expected

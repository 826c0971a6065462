"""Runs the crash test's topology on Kafka topics until caught up (tests/kafka/test_kafka_crash.py):
the runs the test kills, each a process of its own.

argv: bootstrap servers, state dir, processing.guarantee, application.id."""

import sys

from kspark import KafkaStreams, StreamsBuilder


def topology():
    """Two sub-topologies joined by a repartition topic: the key is upper-cased (so one new key's
    records all come from one input partition, in order), then counted (every update emitted)."""
    b = StreamsBuilder()
    (b.stream("crash-in").selectKey(lambda k, v: k.upper()).groupByKey().count()
     .toStream().mapValues(str).to("crash-out"))
    return b.build()


def config(servers, stateDir, guarantee, appId):
    """The run's settings (the test's in-process final run uses them too)."""
    return {
        "application.id": appId, "bootstrap.servers": servers, "state.dir": str(stateDir),
        "processing.guarantee": guarantee, "statestore.cache.max.bytes": 0, "kspark.spark.master": "local[2]",
        "kspark.max.records.per.trigger": 1_000,
        # a killed run's driver stays a member of group appId until its session times out, and the
        # restart is refused until then (issue 37): 1.5 s (the test broker's minimum is 1 s), not 45 s
        "session.timeout.ms": 1_500, "heartbeat.interval.ms": 500,
    }


if __name__ == "__main__":
    import faulthandler
    import signal

    faulthandler.register(signal.SIGUSR1, all_threads=True)  # the test dumps a run that hangs
    servers, stateDir, guarantee, appId = sys.argv[1:5]
    streams = KafkaStreams(topology(), config(servers, stateDir, guarantee, appId))
    streams.start()
    streams.awaitTermination()
    streams.close()

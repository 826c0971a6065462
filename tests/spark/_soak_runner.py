"""Runs a count per key in continuous mode (1 s trigger) until the file ``<work>/stop`` appears
(for the soak test)."""

import sys
from pathlib import Path

from kspark import KafkaStreams, Materialized, StreamsBuilder

if __name__ == "__main__":
    work = Path(sys.argv[1])
    b = StreamsBuilder()
    b.stream("in").groupByKey().count(Materialized.as_("counts")).toStream().to("out")
    streams = KafkaStreams(b.build(), {
        "application.id": "soak", "kspark.topics.dir": str(work / "topics"), "state.dir": str(work / "state"),
        "kspark.spark.master": "local[2]", "kspark.trigger": "1 second", "kspark.progress": "none",
    })
    streams.start()
    while not (work / "stop").exists():
        streams.awaitTermination(0.5)  # raises if a query failed
    streams.close()

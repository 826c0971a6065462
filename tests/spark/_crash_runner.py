"""Runs the flagship job's topology on an existing topics directory until caught up (for the crash test)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))

import valuation_signals as vs  # noqa: E402
from kspark import KafkaStreams  # noqa: E402

if __name__ == "__main__":
    work = Path(sys.argv[1])
    streams = KafkaStreams(vs.buildTopology(), {
        "application.id": "valuation-signals-crash", "kspark.topics.dir": str(work / "topics"),
        "state.dir": str(work / "state"), "kspark.spark.master": "local[2]",
        "kspark.max.records.per.trigger": 1_500,
    })
    streams.start()
    streams.awaitTermination()
    streams.close()

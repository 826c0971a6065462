"""Runs the flagship job's topology on an existing topics directory until caught up: the runs the
crash test kills, each a process of its own."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))

import valuation_signals as vs  # noqa: E402
from kspark import KafkaStreams  # noqa: E402


def config(work: Path) -> dict:
    """The run's settings (the test's in-process final run uses them too)."""
    return {"application.id": "valuation-signals-crash", "kspark.topics.dir": str(work / "topics"),
            "state.dir": str(work / "state"), "kspark.spark.master": "local[2]",
            "kspark.max.records.per.trigger": 1_500}


if __name__ == "__main__":
    streams = KafkaStreams(vs.buildTopology(), config(Path(sys.argv[1])))
    streams.start()
    streams.awaitTermination()
    streams.close()

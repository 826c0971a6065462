"""Resume a checkpoint across kspark trees: phase 1 with one src tree, phase 2 with another, same state.

usage: python bench/ab/checkpoint_resume.py WORKDIR 1 OLD_SRC; then WORKDIR 2 NEW_SRC (under the heavy-work lock).
Prints the counts after each phase: phase 2 must show twice phase 1 (20 -> 40 per key)."""
import sys
from pathlib import Path
root = Path(sys.argv[1]); phase = int(sys.argv[2]); src = sys.argv[3]
sys.path.insert(0, src)
from kspark import KafkaStreams, Materialized, Produced, Serdes, StreamsBuilder
from kspark.runtime.partitioner import partitionForKey
from kspark.topics import LocalTopics

b = StreamsBuilder()
b.stream("clicks").groupByKey().count(materialized=Materialized.as_("n")).toStream().to("counts", Produced.with_(Serdes.String(), Serdes.Long()))
topics = LocalTopics(root / "topics")
if phase == 1:
    topics.createTopic("clicks", 3); topics.createTopic("counts", 2)
key, value = Serdes.String(), Serdes.JSON()
topics.produce("clicks", [(key.serialize("c", f"k{i % 5}"), value.serialize("c", i), 1000 + i + phase * 1000) for i in range(100)],
               partitioner=partitionForKey)
props = {"application.id": "mig", "kspark.topics.dir": str(root / "topics"), "state.dir": str(root / "state"),
         "kspark.max.records.per.trigger": 40, "kspark.spark.master": "local[2]"}
s = KafkaStreams(b.build(), props); s.start(); s.awaitTermination(); s.close()
print("PHASE", phase, sorted((kv.key, kv.value.value) for kv in s.checkpointedStore("n").all()))

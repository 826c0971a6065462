"""The flagship job (examples/valuation_signals.py's topology) on Kafka topics, as a Spark
application submitted with ``spark-submit`` by tests/cluster.

argv: bootstrap servers, state dir, application.id, result JSON path, optionally
kspark.max.records.per.trigger. The master comes from ``spark-submit --master``. The result holds the signals read back read_committed and the dedup store from the checkpoint."""

import json
import sys
import time

import valuation_signals as vs
from kspark import KafkaStreams
from kspark.topics import openTopics

if __name__ == "__main__":
    servers, stateDir, appId, resultPath = sys.argv[1:5]
    config = {"application.id": appId, "bootstrap.servers": servers, "state.dir": stateDir,
              "processing.guarantee": "exactly_once_v2", "kspark.progress": "plain"}
    if len(sys.argv) > 5:
        config["kspark.max.records.per.trigger"] = int(sys.argv[5])
    streams = KafkaStreams(vs.buildTopology(), config)
    started = time.time()
    streams.start()
    streams.awaitTermination()
    streams.close()
    seconds = time.time() - started
    store = streams.checkpointedStore(vs.SIGNAL_STORE)
    with open(resultPath, "w") as f:
        json.dump({"signals": vs.readSignals(openTopics(config)), "store": sorted([kv.key, kv.value] for kv in store.all()),
                   "master": streams._session().sparkContext.master, "seconds": seconds}, f)

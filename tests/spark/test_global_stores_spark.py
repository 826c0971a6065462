"""Global stores on Spark (issue 32's treatment for GlobalKTable and addGlobalStore): each task's
copy lives in its local RocksDB, the global topic is its changelog, and the task checkpoint keeps
only the global partitions' positions. A copy lost between micro-batches is restored from the
global topic: a GlobalKTable's store from the records as they are, an addGlobalStore store
through its processor (Kafka 4.3 ``GlobalStateManagerImpl``: ``reprocessOnRestore`` false for
``TableSourceNode``, true for ``addGlobalStore``, KIP-813). Output and stores equal
TopologyTestDriver's, which applies a global record when it is piped (rules J-7, J-8, TTD-4, E-1)."""

import pickle
import shutil

import pytest

from kspark import Consumed, KafkaStreams, Materialized, Produced, Serdes, StreamsBuilder
from kspark.runtime.partitioner import partitionForKey
from kspark.state import Stores
from kspark.testing import TopologyTestDriver
from kspark.topics import LocalTopics

T = 1_773_000_000_000
KEY, JSON, LONG = Serdes.String(), Serdes.JSON(), Serdes.Long()
APP = "global-stores"


class RatingUpdater:
    """addGlobalStore's processor: keeps score * 10 as a Long (a restore that took the records'
    bytes as they are would hold the JSON bytes instead, and fail to read them as a Long)."""

    def init(self, context):
        self.store = context.getStateStore("ratings")

    def process(self, record):
        value = record.value()
        self.store.put(record.key(), None if value is None else value["score"] * 10)

    def close(self):
        pass


class WithRating:
    """Adds the order's rating from the global store (read-only, no connection needed: E-1)."""

    def init(self, context):
        self.context, self.ratings = context, context.getStateStore("ratings")

    def process(self, record):
        value = dict(record.value())
        value["rating"] = self.ratings.get(value["code"])
        self.context.forward(record.withValue(value))

    def close(self):
        pass


def topology():
    b = StreamsBuilder()
    companies = b.globalTable("companies", Consumed.with_(KEY, JSON), Materialized.as_("companies"))
    b.addGlobalStore(Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore("ratings"), KEY, LONG),
                     "ratings", Consumed.with_(KEY, JSON), RatingUpdater)
    orders = b.stream("orders", Consumed.with_(KEY, JSON))
    (orders.join(companies, lambda k, o: o["code"], lambda o, c: {"code": o["code"], "qty": o["qty"], "name": c["name"]})
     .process(WithRating).to("enriched", Produced.with_(KEY, JSON)))
    return b.build()


def companies(n, start=0, version=0):
    return [(f"C{i}", {"name": f"company {i} v{version}", "pad": "x" * 20}, T + i) for i in range(start, n)]


def events():
    """Run 1: 20K companies, ratings for 40 codes, 600 orders. Run 2: renamed and deleted
    companies (tombstones), changed and deleted ratings, 600 more orders, all stamped later."""
    first = {
        "companies": companies(20_000),
        "ratings": [(f"C{i}", {"score": i % 7}, T + 100 + i) for i in range(40)],
        "orders": [(f"o{i}", {"code": f"C{(i * 37) % 60}", "qty": i}, T + 30_000 + i) for i in range(600)],
    }
    second = {
        "companies": ([(f"C{i}", {"name": f"company {i} v1"}, T + 40_000 + i) for i in range(0, 60, 3)]
                      + [(f"C{i}", None, T + 40_100 + i) for i in range(1, 60, 5)]),
        "ratings": ([(f"C{i}", {"score": 100 + i}, T + 40_200 + i) for i in range(0, 40, 4)]
                    + [(f"C{i}", None, T + 40_300 + i) for i in range(2, 40, 9)]),
        "orders": [(f"o{i}", {"code": f"C{(i * 37) % 60}", "qty": i}, T + 50_000 + i) for i in range(600, 1200)],
    }
    return first, second


def onDriver(*runs):
    """Outputs and stores of TopologyTestDriver over the runs' records in timestamp order."""
    records = sorted((ts, topic, k, v) for run in runs for topic, rows in run.items() for k, v, ts in rows)
    with TopologyTestDriver(topology()) as d:
        inputs = {t: d.createInputTopic(t, KEY, JSON) for t in ("companies", "ratings", "orders")}
        for ts, topic, k, v in records:
            inputs[topic].pipeInput(k, v, ts)
        out = sorted((r.key(), r.timestamp(), tuple(sorted(r.value().items())))
                     for r in d.createOutputTopic("enriched", KEY, JSON).readRecordsToList())
        stores = (sorted((kv.key, kv.value) for kv in d.getTimestampedKeyValueStore("companies").all()),
                  sorted((kv.key, kv.value) for kv in d.getKeyValueStore("ratings").all()))
        return out, stores


@pytest.fixture
def app(tmp_path):
    topics = LocalTopics(tmp_path / "topics")
    topics.createTopic("companies", 2)
    topics.createTopic("ratings", 1)
    topics.createTopic("orders", 3)
    topics.createTopic("enriched", 3)
    props = {"application.id": APP, "kspark.topics.dir": str(tmp_path / "topics"), "state.dir": str(tmp_path / "state")}
    return topics, props


def produce(topics, run):
    for topic, rows in run.items():
        topics.produce(topic, [(KEY.serialize(topic, k), None if v is None else JSON.serialize(topic, v), ts)
                               for k, v, ts in sorted(rows, key=lambda r: r[2])], partitioner=partitionForKey)


def runApp(spark, props):
    streams = KafkaStreams(topology(), props, spark=spark)
    streams.start()
    streams.awaitTermination()
    streams.close()
    return streams


def output(topics):
    rows = []
    for p in range(3):
        t = topics.read("enriched", p, 0, topics.endOffset("enriched", p))
        rows += [(k.decode(), ts, tuple(sorted(JSON.deserialize("enriched", v).items())))
                 for k, v, ts in zip(t.column("key").to_pylist(), t.column("value").to_pylist(),
                                     t.column("timestamp").to_pylist())]
    return sorted(rows)


def storesOf(streams):
    return (sorted((kv.key, kv.value) for kv in streams.checkpointedStore("companies").all()),
            sorted((kv.key, kv.value) for kv in streams.checkpointedStore("ratings").all()))


def checkpointValues(spark, streams):
    """Each task's checkpoint value (the pickled blob in Spark's state) at the last batch."""
    from kspark.spark._interactive import lastCommittedBatch

    stateDir = streams._stateDir()
    batch = lastCommittedBatch(stateDir, "subtopology-2")  # sub-topologies 0 and 1: the global stores
    rows = (spark.read.format("statestore").option("path", stateDir.path("subtopology-2")).option("stateVarName", "task")
            .option("batchId", batch).load().select("value.blob").collect())
    return [bytes(r.blob) for r in rows]


def test_global_stores_in_local_rocksdb_restored_from_the_global_topic(spark, app, tmp_path):
    topics, props = app
    first, second = events()
    expected, expectedStores = onDriver(first, second)
    firstOutput, firstStores = onDriver(first)
    assert len(firstStores[0]) == 20_000 and len(expected) > 900  # inner join: orders of deleted codes drop
    assert any(("rating", None) in r[2] for r in expected) and any(("rating", 1080) in r[2] for r in expected)

    produce(topics, first)
    streams = runApp(spark, props)
    assert output(topics) == firstOutput
    # The checkpoint value holds the global partitions' positions, not the 20K entries: the
    # pickled store alone is ~1.3 MB
    blobs = checkpointValues(spark, streams)
    assert len(blobs) == 3
    pickledStore = len(pickle.dumps(firstStores[0], protocol=5))
    assert pickledStore > 1_000_000
    assert all(len(b) < 4_000 for b in blobs), [len(b) for b in blobs]
    value = pickle.loads(blobs[0])
    assert value["stores"] == {}
    assert value["globalPositions"] == {"companies@0": [0, topics.endOffset("companies", 0)],
                                        "companies@1": [0, topics.endOffset("companies", 1)],
                                        "ratings@0": [0, 40]}

    # every task's copy is lost between the last batch of one run and the first of the next
    stores = tmp_path / "state" / APP / "stores"
    assert sorted(p.name for p in stores.iterdir()) == ["2_0", "2_1", "2_2"]
    shutil.rmtree(stores)
    # a stopped application's global stores, read without the local copies: restored from the topics
    assert storesOf(KafkaStreams(topology(), props, spark=spark)) == firstStores

    produce(topics, second)
    streams = runApp(spark, props)
    assert output(topics) == expected  # the later orders joined the restored copies, updated by run 2
    assert storesOf(streams) == expectedStores
    # the interactive-query handle (KafkaStreams.store's provider): one task's copy, whatever
    # partition is asked for, as Kafka's global stores have no partitions
    from kspark.spark._interactive import CheckpointStoreProvider

    ratings = CheckpointStoreProvider(streams, "ratings", 1)()
    assert sorted((kv.key, kv.value) for kv in ratings.all()) == expectedStores[1]
    assert ratings.get("C4") == 1040 and ratings.get("C2") is None
    ratings.close()

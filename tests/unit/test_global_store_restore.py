"""Global stores of the Spark host's tasks without Spark: a task's copy lives in its local RocksDB,
its checkpoint keeps each global partition's position (the first record not processed yet), and a
task without its copy restores it from the global topic up to there, as Kafka 4.3's
GlobalStateManagerImpl does: a GlobalKTable's store from the records' bytes (TableSourceNode's
reprocessOnRestore=false), an addGlobalStore store through a new instance of its processor
(reprocessOnRestore=true, KIP-813). Rules E-1, T-12, T-14."""

import pickle
import shutil

from kspark import Consumed, KafkaStreams, Materialized, Serdes, StreamsBuilder
from kspark.runtime.partitioner import partitionForKey
from kspark.spark._datasource import topicsOptions
from kspark.spark._task_processor import TaskStatefulProcessor, _rawColumns
from kspark.state import Stores, ValueAndTimestamp
from kspark.topics import LocalTopics

KEY, JSON, LONG = Serdes.String(), Serdes.JSON(), Serdes.Long()
CKPT = "ckpt-1"
T = 1_000_000


class RatingUpdater:
    """Keeps score * 10 as a Long: the topic's bytes (JSON) are not the store's."""

    def init(self, context):
        self.store = context.getStateStore("ratings")

    def process(self, record):
        value = record.value()
        self.store.put(record.key(), None if value is None else value["score"] * 10)


def topology():
    b = StreamsBuilder()
    companies = b.globalTable("companies", Consumed.with_(KEY, JSON), Materialized.as_("companies"))
    b.addGlobalStore(Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore("ratings"), KEY, LONG),
                     "ratings", Consumed.with_(KEY, JSON), RatingUpdater)
    b.stream("orders", Consumed.with_(KEY, JSON)).join(companies, lambda k, o: o["code"], lambda o, c: c).to("out")
    return b.build()


def setUp(tmp_path):
    topics = LocalTopics(tmp_path / "topics")
    for name, n in (("companies", 2), ("ratings", 1), ("orders", 1), ("out", 1)):
        topics.createTopic(name, n)

    def produce(topic, rows):
        topics.produce(topic, [(None if k is None else KEY.serialize(topic, k),
                                None if v is None else JSON.serialize(topic, v), ts) for k, v, ts in rows],
                       partitioner=lambda key, n: 0 if key is None else partitionForKey(key, n))

    # before the order at T + 500: 30 companies, renames, deletes, a null key (skipped); after it
    # (not processed: the task waits for more orders, T-14) 10 renames
    produce("companies", [(f"C{i}", {"name": f"c{i}"}, T + i) for i in range(30)]
            + [(f"C{i}", {"name": f"c{i} v2"}, T + 100 + i) for i in range(0, 30, 4)]
            + [(f"C{i}", None, T + 200 + i) for i in range(1, 30, 7)] + [(None, {"name": "no key"}, T + 300)]
            + [(f"C{i}", {"name": f"c{i} late"}, T + 1_000 + i) for i in range(10)])
    produce("ratings", [(f"C{i}", {"score": i}, T + 50 + i) for i in range(12)]
            + [(f"C{i}", None, T + 400 + i) for i in range(0, 12, 5)] + [("C3", {"score": 99}, T + 2_000)])
    produce("orders", [("o1", {"code": "C2"}, T + 500)])
    props = {"application.id": "app", "kspark.topics.dir": str(tmp_path / "topics"), "state.dir": str(tmp_path / "st")}
    plan = KafkaStreams(topology(), props)._plan()[0]
    plan = {**plan, "backend": topicsOptions(topics), "storeDir": str(tmp_path / "stores"), "inputRoot": str(topics.root)}
    return topics, TaskStatefulProcessor(plan)


def contents(task):
    return ({kv.key: kv.value for kv in task.stores["companies"].all()},
            {kv.key: kv.value for kv in task.stores["ratings"].all()})


def test_a_task_without_its_copy_restores_the_global_stores_up_to_the_checkpointed_positions(tmp_path):
    topics, processor = setUp(tmp_path)
    task = processor._newTask("2_0", 0)
    assert task.globalStores == {"companies": ["companies"], "ratings": ["ratings"]}
    assert task.persistentStores == {"companies", "ratings"}
    for name, partitions in (("companies", 2), ("ratings", 1), ("orders", 1)):
        for p in range(partitions):
            columns = _rawColumns([topics.read(name, p, 0, topics.endOffset(name, p))], True)
            task.addRecordColumns(name if name == "orders" else f"{name}@{p}", columns, lag=0)
    task.queueOf["orders"].lag = 5  # more orders exist: the task waits once it has none (T-14)
    processor._openStores(task, task.persistentState, "2_0", 0, CKPT, 0, None)
    task.initialize()
    task.processAll(T)
    task.commit()
    task.persistentState.flush("v1", 0, task.partitionGroup.streamTime, CKPT)
    value = task.checkpoint()
    task.persistentState.close()

    # the checkpoint: positions, not entries; the records after the order wait in the queues
    assert value["stores"] == {}
    positions = value["globalPositions"]
    late = {p: [o for o, k in enumerate(topics.read("companies", p, 0, topics.endOffset("companies", p))
                                         .column("value").to_pylist()) if k and b"late" in k] for p in range(2)}
    assert positions == {"companies@0": [0, late[0][0]], "companies@1": [0, late[1][0]], "ratings@0": [0, 15]}
    assert sum(len(r) for r in value["unprocessed"].values()) == 10 + 1

    # the same task's copy, opened at v1 (its pending batch committed)
    kept = processor._newTask("2_0", 0)
    kept.restore(pickle.loads(pickle.dumps(value)))
    processor._openStores(kept, kept.persistentState, "2_0", 0, CKPT, 1, "v1")
    before = contents(kept)
    # batch 1 applies the waiting records, its changes pending under v2; Spark does not commit it
    for queue in kept.queueOf.values():
        queue.lag = 0
    kept.initialize()
    kept.processAll(T)
    kept.commit()
    kept.persistentState.flush("v2", 1, kept.partitionGroup.streamTime, CKPT)
    assert kept.stores["ratings"].get("C3") == 990
    kept.persistentState.close()
    # its replay starts from v1's global stores (the pending writes of v2 dropped), no restore
    replay = processor._newTask("2_0", 0)
    replay.restore(pickle.loads(pickle.dumps(value)))
    assert replay.persistentState.open(CKPT, "v1") is True
    assert contents(replay) == before
    replay.persistentState.close()
    companies, ratings = before
    assert companies["C4"] == ValueAndTimestamp({"name": "c4 v2"}, T + 104) and "C1" not in companies
    assert companies["C0"].value == {"name": "c0 v2"} and len(companies) == 30 - 5
    assert ratings == {f"C{i}": i * 10 for i in range(12) if i % 5}

    # the directory lost: restored from the global topics, equal to the processed copy
    shutil.rmtree(tmp_path / "stores")
    moved = processor._newTask("2_0", 0)
    moved.restore(pickle.loads(pickle.dumps(value)))
    processor._openStores(moved, moved.persistentState, "2_0", 0, CKPT, 1, "v1")
    assert contents(moved) == before
    # and the waiting records apply on top, as on the task that kept its copy
    for queue in moved.queueOf.values():
        queue.lag = 0  # a batch's markers: nothing more upstream
    moved.initialize()
    moved.processAll(T)
    companies, ratings = contents(moved)
    assert companies["C3"] == ValueAndTimestamp({"name": "c3 late"}, T + 1_003) and ratings["C3"] == 990
    moved.persistentState.close()


def test_a_checkpoint_without_positions_imports_its_pickled_global_store(tmp_path):
    """A checkpoint written by a kspark that kept global stores in the checkpoint value: the
    store comes from it (no positions to restore the topic to)."""
    topics, processor = setUp(tmp_path)
    old = processor.plan["storeBuilders"]["companies"].build(KEY, JSON)  # the in-memory store
    old.put("C7", ValueAndTimestamp({"name": "from the blob"}, 5))
    value = {"streamTime": 5, "partitionTimes": {}, "unprocessed": {}, "nodeStates": {}, "schedules": {},
             "stores": {"companies": old.snapshot()}}
    task = processor._newTask("2_0", 0)
    task.restore(value)
    assert not task.globalPositionsKnown and "companies" in task.legacySnapshots
    processor._openStores(task, task.persistentState, "2_0", 0, CKPT, 3, "v-old")
    task.persistentState.importLegacySnapshots(task.legacySnapshots)
    assert task.stores["companies"].get("C7") == ValueAndTimestamp({"name": "from the blob"}, 5)
    assert task.stores["ratings"].get("C3") is None  # not restored from the topic without positions
    task.persistentState.close()

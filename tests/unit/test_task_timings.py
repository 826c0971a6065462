"""``KSPARK_TASK_TIMINGS`` (bench/README.md): one JSON line per Spark task call, here whether the
task was found alive in the Python worker (``cachedTask``) or rebuilt from its checkpoint, the
benchmark's worker-affinity figure (issue 32). Driven without Spark, as
``test_global_store_restore`` drives a task: the task processor with a stand-in for Spark's
``ValueState`` and ``TaskContext``, the batches as the source's ``layout=refs`` rows."""

import json

import pandas as pd
import pytest

from kspark import KafkaStreams, Materialized, Serdes, StreamsBuilder
from kspark.runtime.partitioner import partitionForKey
from kspark.spark import _task_processor
from kspark.spark._datasource import topicsOptions
from kspark.spark._task_processor import TaskStatefulProcessor
from kspark.topics import LocalTopics

KEY, LONG = Serdes.String(), Serdes.Long()


class ValueState:
    """Spark's committed task state, as ``handle.getValueState`` serves it."""

    def __init__(self):
        self.value = None

    def get(self):
        return self.value

    def update(self, value):
        self.value = value


class Context:
    def __init__(self, batchId):
        self.batchId = batchId

    def getLocalProperty(self, name):
        return {"streaming.sql.batchId": str(self.batchId), "sql.streaming.queryId": "q-1"}.get(name)


@pytest.fixture
def counting(tmp_path, monkeypatch):
    """A factory: ``counting(**props)`` -> (plan, batch, state) of a count over local topics."""
    return lambda **props: _counting(tmp_path, monkeypatch, props)


def _counting(tmp_path, monkeypatch, extra):
    topics = LocalTopics(tmp_path / "topics")
    topics.createTopic("events", 1)
    topics.createTopic("counts", 1)
    topics.createTopic("app-counts-changelog", 1)  # the sink writes it in Spark; here the local store serves
    b = StreamsBuilder()
    b.stream("events").groupByKey().count(Materialized.as_("counts")).toStream().to("counts")
    props = {"application.id": "app", "kspark.topics.dir": str(tmp_path / "topics"), "state.dir": str(tmp_path / "st"),
             "default.key.serde": KEY, "default.value.serde": KEY, "statestore.cache.max.bytes": 0, **extra}
    plan = KafkaStreams(b.build(props), props)._plan()[0]
    plan = {**plan, "backend": topicsOptions(topics), "storeDir": str(tmp_path / "stores"),
            "inputRoot": str(topics.root)}
    timings = tmp_path / "timings.jsonl"
    monkeypatch.setattr(_task_processor, "_TIMINGS", str(timings))
    monkeypatch.setattr(_task_processor, "_LIVE_TASKS", {})
    state = ValueState()

    last = {}

    def batch(processor, batchId, keys=None):
        """Append ``keys`` to the topic and run them as micro-batch ``batchId`` of task 0_0 (no
        keys: the previous batch's records again, as Spark replays a batch); its timings line."""
        if keys is not None:
            start = topics.endOffset("events", 0)
            topics.produce("events", [(KEY.serialize("events", k), b"1", 1_000 + batchId) for k in keys],
                           partitioner=lambda key, n: partitionForKey(key, n))
            last["range"] = (start, topics.endOffset("events", 0))
        start, end = last["range"]
        monkeypatch.setattr(_task_processor.TaskContext, "get", staticmethod(lambda: Context(batchId)))
        processor.state = state
        rows = pd.DataFrame({"topic": ["events", "events"], "partition": [0, 0], "offset": [start, -1],
                             "records": [None, None], "lag": [None, 0], "end": [end, end]})
        key = next(k for k, t in plan["taskOfKey"].items() if t == 0)
        list(processor.handleInputRows((key,), iter([rows]), None))
        lines = timings.read_text().splitlines()
        return json.loads(lines[-1])

    return plan, batch, state


def test_a_task_call_says_whether_its_worker_held_the_task_or_rebuilt_it(counting):
    plan, batch, state = counting()
    worker = TaskStatefulProcessor(plan)
    first = batch(worker, 0, ["a", "b", "a"])
    assert (first["task"], first["batch"], first["rows"], first["cachedTask"]) == ("0_0", 0, 3, False)
    # the same worker runs the task's next batch: the task it left is the committed version's
    second = batch(worker, 1, ["a", "c"])
    assert (second["batch"], second["rows"], second["cachedTask"]) == (1, 2, True)
    # another worker (its own _LIVE_TASKS) gets batch 2: it rebuilds the task from the state
    _task_processor._LIVE_TASKS.clear()
    third = batch(TaskStatefulProcessor(plan), 2, ["a"])
    assert (third["batch"], third["cachedTask"]) == (2, False)
    # Spark's state is not the version the worker's task wrote (a replay after a failed commit)
    committed = state.value
    fourth = batch(worker, 3, ["b"])
    assert fourth["cachedTask"] is True
    state.value = committed
    replay = batch(worker, 3)
    assert (replay["batch"], replay["cachedTask"]) == (3, False)
    # the counts are exact either way: the rebuilt task read them back from its local store
    task = _task_processor._LIVE_TASKS[(plan["applicationId"], "0_0")][1]
    stores = task.persistentState
    stores.open("q-1", state.value[0])
    try:
        assert {kv.key: kv.value.value for kv in task.stores["counts"].all()} == {"a": 4, "b": 2, "c": 1}
    finally:
        stores.close()


@pytest.mark.parametrize("props, filled", [({}, [0, 0, 0, 0]), ({"kspark.store.prefill": "true"}, [0, 1, 0, 1])])
def test_the_cache_fill_reads_the_keys_the_task_lacks_and_is_off_by_default(counting, props, filled):
    """kspark.store.prefill (default false: bench/README.md rounds 18b and 22, no gain beyond the
    noise at 100K and 10M keys): with true, the queued records' keys (the queue's head record
    aside: it is taken before the fill) that the store's working set does not hold are read from
    RocksDB in one MultiGet before processing, counted in prefilledKeys; none from an empty store."""
    plan, batch, _ = counting(**props)
    assert plan["storePrefill"] is bool(props)
    worker = TaskStatefulProcessor(plan)
    lines = [batch(worker, 0, ["a", "b", "a"]),  # an empty store: nothing to read
             batch(worker, 1, ["a", "c"]),  # c is not in the task's working set: read
             batch(worker, 2, ["b", "c"])]  # c is: nothing read
    _task_processor._LIVE_TASKS.clear()
    lines.append(batch(TaskStatefulProcessor(plan), 3, ["b", "c"]))  # rebuilt, its working set empty: c read
    assert [line["prefilledKeys"] for line in lines] == filled
    assert [line["cachedTask"] for line in lines] == [False, True, True, False]

"""Stores read from a running (or stopped) application: interactive queries.

A task's persistent stores (``kspark.state._persistent``) live in its local RocksDB under
``kspark.store.dir``. :class:`CheckpointStoreProvider` opens each task's database read-only (a
RocksDB secondary instance, which never blocks the task) and reads the keys asked for, as of the
sub-topology's last committed micro-batch (its checkpoint's ``commits/`` log): a batch's pending
writes are read only once that batch has committed. It opens the databases again when a newer
batch has committed. The stores must be on a disk the driver sees (a ``local`` master, or
``kspark.store.dir`` on a shared filesystem).

A global store is read from one task's copy (task 0 of the first sub-topology; a Kafka Streams
instance has one copy too), in that task's local RocksDB. Where that copy is not on this
machine it is restored from the global topic into a temporary directory, up to the positions in
the task's checkpoint value, as the task would restore it.

Stores kept in a task's checkpoint value (stores of kinds without a persistent form, and global
stores of a checkpoint written by an older kspark) are read with Spark's state data source
(``format("statestore")``) at the last committed batch id, the tasks' copies merged into one
store: a separate batch job over committed, immutable state files.
"""

from __future__ import annotations

import os
import pickle
import shutil
import tempfile
import threading
import weakref

from ..errors import InvalidStateStoreException, StreamsException
from ..state._persistent import MergedKeyValueView, makePersistent, readOnlyStore
from ..state._rocksdb import pendingChanges
from ..state._persistent_windows import MergedSessionView, MergedWindowView
from ..state._stores import SessionStore, WindowStore

__all__ = ["CheckpointStoreProvider", "lastCommittedBatch", "readCheckpointedStore"]


def lastCommittedBatch(stateDir, checkpoint: str) -> int | None:
    """The id of the last batch committed in the checkpoint ``checkpoint`` of ``stateDir`` (a
    ``StateDir``; None before the first commit)."""
    return max((int(name) for name in stateDir.list(f"{checkpoint}/commits") if name.isdigit()), default=None)


def subtopologyOf(topology, storeName: str):
    """The sub-topology whose tasks hold ``storeName`` (for a global store, the first one: every
    task holds a copy; they agree once caught up); None if no store has that name."""
    sub = next((s for s in topology.subtopologies() if storeName in s.stores), None)
    if sub is None and storeName in topology.globalStoreNames():
        sub = next(iter(topology.subtopologies()), None)
    return sub


def readCheckpointedStore(spark, store, checkpoint: str, batchId: int | None, taskKeys: set[int] | None = None):
    """Merge the copies of ``store`` (an empty store of the right kind, filled and returned) of
    the tasks in the checkpoint at URI ``checkpoint`` at ``batchId`` (None: nothing committed,
    the store stays empty); ``taskKeys``: only those grouping keys (one task each)."""
    if batchId is None:
        return store
    rows = (spark.read.format("statestore").option("path", checkpoint).option("stateVarName", "task")
            .option("batchId", batchId).load().select("key.task", "value.blob").collect())
    for row in rows:
        if taskKeys is not None and row.task not in taskKeys:
            continue
        snapshot = pickle.loads(row.blob)["stores"].get(store.name())
        if snapshot is not None:
            store.mergeSnapshot(snapshot)
    return store


def persistentStoreView(streams, storeName: str, partitions: list[int] | None = None, restoreMissing: bool = False):
    """A read-only view of store ``storeName`` over the local stores of its tasks (those of
    ``partitions``; None: all), as of the last committed micro-batch; None when the store is
    not persistent (it is in the checkpoint value). The view's ``close()`` releases the
    databases.

    With ``restoreMissing`` (``checkpointedStore``, which reads a whole store anyway), a task
    whose local store is not on this machine (a cluster's executors, a deleted directory) has
    it restored from its changelog (and, on local topics, its latest snapshot) into a temporary
    directory, as the task itself would restore it.

    Raises
    ------
    InvalidStateStoreException
        Without ``restoreMissing``, if a task's local store is not on this machine
        (``kspark.store.dir``), naming the task and the changelog it restores from.
    """
    topology, config = streams._topology, streams._config
    sub = subtopologyOf(topology, storeName)
    isGlobal = storeName in topology.globalStoreNames()
    if sub is None or (storeName not in sub.stores and not isGlobal):
        return None
    probe = topology.storeBuilders()[storeName].build(config.defaultKeySerde(), config.defaultValueSerde())
    if not makePersistent(probe):
        return None
    stateDir = streams._stateDir()
    checkpoint = f"subtopology-{sub.id}"
    committed = lastCommittedBatch(stateDir, checkpoint)
    checkpointId = (stateDir.readJson(f"{checkpoint}/metadata") or {}).get("id")
    plans = streams._plans or streams._place(streams._plan())
    plan = next(p for p in plans if p["subtopology"].id == sub.id)
    # a global store: one copy (every task holds the same records of the global topics once
    # caught up), whatever partition is asked for, as Kafka's global stores have no partitions
    tasks = [0] if isGlobal else list(range(plan["numTasks"]) if partitions is None else partitions)
    storeDir = streams._storeDir()
    paths = {p: os.path.join(storeDir, f"{sub.id}_{p}") if storeDir else None for p in tasks}
    changelog = plan["changelogs"].get(storeName)
    missing = [p for p, path in paths.items() if committed is not None
               and (path is None or not os.path.isfile(os.path.join(path, "CURRENT")))
               and (isGlobal or changelog is not None and streams._topics.partitionsFor(changelog)
                    and streams._topics.endOffset(changelog, p) > 0)]
    restoredDir = None
    if missing and isGlobal:  # restored from the global topic (it is the store's changelog)
        values = _checkpointValues(streams, plan, checkpoint, committed)
        positions = (values.get(0) or {}).get("globalPositions")
        if positions is None:
            return None  # a checkpoint of an older kspark: the store is in its checkpoint value
        restoredDir = tempfile.mkdtemp(prefix="kspark-restored-")
        paths[0] = _restoreGlobalStore(streams, plan, storeName, positions, checkpointId,
                                       os.path.join(restoredDir, f"{sub.id}_0"))
        missing = []
    if missing and not restoreMissing:
        where = storeDir or "the executors' temporary directories (kspark.store.dir is not set, the master is not local)"
        raise InvalidStateStoreException(
            f"Cannot read store {storeName}: the local store of task(s) {', '.join(f'{sub.id}_{p}' for p in missing)} "
            f"is not in {where} (deleted, or on another machine); a task restores it from {changelog} when it next "
            "runs. KafkaStreams.checkpointedStore restores it itself.")
    if missing:
        restoredDir = tempfile.mkdtemp(prefix="kspark-restored-")
        metas = _checkpointMetas(streams, plan, checkpoint, committed)
        for p in missing:
            paths[p] = _restoreTaskStore(streams, plan, storeName, changelog, p, checkpointId, committed,
                                         metas.get(p), os.path.join(restoredDir, f"{sub.id}_{p}"))
    view = _viewOf(probe)(storeName, [path for path in paths.values() if path is not None],
                          lambda: topology.storeBuilders()[storeName].build(config.defaultKeySerde(),
                                                                             config.defaultValueSerde()),
                          checkpointId, committed)
    if restoredDir is not None:
        view._dirs.append(restoredDir)  # local stores restored for this view
    return view


def _checkpointMetas(streams, plan: dict, checkpoint: str, committed: int) -> dict[int, dict | None]:
    """Each task's (partition's) stores' meta (observed stream times...) from its checkpoint
    value at batch ``committed``, read with Spark's state data source."""
    return {p: value.get("storeMeta", {}) for p, value in _checkpointValues(streams, plan, checkpoint, committed).items()}


def _checkpointValues(streams, plan: dict, checkpoint: str, committed: int) -> dict[int, dict]:
    """Each task's (partition's) checkpoint value at batch ``committed``, read with Spark's
    state data source."""
    rows = (streams._session().read.format("statestore").option("path", streams._stateDir().path(checkpoint))
            .option("stateVarName", "task").option("batchId", committed).load().select("key.task", "value.blob").collect())
    return {plan["taskOfKey"][row.task]: pickle.loads(row.blob) for row in rows}


def _restoreGlobalStore(streams, plan: dict, storeName: str, positions: dict, checkpointId: str, path: str) -> str:
    """Restore global store ``storeName`` into ``path`` from its topic up to ``positions`` (a task
    checkpoint's ``globalPositions``), as a task restores its copy
    (``kspark.state._restore.restoreGlobalStores``)."""
    from ..runtime.global_state import GlobalStoreReprocessor, globalStoreSources
    from ..runtime.stream_task import StreamTask
    from ..state._persistent import PersistentTaskState
    from ..state._restore import restoreGlobalStores

    topicName, counts = plan["topicName"], plan["partitionCounts"]
    task = StreamTask(f"{plan['subtopology'].id}_0", plan["subtopology"], plan["storeBuilders"], streams._config, 0,
                      lambda t: topicName.get(t, t), lambda t: counts[t])
    store = task.stores[storeName]
    makePersistent(store)
    source, processor = globalStoreSources(plan["subtopology"])[storeName]
    state = PersistentTaskState({storeName: store}, {}, path, streams._config.get("kspark.store.memory.bytes"), 0)
    try:
        state.open(checkpointId, None)
        reprocess = ({storeName: GlobalStoreReprocessor(task, storeName, source, processor)}
                     if processor.reprocessOnRestore else {})
        restoreGlobalStores(state, streams._topics, {storeName: [topicName.get(t, t) for t in source.topics]},
                            positions, task.taskId, reprocess=reprocess)
        state.restored(checkpointId, None)
    finally:
        state.close()
    return path


def _restoreTaskStore(streams, plan: dict, storeName: str, changelog: str, partition: int, checkpointId: str,
                      committed: int, metas: dict | None, path: str) -> str:
    """Restore task ``partition``'s store ``storeName`` as of batch ``committed`` into ``path``."""
    import json

    from ..state._persistent import PersistentTaskState
    from ..state._rocksdb import _STORE_META
    from ..state._restore import restoreStores
    from ..state._snapshots import restoreSnapshot
    from ..topics import LocalTopics

    config = streams._config
    store = streams._topology.storeBuilders()[storeName].build(config.defaultKeySerde(), config.defaultValueSerde())
    makePersistent(store)
    meta = (metas or {}).get(storeName)
    if meta is not None:
        store._metaRestore(meta)
    state = PersistentTaskState({storeName: store}, {storeName: changelog}, path,
                                config.get("kspark.store.memory.bytes"), 0)
    taskId = f"{plan['subtopology'].id}_{partition}"
    try:
        state.open(checkpointId, None)
        local = isinstance(streams._topics, LocalTopics)
        offsets = (restoreSnapshot(state, str(streams._topics.root), plan["applicationId"], taskId, checkpointId,
                                   committed + 1) if local else {})
        restoreStores(state, streams._topics, partition, checkpointId, committed + 1, localTopics=local, taskId=taskId,
                      startOffsets=offsets)
        state.restored(checkpointId, None)
        if meta is not None:
            state.db.write([(_STORE_META + storeName.encode("utf-8"), json.dumps(meta).encode())])
    finally:
        state.close()
    return path


class _TaskStoresView:
    """The persistent stores of several tasks, each over its database opened read-only, read as
    one store by the merged view of their kind (the next class in the MRO)."""

    def __init__(self, storeName: str, paths: list[str], build, checkpointId: str | None, committed: int | None) -> None:
        import json

        import rocksdict

        self._dbs: list = []
        self._tmp = tempfile.mkdtemp(prefix="kspark-iq-")
        # the secondary instances' directories and any stores restored for this view: released
        # by close(), else when the view is garbage collected or the interpreter exits (a view
        # that KafkaStreams.store() handed out has no close in Kafka's API)
        self._dirs = [self._tmp]
        self._release = weakref.finalize(self, _releaseView, self._dbs, self._dirs)
        stores = []
        for i, path in enumerate(paths):
            if committed is None or not os.path.isfile(os.path.join(path, "CURRENT")):
                continue  # nothing committed, or a task that has not run here
            db = rocksdict.Rdict(path, rocksdict.Options(raw_mode=True),
                                 access_type=rocksdict.AccessType.secondary(os.path.join(self._tmp, str(i))))
            self._dbs.append(db)
            raw = db.get(b"\x00meta")
            meta = json.loads(raw) if raw is not None else {}
            if meta.get("checkpoint") != checkpointId:
                continue  # another checkpoint's store, which this one has not restored yet
            pendingBatch = meta.get("pendingBatch")
            withPending = meta.get("pending") is not None and pendingBatch is not None and pendingBatch <= committed
            pending, ranges = pendingChanges(db, meta) if withPending else (None, ())
            stores.append(readOnlyStore(build(), db, pending, ranges))
        super().__init__(stores)
        self._storeName = storeName

    def name(self) -> str:
        return self._storeName

    def close(self) -> None:
        self._release()


def _releaseView(dbs: list, dirs: list) -> None:
    for db in dbs:
        db.close()
    dbs.clear()
    for path in dirs:
        shutil.rmtree(path, ignore_errors=True)


class _TaskKeyValueView(_TaskStoresView, MergedKeyValueView):
    """Key-value stores of several tasks (``ReadOnlyKeyValueStore`` reads)."""


class _TaskWindowView(_TaskStoresView, MergedWindowView):
    """Window stores of several tasks (``ReadOnlyWindowStore`` reads)."""


class _TaskSessionView(_TaskStoresView, MergedSessionView):
    """Session stores of several tasks (``ReadOnlySessionStore`` reads)."""


def _viewOf(store) -> type:
    """The view class of the persistent stores of ``store``'s kind."""
    if isinstance(store, WindowStore):
        return _TaskWindowView
    if isinstance(store, SessionStore):
        return _TaskSessionView
    return _TaskKeyValueView


class CheckpointStoreProvider:
    """Callable giving store ``storeName`` as of its sub-topology's last committed micro-batch.

    Parameters
    ----------
    streams : KafkaStreams
    storeName : str
    partition : int or None
        Only the task of that input partition (``StoreQueryParameters.withPartition``).
    """

    def __init__(self, streams, storeName: str, partition: int | None = None) -> None:
        self._streams = streams
        self._storeName = storeName
        sub = subtopologyOf(streams._topology, storeName)
        self._checkpoint = f"subtopology-{sub.id}"
        self._taskKeys = None
        self._partitions = None if partition is None else [partition]
        if partition is not None and storeName not in streams._topology.globalStoreNames():
            plan = next(p for p in streams._plans if p["subtopology"].id == sub.id)
            self._taskKeys = {k for k, p in plan["taskOfKey"].items() if p == partition}
            if not self._taskKeys:
                raise StreamsException(f"Store {storeName} has no task for partition {partition}: its sub-topology "
                                       f"has {len(plan['taskOfKey'])} tasks")
        self._lock = threading.Lock()
        self._batch: int | None = None
        self._store = self._empty()

    def _empty(self):
        config = self._streams._config
        builder = self._streams._topology.storeBuilders()[self._storeName]
        return builder.build(config.defaultKeySerde(), config.defaultValueSerde())

    def batchId(self) -> int | None:
        """The batch the current view is as of (None: nothing committed yet)."""
        return self._batch

    def __call__(self):
        with self._lock:
            stateDir = self._streams._stateDir()
            batch = lastCommittedBatch(stateDir, self._checkpoint)
            if batch != self._batch:
                old = self._store
                view = persistentStoreView(self._streams, self._storeName, self._partitions)
                self._store = view if view is not None else readCheckpointedStore(
                    self._streams._session(), self._empty(), stateDir.path(self._checkpoint), batch, self._taskKeys)
                if hasattr(old, "close") and old is not self._store and isinstance(old, _TaskStoresView):
                    old.close()
                self._batch = batch
            return self._store

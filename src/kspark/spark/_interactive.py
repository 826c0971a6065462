"""Stores read from a running (or stopped) application's checkpoint: interactive queries.

A task's stores are part of its state value in Spark's state store, committed with every
micro-batch. :class:`CheckpointStoreProvider` reads them with Spark's state data source
(``format("statestore")``) at the sub-topology's last committed batch id (its checkpoint's
``commits/`` log), merges the tasks' copies into one store, and reads again only when a newer
batch has committed. The running queries are never stopped or paused: the read is a separate
batch job over committed, immutable state files.
"""

from __future__ import annotations

import pickle
import threading

from ..errors import StreamsException

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
                self._store = readCheckpointedStore(self._streams._session(), self._empty(), stateDir.path(self._checkpoint),
                                                    batch, self._taskKeys)
                self._batch = batch
            return self._store

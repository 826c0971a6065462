"""Snapshots of a task's local store next to local changelog topics, so that a restore costs in
proportion to the live state, not to the history.

Kafka compacts changelog topics (``cleanup.policy=compact``); kspark's local topics are
append-only logs with dense offsets, which are not compacted in place. Instead, when a
task's changelogs have grown by more records since its last snapshot than its store holds
(so a snapshot costs at most as much as the records it saves a restore from reading), the task
copies its RocksDB (a RocksDB checkpoint: hard links where the filesystems allow) to
``<kspark.topics.dir>/~stores/<application.id>/<task>/<checkpoint id>-<batch>/`` with
``snapshot.json``: the checkpoint id, the micro-batch whose stores it holds, and each changelog
partition's end offset then (and each global partition's position, for the global stores). A
restore starts from the newest snapshot of its checkpoint and reads only the changelog (and
global topic) records after those offsets.

The changelog records that every kept snapshot covers are then deleted (``LocalTopics.
deleteRecords`` below the oldest kept snapshot's offsets, whole segments), so a changelog's
bytes on disk follow the live state too: at most the records since the older of the two kept
snapshots (about twice the store's entries, or ``_MIN_RECORDS``) plus a segment. Before it deletes, the task
records the checkpoint and offsets in ``<snapshot root>/~truncated.json``: a restore of that
checkpoint that finds no snapshot to start from (none kept older than the batch it restores for)
then fails naming the changelog offsets (:func:`restoreSnapshot`) rather than restore a part. The
global topics are the application's input, never deleted from.

A snapshot is taken at the start of a micro-batch, when the database holds exactly the stores of
the previous committed batch, and only if no changelog holds records of that batch or a later one
(a replayed batch's first attempt may have appended them; they would then lie before the recorded
offsets without being in the snapshot).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import uuid

from ._persistent import PersistentTaskState
from ._rocksdb import copyStoreFiles
from ._restore import batchOf

log = logging.getLogger("kspark.state")

__all__ = ["maybeSnapshot", "restoreSnapshot", "snapshotRoot"]

_KEEP = 2  # snapshots kept per task: the newest, and the one before it while the newest is new
_MIN_RECORDS = 10_000  # changelog records since the last snapshot before a snapshot is considered
_TRUNCATED = "~truncated.json"  # the checkpoint whose changelog records below its offsets were deleted


def snapshotRoot(topicsRoot: str, applicationId: str, taskId: str) -> str:
    return os.path.join(topicsRoot, "~stores", applicationId, taskId)


def _snapshots(root: str, checkpointId: str) -> list[tuple[int, str, dict]]:
    """(batch, path, description) of the complete snapshots of ``checkpointId``, newest first."""
    found = []
    if not os.path.isdir(root):
        return found
    for name in os.listdir(root):
        path = os.path.join(root, name)
        try:
            with open(os.path.join(path, "snapshot.json")) as f:
                description = json.load(f)
        except (OSError, ValueError):
            continue  # being written, or a leftover of a killed copy
        if description.get("checkpoint") == checkpointId:
            found.append((description["batch"], path, description))
    return sorted(found, key=lambda s: s[0], reverse=True)


def maybeSnapshot(state: PersistentTaskState, topics, topicsRoot: str, applicationId: str, taskId: str,
                  partition: int, checkpointId: str, batchId: int, version: str | None,
                  globalPositions: dict[str, list] | None = None) -> bool:
    """Snapshot the task's database (holding ``version``, the stores as of batch ``batchId - 1``)
    if its changelogs grew by more records since the last snapshot than the database holds;
    returns whether it did. ``globalPositions`` (``StreamTask.globalPositions`` as of
    ``version``): recorded with the changelog offsets, under their ``"<topic>@<partition>"``
    keys, as where a restore of the global stores from the snapshot goes on reading."""
    grown = state.db.meta.get("sinceSnapshot", 0)
    if grown < _MIN_RECORDS or grown < state.db.estimatedKeys():
        return False
    offsets = {}
    for topic in {t for t in state.logged.values() if t is not None}:
        end = topics.endOffset(topic, partition)
        if end > 0:
            last = topics.read(topic, partition, end - 1, end)
            tag = batchOf(last.column("headers")[0].as_py())
            if tag is None or tag[0] != checkpointId or tag[1] >= batchId:
                return False  # a replayed batch's records are in the log already: not now
        offsets[topic] = end
    offsets.update((key, position) for key, (_, position) in (globalPositions or {}).items())
    root = snapshotRoot(topicsRoot, applicationId, taskId)
    os.makedirs(root, exist_ok=True)
    target = os.path.join(root, f"{checkpointId}-{batchId - 1:020d}")
    temporary = os.path.join(root, f"~{uuid.uuid4().hex}")
    local = os.path.join(os.path.dirname(state.path), f"~snapshot-{uuid.uuid4().hex}")
    try:
        state.db.checkpointTo(local)
        os.makedirs(temporary)
        copyStoreFiles(local, temporary)
        with open(os.path.join(temporary, "snapshot.json"), "w") as f:
            json.dump({"checkpoint": checkpointId, "batch": batchId - 1, "version": version, "offsets": offsets}, f)
        shutil.rmtree(target, ignore_errors=True)
        os.rename(temporary, target)
    finally:
        shutil.rmtree(local, ignore_errors=True)
        shutil.rmtree(temporary, ignore_errors=True)
    state.db.resetSinceSnapshot()
    for _, path, _ in _snapshots(root, checkpointId)[_KEEP:]:
        shutil.rmtree(path, ignore_errors=True)
    for name in os.listdir(root):  # other checkpoints' snapshots, leftovers of killed copies
        if not name.startswith(checkpointId) and not name.startswith("~"):
            shutil.rmtree(os.path.join(root, name), ignore_errors=True)
    kept = _snapshots(root, checkpointId)
    if len(kept) == _KEEP:  # the changelog records every kept snapshot holds: not needed by any restore
        oldest = kept[-1][2]["offsets"]
        deleting = {topic: oldest[topic] for topic in sorted({t for t in state.logged.values() if t is not None})
                    if oldest.get(topic)}
        if deleting:
            _writeJson(os.path.join(root, _TRUNCATED), {"checkpoint": checkpointId, "partition": partition,
                                                        "offsets": deleting})
            for topic, offset in deleting.items():
                topics.deleteRecords(topic, partition, offset)
    log.info("task [%s] snapshot of its stores as of batch %d: %s", taskId, batchId - 1, target)
    return True


def _writeJson(path: str, value: dict) -> None:
    temporary = f"{path}.{uuid.uuid4().hex}.tmp"
    with open(temporary, "w") as f:
        json.dump(value, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(temporary, path)


def restoreSnapshot(state: PersistentTaskState, topicsRoot: str, applicationId: str, taskId: str,
                    checkpointId: str, batchId: int) -> dict[str, int]:
    """Put the newest snapshot of ``checkpointId`` older than batch ``batchId`` in place of the
    task's (closed, wiped) database and reopen it; returns the changelog offsets to restore from
    (empty when there is no snapshot: restore from the start).

    Raises
    ------
    kspark.errors.StreamsException
        If there is no such snapshot but the checkpoint's changelog records below a snapshot's
        offsets were deleted (``~truncated.json``): the changelog alone no longer holds the stores.
    """
    root = snapshotRoot(topicsRoot, applicationId, taskId)
    for batch, path, description in _snapshots(root, checkpointId):
        if batch >= batchId:
            continue
        state.replaceWith(path)
        log.info("task [%s] restores its stores from the snapshot of batch %d (%s)", taskId, batch, path)
        return description["offsets"]
    try:
        with open(os.path.join(root, _TRUNCATED)) as f:
            truncated = json.load(f)
    except (OSError, ValueError):
        truncated = {}
    if truncated.get("checkpoint") == checkpointId and batchId > 0:
        from ..errors import StreamsException

        where = ", ".join(f"{t}-{truncated.get('partition')} below offset {o}" for t, o in truncated["offsets"].items())
        raise StreamsException(
            f"task [{taskId}] cannot restore its stores for micro-batch {batchId}: the changelog records {where} were "
            f"deleted once snapshots in {root} held them, and no snapshot of checkpoint {checkpointId} older than the "
            "micro-batch is left there (deleted?)")
    return {}

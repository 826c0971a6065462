"""The local store of one task: one RocksDB on the executor's disk for every persistent store of
the task (Kafka Streams: the task directory under ``state.dir`` with a RocksDB per store, and its
``.checkpoint`` file).

Keys of the database (raw bytes):

- ``s<store name>\\x00<store key>``: a store's entries, each store under its own prefix
  (:func:`storePrefix`); what follows the prefix is the store's own layout (see
  ``kspark.state._persistent``).
- ``\\x00meta``: JSON of the database's position (:class:`TaskStateDB` ``meta``).
- ``\\x00pbat``: the last micro-batch's writes, not yet known to be committed, as one value (meta
  ``pendingLayout`` ``"batch"``): the pickle of a list of ``(ranges, writes)``, one per flush
  (one, unless a flush is added to a batch's), each the ``[lo, hi)`` ranges to delete and then
  the ``(key with its store prefix, value or None)`` writes, applied in order. One value
  is written and deleted per batch, not a key per write: a batch of 25K changed keys cost 15 ms
  to write pending and 42 ms to apply with a key per write, 7 and 16 ms as one value
  (bench/README.md round 33). It is kspark's own value, read only by kspark from the task's
  local database.
- Earlier kspark wrote a key per pending write, ``\\x00pend<tag><store key with prefix>``
  (``\\x01`` + the new value, or ``\\x00`` for a delete; ``<tag>``: 8 bytes, big-endian, meta
  ``pendingTag``, or no tag before that) and ``\\x00penr<tag><lo>`` -> ``hi`` per range. A
  database of that kspark still has its pending writes applied or dropped; the next batch
  writes the layout above.

Exactly once under Spark's replays. A micro-batch's changes are written as *pending* under a
fresh version id, in one atomic write batch with the meta. Only the next micro-batch knows
whether Spark committed that batch: Spark's state for the task (the checkpoint, a
``ValueState``) then holds the version of the last committed batch. :meth:`TaskStateDB.reconcile`
applies the pending writes when their version is the committed one, drops them when the
database's applied version is the committed one (the batch failed and Spark replays it), and
otherwise reports that the database must be restored from the changelog topics (a new executor,
a deleted directory, an older or another checkpoint). So a replayed batch always starts from
the stores of the previous committed batch, and no changelog is read in the common case.
"""

from __future__ import annotations

import json
import logging
import os
import pickle
import shutil
import time
from typing import Iterator

log = logging.getLogger("kspark.state")

__all__ = ["TaskStateDB", "copyStoreFiles", "storePrefix", "prefixEnd", "pendingWrites", "pendingChanges"]

_META = b"\x00meta"
_PENDING = b"\x00pend"
_PENDING_END = b"\x00pene"  # _PENDING with its last byte + 1: the end of the pending range
_PENDING_RANGES = b"\x00penr"  # + lo -> hi: a range [lo, hi) the pending writes delete first
_PENDING_RANGES_END = b"\x00pens"
_TAG_BYTES = 8
_PUT = b"\x01"  # an earlier kspark's pending put (else a delete)
_PENDING_BATCH = b"\x00pbat"  # the pending writes as one value (layout "batch", see the module docstring)
_BATCH_LAYOUT = "batch"
_STORE_META = b"\x00smeta"  # + store name -> JSON of what the task checkpoint keeps of the store

# One block cache and one write-buffer budget per Python worker process, shared by every task
# database it opens (RocksDB's own way to bound a process's memory: the memtables are charged to
# the block cache; table files are read through mmap, from the OS page cache). Set from
# kspark.store.memory.bytes by the first open.
_SHARED: dict = {}


def storePrefix(storeName: str) -> bytes:
    """The key prefix of store ``storeName`` in its task's database (store names never hold NUL)."""
    return b"s" + storeName.encode("utf-8") + b"\x00"


def _tagBytes(tag: int) -> bytes:
    return tag.to_bytes(_TAG_BYTES, "big")


def pendingWrites(db, meta: dict) -> dict[bytes, bytes | None]:
    """The pending writes of the database ``db`` (a ``rocksdict.Rdict``: a task's, or a secondary
    instance of it) whose meta is ``meta``: database key (with its store prefix) -> value, None
    for a delete; the last write of a key wins. Empty when nothing is pending. The pending range
    deletes are :func:`pendingChanges`' second part."""
    return pendingChanges(db, meta)[0]


def pendingChanges(db, meta: dict) -> tuple[dict[bytes, bytes | None], list[tuple[bytes, bytes]]]:
    """What applying the pending writes of ``db`` (as :func:`pendingWrites`) would change:
    ``(writes, ranges)``. ``writes``: database key -> value, or None for a key they delete (a
    delete, or a write that a range of a later batch deletes); ``ranges``: the ``[lo, hi)``
    ranges (expired segments, removed stores) they delete from the applied entries. A key reads
    as ``writes`` holds it, else as absent inside a range, else as applied. Empty when nothing
    is pending."""
    if meta.get("pending") is None:
        return {}, []
    if meta.get("pendingLayout") == _BATCH_LAYOUT:
        raw = db.get(_PENDING_BATCH)
        writes: dict[bytes, bytes | None] = {}
        ranges: list[tuple[bytes, bytes]] = []
        for segmentRanges, segmentWrites in pickle.loads(raw) if raw is not None else ():
            for lo, hi in segmentRanges:  # applied before the segment's writes, after the earlier ones
                ranges.append((lo, hi))
                for key in [key for key in writes if lo <= key < hi]:
                    writes[key] = None
            writes.update(segmentWrites)
        return writes, ranges
    import rocksdict

    writesStart, writesEnd, rangesStart, rangesEnd = _earlierPendingKeys(meta)
    found = []
    for start, end in ((writesStart, writesEnd), (rangesStart, rangesEnd)):
        options = rocksdict.ReadOptions()
        options.set_iterate_upper_bound(end)
        found.append([(key[len(start):], value) for key, value in db.items(from_key=start, read_opt=options)])
    return ({key: (value[1:] if value[:1] == _PUT else None) for key, value in found[0]}, found[1])


def _earlierPendingKeys(meta: dict) -> tuple[bytes, bytes | None, bytes, bytes | None]:
    """(start, end) of an earlier kspark's pending writes' keys, then of their ranges."""
    tag = meta.get("pendingTag")
    if tag is None:  # a database of an earlier kspark
        return _PENDING, _PENDING_END, _PENDING_RANGES, _PENDING_RANGES_END
    writes, ranges = _PENDING + _tagBytes(tag), _PENDING_RANGES + _tagBytes(tag)
    return writes, prefixEnd(writes), ranges, prefixEnd(ranges)


def prefixEnd(prefix: bytes) -> bytes | None:
    """The smallest key greater than every key starting with ``prefix`` (None: no such key)."""
    stripped = prefix.rstrip(b"\xff")
    return stripped[:-1] + bytes([stripped[-1] + 1]) if stripped else None


def _options(memoryBytes: int, compactionTrigger: int | None = None):
    """RocksDB options with the process's shared memory bound (block cache + memtables);
    ``compactionTrigger``: the sorted runs that start a compaction (RocksDB's
    ``level0_file_num_compaction_trigger``; None: RocksDB's default, 4, as Kafka Streams keeps it)."""
    import rocksdict

    shared = _SHARED.get(memoryBytes)
    if shared is None:
        cache = rocksdict.Cache(memoryBytes)
        # memtables are charged to the block cache: half of the bound at most
        buffers = rocksdict.WriteBufferManager.new_write_buffer_manager_with_cache(memoryBytes // 2, False, cache)
        shared = _SHARED[memoryBytes] = (cache, buffers)
    cache, buffers = shared
    table = rocksdict.BlockBasedOptions()
    table.set_block_cache(cache)
    table.set_bloom_filter(10, False)  # point reads of absent keys (a new key of an aggregation) skip the files
    # Index and filter blocks stay with the table readers, outside the block cache, as with Kafka
    # Streams' default RocksDBConfig (about 1.5 bytes per key). In the cache, a file's full filter
    # block (3.7 MB for 2.5M keys) outgrew a cache shard (capacity / 64): it was read from the file
    # again by every get, 230 us instead of 7 (bench/README.md round 18, P5 at 10M keys).
    table.set_cache_index_and_filter_blocks(False)
    options = rocksdict.Options(raw_mode=True)
    options.create_if_missing(True)
    options.set_block_based_table_factory(table)
    options.set_write_buffer_manager(buffers)
    options.set_write_buffer_size(min(16 << 20, max(1 << 20, memoryBytes // 8)))
    # A bloom filter of each memtable's whole keys (10 % of its size): a point read of a key
    # the memtables do not hold (most reads of a large store) skips their skip-list seeks, which
    # took 29 % of RocksDB's CPU in P5 at 10M keys (bench/README.md round 30).
    options.set_memtable_prefix_bloom_ratio(0.1)
    options.set_memtable_whole_key_filtering(True)
    options.set_max_write_buffer_number(2)
    # Kafka Streams' RocksDBStore defaults: universal compaction, tables uncompressed. Leveled
    # compaction with Snappy rewrote a task's whole last level every few micro-batches (each
    # open flushes the replayed WAL to a small L0 file): RocksDB's background threads took more
    # CPU than the task itself, 0.82-1.04 CPU-s per 25K-record batch of a 2.5M-key task against
    # 0.46-0.51 with these (bench/README.md round 34). A database written with the old options opens
    # with these unchanged: universal compaction takes its levels as sorted runs.
    options.set_compaction_style(rocksdict.DBCompactionStyle.universal())
    options.set_compression_type(rocksdict.DBCompressionType.none())
    if compactionTrigger is not None:
        options.set_level_zero_file_num_compaction_trigger(compactionTrigger)
    # Table files read through mmap: uncompressed blocks are read in place from the OS page cache,
    # not copied into the block cache, which then holds the memtables' charge only. Same speed,
    # and 30 % less resident memory per Python worker at 10M keys (bench/README.md round 35).
    options.set_allow_mmap_reads(True)
    options.set_max_open_files(256)
    options.set_keep_log_file_num(2)
    options.set_max_background_jobs(2)
    return options


def copyStoreFiles(source: str, target: str, skip: tuple[str, ...] = ()) -> None:
    """Copy the files of a RocksDB directory (a checkpoint or snapshot) into ``target`` (which
    exists): table files as hard links where both are on one filesystem (RocksDB never changes
    a table file), the others (MANIFEST, CURRENT, OPTIONS, which RocksDB rewrites) as copies."""
    for name in os.listdir(source):
        if name in skip:
            continue
        original, copy = os.path.join(source, name), os.path.join(target, name)
        if name.endswith((".sst", ".blob")):
            try:
                os.link(original, copy)
                continue
            except OSError:
                pass
        shutil.copy2(original, copy)


class TaskStateDB:
    """The RocksDB database of one task (see the module docstring).

    Parameters
    ----------
    path : str
        A directory on local disk; created if missing.
    memoryBytes : int
        The bound of RocksDB's memory (block cache and memtables) in this process
        (``kspark.store.memory.bytes``), shared by every database the process opens with it.
    lockTimeoutS : float
        How long to wait for another process of this executor that still holds the database
        (a task attempt that has not ended yet) before failing.
    compactionTrigger : int, optional
        The sorted runs that start a compaction (RocksDB's ``level0_file_num_compaction_trigger``);
        None: RocksDB's default (4).

    Raises
    ------
    kspark.errors.ProcessorStateException
        If the database cannot be opened within ``lockTimeoutS`` (naming the path and RocksDB's
        error).
    """

    def __init__(self, path: str, memoryBytes: int, lockTimeoutS: float = 60.0,
                 compactionTrigger: int | None = None) -> None:
        import rocksdict

        from ..errors import ProcessorStateException

        self.path = path
        os.makedirs(path, exist_ok=True)
        deadline = time.monotonic() + lockTimeoutS
        while True:
            try:
                # column_families={}: without it, rocksdict reopens an existing database with the
                # options stored in it, not these (its block cache was RocksDB's default 8 MB, and
                # its tables had no bloom filters)
                self.db = rocksdict.Rdict(path, _options(memoryBytes, compactionTrigger), column_families={})
                break
            except Exception as e:  # noqa: BLE001 - rocksdict raises a plain Exception
                if "lock" not in str(e).lower() or time.monotonic() > deadline:
                    raise ProcessorStateException(f"Cannot open the local store {path}: {e}") from e
                time.sleep(0.05)
        raw = self.db.get(_META)
        self.meta: dict = json.loads(raw) if raw is not None else {}

    # ------------------------------------------------------------------ position
    def reconcile(self, checkpointId: str, committedVersion: str | None) -> bool:
        """Bring the database to the committed version: apply or drop the pending writes.

        Returns True when the database now holds exactly the stores of ``committedVersion``
        (None: the checkpoint has not committed a batch yet) of checkpoint ``checkpointId``;
        False when it does not know them (it must be restored, :meth:`wipe` first)."""
        meta = self.meta
        if meta.get("checkpoint") != checkpointId:
            return False
        pending = meta.get("pending")
        if pending is not None and pending == committedVersion:
            if meta.get("pendingLayout") == _BATCH_LAYOUT:
                batch = None
                for ranges, writes in pickle.loads(self.db.get(_PENDING_BATCH)):
                    batch = self._batchOf(ranges, writes, batch)
                batch.delete(_PENDING_BATCH)
                self._setMeta(batch, applied=committedVersion, pending=None)
                self.db.write(batch)
            else:
                self._applyPending(committedVersion)
            return True
        if meta.get("applied") == committedVersion:
            if pending is not None:
                self._dropPending()
            return True
        return False

    def _applyPending(self, version: str) -> None:
        """Apply an earlier kspark's pending writes (a key per write)."""
        import rocksdict

        writes, writesEnd, ranges, rangesEnd = _earlierPendingKeys(self.meta)
        batch = rocksdict.WriteBatch(raw_mode=True)
        skip = len(ranges)
        for key, hi in self._items(ranges, rangesEnd):
            batch.delete_range(key[skip:], hi)
            batch.delete(key)
        skip = len(writes)
        for key, value in self._items(writes, writesEnd):
            if value[:1] == _PUT:
                batch.put(key[skip:], value[1:])
            else:
                batch.delete(key[skip:])
            batch.delete(key)
        self._setMeta(batch, applied=version, pending=None)
        self.db.write(batch)

    def _dropPending(self) -> None:
        import rocksdict

        batch = rocksdict.WriteBatch(raw_mode=True)
        if self.meta.get("pendingLayout") == _BATCH_LAYOUT:
            batch.delete(_PENDING_BATCH)
        else:
            writes, writesEnd, ranges, rangesEnd = _earlierPendingKeys(self.meta)
            for start, end in ((writes, writesEnd), (ranges, rangesEnd)):
                for key, _ in self._items(start, end):
                    batch.delete(key)
        self._setMeta(batch, pending=None)
        self.db.write(batch)

    def _setMeta(self, batch, **changes) -> None:
        self.meta = {**self.meta, **changes}
        batch.put(_META, json.dumps(self.meta).encode())

    def wipe(self, checkpointId: str, version: str | None) -> None:
        """Delete every store entry and pending write; the database then holds the empty stores
        of ``version`` of checkpoint ``checkpointId`` (to be filled by a restore)."""
        import rocksdict

        batch = rocksdict.WriteBatch(raw_mode=True)
        batch.delete_range(b"\x00", b"\xff\xff")
        self.meta = {}
        self._setMeta(batch, checkpoint=checkpointId, applied=version, pending=None)
        self.db.write(batch)

    def markApplied(self, checkpointId: str, version: str | None) -> None:
        """Record that the stores are those of ``version`` (after a restore wrote them)."""
        import rocksdict

        batch = rocksdict.WriteBatch(raw_mode=True)
        self._setMeta(batch, checkpoint=checkpointId, applied=version, pending=None)
        self.db.write(batch)

    def writePending(self, writes: list[tuple[bytes, bytes | None]], version: str, batchId: int,
                     ranges: list[tuple[bytes, bytes]] = (), changelogRecords: int = 0) -> None:
        """Write a micro-batch's changes as pending under ``version``, atomically with the meta:
        ``writes`` (key with its store prefix, value or None) and ``ranges`` (``[lo, hi)`` to
        delete before the writes are applied); ``changelogRecords``: how many records the batch
        logged (counted towards the next snapshot, ``kspark.state._snapshots``)."""
        import rocksdict

        segments = [(list(ranges), list(writes))]
        if self.meta.get("pending") is not None:  # neither applied nor dropped: added to, as before
            if self.meta.get("pendingLayout") != _BATCH_LAYOUT:  # (a reconcile comes first, always)
                raise RuntimeError(f"{self.path}: an earlier kspark's pending writes were neither applied nor dropped")
            segments = pickle.loads(self.db.get(_PENDING_BATCH)) + segments
        batch = rocksdict.WriteBatch(raw_mode=True)
        batch.put(_PENDING_BATCH, pickle.dumps(segments, protocol=5))
        self._setMeta(batch, pending=version, pendingBatch=batchId, pendingLayout=_BATCH_LAYOUT,
                      sinceSnapshot=self.meta.get("sinceSnapshot", 0) + changelogRecords)
        self.db.write(batch)

    # ------------------------------------------------------------------ reads
    def get(self, key: bytes) -> bytes | None:
        return self.db.get(key)

    def multiGet(self, keys: list[bytes]) -> list[bytes | None]:
        """The values of ``keys`` (None: absent) in one RocksDB ``MultiGet``."""
        return self.db.get(keys) if keys else []

    def write(self, puts: list[tuple[bytes, bytes | None]], ranges: list[tuple[bytes, bytes]] = ()) -> None:
        """Write store entries directly, in one atomic batch: ``ranges`` (``[lo, hi)``) deleted,
        then ``puts`` (key with its store prefix, value or None); nothing when both are empty.
        A restore's writes, and the commits of a host whose database never outlives a failed
        commit (the continuous host's stream threads restore into a new directory on every
        attempt), which need no :meth:`reconcile` to tell applied from pending."""
        if puts or ranges:
            self.db.write(self._batchOf(ranges, puts))

    @staticmethod
    def _batchOf(ranges, puts, batch=None):
        """``batch`` (None: a new write batch) with ``ranges`` (``[lo, hi)``) deleted, then ``puts``
        (value None: a delete)."""
        import rocksdict

        if batch is None:
            batch = rocksdict.WriteBatch(raw_mode=True)
        for lo, hi in ranges:
            batch.delete_range(lo, hi)
        for key, value in puts:
            if value is None:
                batch.delete(key)
            else:
                batch.put(key, value)
        return batch

    def deleteRange(self, lo: bytes, hi: bytes) -> None:
        """Delete the entries in ``[lo, hi)`` (a store's expired segments, a removed store)."""
        import rocksdict

        batch = rocksdict.WriteBatch(raw_mode=True)
        batch.delete_range(lo, hi)
        self.db.write(batch)

    def _items(self, lo: bytes, hi: bytes | None) -> Iterator[tuple[bytes, bytes]]:
        import rocksdict

        options = rocksdict.ReadOptions()
        if hi is not None:
            options.set_iterate_upper_bound(hi)
        options.fill_cache(False)
        return self.db.items(from_key=lo, read_opt=options)

    def items(self, lo: bytes, hi: bytes | None) -> Iterator[tuple[bytes, bytes]]:
        """The entries with keys in ``[lo, hi)`` (``hi`` None: to the end), in key order."""
        return self._items(lo, hi)

    def storeNames(self) -> set[str]:
        """The stores that have entries in the database."""
        names = set()
        key = b"s"
        while True:
            found = next(iter(self.db.keys(from_key=key)), None)
            if found is None or not found.startswith(b"s"):
                return names
            name, _, _ = found[1:].partition(b"\x00")
            names.add(name.decode("utf-8"))
            key = b"s" + name + b"\x01"

    def estimatedKeys(self) -> int:
        """RocksDB's estimate of the keys in the database."""
        return int(self.db.property_int_value("rocksdb.estimate-num-keys") or 0)

    def checkpointTo(self, path: str) -> None:
        """A RocksDB checkpoint of the database in ``path`` (a new directory; its table files are
        hard links to the database's own)."""
        import rocksdict

        rocksdict.Checkpoint(self.db).create_checkpoint(path)

    def resetSinceSnapshot(self) -> None:
        import rocksdict

        batch = rocksdict.WriteBatch(raw_mode=True)
        self._setMeta(batch, sinceSnapshot=0)
        self.db.write(batch)

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None

    @staticmethod
    def destroy(path: str) -> None:
        """Delete the database directory (a store directory deleted between batches is restored)."""
        shutil.rmtree(path, ignore_errors=True)

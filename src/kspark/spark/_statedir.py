"""An application's directory in ``state.dir`` (``<state.dir>/<application.id>``) on any Hadoop
filesystem (``file:``, ``hdfs://``, ``s3a://``...), read and written from the driver through
Spark's JVM (Hadoop ``FileSystem`` and Spark's ``CheckpointFileManager``), as Spark reads and
writes the checkpoints kept there.

Besides Spark's checkpoint of every sub-topology's query (``subtopology-<n>/``), kspark keeps:

``kspark.lock``
    Held by the running instance (:class:`StateDirLock`).
``subtopology-<n>/kspark-topology.json``
    The topology and partition counts the checkpoint was written for, next to it
    (``KafkaStreams`` refuses to resume it with another topology or partition counts).
``metrics/subtopology-<n>.json``
    The sub-topology's counters summed over every committed micro-batch (:meth:`StateDir.addBatchCounters`).
"""

from __future__ import annotations

import json
import logging
import os
import re
import socket
import threading
import time
import uuid

from ..errors import StreamsException

__all__ = ["StateDir", "StateDirLock"]

log = logging.getLogger("kspark.spark")

_SCHEME = re.compile(r"([a-zA-Z][a-zA-Z0-9+.-]+):")


def _javaClass(error) -> str:
    """The class name of the Java exception behind a ``Py4JJavaError`` ('' for other errors)."""
    java = getattr(error, "java_exception", None)
    return java.getClass().getName() if java is not None else ""


class StateDir:
    """``<state.dir>/<application.id>`` on the filesystem of its URI (Spark's Hadoop configuration).

    Paths below are relative to it (``"metrics/subtopology-0.json"``). A ``state.dir`` without a
    scheme is on Hadoop's default filesystem (``fs.defaultFS``), as Spark resolves a checkpoint
    location; relative ones are made absolute on the driver (against the current directory when
    that filesystem is the local one).

    Parameters
    ----------
    spark : SparkSession
    stateDir : str
        ``state.dir``: a path or a URI.
    applicationId : str
    """

    def __init__(self, spark, stateDir: str, applicationId: str) -> None:
        self._jvm = spark._jvm
        self._conf = spark._jsc.hadoopConfiguration()
        text = os.fspath(stateDir)
        if not _SCHEME.match(text):
            default = self._jvm.org.apache.hadoop.fs.FileSystem.get(self._conf)
            if default.getUri().getScheme() == "file":  # the driver's current directory, not the JVM's
                text = "file:" + os.path.abspath(text)
        root = self._jvm.org.apache.hadoop.fs.Path(text)
        self._fs = root.getFileSystem(self._conf)
        self.uri = f"{self._fs.makeQualified(root).toString().rstrip('/')}/{applicationId}"
        """The directory's absolute URI (``file:/...``, ``hdfs://namenode:8020/...``)."""
        self._local = self.uri.startswith("file:")
        self._files = None

    def path(self, relative: str = "") -> str:
        """The absolute URI of ``relative``."""
        return f"{self.uri}/{relative}" if relative else self.uri

    def _jpath(self, relative: str):
        return self._jvm.org.apache.hadoop.fs.Path(self.path(relative))

    def _localPath(self, relative: str) -> str:
        return self._jpath(relative).toUri().getPath()

    def exists(self, relative: str) -> bool:
        return bool(self._fs.exists(self._jpath(relative)))

    def read(self, relative: str) -> bytes | None:
        """The file's bytes, or None if it does not exist."""
        try:
            stream = self._fs.open(self._jpath(relative))
        except Exception as e:  # noqa: BLE001 - Py4JJavaError
            if _javaClass(e) == "java.io.FileNotFoundException":
                return None
            raise
        try:
            return bytes(stream.readAllBytes())
        finally:
            stream.close()

    def readJson(self, relative: str):
        """The file's JSON value, or None if it does not exist.

        Raises
        ------
        StreamsException
            If the file is not valid JSON, naming it.
        """
        data = self.read(relative)
        if data is None:
            return None
        try:
            return json.loads(data)
        except ValueError as e:
            raise StreamsException(f"{self.path(relative)} is damaged (not JSON: {e}); kspark wrote it whole, "
                                   "so something else changed it") from e

    def write(self, relative: str, data: bytes) -> None:
        """Replace the file (creating its directories) with ``data`` atomically: readers see the
        old or the new bytes (Spark's ``CheckpointFileManager.createAtomic``, as for its own
        checkpoint files)."""
        if self._files is None:
            self._files = self._checkpointFileManager()
        path = self._jpath(relative)
        self._files.mkdirs(path.getParent())
        stream = self._files.createAtomic(path, True)
        try:
            stream.write(bytearray(data))
        except BaseException:
            stream.cancel()
            raise
        stream.close()

    def _checkpointFileManager(self):
        manager = self._jvm.org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager
        try:
            return manager.create(self._jpath(""), self._conf)
        except Exception:  # noqa: BLE001 - Spark before 4.1 had it one package up
            return self._jvm.org.apache.spark.sql.execution.streaming.CheckpointFileManager.create(self._jpath(""), self._conf)

    def createNew(self, relative: str, data: bytes) -> bool:
        """Create the file with ``data`` unless it exists; whether it was created. Atomic on
        HDFS and local files (``O_EXCL``); on object stores (S3A) only as atomic as their
        ``create(overwrite=false)``."""
        if self._local:
            path = self._localPath(relative)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                return False
            try:
                os.write(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
            return True
        try:
            stream = self._fs.create(self._jpath(relative), False)
        except Exception as e:  # noqa: BLE001 - Py4JJavaError
            if _javaClass(e) == "org.apache.hadoop.fs.FileAlreadyExistsException":
                return False
            raise
        stream.write(bytearray(data))
        stream.close()
        return True

    def list(self, relative: str = "") -> list[str]:
        """Names in the directory (none if it does not exist), without Hadoop's ``.crc`` files."""
        try:
            statuses = self._fs.listStatus(self._jpath(relative))
        except Exception as e:  # noqa: BLE001 - Py4JJavaError
            if _javaClass(e) == "java.io.FileNotFoundException":
                return []
            raise
        return sorted(n for n in (s.getPath().getName() for s in statuses) if not n.endswith(".crc"))

    def delete(self, relative: str) -> None:
        """Delete the file (or directory, with its contents) if it exists."""
        self._fs.delete(self._jpath(relative), True)

    def modificationTime(self, relative: str) -> int | None:
        """Last modification of the file (ms since the epoch, the filesystem's clock), or None."""
        try:
            return int(self._fs.getFileStatus(self._jpath(relative)).getModificationTime())
        except Exception as e:  # noqa: BLE001 - Py4JJavaError
            if _javaClass(e) == "java.io.FileNotFoundException":
                return None
            raise

    # ------------------------------------------------------------------ metrics
    def addBatchCounters(self, subtopology: int, checkpointId: str, batchId: int, counters: dict[str, float]) -> None:
        """Add the counters of a committed micro-batch to ``metrics/subtopology-<n>.json``,
        which holds their sums and the last batch added (with its checkpoint's id: Spark's query
        id), so that a batch is added once. One file per sub-topology, whatever the run's length.
        """
        relative = f"metrics/subtopology-{subtopology}.json"
        saved = self.readJson(relative) or {"checkpoint": None, "batch": -1, "counters": {}}
        if saved["checkpoint"] == checkpointId and batchId <= saved["batch"]:
            return
        totals = saved["counters"]
        for name, value in counters.items():
            totals[name] = totals.get(name, 0) + value
        self.write(relative, json.dumps({"checkpoint": checkpointId, "batch": batchId,
                                         "counters": dict(sorted(totals.items()))}).encode())

    def counters(self) -> dict[str, float]:
        """The counters of every sub-topology summed (:meth:`addBatchCounters`)."""
        totals: dict[str, float] = {}
        for name in self.list("metrics"):
            if name.startswith("subtopology-") and name.endswith(".json"):
                for key, value in (self.readJson(f"metrics/{name}") or {}).get("counters", {}).items():
                    totals[key] = totals.get(key, 0) + value
        return totals


def _processStart(pid: int) -> str | None:
    """When process ``pid`` started (clock ticks since boot, Linux), to tell it from a later
    process that reuses its id; None where unknown."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return None


class StateDirLock:
    """``kspark.lock`` in the application's state directory: held by the one running instance.

    Taken by creating the file if absent, with its owner (host, process id and start time,
    token, time); the owner rewrites it every :attr:`HEARTBEAT_S` seconds and deletes it at
    ``close()``. A lock is **stale**, and taken over, when its owner is a process of this host
    that no longer runs (a killed run: no wait), or when it has not been rewritten for
    :attr:`STALE_AFTER_S` seconds (an owner on another host, by the filesystem's modification
    time). An owner that finds its lock taken over (it stalled longer than that) calls
    ``onLost``.

    Parameters
    ----------
    stateDir : StateDir
    onLost : callable, optional
        Called with the new owner's description when the lock was taken over.
    """

    NAME = "kspark.lock"
    HEARTBEAT_S = 10.0
    STALE_AFTER_S = 60.0

    def __init__(self, stateDir: StateDir, onLost=None) -> None:
        self._dir = stateDir
        self._onLost = onLost
        self._token = uuid.uuid4().hex
        self._owner = {"token": self._token, "host": socket.gethostname(), "pid": os.getpid(),
                       "processStart": _processStart(os.getpid()), "since": int(time.time() * 1000)}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def acquire(self) -> None:
        """Take the lock (taking over a stale one) and start the heartbeat.

        Raises
        ------
        StreamsException
            If another instance holds it, naming its host, process and start time.
        """
        for _ in range(3):
            if self._dir.createNew(self.NAME, self._content()):
                if self._isMine():
                    self._thread = threading.Thread(target=self._heartbeat, name="kspark-state-dir-lock", daemon=True)
                    self._thread.start()
                    return
                continue  # a concurrent taker overwrote it (a filesystem without atomic create)
            owner = self._current()
            if owner is not None and not self._isStale(owner):
                raise StreamsException(self._heldMessage(owner))
            log.warning("Taking over the stale lock %s of %s", self._dir.path(self.NAME), _describe(owner))
            self._dir.delete(self.NAME)
        raise StreamsException(self._heldMessage(self._current()))

    def release(self) -> None:
        """Stop the heartbeat and delete the lock if it is still this instance's."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._isMine():
            self._dir.delete(self.NAME)

    def _content(self) -> bytes:
        return json.dumps({**self._owner, "heartbeat": int(time.time() * 1000)}).encode()

    def _current(self) -> dict | None:
        data = self._dir.read(self.NAME)
        if data is None:
            return None
        try:
            owner = json.loads(data)
        except ValueError:
            owner = {}
        return owner if isinstance(owner, dict) else {}

    def _isMine(self) -> bool:
        owner = self._current()
        return owner is not None and owner.get("token") == self._token

    def _isStale(self, owner: dict) -> bool:
        if owner.get("host") == self._owner["host"] and isinstance(owner.get("pid"), int):
            try:
                os.kill(owner["pid"], 0)
            except ProcessLookupError:
                return True
            except PermissionError:
                pass
            started = owner.get("processStart")
            return started is not None and started != _processStart(owner["pid"])
        modified = self._dir.modificationTime(self.NAME)
        return modified is not None and time.time() * 1000 - modified > self.STALE_AFTER_S * 1000

    def _heldMessage(self, owner: dict | None) -> str:
        return (f"Another instance of application.id {self._dir.uri.rsplit('/', 1)[1]} is running on this state.dir: "
                f"{self._dir.path(self.NAME)} is held by {_describe(owner)}. Stop it first (an instance on another "
                f"host that is gone leaves a lock that goes stale {self.STALE_AFTER_S:.0f} s after its last "
                "heartbeat; one of this host that is gone, at once).")

    def _heartbeat(self) -> None:
        while not self._stop.wait(self.HEARTBEAT_S):
            try:
                if not self._isMine():
                    owner = self._current()
                    log.error("The lock %s was taken over by %s: this instance must stop", self._dir.path(self.NAME),
                              _describe(owner))
                    if self._onLost is not None:
                        self._onLost(owner)
                    return
                self._dir.write(self.NAME, self._content())
            except Exception:  # noqa: BLE001 - keep beating; a JVM that stopped ends the run anyway
                log.warning("Could not renew the lock %s", self._dir.path(self.NAME), exc_info=True)


def _describe(owner: dict | None) -> str:
    if not owner:
        return "an unknown owner"
    since = owner.get("since")
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(since / 1000)) if isinstance(since, int) else "?"
    return f"process {owner.get('pid')} on host {owner.get('host')} (since {when})"

"""Class data sharing for the driver JVM that kspark starts (Java's AppCDS, JEP 350).

A query's first micro-batch in a new JVM spends seconds loading and verifying Spark's classes
(planning, streaming, Python runners). The JVM can map the classes a previous run loaded from
an archive instead: a P1 run at 1M records took 5.5-6.8 s from ``start()`` to its end with the
archive against 8.2-8.6 s without (bench/README.md, round 14).

The first session of a machine (for a given java, pyspark and driver class path) runs with
``-XX:ArchiveClassesAtExit``: when the process ends, kspark closes the JVM's stdin (it exits
as it does when Python ends), waits for the JVM to write the archive (a few seconds, once),
checks that java maps it (``java -XX:SharedArchiveFile=... -version``: a truncated archive
stops the JVM at start) and moves it into place. Later sessions map it
(``-XX:SharedArchiveFile``). A JVM that finds the archive does not match its class path (jars
changed since) ignores it; kspark turns the JVM's CDS logging off (``-Xlog:cds=off``) so that
neither case prints anything.

Archives live in ``$KSPARK_CDS_DIR``, else ``$XDG_CACHE_HOME/kspark/cds`` or
``~/.cache/kspark/cds``, the :data:`KEPT` newest of them; ``KSPARK_CDS_DIR=off`` turns the
feature off. Nothing is archived
when ``spark.driver.extraJavaOptions`` already sets a CDS option (``-Xshare``,
``SharedArchiveFile``, ``ArchiveClassesAtExit``).
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import subprocess
import sys
import time

QUIET = ["-Xlog:cds=off", "-Xlog:cds+dynamic=off"]
KEPT = 4  # archives kept in the directory, newest first (about 180 MB each)
_CDS_OPTIONS = ("-Xshare", "SharedArchiveFile", "ArchiveClassesAtExit")
_dumping: str | None = None  # the archive this process's JVM writes at exit


def archiveDirectory() -> str | None:
    configured = os.environ.get("KSPARK_CDS_DIR")
    if configured == "off":
        return None
    if configured:
        return configured
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "kspark", "cds")


def javaExecutable() -> str | None:
    """The java that Spark's launcher runs (``$JAVA_HOME/bin/java``, else ``java`` on the PATH),
    or None."""
    from ..testing._jvm import JvmArtifactsMissing, javaExecutable

    try:
        return javaExecutable()
    except JvmArtifactsMissing:
        return None


def archiveKey(java: str, options: dict[str, str]) -> str:
    """What an archive depends on: the java, pyspark's version and jars, and the driver class
    path settings among ``options`` (Spark confs)."""
    import pyspark

    jars = os.path.join(os.environ.get("SPARK_HOME") or os.path.dirname(pyspark.__file__), "jars")
    real = os.path.realpath(java)
    stat = os.stat(real)
    listing = sorted((os.path.basename(p), os.path.getsize(p)) for p in glob.glob(os.path.join(jars, "*.jar")))
    classPath = {k: options.get(k) for k in ("spark.jars", "spark.jars.packages", "spark.driver.extraClassPath")}
    blob = json.dumps([real, stat.st_size, stat.st_mtime_ns, pyspark.__version__, jars, listing, classPath])
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def javaOptions(options: dict[str, str], given: str) -> list[str]:
    """The CDS options to add to ``given`` (the driver's ``extraJavaOptions``) for a driver JVM
    started with Spark confs ``options``; ``[]`` when off, already set, or java is not found.
    Registers the archive's completion at exit when this session writes it."""
    global _dumping
    directory = archiveDirectory()
    java = javaExecutable()
    if directory is None or java is None or any(o in given for o in _CDS_OPTIONS):
        return []
    try:
        key = archiveKey(java, options)
        os.makedirs(directory, exist_ok=True)
    except OSError:
        return []
    archive = os.path.join(directory, f"driver-{key}.jsa")
    if os.path.exists(archive):
        return [f"-XX:SharedArchiveFile={archive}", *QUIET]
    if not _claim(archive + ".lock"):
        return []  # another process writes the archive now
    for stale in glob.glob(os.path.join(directory, "*.tmp")):  # a run that ended before its JVM did
        try:
            if time.time() - os.path.getmtime(stale) > 600:
                os.remove(stale)
        except OSError:
            pass
    _dumping = f"{archive}.{os.getpid()}.tmp"
    return [f"-XX:ArchiveClassesAtExit={_dumping}", *QUIET]


def _claim(lock: str) -> bool:
    """Whether this process may write the archive: it created ``lock`` (with its pid), or took
    it over from a process that no longer runs."""
    for _ in range(2):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            try:
                with open(lock) as f:
                    owner = int(f.read() or 0)
                if owner == 0:  # its creator has not written its pid yet, or died before it did
                    if time.time() - os.path.getmtime(lock) < 60:
                        return False
                    raise ProcessLookupError
                os.kill(owner, 0)
                return False
            except (ProcessLookupError, ValueError):
                try:
                    os.remove(lock)
                except OSError:
                    return False
                continue
            except OSError:
                return False
        with os.fdopen(fd, "w") as f:
            f.write(str(os.getpid()))
        return True
    return False


def finishAtExit() -> None:
    """If this process's JVM writes an archive, complete it when the process exits
    (:func:`finishArchive`; after the exit handlers registered later, which may still use the JVM)."""
    if _dumping is not None:
        import atexit

        from pyspark import SparkContext

        atexit.register(lambda: finishArchive(getattr(SparkContext._gateway, "proc", None)))


def finishArchive(proc, timeout: float = 120) -> bool:
    """At exit of a process whose JVM (``proc``, pyspark's gateway process) writes an archive:
    end the JVM as Python's exit would (its stdin closes), wait for it, and move the archive
    into place if java maps it. Returns whether it did; a failed archive is deleted."""
    global _dumping
    written, _dumping = _dumping, None
    if written is None:
        return False
    archive = written.rsplit(".", 2)[0]
    try:
        if proc is None:
            return False
        if proc.poll() is None:  # a pause of seconds at exit: say why, once
            try:
                print(f"kspark: writing a class data sharing archive of Spark's classes for later runs "
                      f"(once, ~15 s; KSPARK_CDS_DIR=off to skip): {archive}", file=sys.stderr, flush=True)
            except (OSError, ValueError):  # stderr closed
                pass
        try:
            if proc.stdin is not None:
                proc.stdin.close()
            proc.wait(timeout)
        except (OSError, subprocess.TimeoutExpired):
            return False  # left as .tmp: removed by a later session
        if proc.returncode == 0 and usable(written):
            os.replace(written, archive)
            _keepNewest(os.path.dirname(archive), KEPT)
            return True
        try:
            os.remove(written)
        except OSError:
            pass
        return False
    finally:
        try:
            os.remove(archive + ".lock")
        except OSError:
            pass


def _keepNewest(directory: str, kept: int) -> None:
    """Delete all but the ``kept`` newest archives (one per java, pyspark and driver class path:
    each virtual environment has its own, and deleted ones leave theirs behind)."""
    archives = sorted(glob.glob(os.path.join(directory, "driver-*.jsa")), key=os.path.getmtime, reverse=True)
    for old in archives[kept:]:
        try:
            os.remove(old)
        except OSError:
            pass


def usable(archive: str) -> bool:
    """Whether java starts with ``archive`` mapped (a truncated archive aborts it)."""
    java = javaExecutable()
    if java is None or not os.path.exists(archive):
        return False
    try:
        # a bad archive aborts java: no hs_err_pid*.log or core file left behind
        done = subprocess.run([java, f"-XX:SharedArchiveFile={archive}", *QUIET, f"-XX:ErrorFile={os.devnull}",
                               "-XX:-CreateCoredumpOnCrash", "-version"],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def main() -> int:
    """``python -m kspark.spark._cds``: write the archive now (the install step runs it), from a
    small streaming run on local topics: a session count and a stream-table join, so that the
    archive holds the classes of a micro-batch's planning, state and Python runners."""
    import tempfile
    from datetime import timedelta

    from kspark import Consumed, KafkaStreams, Serdes, SessionWindows, StreamsBuilder
    from kspark.config import StreamsConfig
    from kspark.runtime.partitioner import partitionForKey
    from kspark.spark._session import getOrCreateSession
    from kspark.topics import LocalTopics

    with tempfile.TemporaryDirectory(prefix="kspark-cds-") as work:
        topics = LocalTopics(os.path.join(work, "topics"))
        for name in ("in", "table", "sessions", "joined"):
            topics.createTopic(name, 2)
        topics.produce("in", [(f"k{i % 7}".encode(), b"v", 1000 * i) for i in range(200)], partitioner=partitionForKey)
        topics.produce("table", [(f"k{i}".encode(), b"t", 0) for i in range(7)], partitioner=partitionForKey)
        builder = StreamsBuilder()
        stream = builder.stream("in", Consumed.with_(Serdes.String(), Serdes.String()))
        stream.groupByKey().windowedBy(SessionWindows.ofInactivityGapWithNoGrace(timedelta(seconds=5))).count() \
            .toStream().map(lambda k, v: (k.key(), str(v))).to("sessions")
        stream.join(builder.table("table", Consumed.with_(Serdes.String(), Serdes.String())), lambda v, t: v + t).to("joined")
        config = StreamsConfig({"application.id": "kspark-cds", "state.dir": os.path.join(work, "state"),
                                "kspark.topics.dir": os.path.join(work, "topics"), "kspark.spark.master": "local[2]"})
        getOrCreateSession(config)
        if _dumping is None:
            print(f"class data sharing archive: {archiveDirectory()} (present, off or being written)")
            return 0
        streams = KafkaStreams(builder.build(), config)
        streams.start()
        streams.awaitTermination()
        streams.close()
    print(f"class data sharing archive: written to {archiveDirectory()} as this process exits")
    return 0


if __name__ == "__main__":
    from kspark.spark._cds import main as _main  # the module the session uses, not this __main__ copy

    sys.exit(_main())

"""The SparkSession kspark runs on: made once, configured for the task-per-group host."""

from __future__ import annotations

import hashlib
import logging
import os
import shlex
import sys
import tempfile
import zipfile

from ..config import StreamsConfig
from ..errors import ConfigException
from . import _quiet


def getOrCreateSession(config: StreamsConfig):
    """Return the active SparkSession or create one with ``kspark.spark.master`` and ``spark.*`` keys.

    A session already running in this process is checked against ``config`` first
    (:func:`checkSessionConflicts`: another master is an error, other ``spark.*`` values are set or
    named in a WARNING).

    Python workers use this interpreter (``PYSPARK_PYTHON`` unless set to another one), so they
    see the same packages; state uses the RocksDB provider with changelog checkpointing.

    Quiet by default (:mod:`kspark.spark._quiet`): kspark starts the driver JVM itself to filter
    its stderr, with kspark's ``log4j2.properties`` (Spark at WARN, no banner); verbose mode
    (``kspark`` logger at DEBUG) sets Spark's log level to INFO and shows every JVM line.

    The JVM runs with ``-XX:TieredStopAtLevel=1`` (C1 JIT only) unless
    ``spark.driver.extraJavaOptions`` is given: records cross the JVM in a few Arrow chunks per
    task and batch, so its CPU goes to per-batch planning and scheduling code, on which C2
    compilation cost more than it saved (session-count benchmark, 3M records: JVM 85 -> 40
    CPU-s, executor threads unchanged).

    ``spark.sql.execution.pyspark.udf.simplifiedTraceback.enabled`` is ``false`` unless given:
    Spark keeps one Python worker daemon (and pool of idle workers) per distinct worker
    environment, and sets ``SPARK_SIMPLIFIED_TRACEBACK`` for the source's read tasks but not for
    ``transformWithStateInPandas`` tasks. With the flag on, every query needs a second daemon
    whose fresh workers import pandas, pyarrow and pyspark again before the first batch; with
    it off, the task workers are the read tasks' already-warm workers. Python errors then carry
    pyspark's own frames in their traceback too.
    """
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    existing = active or SparkSession._instantiatedSession  # made by another thread: the builder would reuse it
    if existing is not None and existing._sc._jsc is not None:
        checkSessionConflicts(existing, config)
    if active is not None:
        return active
    if os.environ.get("PYSPARK_PYTHON") in (None, "", sys.executable):
        os.environ["PYSPARK_PYTHON"] = _workerPython()
    builder = (
        SparkSession.builder.master(config.get(StreamsConfig.SPARK_MASTER_CONFIG))
        .appName(config.get(StreamsConfig.APPLICATION_ID_CONFIG) or "kspark")
        .config("spark.sql.streaming.stateStore.providerClass",
                "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider")
        .config("spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled", "true")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.adaptive.enabled", "false")
        .config("spark.sql.execution.pyspark.udf.simplifiedTraceback.enabled", "false")
    )
    for key, value in config.sparkConfs().items():
        builder = builder.config(key, value)
    builder = builder.config("spark.driver.extraJavaOptions",
                             _quiet.driverJavaOptions(config.sparkConfs().get("spark.driver.extraJavaOptions")))
    verbose = _quiet.isVerbose(config)
    _quiet.setVerbose(verbose)
    _quiet.launchGateway(dict(builder._options), config.get(StreamsConfig.SPARK_MASTER_CONFIG))
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("INFO" if verbose else "WARN")
    return session


def checkSessionConflicts(session, config: StreamsConfig) -> None:
    """Compare the keys ``config`` sets with the SparkSession this process already runs, which
    every ``KafkaStreams`` of the process shares (pyspark has one SparkContext per process).

    A different ``kspark.spark.master`` raises ``ConfigException``. A ``spark.*`` key with another
    value is set on the session when Spark allows it at runtime (SQL confs such as
    ``spark.sql.shuffle.partitions``), otherwise one WARNING (logger ``kspark.config``) names every
    such key with both values: they keep the running session's values.
    """
    given = config.originals()
    master = session.sparkContext.master
    if given.get(StreamsConfig.SPARK_MASTER_CONFIG) is not None and config.get(StreamsConfig.SPARK_MASTER_CONFIG) != master:
        raise ConfigException(
            f"Invalid value {config.get(StreamsConfig.SPARK_MASTER_CONFIG)} for configuration "
            f"{StreamsConfig.SPARK_MASTER_CONFIG}: this process already runs a SparkSession on master {master}, "
            "which every KafkaStreams of the process shares; use that master or stop the session first.")
    kept = []
    for key, value in config.sparkConfs().items():
        wanted = str(value).lower() if isinstance(value, bool) else str(value)
        running = session.conf.get(key, None)
        if running == wanted:
            continue
        if session.conf.isModifiable(key):
            session.conf.set(key, wanted)
        else:
            kept.append(f"{key}={wanted} (running: {running})")
    if kept:
        logging.getLogger("kspark.config").warning(
            "This process already runs a SparkSession; these keys cannot change at runtime and keep the running "
            "session's values: %s. Stop the session first to apply them.", ", ".join(kept))


_PRELOADING_DAEMON = """\
import importlib
for name in ("pandas", "pyarrow", "pyspark.worker", "pyspark.sql.pandas.serializers",
             "pyspark.sql.streaming.stateful_processor_api_client", "kspark.spark._datasource",
             "kspark.spark._task_processor"):
    try:
        importlib.import_module(name)
    except Exception:
        pass
import runpy
runpy.run_module("pyspark.daemon", run_name="__main__", alter_sys=True)
"""
"""``python -c`` code of the task workers' daemon (see :func:`_workerPython`); ``sys.argv[1]``
stays ``pyspark.worker``, the worker module ``pyspark.daemon`` forks into."""


def _workerPython() -> str:
    """This interpreter, or a launcher of it that drops Spark's ``pyspark.zip`` from the workers'
    ``PYTHONPATH`` when that zip is the installed pyspark's own copy (same version).

    Spark puts ``$SPARK_HOME/python/lib/pyspark.zip`` first on every Python worker's path; the
    zip has no bytecode, so each worker process (task workers, data source planners, readers,
    writers) compiles every pyspark module it imports again: about 1.4 CPU-s per process here.
    With a pip-installed pyspark the zip holds the same code as the installed package, whose
    bytecode is cached, so the launcher lets workers import that instead.

    The launcher also starts the daemon that forks the task workers (``-m pyspark.daemon
    pyspark.worker``, nothing else) through :data:`_PRELOADING_DAEMON`: it imports pandas,
    pyarrow, pyspark's worker and kspark's task code once, then runs ``pyspark.daemon`` as
    usual, so each forked worker starts with them (≈ 1.2 CPU-s of imports per worker
    otherwise, and up to four workers per query on ``local[2]``: read, transformWithState and
    sink tasks). A failed import is left to the worker, which imports what it needs itself.
    """
    import pyspark

    home = os.path.dirname(os.path.abspath(pyspark.__file__))
    archive = os.path.join(home, "python", "lib", "pyspark.zip")
    sparkHome = os.environ.get("SPARK_HOME")
    if (sparkHome and os.path.realpath(sparkHome) != os.path.realpath(home)) or not os.path.exists(archive):
        return sys.executable
    try:
        with zipfile.ZipFile(archive) as z:
            zipped = z.read("pyspark/version.py").decode()
    except (OSError, KeyError, zipfile.BadZipFile):
        return sys.executable
    if repr(pyspark.__version__) not in zipped:
        return sys.executable
    script = (
        "#!/bin/sh\n"
        "# kspark: the installed pyspark instead of its uncompiled pyspark.zip copy (kspark.spark._session)\n"
        "set -f\n"
        "kept=\n"
        "IFS=:\n"
        "for entry in $PYTHONPATH; do\n"
        f"  [ \"$entry\" = {shlex.quote(archive)} ] || kept=\"${{kept:+$kept:}}$entry\"\n"
        "done\n"
        "unset IFS\n"
        "PYTHONPATH=$kept\n"
        "export PYTHONPATH\n"
        'if [ "$#" -eq 3 ] && [ "$1" = -m ] && [ "$2" = pyspark.daemon ] && [ "$3" = pyspark.worker ]; then\n'
        f"  exec {shlex.quote(sys.executable)} -c {shlex.quote(_PRELOADING_DAEMON)} pyspark.worker\n"
        "fi\n"
        f"exec {shlex.quote(sys.executable)} \"$@\"\n"
    )
    digest = hashlib.sha256(script.encode()).hexdigest()[:16]
    path = os.path.join(tempfile.gettempdir(), f"kspark-python-{os.getuid()}-{digest}")
    try:
        with open(path) as f:
            if f.read() == script and os.access(path, os.X_OK):
                return path
    except OSError:
        pass
    try:
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".kspark-python-")
        with os.fdopen(fd, "w") as f:
            f.write(script)
        os.chmod(tmp, 0o755)
        os.replace(tmp, path)
    except OSError:
        return sys.executable
    return path

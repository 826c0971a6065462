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
from . import _cds, _forkserver, _quiet


def getOrCreateSession(config: StreamsConfig):
    """Return the active SparkSession or create one with ``kspark.spark.master`` and ``spark.*`` keys.

    A session already running in this process is checked against ``config`` first
    (:func:`checkSessionConflicts`: another master is an error, other ``spark.*`` values are set or
    named in a WARNING).

    Python workers use this interpreter (``PYSPARK_PYTHON`` unless set to another one), so they
    see the same packages: on a local master through :func:`_workerPython`'s launcher (a file
    in this machine's temporary directory), on any other master by the interpreter's own path,
    which must then exist on every executor with kspark's dependencies (else set
    ``PYSPARK_PYTHON`` or ``spark.pyspark.python``, e.g. to a venv shipped with ``--archives``).
    State uses the RocksDB provider with changelog checkpointing. The checkpoint keeps the last
    10 batches (``spark.sql.streaming.minBatchesToRetain``, Spark's default 100) and state
    maintenance runs every 10 s (``spark.sql.streaming.stateStore.maintenanceInterval``, 60 s):
    it uploads the snapshot that lets older state files go, so a continuous run's checkpoint
    levels off after ~40 batches instead of growing by 2 files a batch and state partition for
    its first ~220 (``tests/spark/test_soak.py``). Kafka Streams keeps no history of its state;
    kspark needs only the last committed batch.

    Under ``spark-submit`` (the JVM is already running, ``PYSPARK_GATEWAY_PORT``), the session
    runs on ``--master`` unless ``kspark.spark.master`` is given, and kspark's default
    ``spark.*`` values below give way to the launcher's (``--conf``, ``spark-defaults.conf``).

    Quiet by default (:mod:`kspark.spark._quiet`): kspark starts the driver JVM itself to filter
    its stderr, with kspark's ``log4j2.properties`` (Spark at WARN, no banner); verbose mode
    (``kspark`` logger at DEBUG) sets Spark's log level to INFO and shows every JVM line.

    The JVM runs with ``-XX:TieredStopAtLevel=1`` (C1 JIT only) unless
    ``spark.driver.extraJavaOptions`` is given: records cross the JVM in a few Arrow chunks per
    task and batch, so its CPU goes to per-batch planning and scheduling code, on which C2
    compilation cost more than it saved (session-count benchmark, 3M records: JVM 85 -> 40
    CPU-s, executor threads unchanged). It maps the classes of an earlier run from a class data
    sharing archive, which the first run writes at its exit (:mod:`kspark.spark._cds`).

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
    master = config.get(StreamsConfig.SPARK_MASTER_CONFIG)
    # spark-submit (or the pyspark shell) started the JVM with its own --master and --conf: a
    # kspark.spark.master given in the config still wins, kspark's defaults do not
    launched = "PYSPARK_GATEWAY_PORT" in os.environ
    preset = _launcherConf() if launched else {}
    if StreamsConfig.SPARK_MASTER_CONFIG not in config.originals() and "spark.master" in preset:
        master = preset["spark.master"]
    if os.environ.get("PYSPARK_PYTHON") in (None, "", sys.executable):
        os.environ["PYSPARK_PYTHON"] = workerPythonFor(master)
        if not launched and os.environ["PYSPARK_PYTHON"] != sys.executable:
            _forkserver.startForkServer()  # before the JVM starts: it passes the server on
    defaults = {
        "spark.app.name": config.get(StreamsConfig.APPLICATION_ID_CONFIG) or "kspark",
        "spark.sql.streaming.stateStore.providerClass":
            "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
        "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
        # a bounded checkpoint (see the docstring)
        "spark.sql.streaming.minBatchesToRetain": "10",
        "spark.sql.streaming.stateStore.maintenanceInterval": "10s",
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.adaptive.enabled": "false",
        "spark.sql.execution.pyspark.udf.simplifiedTraceback.enabled": "false",
    }
    builder = SparkSession.builder.master(master)
    for key, value in defaults.items():
        if key not in preset:
            builder = builder.config(key, value)
    for key, value in config.sparkConfs().items():
        builder = builder.config(key, value)
    verbose = _quiet.isVerbose(config)
    _quiet.setVerbose(verbose)
    if not launched:
        from pyspark import SparkContext

        javaOptions = _quiet.driverJavaOptions(config.sparkConfs().get("spark.driver.extraJavaOptions"))
        if SparkContext._gateway is None:  # this session starts the JVM: class data sharing (see _cds)
            javaOptions = " ".join([javaOptions, *_cds.javaOptions(dict(builder._options), javaOptions)])
        builder = builder.config("spark.driver.extraJavaOptions", javaOptions)
        _quiet.launchGateway(dict(builder._options), master)
        _cds.finishAtExit()
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("INFO" if verbose else "WARN")
    if not verbose:
        _quiet.quietAccumulatorServer(session.sparkContext)
    return session


def workerPythonFor(master: str) -> str:
    """The interpreter Python workers run (``PYSPARK_PYTHON``) when nothing else is set: this
    one through :func:`_workerPython`'s launcher when every worker runs on this machine
    (``local``, ``local[N]``, ``local-cluster[...]``), else this interpreter's own path; the
    launcher is a file in this machine's temporary directory, which executors on other machines
    do not have ("Cannot run program" on every task)."""
    if master == "local" or master.startswith(("local[", "local-cluster[")):
        return _workerPython()
    return sys.executable


def _launcherConf() -> dict[str, str]:
    """The ``spark.*`` settings of a JVM that ``spark-submit`` started (its ``--master``,
    ``--conf`` and ``spark-defaults.conf``), read from the JVM's system properties."""
    from pyspark import SparkConf, SparkContext

    SparkContext._ensure_initialized()
    return dict(SparkConf().getAll())


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


def _installedPy4jZip(home: str) -> list[str]:
    """``[the py4j zip Spark puts on workers' path]`` when it is the installed py4j's version (so
    workers import the installed, compiled copy), else ``[]``."""
    try:
        from py4j.version import __version__ as installed
    except ImportError:
        return []
    path = os.path.join(home, "python", "lib", f"py4j-{installed}-src.zip")
    return [path] if os.path.exists(path) else []


def _workerPython() -> str:
    """This interpreter, or a launcher of it that drops Spark's ``pyspark.zip`` from the workers'
    ``PYTHONPATH`` when that zip is the installed pyspark's own copy (same version), and its py4j
    zip when that is the installed py4j's version.

    Spark puts ``$SPARK_HOME/python/lib/pyspark.zip`` first on every Python worker's path; the
    zip has no bytecode, so each worker process (task workers, data source planners, readers,
    writers) compiles every pyspark module it imports again: about 1.4 CPU-s per process here.
    With a pip-installed pyspark the zip holds the same code as the installed package, whose
    bytecode is cached, so the launcher lets workers import that instead.

    With this process's fork server running (``KSPARK_FORK_SERVER``, see
    :mod:`kspark.spark._forkserver`), the launcher hands every ``-m`` call to it: the process is
    forked from one that imported pyspark, pandas, pyarrow and kspark already.

    Otherwise the launcher starts the daemon that forks the task workers (``-m pyspark.daemon
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
    dropped = [archive] + _installedPy4jZip(home)
    script = (
        "#!/bin/sh\n"
        "# kspark: the installed pyspark instead of its uncompiled pyspark.zip copy (kspark.spark._session)\n"
        "set -f\n"
        "kept=\n"
        "IFS=:\n"
        "for entry in $PYTHONPATH; do\n"
        f"  case \"$entry\" in {'|'.join(shlex.quote(d) for d in dropped)}) ;; *) kept=\"${{kept:+$kept:}}$entry\" ;; esac\n"
        "done\n"
        "unset IFS\n"
        "PYTHONPATH=$kept\n"
        "export PYTHONPATH\n"
        'if [ -n "$KSPARK_FORK_SERVER" ] && [ "$1" = -m ]; then\n'
        f"  exec {shlex.quote(sys.executable)} -I -S -c {shlex.quote(_forkserver.CLIENT)} \"$0\" \"$@\"\n"
        "fi\n"
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

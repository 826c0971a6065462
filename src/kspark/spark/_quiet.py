"""Quiet by default: a kspark run's terminal shows kspark's progress and summary, not Spark's
start-up noise.

- PySpark's ``FutureWarning`` about pandas 3 is ignored (that exact message only): kspark's
  suite runs on pandas 3 and the warning tells its users nothing they can act on.
- The driver JVM is started by kspark (:func:`launchGateway`, the same ``spark-submit``
  command pyspark runs) with its stderr read by a thread that drops a fixed list of noise lines
  (:data:`NOISE`) and passes every other line on to ``sys.stderr``: the JVM's "Using incubator
  modules" warning, and the ``TransformWithStateInPandas`` driver worker's ``print`` lines
  with the blank line after each (Spark copies its Python workers' stdout into the JVM's
  stderr), and Spark's ERROR lines about the micro-batch a stop interrupts
  (:func:`stoppingQueries`), and Spark's ERROR lines repeating a failed query's exception with
  its whole trace (:data:`QUERY_FAILURE_NOISE`, and under ``kspark run`` :data:`FAILURE_NOISE`):
  kspark reports the failure once, its Python exception's message first (:func:`failureHeadline`).
- pyspark's accumulator server does not print the ``EOFError`` of the JVM hanging up its update
  connection at exit (:func:`quietAccumulatorServer`).
- Spark logs at WARN with kspark's ``log4j2.properties`` (Spark's defaults without the INFO
  lines and the banner) and a local master binds to 127.0.0.1 (no "your hostname resolves to a
  loopback address" warning).
- Executors' kspark loggers follow the level of the driver's ``kspark`` logger
  (:func:`followDriverLogLevel`).

Verbose mode (:func:`isVerbose`: the ``kspark`` logger enabled for DEBUG, as ``kspark run -v``
sets it, or ``kspark.verbose=true`` in the config) brings everything back: Spark at INFO and
the JVM's stderr unfiltered.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import re
import sys
import threading
import warnings
from pathlib import Path

__all__ = ["NOISE", "followDriverLogLevel", "isVerbose", "launchGateway", "quietAccumulatorServer", "silencePandasWarning",
           "stoppingQueries"]

VERBOSE_CONFIG = "kspark.verbose"
LOG4J2_PROPERTIES = Path(__file__).with_name("log4j2.properties")

NOISE = (
    "WARNING: Using incubator modules: jdk.incubator.vector",  # JavaModuleOptions' --add-modules
    "Starting Streaming TransformWithStateInPandas Python worker.",
    "Streaming TransformWithStateInPandas Python worker ",  # prefix: init, parameters, UDF start/end
)
"""Prefixes of JVM stderr lines dropped unless verbose; a blank line right after a dropped line
is dropped with it (the TWS worker prints ``"...\\n"``)."""

# a line logged inside a query's context has Spark's MDC prefix after the logger:
# "WARN TaskSetManager: [queryId = f6b1f] [batchId = 1] Lost task ..."
STOPPING_NOISE = re.compile(r".* (ERROR WriteToDataSourceV2Exec: (\[[^]]*\] )*Data source write support .* (is aborting|aborted|failed to abort)\."
                            r"|WARN TaskSetManager: (\[[^]]*\] )*Lost task .*"
                            r"|ERROR TorrentBroadcast: (\[[^]]*\] )*Store broadcast \S+ fail, remove all pieces of the broadcast"
                            r"|WARN DiskBlockObjectWriter: (\[[^]]*\] )*Error deleting \S*/temp_shuffle_[0-9a-f-]+"
                            r"|ERROR Utils: (\[[^]]*\] )*Aborting task"
                            r"|ERROR ShuffleBlockFetcherIterator: (\[[^]]*\] )*Error occurred while fetching local blocks, .*"
                            r"|WARN Shell: (\[[^]]*\] )*Interrupted while joining on: Thread\[.*\]"
                            r"|ERROR DataWritingSparkTask: (\[[^]]*\] )*Abort(ing|ed) commit for partition \d+ "
                            r"\(task \d+, attempt \d+, stage [\d.]+\))$")
"""What Spark logs when ``StreamingQuery.stop()`` interrupts a micro-batch: its running tasks are
killed ("Lost task ..."; a killed shuffle-map task reverting its partial output warns of the
temporary shuffle files it had not created yet; a killed writer task logs "Aborting task" with
the ``TaskKilledException``'s stack trace, then aborts its commit; a task killed while reading its local shuffle
blocks logs the ``ClosedByInterruptException`` as "..., null" without a trace, SPARK-28340; a task killed while
its state store commits renames the changelog file through Hadoop's local file system, which runs a ``readlink``
process and warns with the ``InterruptedException`` when interrupted waiting for it), a broadcast being stored for the batch's plan
is given up, and the batch is aborted, as a stop means (it is not committed; a restart runs it again). The stop can
interrupt the abort itself ("... failed to abort.", logged without a trace): the local-topics sink's next commit
deletes the staged files an abort left, and a Kafka transaction aborts whole. Dropped once
kspark has begun stopping its queries (:func:`stoppingQueries`): Spark may log it well after the
stop returned on a busy machine, and a batch that aborts because its query failed is reported by
the query's exception anyway."""

FAILURE_NOISE = re.compile(r"\d\d/\d\d/\d\d \d\d:\d\d:\d\d (ERROR Executor: (\[[^]]*\] )*Exception in task .*"
                           r"|WARN TaskSetManager: (\[[^]]*\] )*Lost task .*"
                           r"|ERROR TaskSetManager: (\[[^]]*\] )*Task \d+ in stage \S+ failed \d+ times?; aborting job"
                           r"|ERROR Utils: (\[[^]]*\] )*Aborting task"
                           r"|ERROR DataWritingSparkTask: (\[[^]]*\] )*Abort(ing|ed) commit for partition .*"
                           r"|ERROR WriteToDataSourceV2Exec: (\[[^]]*\] )*Data source write support .* (is aborting|aborted)\."
                           r"|ERROR MicroBatchExecution: (\[[^]]*\] )*Query .* terminated with error)"
                           r"|kspark executor \d+ ERROR kspark\.errors: Exception caught (during message processing|while punctuating).*")
"""What a failed task logs on its way to the query's failure, each record with the whole Python
traceback and Java stack inside (a processor exception gave 13 tracebacks): the executor, the
task set, the aborted write, the query terminating, and kspark's own handler log on the
executor. Dropped with their continuation lines while :data:`reportingFailures` (``kspark run``,
not verbose), which prints the failure once itself (``kspark.cli.failureReport``)."""

# a line that starts another record: Spark's log4j layout, kspark's executor or driver logs
RECORD_START = re.compile(r"(\d\d/\d\d/\d\d \d\d:\d\d:\d\d |kspark executor \d+ |(DEBUG|INFO|WARNING|ERROR|CRITICAL) kspark)")

# the stack trace Spark logs after a STOPPING_NOISE line: the exception, its frames, its causes
STACK_TRACE = re.compile(r"(\tat |\t\.\.\. \d+ more|Caused by: |\tSuppressed: |[\w$.]+(Exception|Error)(: |$))")

# What Spark logs about a query whose task or planning failed: kspark reports the failure itself,
# from the query's exception, with its cause first (failureHeadline); these lines repeat it in full.
# Dropped unless verbose; under kspark run, FAILURE_NOISE drops the rest of the failure's records.
QUERY_FAILURE_NOISE = re.compile(r".* (ERROR Utils: (\[[^]]*\] )*Aborting task"
                           r"|ERROR DataWritingSparkTask: (\[[^]]*\] )*Abort(ing|ed) commit for partition \d+ .*"
                           r"|ERROR Executor: (\[[^]]*\] )*Exception in task .*"
                           r"|ERROR TaskSetManager: (\[[^]]*\] )*Task \d+ in stage [\d.]+ failed \d+ times?; aborting job"
                           r"|ERROR WriteToDataSourceV2Exec: (\[[^]]*\] )*Data source write support .* (is aborting|aborted)\."
                           r"|ERROR MicroBatchExecution: (\[[^]]*\] )*Query .* terminated with error)$")
# a task attempt lost to a Python exception (printed as its first line and the exception's line),
# or killed because another task of its stage failed (dropped: that failure is reported)
LOST_TASK = re.compile(r"(.* WARN TaskSetManager: (\[[^]]*\] )*Lost task .*?): "
                       r"(org\.apache\.spark\.api\.python\.PythonException: \[PYTHON_EXCEPTION\] .*"
                       r"Traceback \(most recent call last\):|TaskKilled \(Stage cancelled: .*)$")

_PYTHON_EXCEPTION = re.compile(r"([A-Za-z_][\w.]*): (.*)")


def failureHeadline(text: str) -> str | None:
    """The Python exception a Spark error ``text`` reports (a task's or the data source's, after
    its last ``Traceback``), as ``"<ExceptionClass>: <message>"`` (the class without its module,
    Spark's ``SQLSTATE`` suffix removed); None when it holds no Python traceback."""
    at = text.rfind("Traceback (most recent call last):")
    if at < 0:
        return None
    lines = text[at:].split("\n")[1:]
    for i, line in enumerate(lines):
        if line.startswith(" ") or not line:
            continue  # the traceback's frames
        match = _PYTHON_EXCEPTION.fullmatch(line)
        if match is None:
            return None
        message = [match.group(2)]
        for more in lines[i + 1:]:
            if more.startswith((" SQLSTATE:", "\tat ", "JVM stacktrace:", "=== Streaming Query ===")) or not more:
                break
            message.append(more)
        text = "\n".join(message)
        text = re.sub(r"( SQLSTATE: \w+)+$", "", text)
        return f"{match.group(1).rsplit('.', 1)[-1]}: {text}"
    return None


_showAll = False  # verbose: the pump passes every line
_stopped = False  # kspark has stopped queries in this process
detachJvm = False  # start the JVM in a session of its own (set by kspark run)
reportingFailures = False  # kspark run reports a failed run itself: drop FAILURE_NOISE (set by kspark run)


def silencePandasWarning() -> None:
    """Ignore PySpark's "does not yet fully support pandas >= 3.0.0" ``FutureWarning`` (only it)."""
    warnings.filterwarnings("ignore", message=r"PySpark does not yet fully support pandas >= 3\.0\.0",
                            category=FutureWarning)


def isVerbose(config=None) -> bool:
    """Whether details are wanted: the ``kspark`` logger enabled for DEBUG, or ``kspark.verbose``
    true in ``config`` (a ``StreamsConfig``; read with a default while the key is not known)."""
    if logging.getLogger("kspark").isEnabledFor(logging.DEBUG):
        return True
    if config is None:
        return False
    try:
        value = config.get(VERBOSE_CONFIG)
    except (KeyError, ValueError):  # ConfigException: not a known key yet
        return False
    return value is True or str(value).strip().lower() == "true"


@contextlib.contextmanager
def stoppingQueries():
    """Around kspark's ``StreamingQuery.stop()`` calls: the batch a stop interrupts is aborted,
    and Spark's ERROR lines saying so (:data:`STOPPING_NOISE`) are dropped."""
    global _stopped
    _stopped = True
    yield


def _expectedWhileStopping(line: str) -> bool:
    return _stopped and STOPPING_NOISE.match(line.rstrip("\n")) is not None


def quietAccumulatorServer(sc) -> None:
    """Drop the traceback pyspark's accumulator server prints when the JVM closes its update
    connection first: at exit, Python closes the JVM's stdin, the JVM stops and closes the
    connection while the server's thread still polls it, and ``read_int`` raises ``EOFError``
    ("Exception occurred during processing of request from ..."; ``SparkContext.stop()`` has the
    same race, as it stops the JVM's context before the server). kspark sends no accumulator
    updates of its own. Any other error of the server is printed as before."""
    server = getattr(sc, "_accumulatorServer", None)
    if server is None or getattr(server, "_ksparkQuiet", False):
        return
    printError = server.handle_error

    def handle_error(request, client_address) -> None:
        if not isinstance(sys.exc_info()[1], EOFError):
            printError(request, client_address)

    server.handle_error = handle_error
    server._ksparkQuiet = True


def setVerbose(verbose: bool) -> None:
    """Let the JVM's stderr through unfiltered (``True``) or drop :data:`NOISE` (``False``)."""
    global _showAll
    _showAll = verbose


def driverJavaOptions(given: str | None) -> str:
    """``spark.driver.extraJavaOptions``: kspark's log4j2 file first, then ``given`` (or kspark's
    default JIT option), so a configuration file named in ``given`` wins."""
    options = given if given is not None else "-XX:TieredStopAtLevel=1"
    return f"-Dlog4j2.configurationFile={LOG4J2_PROPERTIES} {options}".strip()


def launchGateway(options: dict[str, str], master: str) -> None:
    """Start the driver JVM as pyspark would (``spark-submit`` with ``options`` as ``--conf``),
    with its stderr piped through :func:`_pump`; nothing if a JVM is already up or pyspark was
    told to use an existing one (``PYSPARK_GATEWAY_PORT``).

    Raises
    ------
    ConfigException
        If the JVM exits before it is up (pyspark's ``JAVA_GATEWAY_EXITED``), naming
        ``kspark.spark.master`` and with Spark's reason (the last lines of its stderr).
    """
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None or "PYSPARK_GATEWAY_PORT" in os.environ:
        return
    if master.startswith("local") and not os.environ.get("SPARK_LOCAL_IP"):
        os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"  # a local run needs no other address
    conf = SparkConf(loadDefaults=False)
    for key, value in options.items():
        conf.set(key, value)
    # detached (kspark run): a terminal's Ctrl-C reaches the driver only, which stops the queries
    # cleanly, instead of also interrupting the JVM's Python workers in the middle of a batch
    readEnd, writeEnd = os.pipe()
    recent: collections.deque = collections.deque(maxlen=20)
    pump = threading.Thread(target=_pump, args=(os.fdopen(readEnd, "rb"), recent), name="kspark-jvm-stderr", daemon=True)
    pump.start()
    try:
        gateway = launch_gateway(conf, popen_kwargs={"stderr": writeEnd, "start_new_session": detachJvm})
    except Exception as e:
        os.close(writeEnd)
        pump.join(5)  # the JVM exited: its stderr ends
        from ..errors import ConfigException

        reason = "\n".join(line.rstrip() for line in recent) or "(nothing on its stderr)"
        raise ConfigException(f"Invalid value {master} for configuration kspark.spark.master: Spark did not start "
                              f"({type(e).__name__}: {e}). Spark said:\n{reason}") from e
    os.close(writeEnd)  # the JVM holds its own copy
    SparkContext._ensure_initialized(gateway=gateway, conf=conf)


def _pump(stream, recent: collections.deque | None = None) -> None:
    """Copy the JVM's stderr to ``sys.stderr`` line by line (looked up per line, so a live
    progress view that redirects ``sys.stderr`` prints them above itself), without :data:`NOISE`;
    the last lines of an error (from a line naming an exception or error on, without stack
    frames) also go to ``recent``. Reads to the end whatever happens to the writes: the JVM
    blocks once the pipe is full."""
    dropped = False
    trace = False  # in the stack trace of a dropped line
    failure = False  # in a dropped FAILURE_NOISE or LOST_TASK event: up to the next event's first line
    lostTask = None  # the first line's start of a LOST_TASK event whose exception line is still to come
    for raw in iter(stream.readline, b""):
        line = raw.decode("utf-8", "replace")
        if recent is not None and ("Exception" in line or "Error" in line or recent) and line.strip() \
                and not line.lstrip().startswith("at "):
            recent.append(line)
        if not _showAll:
            stripped = line.rstrip("\n")
            if failure and not RECORD_START.match(line):
                if lostTask is not None and not line.startswith(" ") and line.strip():
                    match = _PYTHON_EXCEPTION.fullmatch(stripped)  # the exception, after its frames
                    line = f"{lostTask}: {match.group(1).rsplit('.', 1)[-1]}: {match.group(2)}\n" if match else None
                    lostTask = None
                    if line is not None:
                        _write(line)
                continue
            if reportingFailures and FAILURE_NOISE.match(stripped):  # kspark run prints the failure itself
                failure, lostTask = True, None
            else:
                lost = LOST_TASK.match(stripped)
                lostTask = lost.group(1) if lost is not None and lost.group(3).startswith("org.") else None
                failure = lost is not None or QUERY_FAILURE_NOISE.match(stripped) is not None
            if failure:
                continue
            if trace and STACK_TRACE.match(line):
                continue
            trace = _expectedWhileStopping(line)
            if line.startswith(NOISE) or (dropped and not line.strip()) or trace:
                dropped = bool(line.strip())
                continue
        dropped = False
        _write(line)


def _write(line: str) -> None:
    from .._secrets import redact

    line = redact(line)  # a secret of the config is never printed (kspark._secrets)
    for stderr in (sys.stderr, sys.__stderr__):  # a replaced sys.stderr may be closed (pytest's capture)
        try:
            stderr.write(line)
            stderr.flush()
            break
        except (AttributeError, OSError, ValueError):
            continue  # keep reading: a JVM whose stderr pipe fills up would block


_EXECUTOR_HANDLER = "kspark-executor"


def followDriverLogLevel(level: int | None) -> None:
    """On an executor's Python worker: the ``kspark`` logger at the driver's ``level``, written
    to the worker's stderr (which Spark copies to the driver's) with the process id."""
    if level is None:
        return
    logger = logging.getLogger("kspark")
    logger.setLevel(level)
    if not any(h.get_name() == _EXECUTOR_HANDLER for h in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.set_name(_EXECUTOR_HANDLER)
        handler.setFormatter(logging.Formatter("kspark executor %(process)d %(levelname)s %(name)s: %(message)s"))
        logger.addHandler(handler)
        logger.propagate = False

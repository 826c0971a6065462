"""Quiet by default (issue 23), the parts that need no Spark: the JVM stderr filter, the driver's
Java options, verbose mode and executors following the driver's kspark log level."""

import io
import logging

import pytest

from kspark.config import StreamsConfig
from kspark.spark import _quiet

JVM_STDERR = (
    b"WARNING: Using incubator modules: jdk.incubator.vector\n"
    b"Starting Streaming TransformWithStateInPandas Python worker.\n"
    b"\n"
    b"Streaming TransformWithStateInPandas Python worker Completed execution of UDF: <bound method ...>.\n"
    b"\n"
    b"26/11/23 20:58:48 ERROR SparkContext: Error initializing SparkContext.\n"
    b"\n"
    b"Traceback (most recent call last):\n"
)


@pytest.fixture
def quiet():
    yield
    _quiet.setVerbose(False)


def pumped(monkeypatch, data: bytes) -> str:
    err = io.StringIO()
    monkeypatch.setattr("sys.stderr", err)
    _quiet._pump(io.BytesIO(data))
    return err.getvalue()


def test_jvm_noise_and_its_blank_lines_are_dropped_everything_else_passes(monkeypatch, quiet):
    _quiet.setVerbose(False)
    assert pumped(monkeypatch, JVM_STDERR) == (
        "26/11/23 20:58:48 ERROR SparkContext: Error initializing SparkContext.\n\nTraceback (most recent call last):\n")
    _quiet.setVerbose(True)
    assert pumped(monkeypatch, JVM_STDERR) == JVM_STDERR.decode()


def test_driver_java_options_put_kspark_log4j2_first_and_keep_the_given_ones():
    assert _quiet.driverJavaOptions(None) == f"-Dlog4j2.configurationFile={_quiet.LOG4J2_PROPERTIES} -XX:TieredStopAtLevel=1"
    assert _quiet.driverJavaOptions("-Dx=1").endswith(" -Dx=1")
    assert _quiet.LOG4J2_PROPERTIES.read_text().splitlines().count("rootLogger.level = warn") == 1


def test_verbose_is_the_kspark_logger_at_debug():
    logger = logging.getLogger("kspark")
    before = logger.level
    try:
        logger.setLevel(logging.WARNING)
        assert not _quiet.isVerbose(StreamsConfig({"application.id": "a"}))
        logger.setLevel(logging.DEBUG)
        assert _quiet.isVerbose(StreamsConfig({"application.id": "a"}))
    finally:
        logger.setLevel(before)


def test_executor_kspark_logger_follows_the_drivers_level(monkeypatch):
    logger = logging.getLogger("kspark")
    monkeypatch.setattr(logger, "handlers", [])
    monkeypatch.setattr(logger, "propagate", True)
    before = logger.level
    try:
        _quiet.followDriverLogLevel(logging.ERROR)
        _quiet.followDriverLogLevel(logging.ERROR)  # every task call: one handler only
        assert logger.level == logging.ERROR and len(logger.handlers) == 1 and not logger.propagate
        err = io.StringIO()
        logger.handlers[0].setStream(err)
        logging.getLogger("kspark.state").warning("Skipping record for expired segment.")
        logging.getLogger("kspark.state").error("boom")
        assert err.getvalue().endswith(" ERROR kspark.state: boom\n") and "Skipping" not in err.getvalue()
    finally:
        logger.setLevel(before)  # also clears logging's level cache


def test_the_aborted_batch_of_a_stop_is_not_reported_as_an_error(monkeypatch, quiet):
    abort = (b"26/11/23 21:47:33 ERROR WriteToDataSourceV2Exec: Data source write support MicroBatchWrite[epoch: 1, "
             b"writer: w] is aborting.\n")
    monkeypatch.setattr(_quiet, "_stopped", False)
    assert pumped(monkeypatch, abort) == ""  # never stopped: a failed query's abort, which kspark reports (issue 37)
    with _quiet.stoppingQueries():
        assert pumped(monkeypatch, abort + abort.replace(b"is aborting", b"aborted")) == ""  # Spark 4.x: "... is aborting." then "... aborted."
    assert pumped(monkeypatch, abort) == ""  # logged after the stop returned (a busy machine)
    # CI's Ctrl-C run: the stop interrupted the abort itself (Spark logs it without a trace)
    assert pumped(monkeypatch, abort.replace(b"is aborting", b"failed to abort")) == ""
    lost = (b"26/11/23 23:58:01 WARN TaskSetManager: Lost task 1.0 in stage 7.0 (TID 21) (127.0.0.1 executor driver): "
            b"TaskKilled (Stage cancelled: Job 7 cancelled part of cancelled job group 1c2d)\n")
    assert pumped(monkeypatch, lost) == ""  # the stop killed the batch's running tasks
    inQuery = lost.replace(b"TaskSetManager: ", b"TaskSetManager: [queryId = f6b1f] [batchId = 1] ")
    assert pumped(monkeypatch, inQuery) == ""  # logged in the query's context: Spark's MDC prefix
    broadcast = b"26/11/24 00:12:52 ERROR TorrentBroadcast: Store broadcast broadcast_11 fail, remove all pieces of the broadcast\n"
    assert pumped(monkeypatch, broadcast) == ""  # the stop interrupted the planning of a batch
    revert = (b"26/11/24 08:08:43 WARN DiskBlockObjectWriter: Error deleting /tmp/blockmgr-492a03e3-0d46-4396-85e8-"
              b"cf86db8d2e83/3e/temp_shuffle_0f1805b0-642d-4349-bcdd-614e9b18488f\n")
    assert pumped(monkeypatch, revert) == ""  # a killed shuffle-map task reverting its partial output
    other = b"26/11/24 08:08:43 WARN DiskBlockObjectWriter: Error deleting /data/blockmgr-1/3e/shuffle_0_1_0.data\n"
    assert pumped(monkeypatch, other) == other.decode()  # only the temporary files of a killed task
    # CI's Ctrl-C run: a task killed while reading its local shuffle blocks (ClosedByInterruptException, SPARK-28340)
    interrupted = b"26/11/27 07:15:44 ERROR ShuffleBlockFetcherIterator: Error occurred while fetching local blocks, null\n"
    assert pumped(monkeypatch, interrupted) == ""
    failedRead = b"26/11/27 07:15:44 ERROR ShuffleBlockFetcherIterator: Error occurred while fetching local blocks\n"
    assert pumped(monkeypatch, failedRead) == failedRead.decode()  # any other exception comes with its trace: shown
    # CI's Ctrl-C run: a task killed while its RocksDB state store renamed its changelog file
    # (Hadoop's RawLocalFileSystem runs readlink in a child process and waits for it; frames abridged)
    joining = (b"26/11/28 02:35:52 WARN Shell: Interrupted while joining on: Thread[Thread-349,5,main]\n"
               b"java.lang.InterruptedException\n"
               b"\tat java.base/java.lang.Object.wait(Native Method)\n"
               b"\tat org.apache.hadoop.util.Shell.joinThread(Shell.java:1106)\n"
               b"\tat org.apache.spark.sql.execution.streaming.state.RocksDB.commit(RocksDB.scala:1905)\n")
    after = b"kspark executor 4242 WARNING kspark.state: still shown\n"
    assert pumped(monkeypatch, joining + after) == after.decode()
    other = b"26/11/28 02:35:52 WARN Shell: Failed to run readlink\n"
    assert pumped(monkeypatch, other) == other.decode()  # only the interrupted wait


def test_a_writer_task_killed_by_a_stop_logs_no_error(monkeypatch, quiet):
    """CI's Ctrl-C run: the stop killed sub-topology 1's writer task; Spark logged "Aborting task"
    with the TaskKilledException's stack trace, then aborted the task's commit."""
    killed = (b"26/11/24 19:43:18 ERROR Utils: Aborting task\n"
              b"org.apache.spark.TaskKilledException: Stage cancelled: [SPARK_JOB_CANCELLED] Job 3 cancelled Query "
              b"valuation-signals-cli-subtopology-1 [id = a254eb8e-b568-4bd2-a74f-757f2cf7fd63, runId = "
              b"732d3abf-3922-4b24-b98f-7cd58a3de621] was stopped SQLSTATE: XXKDA\n"
              b"\tat org.apache.spark.api.python.BasePythonRunner$ReaderIterator$$anonfun$1.applyOrElse(PythonRunner.scala:1121)\n"
              b"\tat java.base/java.util.concurrent.ThreadPoolExecutor$Worker.run(ThreadPoolExecutor.java:635)\n"
              b"26/11/24 19:43:18 ERROR DataWritingSparkTask: Aborting commit for partition 1 (task 34, attempt 0, stage 7.0)\n"
              b"26/11/24 19:43:18 ERROR DataWritingSparkTask: Aborted commit for partition 1 (task 34, attempt 0, stage 7.0)\n")
    after = b"kspark executor 4242 WARNING kspark.state: still shown\n"
    monkeypatch.setattr(_quiet, "_stopped", False)
    assert pumped(monkeypatch, killed + after) == after.decode()  # never stopped: a failed query's, reported by kspark
    with _quiet.stoppingQueries():
        assert pumped(monkeypatch, killed + after) == after.decode()


# Spark's stderr when a task of a query failed on a corrupt segment (frames abridged)
FAILED_TASK = (
    "26/11/26 17:39:17 ERROR Utils: Aborting task\n"
    "org.apache.spark.api.python.PythonException: [PYTHON_EXCEPTION] An exception was thrown from the Python worker: "
    "Traceback (most recent call last):\n"
    '  File "/venv/lib/python3.11/site-packages/pyspark/worker.py", line 4327, in invoke_udf\n'
    "    run_process()\n"
    '  File "/src/kspark/topics/_local.py", line 717, in _readSegment\n'
    '    raise corrupt(f"fails the CRC-32 check of its record batch {i} "\n'
    "kspark.topics._api.CorruptRecordException: Segment file /t/in/1/00000000000000000000.arrow of in-1 (offsets 0..99) "
    "fails the CRC-32 check of its record batch 0 (offsets 0..99)\n"
    " SQLSTATE: 38000\n"
    "\tat org.apache.spark.api.python.BasePythonRunner$ReaderIterator.handlePythonException(PythonRunner.scala:1097)\n"
    "\tat java.base/java.lang.Thread.run(Thread.java:840)\n"
    "26/11/26 17:39:17 ERROR DataWritingSparkTask: Aborting commit for partition 1 (task 3, attempt 0, stage 1.0)\n"
    "26/11/26 17:39:17 ERROR DataWritingSparkTask: Aborted commit for partition 1 (task 3, attempt 0, stage 1.0)\n"
    "26/11/26 17:39:17 ERROR Executor: Exception in task 1.0 in stage 1.0 (TID 3)\n"
    "org.apache.spark.api.python.PythonException: [PYTHON_EXCEPTION] An exception was thrown from the Python worker: "
    "Traceback (most recent call last):\n"
    '  File "/venv/lib/python3.11/site-packages/pyspark/worker.py", line 4327, in invoke_udf\n'
    "kspark.topics._api.CorruptRecordException: Segment file /t/in/1/00000000000000000000.arrow of in-1 (offsets 0..99) "
    "fails the CRC-32 check of its record batch 0 (offsets 0..99)\n"
    " SQLSTATE: 38000\n"
    "\tat java.base/java.lang.Thread.run(Thread.java:840)\n"
    "26/11/26 17:39:17 WARN TaskSetManager: [queryId = b7c5c] [batchId = 0] Lost task 1.0 in stage 1.0 (TID 3) (localhost "
    "executor driver): org.apache.spark.api.python.PythonException: [PYTHON_EXCEPTION] An exception was thrown from the "
    "Python worker: Traceback (most recent call last):\n"
    '  File "/venv/lib/python3.11/site-packages/pyspark/worker.py", line 4327, in invoke_udf\n'
    "    run_process()\n"
    "kspark.topics._api.CorruptRecordException: Segment file /t/in/1/00000000000000000000.arrow of in-1 (offsets 0..99) "
    "fails the CRC-32 check of its record batch 0 (offsets 0..99)\n"
    " SQLSTATE: 38000\n"
    "\tat java.base/java.lang.Thread.run(Thread.java:840)\n"
    "\n"
    "26/11/26 17:39:17 ERROR TaskSetManager: [queryId = b7c5c] [batchId = 0] Task 1 in stage 1.0 failed 1 times; aborting job\n"
    "26/11/26 17:39:17 WARN TaskSetManager: [queryId = b7c5c] [batchId = 0] Lost task 0.0 in stage 1.0 (TID 2) (localhost "
    "executor driver): TaskKilled (Stage cancelled: [PYTHON_EXCEPTION] An exception was thrown from the Python worker: "
    "Traceback (most recent call last):\n"
    '  File "/venv/lib/python3.11/site-packages/pyspark/worker.py", line 4327, in invoke_udf\n'
    "kspark.topics._api.CorruptRecordException: Segment file /t/in/1/00000000000000000000.arrow of in-1 (offsets 0..99) "
    "fails the CRC-32 check of its record batch 0 (offsets 0..99)\n"
    " SQLSTATE: 38000)\n"
    "26/11/26 17:39:18 ERROR MicroBatchExecution: [queryId = b7c5c] Query exp-b-subtopology-0 [id = b7c5cdfa, runId = "
    "9f4458de] terminated with error\n"
    "org.apache.spark.SparkException: Job aborted due to stage failure: Task 1 in stage 1.0 failed 1 times\n"
    "\tat java.base/java.lang.Thread.run(Thread.java:840)\n"
    "kspark executor 4242 WARNING kspark.state: still shown\n"
)
CORRUPT = ("CorruptRecordException: Segment file /t/in/1/00000000000000000000.arrow of in-1 (offsets 0..99) fails the "
           "CRC-32 check of its record batch 0 (offsets 0..99)")


def test_a_failed_task_is_one_line_with_its_python_exception_first(monkeypatch, quiet):
    """Issue 37 item 3: a corrupt segment's CorruptRecordException was buried in Spark's traces
    (ERROR lines of every layer, each with the whole Python and JVM trace). Unless verbose, the
    lost task is one line ending with the exception's message, naming the file, topic-partition and
    offsets; the rest is dropped (the query's failure is reported by kspark, failureHeadline)."""
    _quiet.setVerbose(False)
    assert pumped(monkeypatch, FAILED_TASK.encode()) == (
        "26/11/26 17:39:17 WARN TaskSetManager: [queryId = b7c5c] [batchId = 0] Lost task 1.0 in stage 1.0 (TID 3) "
        f"(localhost executor driver): {CORRUPT}\n"
        "kspark executor 4242 WARNING kspark.state: still shown\n")
    _quiet.setVerbose(True)
    assert pumped(monkeypatch, FAILED_TASK.encode()) == FAILED_TASK


def test_failure_headline_is_the_python_exception_of_sparks_report():
    query = ("[STREAM_FAILED] Query [id = a65e7416, runId = 9f4458de] terminated with exception: " +
             FAILED_TASK.split("ERROR Utils: Aborting task\n", 1)[1].split("26/11/26")[0].replace(
                 " SQLSTATE: 38000\n", " SQLSTATE: 38000 SQLSTATE: XXKST\n", 1) + "=== Streaming Query ===\n")
    assert _quiet.failureHeadline(query) == CORRUPT
    assert _quiet.failureHeadline("Traceback (most recent call last):\n  File \"a.py\", line 1\nValueError: first\n"
                                  "second line\n\tat x\n") == "ValueError: first\nsecond line"
    assert _quiet.failureHeadline("[STREAM_FAILED] java.lang.OutOfMemoryError: Java heap space") is None

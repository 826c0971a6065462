"""Issue 36 item 12: a failed ``kspark run`` prints kspark's error (node, topic, partition, offset)
and the application's traceback once, not Spark's dozen copies. Without Spark: the report built
from the text Spark gives, and the JVM stderr filter (``tests/spark/test_cli_spark.py`` runs a
failing application for real)."""

import io
from pathlib import Path

import pytest

import kspark
from kspark.cli import failureReport
from kspark.spark import _quiet

TASK = Path(kspark.__file__).parent / "runtime" / "stream_task.py"
PYSPARK_WORKER = Path(__import__("pyspark").__file__).parent / "worker.py"
CHAIN = f'''Traceback (most recent call last):
  File "{TASK}", line 739, in call
    out = step(key, value)
          ^^^^^^^^^^^^^^^^
  File "/srv/app/sportapp.py", line 6, in check
    raise RuntimeError("Sport event missing required 'ball' field")
RuntimeError: Sport event missing required 'ball' field

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "{PYSPARK_WORKER}", line 4327, in invoke_udf
    run_process()
  File "{TASK}", line 578, in _onProcessingError
    raise failed from e
kspark.errors.StreamsException: Exception caught in process. taskId=0_1, processor=KSTREAM-MAPVALUES-0000000001, topic=events, partition=1, offset=7, stacktrace=RuntimeError: Sport event missing required 'ball' field
 SQLSTATE: 38000
'''
FAILURE = ("The streams application sport failed: [STREAM_FAILED] Query [id = 3f5d, runId = 9219] terminated with "
           "exception: [PYTHON_EXCEPTION] An exception was thrown from the Python worker: " + CHAIN +
           "\tat org.apache.spark.api.python.BasePythonRunner$ReaderIterator.handlePythonException(PythonRunner.scala:1097)\n"
           "\n=== Streaming Query ===\nIdentifier: sport-subtopology-0 [id = 3f5d]\nLogical Plan:\nWriteToMicroBatchDataSource\n")


def test_the_report_is_ksparks_error_and_the_users_frames_once():
    assert failureReport(FAILURE) == (
        "The streams application sport failed: Exception caught in process. taskId=0_1, "
        "processor=KSTREAM-MAPVALUES-0000000001, topic=events, partition=1, offset=7, "
        "stacktrace=RuntimeError: Sport event missing required 'ball' field\n"
        "Traceback (most recent call last):\n"
        '  File "/srv/app/sportapp.py", line 6, in check\n'
        "    raise RuntimeError(\"Sport event missing required 'ball' field\")\n"
        "RuntimeError: Sport event missing required 'ball' field\n"
        "(Spark's report of the failure: kspark run -v)")
    verbose = failureReport(FAILURE, verbose=True)
    assert verbose.startswith("The streams application sport failed: Exception caught in process.")
    assert verbose.endswith("Spark's report of the failure:\n" + FAILURE.rstrip())


def test_a_failure_without_a_record_keeps_sparks_message_without_the_plan():
    text = ("[STREAM_FAILED] Query [id = 1] terminated with exception: Python worker exited unexpectedly\n"
            "\tat org.apache.spark.Foo(Foo.scala:1)\n\n=== Streaming Query ===\nIdentifier: x\n")
    assert failureReport(text) == ("[STREAM_FAILED] Query [id = 1] terminated with exception: Python worker exited "
                                   "unexpectedly\n(Spark's report of the failure: kspark run -v)")


@pytest.mark.parametrize("reporting", [True, False])
def test_the_jvm_stderr_filter_drops_sparks_failure_records_with_their_traces(reporting, capsys, monkeypatch):
    monkeypatch.setattr(_quiet, "reportingFailures", reporting)
    monkeypatch.setattr(_quiet, "_showAll", False)
    kept = ["26/11/26 17:44:18 WARN SparkStringUtils: Truncated the string representation of a plan.\n",
            "kspark executor 77 WARNING kspark.runtime: something the user should see\n"]
    failure = [
        "kspark executor 5455 ERROR kspark.errors: Exception caught during message processing, processor node: "
        "KSTREAM-MAPVALUES-0000000001, taskId: 0_0, source topic: events, source partition: 0, source offset: 1\n",
        *CHAIN.splitlines(keepends=True),
        "26/11/26 17:44:19 ERROR Utils: Aborting task\n",
        "org.apache.spark.api.python.PythonException: [PYTHON_EXCEPTION] An exception was thrown: " + CHAIN,
        "\tat org.apache.spark.executor.Executor$TaskRunner.run(Executor.scala:906)\n",
        "26/11/26 17:44:19 ERROR DataWritingSparkTask: Aborting commit for partition 0 (task 2, attempt 0, stage 1.0)\n",
        "26/11/26 17:44:19 ERROR Executor: Exception in task 0.0 in stage 1.0 (TID 2)\n",
        "org.apache.spark.api.python.PythonException: " + CHAIN, "\n",
        "26/11/26 17:44:19 WARN TaskSetManager: [queryId = 3f5dd] [batchId = 0] Lost task 0.0 in stage 1.0 (TID 2) "
        "(localhost executor driver): org.apache.spark.api.python.PythonException: " + CHAIN,
        "26/11/26 17:44:19 ERROR TaskSetManager: [queryId = 3f5dd] [batchId = 0] Task 0 in stage 1.0 failed 1 times; "
        "aborting job\n",
        "26/11/26 17:44:19 ERROR WriteToDataSourceV2Exec: Data source write support MicroBatchWrite[epoch: 0, "
        "writer: x@1d97bff1] is aborting.\n",
        "26/11/26 17:44:20 ERROR MicroBatchExecution: Query sport-subtopology-0 [id = 3f5d, runId = 9219] terminated "
        "with error\n", "org.apache.spark.api.python.PythonException: " + CHAIN,
        "\tat org.apache.spark.sql.execution.streaming.runtime.StreamExecution$$anon$1.run(StreamExecution.scala:236)\n",
    ]
    lines = [kept[0], *failure, kept[1]]
    _quiet._pump(io.BytesIO("".join(lines).encode()))
    err = capsys.readouterr().err
    if reporting:  # kspark run prints the failure itself
        assert err == "".join(kept)
    else:  # a library user: kspark's own error lines stay, Spark's repeats of the failure go
        assert err.startswith(kept[0] + failure[0]) and err.endswith(kept[1])
        for dropped in ("ERROR Utils: Aborting task", "ERROR DataWritingSparkTask", "ERROR Executor: Exception in task",
                        "aborting job", "is aborting", "terminated with error"):
            assert dropped not in err

"""Fault injection for tests/kafka/test_kafka_crash.py, loaded by every Python process of a crash
test's run (its directory is put on PYTHONPATH, which Spark passes to its Python workers).

With ``KSPARK_TEST_STALL_AFTER_COMMIT=<marker file>``, the first Kafka sink task that commits a
transaction holding changelog records creates the marker file and then stalls: its records and
offsets are committed in Kafka, but Spark never hears of it and cannot write the batch's commit
log. The test kills the run then: an executor lost between Kafka's commit and Spark's."""

import os

_MARKER = os.environ.get("KSPARK_TEST_STALL_AFTER_COMMIT")

if _MARKER:
    import time

    from kspark.topics import _kafka

    _write = _kafka.KafkaSinkWriter.write

    def write(self, writer, checkpointId, batchId, parts, positions, *args):
        written = _write(self, writer, checkpointId, batchId, parts, positions, *args)
        if any(topic.endswith("-changelog") for topic, _, _ in parts) and written:
            try:
                fd = os.open(_MARKER, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                return written
            os.write(fd, f"{checkpointId}:{batchId}".encode())
            os.close(fd)
            time.sleep(600)
        return written

    _kafka.KafkaSinkWriter.write = write

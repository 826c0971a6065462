"""KafkaSinkWriter's transaction steps are bounded even where librdkafka is not (no broker: a
fake producer stands for confluent-kafka's)."""

import threading
import time

import pyarrow as pa

from kspark.topics import _kafka
from kspark.topics._kafka import KafkaSinkWriter


class FakeProducer:
    """Records the transaction calls; ``hangOnOffsets`` blocks send_offsets_to_transaction past
    its timeout, as librdkafka does after its group coordinator went away (issues #5456, #5511)."""

    def __init__(self, hangOnOffsets: bool) -> None:
        self.hangOnOffsets, self.calls, self.records = hangOnOffsets, [], []
        self.release = threading.Event()

    def begin_transaction(self):
        self.calls.append("begin")

    def send_offsets_to_transaction(self, offsets, metadata, timeout):
        self.calls.append("offsets")
        if self.hangOnOffsets:
            self.release.wait(5)  # ignores ``timeout`` (5 s: without the bound, the test fails rather than hangs)

    def produce(self, topic, value=None, key=None, partition=-1, callback=None, on_delivery=None, timestamp=0,
                headers=None):  # confluent-kafka's parameters, in its order
        self.records.append((topic, partition, key, value, timestamp))

    def poll(self, timeout):
        return 0

    def commit_transaction(self, timeout):
        self.calls.append("commit")

    def abort_transaction(self, timeout):
        self.calls.append("abort")


def test_a_send_offsets_call_that_never_returns_is_given_up_and_the_batch_written_by_a_new_producer(monkeypatch):
    monkeypatch.setattr(_kafka, "_TIMEOUT_S", 0.2)
    stuck, fresh = FakeProducer(hangOnOffsets=True), FakeProducer(hangOnOffsets=False)
    producers = iter([stuck, fresh])
    writer = KafkaSinkWriter({}, {}, "app", True, "app-subtopology-0")
    monkeypatch.setattr(writer, "_transactionalProducer", lambda transactionalId: next(producers))
    monkeypatch.setattr(writer, "_alreadyCommitted", lambda positions, checkpointId, batchId: False)
    monkeypatch.setattr(writer, "_groupMetadata", lambda: "group-metadata")
    table = pa.table({"key": [b"k1", b"k2"], "value": [b"1", b"2"], "timestamp": [10, 20],
                      "headers": pa.array([None, None], pa.binary())})
    started = time.monotonic()
    try:
        written = writer.write(3, "checkpoint", 7, [("out", 0, table)], {("in", 0): 42})
    finally:
        stuck.release.set()
    assert written == 2
    assert time.monotonic() - started < 2  # the stuck call was given up after 1.2 x 0.2 s
    assert stuck.calls == ["begin", "offsets", "abort"] and stuck.records == []
    assert fresh.calls == ["begin", "offsets", "commit"]
    assert fresh.records == [("out", 0, b"k1", b"1", 10), ("out", 0, b"k2", b"2", 20)]

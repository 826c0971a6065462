"""The stream threads produce a task's output and changelog records straight from its tuples
(``_produceRecords``, ``_produceChangelog``); the micro-batch host stages them as Arrow tables
first (``_producedParts``, ``_changelogColumns``, then ``_produceTable``). Both must hand
confluent-kafka the same records in the same order per partition (a fake producer stands for
confluent-kafka's and takes its parameters in their order)."""

import logging

import numpy as np
import pyarrow as pa

from kspark.runtime.stream_task import ProducedColumns, ProducedRecord
from kspark.spark._task_processor import _changelogColumns, _producedParts
from kspark.topics._kafka import _produceChangelog, _produceRecords, _produceTable


class FakeProducer:
    def __init__(self, fullOnce: bool = False) -> None:
        self.records: list = []
        self.fullOnce = fullOnce
        self.polls = 0

    def produce(self, topic, value=None, key=None, partition=-1, callback=None, on_delivery=None, timestamp=0,
                headers=None):  # confluent-kafka's Producer.produce, in its order
        if self.fullOnce:  # librdkafka's local queue full once: the record is produced again after a poll
            self.fullOnce = False
            raise BufferError("Local: Queue full")
        assert callback is not None or on_delivery is not None
        self.records.append((topic, partition, timestamp, key, value, headers))

    def poll(self, timeout):
        self.polls += 1
        return 0


def _byPartition(records: list) -> dict:
    out: dict = {}
    for r in records:
        out.setdefault((r[0], r[1]), []).append(r)
    return out


def _staged(produced: list) -> FakeProducer:
    producer = FakeProducer()
    for topic, partition, table in _producedParts(produced):
        _produceTable(producer, topic, partition, table, lambda err, msg: None)
    return producer


def _mixedOutput() -> list:
    return [
        ProducedRecord("out", 1, 10, b"a", b"1", ()),
        ProducedRecord("out", 0, 11, b"b", None, (("h", b"x"), ("n", None))),
        ProducedColumns("other", np.array([0, 2, 0], np.int64), np.array([12, 0, 14], np.int64),
                        pa.array([b"c", None, b"e"], pa.binary()), pa.array([b"3", b"4", None], pa.binary()), None),
        ProducedRecord("out", 1, 15, None, b"6", (("h", bytearray(b"y")),)),
        ProducedColumns("out", np.array([0, 1], np.int64), np.array([16, 17], np.int64),
                        pa.array([b"g", b"h"], pa.binary()), pa.array([b"7", b"8"], pa.binary()),
                        [(), (("k", b"z"),)]),
    ]


def test_a_task_s_output_produced_directly_is_what_staging_produces_partition_by_partition(caplog):
    direct = FakeProducer()
    with caplog.at_level(logging.WARNING, logger="kspark"):
        assert _produceRecords(direct, _mixedOutput(), lambda err, msg: None) == 8
    assert _byPartition(direct.records) == _byPartition(_staged(_mixedOutput()).records)
    assert _byPartition(direct.records) == {
        ("out", 1): [("out", 1, 10, b"a", b"1", None), ("out", 1, 15, None, b"6", [("h", b"y")]),
                     ("out", 1, 17, b"h", b"8", [("k", b"z")])],
        ("out", 0): [("out", 0, 11, b"b", None, [("h", b"x"), ("n", None)]), ("out", 0, 16, b"g", b"7", None)],
        ("other", 0): [("other", 0, 12, b"c", b"3", None), ("other", 0, 14, b"e", None, None)],
        ("other", 2): [("other", 2, 0, None, b"4", None)],
    }
    # librdkafka stamps a record of timestamp 0 with the time it is sent: said, as staging says it
    assert "1 records to other-2 have timestamp 0" in caplog.text


def test_changelog_records_produced_directly_are_what_staging_produces(monkeypatch):
    import time

    monkeypatch.setattr(time, "time", lambda: 1234.5)
    records = [("app-counts-changelog", b"a", b"\x00" * 7 + b"\x01", 40, ()),
               ("app-other-changelog", b"b", None, None, ()),
               ("app-counts-changelog", b"c", b"\x00" * 7 + b"\x02", 41, (("v", b"\x01"),))]
    direct = FakeProducer(fullOnce=True)
    assert _produceChangelog(direct, records, 3, lambda err, msg: None) == 3
    assert direct.records == [
        ("app-counts-changelog", 3, 40, b"a", b"\x00" * 7 + b"\x01", None),
        ("app-other-changelog", 3, 1234500, b"b", None, None),
        ("app-counts-changelog", 3, 41, b"c", b"\x00" * 7 + b"\x02", [("v", b"\x01")]),
    ]
    assert _byPartition(direct.records) == _byPartition(_staged(_changelogColumns(records, 3)).records)


def test_a_record_without_a_partition_is_refused_as_staging_refuses_it():
    import pytest

    with pytest.raises(ValueError, match="null partition"):
        _produceRecords(FakeProducer(), [ProducedRecord("out", None, 1, b"k", b"v", ())], lambda err, msg: None)
    with pytest.raises(ValueError, match="null partition"):
        _staged([ProducedRecord("out", None, 1, b"k", b"v", ())])

"""Issue 19 item 6: a record cache flush forwards each entry in the record context it was cached
in (Kafka ``LRUCacheEntry``'s context, set by the flush), rules SA-10 / E-5. The expected values
were checked on Kafka 4.3.1's TopologyTestDriver."""

import pytest

from kspark import StreamsBuilder, Suppressed
from kspark.testing import TestRecord, TopologyTestDriver


class Where:
    def __init__(self, seen):
        self.seen = seen

    def init(self, context):
        self.context = context

    def process(self, record):
        meta = self.context.recordMetadata()
        self.seen.append((record.key(), record.value(), None if meta is None else (meta.topic(), meta.offset())))

    def close(self):
        pass


@pytest.mark.parametrize("cacheBytes", [10_000_000, 1])  # flushed at commit; evicted at once
def test_flushed_updates_carry_their_records_metadata(cacheBytes):
    seen = []
    b = StreamsBuilder()
    b.stream("in").groupByKey().count().toStream().process(lambda: Where(seen))
    with TopologyTestDriver(b.build(), {"statestore.cache.max.bytes": cacheBytes}) as d:
        d.createInputTopic("in").pipeKeyValueList([("a", "v"), ("b", "v"), ("a", "v")], 1, 1)
    assert seen == [("a", 1, ("in", 0)), ("b", 1, ("in", 1)), ("a", 2, ("in", 2))]


@pytest.mark.parametrize("maxBytes, expected", [(47, [TestRecord("k", 1, 1)]), (48, [])])
def test_suppress_max_bytes_counts_the_topic_of_a_flushed_update(maxBytes, expected):
    # 8 + key 1 + value 8 + 20 + "input-topic" 11 = 48 bytes: a 47-byte buffer emits early
    b = StreamsBuilder()
    (b.stream("input-topic").groupByKey().count()
     .suppress(Suppressed.untilTimeLimit(1_000_000, Suppressed.BufferConfig.maxBytes(maxBytes).emitEarlyWhenFull()))
     .toStream().to("out"))
    with TopologyTestDriver(b.build()) as d:
        d.createInputTopic("input-topic").pipeInput("k", "v", 1)
        assert d.createOutputTopic("out").readRecordsToList() == expected

"""The persistent versioned store, suppression buffer, outer-join store and stream-table join
buffer on Spark (kspark.state._persistent_more): one application over micro-batches gives
TopologyTestDriver's records, also when it restarts on an executor without its local stores
(each restored from its changelog topic) or with them (resumed from the local RocksDB)."""

import random
import shutil
from datetime import timedelta

import pytest

from kspark import (Joined, JoinWindows, KafkaStreams, Materialized, Serdes, StreamJoined, StreamsBuilder, Stores,
                    Suppressed)
from kspark.testing import TopologyTestDriver
from kspark.topics import LocalTopics

CONFIG = {"default.key.serde": Serdes.String(), "default.value.serde": Serdes.String()}
S = Serdes.String()
OUTPUTS = ("suppressed", "joined", "priced")


def records(seed):
    """(key, value, timestamp): mostly rising, with late records and jumps."""
    rng, ts, out = random.Random(seed), 1000, []
    for i in range(150):
        ts += rng.choice([1, 5, 20, 80, 300])
        out.append((rng.choice("abcdef"), str(i), max(0, ts - rng.choice([0, 0, 0, 150, 600]))))
    return out


def topology():
    b = StreamsBuilder()
    events = b.stream("events")
    # suppression buffer: each key's latest count once 100 ms of stream time passed, at most 3 keys held
    (events.groupByKey().count(materialized=Materialized.as_("counts").withCachingDisabled())
     .suppress(Suppressed.untilTimeLimit(timedelta(milliseconds=100),
                                         Suppressed.BufferConfig.maxRecords(3).emitEarlyWhenFull()))
     .toStream().mapValues(str).to("suppressed"))
    # outer-join store: even against odd values of the same key
    even = events.filter(lambda k, v: int(v) % 2 == 0)
    odd = events.filter(lambda k, v: int(v) % 2 == 1)
    (even.outerJoin(odd, lambda l, r: f"{l}+{r}", JoinWindows.ofTimeDifferenceAndGrace(timedelta(milliseconds=50),
                                                                                       timedelta(milliseconds=100)),
                    StreamJoined.with_(S, S, S))
     .to("joined"))
    # versioned store and stream-table join buffer: a table of every third value, read as of each record
    prices = (events.filter(lambda k, v: int(v) % 3 == 0)
              .toTable(materialized=Materialized.as_(Stores.persistentVersionedKeyValueStore("prices",
                                                                                             timedelta(seconds=2)))))
    (events.leftJoin(prices, lambda v, p: f"{v}@{p}", Joined.with_(S, S, S).withGracePeriod(timedelta(milliseconds=200)))
     .to("priced"))
    return b.build()


def onDriver(rows):
    with TopologyTestDriver(topology(), CONFIG) as d:
        events = d.createInputTopic("events")
        for k, v, ts in rows:
            events.pipeInput(k, v, ts)
        return {t: [(r.key(), r.value(), r.timestamp()) for r in d.createOutputTopic(t).readRecordsToList()]
                for t in OUTPUTS}


def run(spark, tmp_path, rows):
    topics = LocalTopics(tmp_path / "topics")
    topics.produce("events", [(S.serialize("events", k), S.serialize("events", v), ts) for k, v, ts in rows],
                   partitioner=lambda key, partitions: 0)
    props = {"application.id": "more-stores", "kspark.topics.dir": str(tmp_path / "topics"),
             "state.dir": str(tmp_path / "state"), "kspark.max.records.per.trigger": 17, **CONFIG}
    streams = KafkaStreams(topology(), props, spark=spark)
    streams.start()
    streams.awaitTermination()
    streams.close()


def outputs(tmp_path):
    topics = LocalTopics(tmp_path / "topics")
    got = {}
    for name in OUTPUTS:
        t = topics.read(name, 0, 0, topics.endOffset(name, 0))
        got[name] = [(k.decode(), v.decode(), ts) for k, v, ts in
                     zip(t.column("key").to_pylist(), t.column("value").to_pylist(), t.column("timestamp").to_pylist())]
    return got


@pytest.mark.parametrize("keepStores", [False, True])
def test_the_other_persistent_stores_on_spark_match_the_driver_across_a_restart(spark, tmp_path, keepStores):
    rows = records(7)
    expected = onDriver(rows)
    assert all(len(expected[t]) > 20 for t in OUTPUTS)
    assert any("+None" in v for _, v, _ in expected["joined"]) and any("@None" in v for _, v, _ in expected["priced"])

    topics = LocalTopics(tmp_path / "topics")
    for name in ("events", *OUTPUTS):
        topics.createTopic(name, 1)
    run(spark, tmp_path, rows[:80])
    stores = tmp_path / "state" / "more-stores" / "stores"
    assert (stores / "0_0").is_dir()
    if not keepStores:  # a new executor: every store comes back from its changelog topic
        shutil.rmtree(stores)
    run(spark, tmp_path, rows[80:])
    assert outputs(tmp_path) == expected
    changelogs = {n for n in topics.listTopics() if n.endswith("-changelog")}
    assert {"more-stores-prices-changelog", "more-stores-counts-changelog"} <= changelogs
    assert any("SUPPRESS" in n for n in changelogs) and any("OUTERSHARED" in n for n in changelogs)

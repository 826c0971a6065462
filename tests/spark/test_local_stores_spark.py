"""Issue 32 on Spark: a task's stores live in its local RocksDB with a changelog topic each. A
store directory deleted between micro-batches is restored from the changelogs; a topology that
gains a processor with a new store resumes with the old stores intact; a store whose serdes
changed is refused (rules T-17, SA-12, E-2)."""

import shutil

import pytest

from kspark import KafkaStreams, Materialized, Serdes, SessionWindows, StreamsBuilder
from kspark.errors import StreamsException
from kspark.runtime.partitioner import partitionForKey
from kspark.runtime.stream_task import decodeHeaders
from kspark.state import Stores
from kspark.testing import TopologyTestDriver
from kspark.topics import LocalTopics

EVENTS = [(f"user-{(i * 7) % 13}", {"page": f"p{i % 5}"}, 1_000 * i) for i in range(400)]
PROFILES = [(f"user-{i}", {"tier": "gold" if i % 3 else "basic"}, 500 * i) for i in range(13)]


def topology(withSeen: bool = False, countSerde=None):
    b = StreamsBuilder()
    events = b.stream("events")
    counts = Materialized.as_("counts")
    if countSerde is not None:
        counts = counts.withValueSerde(countSerde)
    events.groupByKey().count(counts).toStream().to("counts-out")
    (events.groupByKey().windowedBy(SessionWindows.ofInactivityGapAndGrace(30_000, 0))
     .count(Materialized.as_("sessions")).toStream().map(lambda k, v: (k.key(), v)).to("sessions-out"))
    b.table("profiles", Materialized.as_("profiles"))
    if withSeen:
        b.addStateStore(Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore("seen"), Serdes.String(), Serdes.Long()))
        events.process(SeenPages, "seen").to("seen-out")
    return b.build()


class SeenPages:
    """Forwards a record when its page is new for its key (a store the second run adds)."""

    def init(self, context):
        self.context, self.store = context, context.getStateStore("seen")

    def process(self, record):
        key = f"{record.key()}/{record.value()['page']}"
        if self.store.get(key) is None:
            self.store.put(key, record.timestamp())
            self.context.forward(record.withValue(key))

    def close(self):
        pass


def driverRun(top, records, profiles=PROFILES):
    with TopologyTestDriver(top, {"statestore.cache.max.bytes": 0}) as d:
        p, e = d.createInputTopic("profiles"), d.createInputTopic("events")
        for k, v, ts in profiles:
            p.pipeInput(k, v, ts)
        for k, v, ts in records:
            e.pipeInput(k, v, ts)
        outputs = {t: sorted((r.key(), str(r.value()), r.timestamp()) for r in d.createOutputTopic(t).readRecordsToList())
                   for t in ("counts-out", "sessions-out")}
        stores = {name: sorted((kv.key, kv.value) for kv in d.getTimestampedKeyValueStore(name).all())
                  for name in ("counts", "profiles")}
        stores["sessions"] = sorted((kv.key.key(), kv.key.window().start(), kv.key.window().end(), kv.value)
                                    for key in {k for k, _, _ in EVENTS}
                                    for kv in d.getSessionStore("sessions").fetch(key))
        return outputs, stores


@pytest.fixture
def app(tmp_path):
    topics = LocalTopics(tmp_path / "topics")
    for name in ("events", "profiles", "counts-out", "sessions-out", "seen-out"):
        topics.createTopic(name, 3)
    props = {"application.id": "local-stores", "kspark.topics.dir": str(tmp_path / "topics"),
             "state.dir": str(tmp_path / "state"), "statestore.cache.max.bytes": 0, "kspark.max.records.per.trigger": 90}
    return topics, props


def produce(topics, name, rows):
    key, value = Serdes.String(), Serdes.JSON()
    topics.produce(name, [(key.serialize(name, k), value.serialize(name, v), ts) for k, v, ts in rows],
                   partitioner=partitionForKey)


def run(spark, top, props):
    streams = KafkaStreams(top, props, spark=spark)
    streams.start()
    streams.awaitTermination()
    streams.close()
    return streams


def outputs(topics, name):
    rows = []
    for p in range(3):
        t = topics.read(name, p, 0, topics.endOffset(name, p))
        serde = Serdes.Long() if name == "counts-out" else Serdes.JSON()  # sessions-out: after map(), the defaults
        rows += [(k.decode(), str(serde.deserialize(name, v)), ts) for k, v, ts in
                 zip(t.column("key").to_pylist(), t.column("value").to_pylist(), t.column("timestamp").to_pylist())]
    return sorted(rows)


def storesOf(streams):
    sessions = streams.checkpointedStore("sessions")
    return {
        "counts": sorted((kv.key, kv.value) for kv in streams.checkpointedStore("counts").all()),
        "profiles": sorted((kv.key, kv.value) for kv in streams.checkpointedStore("profiles").all()),
        "sessions": sorted((kv.key.key(), kv.key.window().start(), kv.key.window().end(), kv.value)
                           for key in {k for k, _, _ in EVENTS} for kv in sessions.fetch(key)),
    }


def test_a_store_directory_deleted_between_batches_is_restored_from_the_changelogs(spark, app, tmp_path):
    topics, props = app
    expectedOutputs, expectedStores = driverRun(topology(), EVENTS)
    produce(topics, "profiles", PROFILES)
    produce(topics, "events", EVENTS[:200])
    run(spark, topology(), props)
    stores = tmp_path / "state" / "local-stores" / "stores"
    # one RocksDB per task: sub-topology 0 (events: counts, sessions), 1 (the profiles table)
    assert sorted(p.name for p in stores.iterdir()) == ["0_0", "0_1", "0_2", "1_0", "1_1", "1_2"]
    # Kafka's changelog topics, one partition per task, each record tagged with its batch
    for store in ("counts", "sessions", "profiles"):
        changelog = f"local-stores-{store}-changelog"
        assert topics.partitionsFor(changelog) == 3
        records = topics.read(changelog, 0, 0, topics.endOffset(changelog, 0))
        assert records.num_rows > 0
        assert all(dict(decodeHeaders(h)).get("kspark.checkpoint") for h in records.column("headers").to_pylist())
    shutil.rmtree(stores)  # between the last batch of one run and the first of the next
    # a stopped application's stores, read without the local stores: restored from the changelogs
    _, firstHalf = driverRun(topology(), EVENTS[:200])
    assert storesOf(KafkaStreams(topology(), props, spark=spark)) == firstHalf
    assert not stores.exists()

    produce(topics, "events", EVENTS[200:])
    produce(topics, "profiles", PROFILES[-3:])  # the profiles tasks run (and restore) too
    streams = run(spark, topology(), props)
    assert outputs(topics, "counts-out") == expectedOutputs["counts-out"]
    assert outputs(topics, "sessions-out") == expectedOutputs["sessions-out"]
    assert storesOf(streams) == expectedStores


def test_a_topology_that_adds_a_processor_and_store_resumes_with_the_old_stores(spark, app):
    topics, props = app
    produce(topics, "profiles", PROFILES)
    produce(topics, "events", EVENTS[:200])
    run(spark, topology(), props)
    produce(topics, "events", EVENTS[200:])
    streams = run(spark, topology(withSeen=True), props)

    _, expectedStores = driverRun(topology(), EVENTS)  # the old stores: as an uninterrupted run's
    assert storesOf(streams) == expectedStores
    # the new store holds what the second run saw
    seenKeys = {f"{k}/{v['page']}" for k, v, _ in EVENTS[200:]}
    assert sorted(kv.key for kv in streams.checkpointedStore("seen").all()) == sorted(seenKeys)
    assert topics.partitionsFor("local-stores-seen-changelog") == 3


def test_a_store_whose_serdes_changed_is_refused_naming_it(spark, app):
    topics, props = app
    produce(topics, "profiles", PROFILES)
    produce(topics, "events", EVENTS[:50])
    run(spark, topology(), props)
    with pytest.raises(StreamsException, match=r"store counts changed \(valueSerde .*_LongSerde -> .*_StringSerde\); its state cannot be reused"):
        KafkaStreams(topology(countSerde=Serdes.String()), props, spark=spark).start()

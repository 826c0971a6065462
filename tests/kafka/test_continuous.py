"""``kspark.trigger`` ``continuous`` (issue 34 §1): kspark's tasks in long-running Spark tasks, each a
Kafka Streams stream thread (``kspark.spark._stream_threads``), on a real broker under
``exactly_once_v2``."""

import sys
import threading
import time
from pathlib import Path

import pytest

from kspark import (Consumed, Grouped, KafkaStreams, Materialized, Produced, Serdes, StreamsBuilder, StreamsConfig,
                    StreamsException)
from kspark.runtime.metrics import MetricName
from kspark.runtime.partitioner import partitionForKey
from kspark.spark._stream_threads import killStreamThread, refusal, threadOfTasks
from kspark.testing import TopologyTestDriver
from kspark.topics import openTopics

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))

import valuation_signals as vs  # noqa: E402

KEYS = 40


def recountTopology(src: str, out: str):
    """Records re-keyed by their value, then counted (two sub-topologies joined by a repartition
    topic); the store's changelog and the repartition topic live in Kafka."""
    b = StreamsBuilder()
    (b.stream(src, Consumed.with_(Serdes.String(), Serdes.String()))
     .selectKey(lambda k, v: v)
     .groupByKey(Grouped.with_(Serdes.String(), Serdes.String()))
     .count(Materialized.as_("recount").withKeySerde(Serdes.String()))
     .toStream()
     .to(out, Produced.with_(Serdes.String(), Serdes.Long())))
    return b.build()


def wave(topics, src: str, start: int, n: int) -> list[tuple]:
    """``n`` records (key ``r<i>``, value ``v<i % KEYS>``, timestamp 1000 + i) from record ``start``."""
    records = [(f"r{i}".encode(), f"v{i % KEYS}".encode(), 1000 + i) for i in range(start, start + n)]
    topics.produce(src, records, partitioner=partitionForKey)
    return records


def countsOut(topics, out: str) -> dict[str, list[int]]:
    """Key -> its counts in offset order, read_committed."""
    got: dict[str, list[int]] = {}
    for p, end in sorted(topics.endOffsets(out).items()):
        for r in topics.read(out, p, 0, end).to_pylist():
            got.setdefault(r["key"].decode(), []).append(int.from_bytes(r["value"], "big", signed=True))
    return got


def driverCounts(src: str, out: str, records: list[tuple]) -> dict[str, int]:
    """Each key's last count of :func:`recountTopology` in TopologyTestDriver over ``records``."""
    with TopologyTestDriver(recountTopology(src, out)) as driver:
        inputs = driver.createInputTopic(src, Serdes.String(), Serdes.String())
        for key, value, ts in records:
            inputs.pipeInput(key.decode(), value.decode(), ts)
        return driver.createOutputTopic(out, Serdes.String(), Serdes.Long()).readKeyValuesToMap()


def waitFor(condition, what: str, streams, timeoutS: float = 120) -> None:
    deadline = time.time() + timeoutS
    while not condition():
        if streams._streamThreads.error is not None:
            raise AssertionError(f"the run failed: {streams._streamThreads.error}")
        if time.time() > deadline:
            raise AssertionError(f"not within {timeoutS} s: {what}")
        time.sleep(0.2)


def test_continuous_run_killed_mid_run_then_restarted_counts_every_record_once(spark, kafkaBroker, tmp_path):
    """A stream thread's Python worker is SIGKILLed while it processes (the run fails, as a Kafka
    Streams client whose thread died does by default); the application started again resumes
    at the committed offsets with its store restored from the changelog: every key's counts are
    exactly 1, 2, ..., n (a record processed twice would repeat or skip a count, a store restored
    short would start again at 1), and the last equals TopologyTestDriver's (rules RP-1, RP-2: the re-keyed records
    reach the count through the repartition topic; exactly-once itself has no rule id in the spec).
    Each store's working set keeps one entry, so the counts are read back from the local RocksDB
    (a store that started empty once lost every evicted count in this mode)."""
    topics = openTopics({"bootstrap.servers": kafkaBroker.bootstrapServers})
    src, out = "continuous-in", "continuous-out"
    topics.createTopic(src, 4)
    topics.createTopic(out, 4)
    props = {"application.id": "continuous-recount", "bootstrap.servers": kafkaBroker.bootstrapServers,
             "processing.guarantee": "exactly_once_v2", "state.dir": str(tmp_path / "state"),
             "statestore.cache.max.bytes": 0, StreamsConfig.TRIGGER_CONFIG: "continuous",
             "kspark.store.cache.max.entries": 1}
    records = wave(topics, src, 0, 3000)

    streams = KafkaStreams(recountTopology(src, out), props, spark=spark)
    streams.start()
    waitFor(lambda: sum(map(len, countsOut(topics, out).values())) >= 1000, "the first outputs", streams)
    threads = streams._streamThreads
    assert threads.threads == 2  # local[2]: two stream threads for the 8 tasks (2 sub-topologies x 4)
    # the kill lands while records arrive: the thread has processed records it has not committed
    more = threading.Thread(target=lambda: [records.extend(wave(topics, src, 3000 + 100 * i, 100))
                                            or time.sleep(0.02) for i in range(30)])
    more.start()
    time.sleep(0.3)
    processedBefore = sum(map(len, countsOut(topics, out).values()))
    killStreamThread(threads.control, 0)
    more.join()
    with pytest.raises(StreamsException):
        streams.awaitTermination(120)
    streams.close()
    assert streams.state() == KafkaStreams.ERROR
    assert 1000 <= processedBefore < len(records)

    records += wave(topics, src, 6000, 2000)
    streams = KafkaStreams(recountTopology(src, out), props, spark=spark)
    streams.start()
    try:
        waitFor(lambda: sum(map(len, countsOut(topics, out).values())) >= len(records), "every record's count", streams)
    finally:
        streams.close()

    got = countsOut(topics, out)
    expected = driverCounts(src, out, records)
    assert len(expected) == KEYS
    assert {k: counts[-1] for k, counts in got.items()} == expected
    assert {k: counts for k, counts in got.items()} == {k: list(range(1, n + 1)) for k, n in expected.items()}
    # the group committed every input position (Kafka's tools see the application caught up)
    committed = topics.committedOffsets("continuous-recount", src)
    assert {p: o for p, (o, _) in committed.items()} == topics.endOffsets(src)
    # the store's changelog records are Kafka Streams' (serialized key, value and timestamp, no headers)
    changelog = [r for p, end in sorted(topics.endOffsets("continuous-recount-recount-changelog").items())
                 for r in topics.read("continuous-recount-recount-changelog", p, 0, end).to_pylist()]
    assert len(changelog) >= KEYS and all(r["headers"] is None for r in changelog)


def test_continuous_refuses_what_it_cannot_run(tmp_path):
    """Local topics and at_least_once are refused with the reason, before Spark starts."""
    topology = recountTopology("in", "out")
    from kspark.topics import LocalTopics

    LocalTopics(tmp_path / "topics").createTopic("in", 2)
    LocalTopics(tmp_path / "topics").createTopic("out", 2)
    streams = KafkaStreams(topology, {"application.id": "c", "kspark.topics.dir": str(tmp_path / "topics"),
                                      "state.dir": str(tmp_path / "state"), "kspark.trigger": "continuous"})
    with pytest.raises(StreamsException, match=r"kspark.trigger=continuous cannot run c: it runs on Kafka only"):
        streams.start()
    plans = streams._plan()
    assert refusal(StreamsConfig({"application.id": "c", "bootstrap.servers": "127.0.0.1:1",
                                  "processing.guarantee": "at_least_once"}), plans).startswith(
        "it commits with Kafka transactions only (processing.guarantee=at_least_once")
    assert refusal(StreamsConfig({"application.id": "c", "bootstrap.servers": "127.0.0.1:1",
                                  "processing.guarantee": "exactly_once_v2"}), plans) is None


def test_stream_threads_own_tasks_round_robin():
    """Every task has one thread; the threads' loads differ by at most one task."""
    plans = [{"numTasks": 4}, {"numTasks": 3}]
    owner = threadOfTasks(plans, 2)
    assert owner == {(0, 0): 0, (0, 1): 1, (0, 2): 0, (0, 3): 1, (1, 0): 0, (1, 1): 1, (1, 2): 0}


def caughtUp(topics, appId: str, sources: list[str]) -> bool:
    """Whether the group ``appId`` committed every source partition's end (transaction markers
    included: a thread commits its consumer's position once it processed all it consumed)."""
    for topic in sources:
        committed = {p: o for p, (o, _) in topics.committedOffsets(appId, topic).items()}
        if committed != topics.endOffsets(topic):
            return False
    return True


def liveOrderSignals(prices: list[dict], valuations: list[dict]) -> list[dict]:
    """The signals of ``TopologyTestDriver`` when the company master and the valuations arrive
    first (each in timestamp order) and the prices after them, as on the live feed (as
    :func:`valuation_signals.readSignals` lists them)."""
    events = [(0, ts, "companies", k, v) for k, v, ts in vs.companyRecords(valuations)]
    events += [(0, ts, "valuations", k, v) for k, v, ts in map(vs.valuationRecord, valuations)]
    events += [(1, vs.epochMs(p["snapshot_ts"]), "prices", p["code"], p) for p in prices]
    events.sort(key=lambda e: (e[0], e[1]))
    with TopologyTestDriver(vs.buildTopology()) as driver:
        inputs = {t: driver.createInputTopic(t) for t in ("prices", "valuations", "companies")}
        for _, ts, topic, k, v in events:
            inputs[topic].pipeInput(k, v, ts)
        out = driver.createOutputTopic("signals").readRecordsToList()
    return sorted(({**r.value(), "timestamp": r.timestamp()} for r in out), key=lambda s: (s["timestamp"], s["code"]))


def test_flagship_job_runs_continuously_and_gives_the_drivers_signals(spark, kafkaBroker, tmp_path, request):
    """Seed 004's live feed as stream threads: the valuations go through the repartition topic
    into the KTable, the company master into the GlobalKTable (each task's copy restored to the
    global topic's end at start, then fed as the thread reads it); then prices (5 partitions)
    arrive, as on the live feed, and the join, the GlobalKTable join and the dedup store give
    TopologyTestDriver's signals for that arrival order (rules J-1..J-8, RP-1, RP-2: a price joins
    the latest valuation of its code, whatever their timestamps); the group's committed offsets reach
    every input's end, the repartition topic's transaction markers included, and
    ``process-total`` is in ``metrics()`` while the threads run and after ``close()``."""
    prices = vs.readPrices(4_000)
    valuations = [v for v in vs.readValuations() if v["date"] <= prices[-1]["trade_date"]]
    topics = openTopics({"bootstrap.servers": kafkaBroker.bootstrapServers})
    vs.loadTopics(topics, [], valuations)
    request.addfinalizer(lambda: [topics.deleteTopic(t) for t in ("prices", "valuations", "companies", "signals")])
    expected = liveOrderSignals(prices, valuations)
    appId = "flagship-continuous"
    repartition = f"{appId}-valuations-by-code-repartition"
    streams = KafkaStreams(vs.buildTopology(), {
        "application.id": appId, "bootstrap.servers": kafkaBroker.bootstrapServers,
        "processing.guarantee": "exactly_once_v2", "state.dir": str(tmp_path / "state"),
        StreamsConfig.TRIGGER_CONFIG: "continuous"}, spark=spark)
    streams.start()
    # Kafka's task-level process-total: every price, every valuation, and each again from the
    # repartition topic
    inputs = len(prices) + 2 * len(valuations)

    def processed():
        return sum(v for m, v in streams.metrics().items() if m.name == "process-total" and m.group == "stream-task-metrics")

    try:
        waitFor(lambda: topics.partitionsFor(repartition) and caughtUp(topics, appId, ["valuations", repartition]),
                "the valuations in the table", streams)
        key, value = Serdes.String(), vs.jsonSerdes()["prices"]
        topics.produce("prices", [(key.serialize("prices", r["code"]), value.serialize("prices", r), int(time.time() * 1000))
                                  for r in prices], partitioner=partitionForKey)
        waitFor(lambda: caughtUp(topics, appId, ["prices", "valuations", repartition]),
                "the inputs' ends committed", streams)
        waitFor(lambda: processed() == inputs, "the threads' counters in metrics() while they run", streams)
    finally:
        streams.close()
    assert streams.state() == KafkaStreams.NOT_RUNNING
    assert processed() == inputs  # after close: kept in state.dir
    got = vs.readSignals(topics)
    assert len(expected) == 20  # the 4,000 prices against the latest valuations (373 in timestamp order)
    assert got == expected


def test_a_join_task_whose_table_partition_stays_empty_processes_its_stream_records(spark, kafkaBroker, tmp_path):
    """A stream-table left join whose table topic never gets a record: the task has nothing
    known upstream on that partition (lag 0 once fetched), so it processes the stream records
    (rule J-1's left join: a null table value) rather than waiting for records that never come,
    although no further record arrives to wake it."""
    topics = openTopics({"bootstrap.servers": kafkaBroker.bootstrapServers})
    src, table, out = "continuous-join-in", "continuous-join-table", "continuous-join-out"
    for t in (src, table, out):
        topics.createTopic(t, 2)
    b = StreamsBuilder()
    values = b.table(table, Consumed.with_(Serdes.String(), Serdes.String()))
    (b.stream(src, Consumed.with_(Serdes.String(), Serdes.String()))
     .leftJoin(values, lambda v, tv: f"{v}+{tv}")
     .to(out, Produced.with_(Serdes.String(), Serdes.String())))
    records = [(f"k{i}".encode(), f"v{i}".encode(), 1000 + i) for i in range(20)]
    topics.produce(src, records, partitioner=partitionForKey)
    streams = KafkaStreams(b.build(), {
        "application.id": "continuous-join", "bootstrap.servers": kafkaBroker.bootstrapServers,
        "processing.guarantee": "exactly_once_v2", "state.dir": str(tmp_path / "state"),
        StreamsConfig.TRIGGER_CONFIG: "continuous"}, spark=spark)
    streams.start()

    def joined():
        return sorted((r["key"], r["value"]) for p, end in topics.endOffsets(out).items()
                      for r in topics.read(out, p, 0, end).to_pylist())

    try:
        waitFor(lambda: len(joined()) >= len(records), "the stream records joined", streams, timeoutS=60)
    finally:
        streams.close()
    assert joined() == sorted((k, v + b"+None") for k, v, _ in records)


def test_flagship_backlog_with_task_idling_gives_the_timestamp_ordered_signals(spark, kafkaBroker, tmp_path, request):
    """The flagship's inputs all loaded before the start, ``max.task.idle.ms`` 5000 as its Java port
    (bench/java/bench/Flagship.java): the join task idles while the repartitioned valuations are
    on their way (rule T-14) and never on the empty company-master partition, so the signals are
    TopologyTestDriver's with every record in timestamp order, as the micro-batch host gives
    (rules J-1..J-8, T-12, T-14)."""
    prices = vs.readPrices(4_000)
    valuations = [v for v in vs.readValuations() if v["date"] <= prices[-1]["trade_date"]]
    topics = openTopics({"bootstrap.servers": kafkaBroker.bootstrapServers})
    vs.loadTopics(topics, prices, valuations)
    request.addfinalizer(lambda: [topics.deleteTopic(t) for t in ("prices", "valuations", "companies", "signals")])
    expected = vs.driverSignals(prices, valuations)
    appId = "flagship-continuous-backlog"
    streams = KafkaStreams(vs.buildTopology(), {
        "application.id": appId, "bootstrap.servers": kafkaBroker.bootstrapServers,
        "processing.guarantee": "exactly_once_v2", "state.dir": str(tmp_path / "state"),
        "max.task.idle.ms": 5000, StreamsConfig.TRIGGER_CONFIG: "continuous"}, spark=spark)
    streams.start()
    try:
        waitFor(lambda: topics.partitionsFor(f"{appId}-valuations-by-code-repartition")
                and caughtUp(topics, appId, ["prices", "valuations", f"{appId}-valuations-by-code-repartition"]),
                "the inputs' ends committed", streams)
    finally:
        streams.close()
    got = vs.readSignals(topics)
    assert len(expected) == 373
    assert got == expected


def test_continuous_run_s_metrics_are_scraped_live_under_kafka_s_names(spark, kafkaBroker, tmp_path, capsys):
    """Issue 34 section 2 in continuous mode: while the stream threads run, the Prometheus endpoint
    (``kspark.metrics.prometheus.port``, parsed by prometheus_client) serves Kafka Streams' thread,
    task and node metrics with live rates, the commits' count, rate and latency, record-e2e-latency
    of the source and terminal nodes, each input partition's ``records-lag`` and, at
    ``metrics.recording.level`` DEBUG, the store's put rate (rule MT-1). A sub-topology is a
    thread-id, as on the micro-batch host: thread 1 reads the source, thread 2 the repartition
    topic (rules RP-1, RP-2) and counts. The run's summary counts its commits and gives the
    output records' e2e latency p50/p95."""
    from prometheus_client.parser import text_string_to_metric_families

    topics = openTopics({"bootstrap.servers": kafkaBroker.bootstrapServers})
    src, out, appId = "continuous-metrics-in", "continuous-metrics-out", "continuous-metrics"
    topics.createTopic(src, 2)
    topics.createTopic(out, 2)
    b = StreamsBuilder()
    (b.stream(src, Consumed.with_(Serdes.String(), Serdes.String()).withName("src"))
     .selectKey(lambda k, v: v)
     .groupByKey(Grouped.with_(Serdes.String(), Serdes.String()))
     .count(Materialized.as_("recount").withKeySerde(Serdes.String()))
     .toStream()
     .to(out, Produced.with_(Serdes.String(), Serdes.Long()).withName("sink")))
    timestamp = int(time.time() * 1000) - 5_000  # every record 5 s old when it is produced
    n = 300
    records = [(f"r{i}".encode(), f"v{i % KEYS}".encode(), timestamp) for i in range(n)]
    perPartition = {p: sum(1 for k, _, _ in records if partitionForKey(k, 2) == p) for p in (0, 1)}
    streams = KafkaStreams(b.build(), {
        "application.id": appId, "bootstrap.servers": kafkaBroker.bootstrapServers,
        "processing.guarantee": "exactly_once_v2", "state.dir": str(tmp_path / "state"),
        StreamsConfig.TRIGGER_CONFIG: "continuous", "kspark.metrics.prometheus.port": 0,
        "metrics.recording.level": "DEBUG", "kspark.progress": "plain"}, spark=spark)
    thread1, thread2 = f"{appId}-StreamThread-1", f"{appId}-StreamThread-2"
    repartition = f"{appId}-recount-repartition"
    streams.start()
    scraped: dict = {}

    def scrape() -> dict:
        import urllib.request

        text = urllib.request.urlopen(f"http://127.0.0.1:{streams.prometheusPort()}/metrics", timeout=10).read().decode()
        scraped.clear()
        scraped.update({(s.name, tuple(sorted(s.labels.items()))): s.value
                        for family in text_string_to_metric_families(text) for s in family.samples})
        return scraped

    def value(name: str, **labels) -> float:
        return scraped[(name, tuple(sorted(labels.items())))]

    try:
        started = time.time() * 1000
        topics.produce(src, records, partitioner=partitionForKey)
        waitFor(lambda: topics.partitionsFor(repartition) and caughtUp(topics, appId, [src, repartition]),
                "the inputs' ends committed", streams)
        waitFor(lambda: scrape().get(("kafka_streams_stream_thread_metrics_process_total",
                                      (("thread_id", thread2),))) == n
                and all(value("kafka_consumer_consumer_fetch_manager_metrics_records_lag", client_id=f"{t}-consumer",
                              topic=topic, partition=str(p)) == 0
                        for t, topic in ((thread1, src), (thread2, repartition)) for p in (0, 1)
                        if ("kafka_consumer_consumer_fetch_manager_metrics_records_lag",
                            tuple(sorted({"client_id": f"{t}-consumer", "topic": topic, "partition": str(p)}.items())))
                        in scraped),
                "every record's metrics in a scrape while the threads run", streams)
        ended = time.time() * 1000
        assert streams.state() == KafkaStreams.RUNNING
        for thread in (thread1, thread2):
            assert value("kafka_streams_stream_thread_metrics_process_total", thread_id=thread) == n
            # live: per second over the live windows (2 of 30 s: at least 30 s of elapsed time)
            assert 0 < value("kafka_streams_stream_thread_metrics_process_rate", thread_id=thread) <= n / 30
            commits = value("kafka_streams_stream_thread_metrics_commit_total", thread_id=thread)
            assert commits >= 1
            assert 0 < value("kafka_streams_stream_thread_metrics_commit_rate", thread_id=thread) <= commits / 30
            assert 0 < value("kafka_streams_stream_thread_metrics_commit_latency_avg", thread_id=thread) \
                <= value("kafka_streams_stream_thread_metrics_commit_latency_max", thread_id=thread)
            assert 0 < value("kafka_streams_stream_thread_metrics_process_latency_avg", thread_id=thread) \
                <= value("kafka_streams_stream_thread_metrics_process_latency_max", thread_id=thread)
        for p, count in perPartition.items():
            source = {"thread_id": thread1, "task_id": f"0_{p}"}
            assert value("kafka_streams_stream_task_metrics_process_total", **source) == count
            assert value("kafka_streams_stream_processor_node_metrics_process_total", processor_node_id="src",
                         **source) == count
            assert 0 < value("kafka_streams_stream_task_metrics_process_latency_avg", **source)
            lo, avg, hi = (value(f"kafka_streams_stream_processor_node_metrics_record_e2e_latency_{s}",
                                 processor_node_id="src", **source) for s in ("min", "avg", "max"))
            assert started - timestamp <= lo <= avg <= hi <= ended - timestamp
            # every input partition caught up, read by each sub-topology's thread's consumer
            assert value("kafka_consumer_consumer_fetch_manager_metrics_records_lag", client_id=f"{thread1}-consumer",
                         topic=src, partition=str(p)) == 0
            assert value("kafka_consumer_consumer_fetch_manager_metrics_records_lag", client_id=f"{thread2}-consumer",
                         topic=repartition, partition=str(p)) == 0
        counted = {"thread_id": thread2, "task_id": "1_0"}, {"thread_id": thread2, "task_id": "1_1"}
        assert sum(value("kafka_streams_stream_task_metrics_process_total", **t) for t in counted) == n
        for task in counted:  # the terminal sink's latency; the count's store, a put per record
            lo, hi = (value(f"kafka_streams_stream_processor_node_metrics_record_e2e_latency_{s}",
                            processor_node_id="sink", **task) for s in ("min", "max"))
            assert started - timestamp <= lo <= hi <= ended - timestamp
            assert 0 < value("kafka_streams_stream_state_metrics_put_rate", rocksdb_state_id="recount", **task) <= n / 30
    finally:
        streams.close()
    # after close: the totals kept in state.dir
    assert streams.metrics()[MetricName("process-total", "stream-thread-metrics", (("thread-id", thread1),))] == n
    lines = capsys.readouterr().out.splitlines()
    summary = lines[lines.index(f"== {appId}: summary ==") + 1]
    assert " commits, 600 records read " in summary  # each record from the source, then from the repartition topic
    latency = [line for line in lines if line.startswith("end-to-end latency of output records: p50 ")]
    p50, p95 = (float(part.split()[1].replace(",", "")) for part in latency[0].split(": ", 1)[1].split(", "))
    assert started - timestamp <= p50 <= p95 <= (time.time() * 1000 - timestamp) * 1.1  # bucket bounds 9 % apart


def test_a_clean_close_keeps_the_stores_and_the_next_run_restores_only_what_follows(spark, kafkaBroker, tmp_path):
    """Kafka Streams' clean close under exactly-once: each task's local store stays with a
    checkpoint of its changelogs' end offsets (``.checkpoint``), which the next run takes in and
    deletes, restoring only the changelog records after it (none here); the counts go on exactly
    (rules RP-1, RP-2 through the repartition topic). A checkpoint outside its changelog (an offset
    past the partition's end: the topic was recreated since) is not trusted: the store is
    restored whole, with the same counts."""
    import json

    topics = openTopics({"bootstrap.servers": kafkaBroker.bootstrapServers})
    src, out, appId = "continuous-reuse-in", "continuous-reuse-out", "continuous-reuse"
    topics.createTopic(src, 2)
    topics.createTopic(out, 2)
    props = {"application.id": appId, "bootstrap.servers": kafkaBroker.bootstrapServers,
             "processing.guarantee": "exactly_once_v2", "state.dir": str(tmp_path / "state"),
             "kspark.store.dir": str(tmp_path / "stores"), "statestore.cache.max.bytes": 0,
             StreamsConfig.TRIGGER_CONFIG: "continuous"}
    changelog = f"{appId}-recount-changelog"
    root = tmp_path / "stores" / "stream-threads"
    records: list = []

    def run(start: int) -> list[dict]:
        """Write 200 records, run until every count is out, close; the threads' summaries."""
        records.extend(wave(topics, src, start, 200))
        streams = KafkaStreams(recountTopology(src, out), props, spark=spark)
        streams.start()
        try:
            waitFor(lambda: sum(map(len, countsOut(topics, out).values())) >= len(records), "every record's count",
                    streams)
            # taken in and deleted as the tasks start: a crash from here on restores whole
            assert not list(root.glob("*/.checkpoint"))
        finally:
            streams.close()
        assert streams.state() == KafkaStreams.NOT_RUNNING
        return streams._streamThreads.summaries

    def restored(summaries: list[dict]) -> int:
        return sum(s["restoredRecords"] for s in summaries)

    assert restored(run(0)) == 0  # a new application: empty changelogs
    checkpoints = {path.parent.name: json.loads(path.read_text()) for path in root.glob("*/.checkpoint")}
    ends = topics.endOffsets(changelog)  # the counting tasks' (the re-keying ones have no store)
    assert {task: c["offsets"] for task, c in checkpoints.items()} == {
        "1_0": {changelog: ends[0]}, "1_1": {changelog: ends[1]}}

    assert restored(run(200)) == 0  # the stores kept, at their changelogs' ends

    for task in ("1_0", "1_1"):  # a checkpoint past its changelog's end
        path = root / task / ".checkpoint"
        checkpoint = json.loads(path.read_text())
        checkpoint["offsets"] = {changelog: 10 ** 9}
        path.write_text(json.dumps(checkpoint))
    logged = sum(len(topics.read(changelog, p, 0, end)) for p, end in topics.endOffsets(changelog).items())
    assert logged >= 2 * KEYS  # each key's count logged at least once per run
    assert restored(run(400)) == logged  # every changelog record: restored whole

    got = countsOut(topics, out)
    expected = driverCounts(src, out, records)
    assert {k: counts for k, counts in got.items()} == {k: list(range(1, n + 1)) for k, n in expected.items()}
    assert sum(expected.values()) == 600


class _SeenCounter:
    """addGlobalStore's processor: how many records each key had on the global topic (a restore
    runs the records through it again, KIP-813)."""

    def init(self, context):
        self.store = context.getStateStore("seen")

    def process(self, record):
        self.store.put(record.key(), (self.store.get(record.key()) or 0) + 1)

    def close(self):
        pass


class _WithSeen:
    """An order's code with its count in the global store."""

    def init(self, context):
        self.context, self.seen = context, context.getStateStore("seen")

    def process(self, record):
        self.context.forward(record.withValue(f"{record.value()}:{self.seen.get(record.value())}"))

    def close(self):
        pass


def test_a_kept_store_s_global_copies_are_restored_whole_not_over_what_they_held(spark, kafkaBroker, tmp_path):
    """A task's copy of a global store is restored whole at every start, through its processor
    (``addGlobalStore``, KIP-813), also when the task's store directory was kept by a clean
    close: the kept copy is emptied first, so the counts of the global records are not added
    twice (rules J-7, J-8: the orders read the global store as the global topic gave it)."""
    from kspark.state import Stores

    topics = openTopics({"bootstrap.servers": kafkaBroker.bootstrapServers})
    for topic in ("reuse-seen", "reuse-orders", "reuse-enriched"):
        topics.createTopic(topic, 1)
    key = Serdes.String()

    def topology():
        b = StreamsBuilder()
        b.addGlobalStore(Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore("seen"), key, Serdes.Long())
                         .withLoggingDisabled(), "reuse-seen", Consumed.with_(key, key), _SeenCounter)
        (b.stream("reuse-orders", Consumed.with_(key, key)).process(_WithSeen)
         .to("reuse-enriched", Produced.with_(key, key)))
        return b.build()

    props = {"application.id": "continuous-reuse-global", "bootstrap.servers": kafkaBroker.bootstrapServers,
             "processing.guarantee": "exactly_once_v2", "state.dir": str(tmp_path / "state"),
             "kspark.store.dir": str(tmp_path / "stores"), StreamsConfig.TRIGGER_CONFIG: "continuous"}

    def run(seen: list[str], orders: list[str]) -> list[str]:
        now = int(time.time() * 1000)
        topics.produce("reuse-seen", [(k.encode(), b"x", now) for k in seen], partitioner=partitionForKey)
        topics.produce("reuse-orders", [(f"o{i}".encode(), code.encode(), now) for i, code in enumerate(orders)],
                       partitioner=partitionForKey)
        streams = KafkaStreams(topology(), props, spark=spark)
        streams.start()
        try:
            waitFor(lambda: caughtUp(topics, "continuous-reuse-global", ["reuse-orders"]), "the orders processed",
                    streams)
        finally:
            streams.close()
        return [v.decode() for v in topics.read("reuse-enriched", 0, 0, topics.endOffsets("reuse-enriched")[0])
                .column("value").to_pylist()]

    assert run(["A", "A", "B", "A"], ["A", "B"]) == ["A:3", "B:1"]
    assert list((tmp_path / "stores" / "stream-threads").glob("*/.checkpoint"))  # kept by the clean close
    assert run(["A"], ["A", "B"]) == ["A:3", "B:1", "A:4", "B:1"]

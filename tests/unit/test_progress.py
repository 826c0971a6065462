"""The progress model behind the live view, plain lines and summary (issue 23), fed with query
progress documents as Spark's listener delivers them (no Spark needed)."""

import json

from kspark import StreamsBuilder
from kspark.spark._progress import RunProgress
from kspark.topology import Topology


def progressOf():
    b = StreamsBuilder()
    table = b.globalTable("ref")
    b.stream("in").join(table, lambda k, v: k, lambda v, r: v).to("out")
    topology: Topology = b.build()
    sub = topology.subtopologies()[0]
    plan = {"subtopology": sub, "sources": ["in", "ref"], "globalSources": ["ref"], "topicName": {}}
    return RunProgress("app", [plan]), sub


def test_kspark_topics_offsets_give_records_lags_and_counters():
    progress, sub = progressOf()
    sink = next(n.name for n in sub.nodes if type(n).__name__ == "SinkNodeSpec")
    taskRows = [json.dumps({  # the tasks' metrics rows, as observe() collects them
        f"process-total|stream-processor-node-metrics|task-id={sub.id}_0|processor-node-id={sink}": 3,
        f"dropped-records-total|kspark-dropped-records|task-id={sub.id}_0|processor-node-id=x|reason=late": 2,
        f"dropped-records-total|stream-task-metrics|task-id={sub.id}_0": 2,
        f"punctuate-total|stream-task-metrics|task-id={sub.id}_0": 3,
    }), json.dumps({f"process-total|stream-processor-node-metrics|task-id={sub.id}_1|processor-node-id={sink}": 1})]
    stats = progress.onProgress({"name": f"app-subtopology-{sub.id}", "batchId": 7, "batchDuration": 2000,
                                 "observedMetrics": {"kspark": {"metrics": taskRows}}, "sources": [{
        "startOffset": json.dumps({"in/0": 10, "in/1": 0, "ref/0": 0}),
        "endOffset": {"in/0": 15, "in/1": 3, "ref/0": 2, "in/0@logEnd": 20, "in/1@logEnd": 3, "ref/0@logEnd": 2,
                      "@heartbeat": 1},
    }]})
    assert (stats.lastRecords, stats.records, stats.lags) == (10, 10, {("in", 0): 5, ("in", 1): 0, ("ref", 0): 0})
    assert progress.batchLine(stats) == (f"app sub-topology {sub.id} batch 7: 10 records in 2.0 s (5 records/s), lag 5, "
                                         "2 dropped, 3 punctuations")
    assert progress.onProgress({"name": f"app-subtopology-{sub.id}", "batchId": 7, "sources": []}) is None  # seen already
    assert progress.onProgress({"name": f"other-app-subtopology-{sub.id}", "batchId": 8, "sources": []}) is None
    t = progress.totals()
    assert (t["read"], t["written"], t["punctuations"]) == ({"in": 8, "ref": 2}, {"out": 4}, 3)
    assert t["dropped"] == {("x", "late"): 2}
    lines = progress.summaryLines()
    assert lines[0] == "== app: summary =="
    assert [line.split() for line in lines[2:6]] == [
        ["topic", "read", "written"], ["in", "8", "-"], ["ref", "(global)", "2", "-"], ["out", "-", "4"]]
    assert lines[6:] == ["records dropped: 2", "  late at x: 2", "punctuations: 3"]


def test_spark_kafka_source_offsets_and_latest_offset_for_the_lag():
    progress, sub = progressOf()
    stats = progress.onProgress({"name": f"app-subtopology-{sub.id}", "batchId": 0, "batchDuration": 1000, "sources": [{
        "startOffset": None,
        "endOffset": json.dumps({"in": {"0": 4, "1": 6}}),
        "latestOffset": json.dumps({"in": {"0": 9, "1": 6}}),
    }]})
    assert stats.records == 10 and stats.lags == {("in", 0): 5, ("in", 1): 0}


def test_records_read_come_from_the_tasks_counters_where_offsets_count_transaction_markers():
    """On Kafka topics written in transactions a commit marker takes an offset: the batch's
    offsets say 6 records where the tasks consumed 5 (their records-consumed-total)."""
    progress, sub = progressOf()
    taskRows = [json.dumps({
        "records-consumed-total|consumer-fetch-manager-metrics|topic=in": 5,
        "records-consumed-total|consumer-fetch-manager-metrics|topic=ref": 1,
    })]
    stats = progress.onProgress({"name": f"app-subtopology-{sub.id}", "batchId": 0, "batchDuration": 1000,
                                 "observedMetrics": {"kspark": {"metrics": taskRows}}, "sources": [{
        "startOffset": None, "endOffset": {"in/0": 6, "ref/0": 2, "in/0@logEnd": 6, "ref/0@logEnd": 2}}]})
    assert (stats.records, dict(stats.read), stats.lags) == (6, {"in": 5, "ref": 1}, {("in", 0): 0, ("ref", 0): 0})


def test_output_e2e_latency_p50_p95_from_the_tasks_histograms_in_batch_lines_and_summary():
    """The tasks' histograms of their output records' e2e latency (group kspark-record-e2e-latency,
    bucket upper bound 2^(bucket/8) ms) are summed: per batch in the plain line, over the run in
    the summary (issue 34 section 2)."""
    progress, sub = progressOf()

    def batch(batchId, buckets):
        rows = [json.dumps({f"record-e2e-latency-bucket|kspark-record-e2e-latency|bucket={b}": n for b, n in part.items()})
                for part in buckets]
        return progress.onProgress({"name": f"app-subtopology-{sub.id}", "batchId": batchId, "batchDuration": 1000,
                                    "observedMetrics": {"kspark": {"metrics": rows}}, "sources": []})

    # bucket 64 ends at 256 ms, 80 at 1,024 ms, 88 at 2,048 ms
    stats = batch(0, [{64: 60}, {64: 30, 80: 10}])  # two tasks' rows
    assert progress.batchLine(stats).endswith(", e2e p50 256 ms, p95 1,024 ms")
    stats = batch(1, [{88: 100}])
    assert progress.batchLine(stats).endswith(", e2e p50 2,048 ms, p95 2,048 ms")
    # the run: 90 records at <= 256 ms, 10 at <= 1,024, 100 at <= 2,048
    assert progress.summaryLines()[-1] == "end-to-end latency of output records: p50 1,024 ms, p95 2,048 ms"


def test_close_and_metrics_wait_only_for_the_progress_events_of_batches_that_ran(monkeypatch):
    """A query resumed with nothing new ran no batch: its ``lastProgress`` is its no-data
    trigger's (no ``addBatch`` duration; the shape Spark 4 gave a resumed ``kspark run``), which
    Spark posts to no listener. Waiting for it held ``close()`` and ``KafkaStreams.metrics()``
    for waitFor's whole 10 s."""
    from types import SimpleNamespace

    from kspark import KafkaStreams
    from kspark.spark._progress import ProgressListener

    progress, sub = progressOf()
    listener = ProgressListener(progress, "none")
    waited = []
    monkeypatch.setattr(listener, "waitFor", lambda lastBatches, timeout=10.0: waited.append(lastBatches))

    def query(name, batchId, durationMs):
        return SimpleNamespace(name=name, lastProgress=SimpleNamespace(batchId=batchId, durationMs=durationMs))

    queries = [
        query("app-subtopology-0", 7, {"addBatch": 905, "getBatch": 0, "latestOffset": 3, "queryPlanning": 40,
                                       "triggerExecution": 1002, "walCommit": 20}),
        query("app-subtopology-1", 2, {"latestOffset": 4, "triggerExecution": 12}),  # resumed, nothing new
        SimpleNamespace(name="app-subtopology-2", lastProgress=None),  # failed to start
    ]
    streams = object.__new__(KafkaStreams)  # metrics() of a running application: its listener and queries
    streams._listener, streams._queries = listener, queries
    monkeypatch.setattr(streams, "_currentMetrics", lambda: {"metric": 1.0})
    assert streams.metrics() == {"metric": 1.0}
    listener.close(queries)
    assert waited == [{"app-subtopology-0": 7}] * 2


def test_a_continuous_run_s_seconds_make_lines_every_interval_and_a_summary_of_commits(capsys):
    """A continuous run's stream threads report each second's commits and merged rows; the plain
    view prints a line per running sub-topology every ``lineS`` seconds (records, rate, lag,
    output e2e p50/p95 of that interval) and the summary counts commits."""
    from kspark.runtime.metrics import latencyBucket
    from kspark.spark._progress import ContinuousView

    _, sub = progressOf()
    progress = RunProgress("app", [{"subtopology": sub, "sources": ["in", "ref"], "globalSources": ["ref"],
                                    "topicName": {}}], continuous=True)
    sink = next(n.name for n in sub.nodes if type(n).__name__ == "SinkNodeSpec")
    view = ContinuousView(progress, "plain", lineS=0.0)

    def second(records: int, latencyMs: float) -> dict:
        return {"records-consumed-total|consumer-fetch-manager-metrics|topic=in": records,
                f"process-total|stream-processor-node-metrics|task-id={sub.id}_0|processor-node-id={sink}": records,
                f"record-e2e-latency-bucket|kspark-record-e2e-latency|bucket={latencyBucket(latencyMs)}": records}

    view.onInterval(sub.id, 9, second(300, 40.0))
    view.onInterval(sub.id, 10, second(100, 200.0))
    view.onInterval(sub.id + 1, 4, second(5, 1.0))  # no such sub-topology here: ignored
    view.tick({sub.id: {("in", 0): 7, ("in", 1): 0}})
    line = capsys.readouterr().out.strip()
    assert line.startswith(f"app sub-topology {sub.id} commit 19: 400 records in ")
    assert line.endswith("lag 7, 0 dropped, 0 punctuations, e2e p50 41 ms, p95 215 ms")  # bucket upper bounds
    view.onInterval(sub.id, 5, second(50, 1.0))
    view.tick({sub.id: {("in", 0): 0, ("in", 1): 0}})
    assert capsys.readouterr().out.strip().startswith(f"app sub-topology {sub.id} commit 24: 50 records in ")
    view.finish()
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith("wall time ") and ", 24 commits, 450 records read " in lines[1]
    assert lines[-1] == "end-to-end latency of output records: p50 41 ms, p95 215 ms"
    assert progress.totals()["written"] == {"out": 450}


def test_the_live_view_of_a_continuous_run_shows_commits_lags_and_e2e_percentiles():
    import io

    from rich.console import Console

    from kspark.runtime.metrics import latencyBucket
    from kspark.spark._progress import ContinuousView

    _, sub = progressOf()
    progress = RunProgress("app", [{"subtopology": sub, "sources": ["in", "ref"], "globalSources": ["ref"],
                                    "topicName": {}}], continuous=True)
    view = ContinuousView(progress, "none", lineS=0.0)
    view.onInterval(sub.id, 7, {"records-consumed-total|consumer-fetch-manager-metrics|topic=in": 500,
                                f"record-e2e-latency-bucket|kspark-record-e2e-latency|bucket={latencyBucket(30)}": 500})
    view.tick({sub.id: {("in", 0): 3, ("in", 1): 0}})
    console = Console(file=io.StringIO(), width=120)
    console.print(progress.renderable())
    text = console.file.getvalue()
    header = next(line for line in text.splitlines() if "query" in line).split("┃")
    assert [h.strip() for h in header if h.strip()] == ["query", "state", "commits", "records", "records/s", "lag",
                                                        "e2e p50 / p95"]
    row = next(line for line in text.splitlines() if line.startswith(f"│ sub-topology {sub.id}")).split("│")
    cells = [c.strip() for c in row if c.strip()]
    assert cells[:4] == [f"sub-topology {sub.id}", "running", "7", "500"]
    assert cells[5:] == ["3", "32 / 32 ms"]

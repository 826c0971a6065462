"""Session windows with emit-on-close on Spark equal TopologyTestDriver's, on real logs
(rules SA-4..SA-9, SA-11), and the session store is readable from the checkpoint."""

import sys
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))

import web_sessions as ws  # noqa: E402


def test_apache_log_sessions_with_grace_are_the_same_on_spark(spark, tmp_path):
    requests = ws.apacheRequests()[:3_000]   # out of order by up to 59 s inside each minute
    expected = ws.onDriver(requests, timedelta(minutes=1))
    got = ws.onSpark(requests, timedelta(minutes=1), tmp_path, spark=spark)
    assert len(expected) > 500
    assert got == expected

    from kspark import KafkaStreams
    from kspark.testing import TopologyTestDriver

    with TopologyTestDriver(ws.buildTopology(timedelta(minutes=1))) as d:
        i = d.createInputTopic("requests")
        for host, ts in ws.flush(requests):
            i.pipeInput(host, None, ts)
        driverStore = list(d.getSessionStore("sessions").findSessionsByEnd(0, 1 << 50))
    streams = KafkaStreams(ws.buildTopology(timedelta(minutes=1)), {
        "application.id": "web-sessions", "kspark.topics.dir": str(tmp_path / "topics"),
        "state.dir": str(tmp_path / "state")}, spark=spark)
    sparkStore = streams.checkpointedStore("sessions")  # the session store, read from the checkpoint
    assert list(sparkStore.findSessionsByEnd(0, 1 << 50)) == driverStore

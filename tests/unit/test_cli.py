"""kspark run without Spark (issue 23): Kafka-style properties files, module:function loading,
--describe."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kspark.cli import loadTopology, readProperties

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "valuation_signals.py"


def test_properties_file_in_kafkas_format(tmp_path):
    path = tmp_path / "app.properties"
    path.write_text(
        "# comment\n! also a comment\n\n"
        "application.id=orders\n"
        "state.dir : /tmp/state dir\n"
        "kspark.trigger 1 second\n"
        "spark.driver.extraJavaOptions=-Da=1 \\\n    -Db=2\n"
        "key\\=with\\:colon=v\\u00e9\\tx\n"
        "empty=\n"
    )
    assert readProperties(path) == {
        "application.id": "orders", "state.dir": "/tmp/state dir", "kspark.trigger": "1 second",
        "spark.driver.extraJavaOptions": "-Da=1 -Db=2", "key=with:colon": "vé\tx", "empty": "",
    }


def test_load_topology_from_a_file_or_a_module(tmp_path, monkeypatch):
    assert str(loadTopology(f"{EXAMPLE}:buildTopology", {}).describe()).startswith("Topologies:")
    (tmp_path / "myapp.py").write_text(
        "from kspark import StreamsBuilder\n"
        "def build(props):\n"
        "    b = StreamsBuilder()\n"
        "    b.stream(props['input']).to('out')\n"
        "    return b\n")
    monkeypatch.chdir(tmp_path)
    topology = loadTopology("myapp:build", {"input": "in"})  # a StreamsBuilder is built; props passed
    assert topology.sourceTopics() == ["in"]
    with pytest.raises(SystemExit, match="myapp has no function 'nope'"):
        loadTopology("myapp:nope", {})
    with pytest.raises(SystemExit, match="expected module:function"):
        loadTopology("myapp", {})


def test_describe_prints_the_topology_and_writes_its_dot(tmp_path):
    kspark = Path(sys.executable).with_name("kspark")  # the console script of pyproject.toml
    assert kspark.exists(), "kspark console script not installed (pip install -e .)"
    out = subprocess.run([str(kspark), "run", f"{EXAMPLE}:buildTopology", "--describe"], capture_output=True,
                         text=True, check=True, env={**os.environ, "PYTHONPATH": ""})
    sys.path.insert(0, str(EXAMPLE.parent))
    import valuation_signals as vs

    assert out.stdout.startswith(str(vs.buildTopology().describe()))  # then its internal topics (below)
    assert out.stderr == ""
    dot = subprocess.run([str(kspark), "run", f"{EXAMPLE}:buildTopology", "--describe", str(tmp_path / "t.dot")],
                         capture_output=True, text=True, check=True)
    assert dot.stdout == f"wrote {tmp_path / 't.dot'}\n"
    assert (tmp_path / "t.dot").read_text() == vs.buildTopology().describe().toDot()


def test_run_hands_kafka_streams_the_properties_the_topology_function_set(tmp_path, monkeypatch):
    """Issue 36 item 11: Confluent's tutorials set keys in buildTopology(properties) and Java's main
    gives the same object to KafkaStreams; kspark run did that with a copy and lost them."""
    import kspark.spark._kafka_streams as host
    from kspark import StreamsConfig
    from kspark.cli import main

    (tmp_path / "tumbling.py").write_text(
        "from kspark import StreamsBuilder, StreamsConfig, TimestampExtractor\n"
        "class RatingTime(TimestampExtractor):\n"
        "    def extract(self, record, partitionTime):\n"
        "        return record.value()['ts']\n"
        "seen = []\n"
        "def buildTopology(properties):\n"
        "    seen.append(properties)\n"
        "    properties.put(StreamsConfig.DEFAULT_TIMESTAMP_EXTRACTOR_CLASS_CONFIG, RatingTime)\n"
        "    properties.put('statestore.cache.max.bytes', 0)\n"
        "    properties['commit.interval.ms'] = '5'\n"
        "    b = StreamsBuilder()\n"
        "    b.stream(properties.getProperty('application.id') + '-ratings').to('out')\n"
        "    return b.build()\n")
    (tmp_path / "app.properties").write_text("application.id=tumbling\n")
    handed = []

    class Streams:  # KafkaStreams without Spark: what kspark run constructs it with
        def __init__(self, topology, config):
            handed.append((topology, config))

        def start(self):
            pass

        def awaitTermination(self, timeout):
            return True

        def close(self):
            pass

    monkeypatch.setattr(host, "KafkaStreams", Streams)
    from kspark.spark import _quiet

    for flag in ("detachJvm", "reportingFailures"):  # kspark run sets them for its process: undone after the test
        monkeypatch.setattr(_quiet, flag, getattr(_quiet, flag))
    monkeypatch.chdir(tmp_path)
    assert main(["run", "tumbling:buildTopology", "--config", "app.properties"]) == 0
    import tumbling

    [(topology, config)] = handed
    assert config is tumbling.seen[0]  # the object the function got, not a copy
    assert topology.sourceTopics() == ["tumbling-ratings"]
    streamsConfig = StreamsConfig(config)
    assert type(streamsConfig.get("default.timestamp.extractor")) is tumbling.RatingTime
    assert (streamsConfig.get("statestore.cache.max.bytes"), streamsConfig.get("commit.interval.ms")) == (0, 5)
    assert config.put("x", 1) is None and config.put("x", 2) == 1 and config.putIfAbsent("x", 3) == 2
    assert config.getProperty("x", "d") == "d" and config.getProperty("application.id") == "tumbling"


def test_run_reports_an_invalid_bootstrap_servers_address_in_one_line(tmp_path, capsys, monkeypatch):
    """Issue 36 item 9: the addresses are checked when KafkaStreams creates its clients, as Kafka's
    clients check them; kspark run prints that error, not a traceback. No Spark starts."""
    from kspark.cli import main
    from kspark.spark import _quiet

    for flag in ("detachJvm", "reportingFailures"):
        monkeypatch.setattr(_quiet, flag, getattr(_quiet, flag))
    (tmp_path / "app.properties").write_text(f"application.id=x\nbootstrap.servers=dummy config\nstate.dir={tmp_path}\n")
    assert main(["run", f"{EXAMPLE}:buildTopology", "--config", str(tmp_path / "app.properties")]) == 1
    assert capsys.readouterr().err == "kspark run: Invalid url in bootstrap.servers: dummy config\n"


def test_describe_lists_the_changelog_and_repartition_topics(tmp_path, capsys):
    """``kspark run --describe`` names the internal topics a Kafka Streams application moving to
    kspark must share with it (issue 33): a changelog topic per logged store, with the store's
    kind and sub-topology, and the repartition topics with their writers and readers."""
    from kspark.cli import main

    (tmp_path / "app.properties").write_text("application.id=shop\n")
    (tmp_path / "shopapp.py").write_text(
        "from kspark import Grouped, Materialized, Serdes, SessionWindows, StreamsBuilder\n"
        "def build():\n"
        "    b = StreamsBuilder()\n"
        "    s = b.stream('orders')\n"
        "    s.groupBy(lambda k, v: v, Grouped.with_(Serdes.String(), Serdes.String())).count()\n"
        "    s.groupByKey().windowedBy(SessionWindows.ofInactivityGapWithNoGrace(5000)).count(\n"
        "        materialized=Materialized.as_('sessions').withLoggingDisabled())\n"
        "    return b.build()\n")
    sys.path.insert(0, str(tmp_path))
    try:
        assert main(["run", "shopapp:build", "--describe", "-c", str(tmp_path / "app.properties")]) == 0
    finally:
        sys.path.remove(str(tmp_path))
    out = capsys.readouterr().out
    assert out.split("\n\n")[-1] == (
        "Internal topics of application.id shop:\n"
        "  Changelog topics (one per store with logging enabled):\n"
        "    (none: logging disabled)  store sessions (session), sub-topology 0\n"
        "    shop-KSTREAM-AGGREGATE-STATE-STORE-0000000002-changelog  store KSTREAM-AGGREGATE-STATE-STORE-0000000002 "
        "(timestamped key-value), sub-topology 1\n"
        "  Repartition topics:\n"
        "    shop-KSTREAM-AGGREGATE-STATE-STORE-0000000002-repartition  written by sub-topology 0, read by "
        "sub-topology 1\n")

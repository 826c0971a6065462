"""kspark run on Spark (issue 23): the flagship job through the console script, stopped with
Ctrl-C (SIGINT) in the middle of its run and started again: the checkpoint resumes exactly
(every price read once over the two runs, the driver's signals), and at the default level
stdout holds nothing but kspark's progress lines and summary, stderr nothing at all."""

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
sys.path.insert(0, str(EXAMPLES))

import valuation_signals as vs  # noqa: E402
from kspark.topics import LocalTopics  # noqa: E402

# 3,000 prices (362 signals): sub-topology 1's first batch reads 750 of them, the second run the
# rest in 3 more batches (6,000 made the second run 2 batches and its TopologyTestDriver check longer)
PRICE_ROWS = 3_000
APP = "valuation-signals-cli"
BATCH = re.compile(rf"^{APP} sub-topology [01] batch \d+: [\d,]+ records in [\d.]+ s \([\d,]+ records/s\), "
                   r"lag [\d,]+, [\d,]+ dropped, [\d,]+ punctuations(, e2e p50 [\d,]+ ms, p95 [\d,]+ ms)?$")


# Spark's warning when something that does not speak its protocol connects to one of its ports. In CI a
# Kafka client an earlier test left behind (librdkafka reconnects to its broker's port for as long as
# the client lives) met a Spark port that had taken the dead broker's number: not the run's own output.
FOREIGN_CONNECTION = re.compile(r"\d\d/\d\d/\d\d \d\d:\d\d:\d\d WARN TransportChannelHandler: Exception in connection "
                                r"from /127\.0\.0\.1:\d+\njava\.lang\.IllegalArgumentException: Too large frame: \d+\n"
                                r"(\tat .*\n)*")


def withoutForeignConnections(stderr: str) -> str:
    return FOREIGN_CONNECTION.sub("", stderr)


def summaryReads(lines: list[str]) -> dict[str, int]:
    """Check the summary's lines (everything from its title on) and return records read per topic."""
    start = lines.index(f"== {APP}: summary ==")
    summary = lines[start + 1:]
    assert re.fullmatch(r"wall time [\d.]+ s, [\d,]+ micro-batches, [\d,]+ records read \([\d,]+ records/s\)", summary[0])
    assert summary[1].split() == ["topic", "read", "written"]
    rows = {}
    for line in summary[2:7]:
        topic, *rest, read, written = line.split()
        rows[topic] = (read, written)
    assert set(rows) == {"prices", "valuations", "companies", f"{APP}-valuations-by-code-repartition", "signals"}
    assert summary[7:9] == ["records dropped: 0", "punctuations: 0"]
    if rows["signals"][1] == "0":  # nothing written to the output topic yet: no e2e latency
        assert summary[9:] == []
    else:
        assert len(summary) == 10
        assert re.fullmatch(r"end-to-end latency of output records: p50 [\d,]+ ms, p95 [\d,]+ ms", summary[9])
    return {t: int(r.replace(",", "")) for t, (r, _) in rows.items() if r != "-"}


def test_ctrl_c_stops_cleanly_and_the_same_command_resumes_exactly(tmp_path):
    prices = vs.readPrices(PRICE_ROWS)
    valuations = [v for v in vs.readValuations() if v["date"] <= prices[-1]["trade_date"]]
    topics = LocalTopics(tmp_path / "topics")
    vs.loadTopics(topics, prices, valuations)
    config = tmp_path / "app.properties"
    config.write_text(f"application.id={APP}\nkspark.topics.dir={tmp_path / 'topics'}\nstate.dir={tmp_path / 'state'}\n"
                      "kspark.spark.master=local[2]\nkspark.max.records.per.trigger=1500\n")
    kspark = Path(sys.executable).with_name("kspark")
    command = [str(kspark), "run", f"{EXAMPLES / 'valuation_signals.py'}:buildTopology", "--config", str(config)]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}

    # 1. Ctrl-C, as a terminal sends it (to the whole process group), once sub-topology 1 committed a batch
    first = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                             start_new_session=True)
    lines: list[str] = []
    errors: list[str] = []
    threading.Thread(target=lambda: errors.extend(first.stderr), daemon=True).start()
    for line in first.stdout:
        lines.append(line.rstrip("\n"))
        if line.startswith(f"{APP} sub-topology 1 batch 0:"):
            os.killpg(first.pid, signal.SIGINT)
            interruptedAt = time.time()
    assert first.wait(timeout=120) == 130, (lines, errors)
    assert time.time() - interruptedAt < 60
    assert lines[-1] == (f"stopped (Ctrl-C): the checkpoint in file:{tmp_path / 'state' / APP} is intact; "
                         "the same command resumes the run")
    firstReads = summaryReads(lines[:-1])
    assert 0 < firstReads["prices"] < PRICE_ROWS  # stopped in the middle of the run
    assert withoutForeignConnections("".join(errors)) == ""

    # 2. the same command resumes: together the two runs read every price exactly once
    second = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    assert second.returncode == 0, second.stderr
    assert withoutForeignConnections(second.stderr) == ""
    out = second.stdout.splitlines()
    start = out.index(f"== {APP}: summary ==")
    assert out[:start] and all(BATCH.match(line) for line in out[:start]), out[:start]
    secondReads = summaryReads(out)
    assert firstReads["prices"] + secondReads["prices"] == PRICE_ROWS
    assert vs.readSignals(topics) == vs.driverSignals(prices, valuations)


def test_accumulator_server_drops_only_the_jvms_hang_up(spark, capsys):
    """At exit the JVM can close pyspark's accumulator update connection while the server still
    polls it: pyspark printed an EOFError traceback after a clean Ctrl-C stop (kspark run, CI).
    kspark's session drops that one; any other error of the server is still printed. (A server
    of its own: the session's serves one connection at a time, the JVM's once a task ran.)"""
    import socket
    import time
    from types import SimpleNamespace

    from pyspark.accumulators import _start_update_server

    from kspark.spark import _quiet

    assert spark.sparkContext._accumulatorServer._ksparkQuiet  # set on the session kspark made
    server = _start_update_server("t0ken", False)
    _quiet.quietAccumulatorServer(SimpleNamespace(_accumulatorServer=server))
    try:
        def connectAndClose(payload: bytes, printed: bool) -> str:
            with socket.create_connection(server.server_address[:2]) as s:
                s.sendall(payload)
                time.sleep(0.3)
            err = ""
            for _ in range(30):  # the server's thread handles the hang-up within its 1 s poll
                time.sleep(0.1)
                err += capsys.readouterr().err
                if printed and "Exception occurred" in err:
                    break
            return err

        assert connectAndClose(b"t0ken", printed=False) == ""  # authenticated, then hung up: EOFError, dropped
        wrong = connectAndClose(b"wr0ng", printed=True)
        assert "ValueError: The value of the provided token to the AccumulatorServer is not correct." in wrong
    finally:
        server.shutdown()


SPORT_APP = '''from kspark import StreamsBuilder


def check(value):
    if "ball" not in value:
        raise RuntimeError("Sport event missing required 'ball' field")
    return value


def buildTopology(properties):
    builder = StreamsBuilder()
    builder.stream("events").mapValues(check).to("checked")
    return builder.build()
'''


def test_a_failed_run_prints_ksparks_error_first_and_once(tmp_path):
    """Issue 36 item 12: a processor exception on Spark printed 696 lines with 13 tracebacks, the
    useful line at line 633. stderr now holds kspark's error (processor, topic, partition,
    offset) and the application's traceback, once; Spark's traces only with -v."""
    from kspark import Serdes

    (tmp_path / "sportapp.py").write_text(SPORT_APP)
    topics = LocalTopics(tmp_path / "topics")
    topics.createTopic("events", 1)
    topics.createTopic("checked", 1)
    json = Serdes.JSON()
    topics.produce("events", [(b"a", json.serialize("events", {"ball": 1}), 1),
                              (b"b", json.serialize("events", {"sport": "golf"}), 2)], partitioner=lambda k, n: 0)
    config = tmp_path / "app.properties"
    config.write_text(f"application.id=sport\nkspark.topics.dir={tmp_path / 'topics'}\nstate.dir={tmp_path / 'state'}\n"
                      "kspark.spark.master=local[1]\nkspark.trigger=availableNow\n")
    kspark = Path(sys.executable).with_name("kspark")
    run = subprocess.run([str(kspark), "run", f"{tmp_path / 'sportapp.py'}:buildTopology", "--config", str(config)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 1
    assert run.stderr == (
        "kspark run: The streams application sport failed: Exception caught in process. taskId=0_0, "
        "processor=KSTREAM-MAPVALUES-0000000001, topic=events, partition=0, offset=1, "
        "stacktrace=RuntimeError: Sport event missing required 'ball' field\n"
        "Traceback (most recent call last):\n"
        f'  File "{tmp_path / "sportapp.py"}", line 6, in check\n'
        "    raise RuntimeError(\"Sport event missing required 'ball' field\")\n"
        "RuntimeError: Sport event missing required 'ball' field\n"
        "(Spark's report of the failure: kspark run -v)\n"), run.stderr[-3000:]
    assert "== sport: summary ==" in run.stdout

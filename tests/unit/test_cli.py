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

    assert out.stdout == str(vs.buildTopology().describe())
    assert out.stderr == ""
    dot = subprocess.run([str(kspark), "run", f"{EXAMPLE}:buildTopology", "--describe", str(tmp_path / "t.dot")],
                         capture_output=True, text=True, check=True)
    assert dot.stdout == f"wrote {tmp_path / 't.dot'}\n"
    assert (tmp_path / "t.dot").read_text() == vs.buildTopology().describe().toDot()

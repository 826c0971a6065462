"""The Graphviz picture of a topology (issue 23): its nodes and edges are describe()'s, run
counters label it, and a picture format without Graphviz's dot program fails clearly."""

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))

import valuation_signals as vs  # noqa: E402
from kspark import Consumed, LogAndContinueExceptionHandler, Serdes, StreamsBuilder  # noqa: E402
from kspark.testing import TopologyTestDriver  # noqa: E402


def describedGraph(text: str) -> tuple[set[str], set[tuple[str, str]]]:
    """Nodes and edges read from Kafka's describe() text: topic -> source, node --> successor,
    sink -> topic, processor - store; ids as the DOT renderer names them."""
    nodes, edges = set(), set()
    current = None
    for line in text.splitlines():
        line = line.strip()
        if m := re.match(r"Source: (\S+) \(topics: \[(.*)\]\)$", line):
            current = f"n_{m[1]}"
            nodes.add(current)
            for topic in m[2].split(", "):
                nodes.add(f"t_{topic}")
                edges.add((f"t_{topic}", current))
        elif m := re.match(r"Processor: (\S+) \(stores: \[(.*)\]\)$", line):
            current = f"n_{m[1]}"
            nodes.add(current)
            for store in filter(None, m[2].split(", ")):
                nodes.add(f"s_{store}")
                edges.add((current, f"s_{store}"))
        elif m := re.match(r"Sink: (\S+) \(topic: (\S+)\)$", line):
            current = f"n_{m[1]}"
            nodes.update({current, f"t_{m[2]}"})
            edges.add((current, f"t_{m[2]}"))
        elif line.startswith("--> ") and line != "--> none":
            edges.update((current, f"n_{s}") for s in line[4:].split(", "))
    return nodes, edges


def dotGraph(dot: str) -> tuple[set[str], set[tuple[str, str]], dict[tuple[str, str], str]]:
    ident = r'"([^"]+)"|([\w.-]+)'
    nodes, edges, labels = set(), set(), {}
    for line in dot.splitlines():
        line = line.strip()
        if m := re.match(rf"(?:{ident}) -> (?:{ident})(?: \[(.*)\])?$", line):
            edge = (m[1] or m[2], m[3] or m[4])
            edges.add(edge)
            if label := re.search(r'label="?([\d,]+)"?', m[5] or ""):
                labels[edge] = label[1]
        elif (m := re.match(rf"(?:{ident}) \[", line)) and not line.startswith(("graph ", "node ", "edge ")):
            nodes.add(m[1] or m[2])
    return nodes, edges, labels


def test_dot_of_the_flagship_topology_has_describes_nodes_and_edges():
    description = vs.buildTopology().describe()
    dot = description.toDot()
    nodes, edges, _ = dotGraph(dot)
    wantNodes, wantEdges = describedGraph(str(description))
    assert len(wantNodes) == 13 + 5 + 3  # nodes of 3 sub-topologies, 5 topics, 3 stores
    assert len(wantEdges) == 19
    assert nodes == wantNodes
    assert edges == wantEdges
    # one cluster per sub-topology, the global store's included; repartition and global topics marked
    assert re.findall(r"subgraph (cluster_\d+)", dot) == ["cluster_0", "cluster_1", "cluster_2"]
    assert 'label="Sub-topology 2 (global store, a copy in every task)"' in dot
    assert "valuations-by-code-repartition\\n(repartition topic)" in dot
    assert "companies\\n(global topic)" in dot


def test_run_counters_label_edges_and_nodes_with_drops():
    b = StreamsBuilder()
    b.stream("in", Consumed.with_(Serdes.String(), Serdes.Integer())).filter(lambda k, v: v > 1, named="big").mapValues(lambda v: v * 10, named="times-ten").to("out")
    topology = b.build()
    with TopologyTestDriver(topology, {"default.deserialization.exception.handler": LogAndContinueExceptionHandler}) as d:
        d.createInputTopic("in", Serdes.String(), Serdes.Integer()).pipeKeyValueList([("a", 1), ("b", 2), ("c", 3)])
        d.createInputTopic("in", Serdes.String(), Serdes.String()).pipeInput("bad", "xy")  # not a 4-byte int
        metrics = d.metrics()
    dot = topology.describe().toDot(metrics)
    _, edges, labels = dotGraph(dot)
    assert labels[("t_in", "n_KSTREAM-SOURCE-0000000000")] == "3"
    assert 'Source\\nKSTREAM-SOURCE-0000000000\\ndropped 1: deserialization error"' in dot
    assert labels[("n_KSTREAM-SOURCE-0000000000", "n_big")] == "3"
    assert labels[("n_big", "n_times-ten")] == "2"
    assert labels[("n_KSTREAM-SINK-0000000003", "t_out")] == "2"


def test_picture_without_graphviz_dot_program_fails_naming_the_package_and_keeps_the_dot(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    description = vs.buildTopology().describe()
    with pytest.raises(RuntimeError, match=r"Graphviz's 'dot' program is not installed \(Debian: apt-get install graphviz\)"):
        description.render(tmp_path / "topology.png")
    assert (tmp_path / "topology.dot").read_text() == description.toDot()
    assert description.render(tmp_path / "only.dot").read_text() == description.toDot()


def test_a_global_stores_count_is_one_task_copys():
    """Every task applies all of a global topic to its own copy: the picture shows one copy's count."""
    from kspark.runtime.metrics import NODE_GROUP, MetricName

    def processed(task, node, n):
        return MetricName("process-total", NODE_GROUP, (("task-id", task), ("processor-node-id", node))), n

    metrics = dict([processed("0_0", "KSTREAM-SOURCE-0000000005", 733), processed("1_0", "KSTREAM-SOURCE-0000000005", 733),
                    processed("1_0", "KSTREAM-SOURCE-0000000007", 10), processed("1_1", "KSTREAM-SOURCE-0000000007", 5)])
    _, _, labels = dotGraph(vs.buildTopology().describe().toDot(metrics))
    assert labels[("t_companies", "n_KSTREAM-SOURCE-0000000005")] == "733"
    assert labels[("t_prices", "n_KSTREAM-SOURCE-0000000007")] == "15"  # a stream source: summed over tasks

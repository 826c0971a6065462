"""A topology as a Graphviz picture: the graph ``Topology.describe()`` prints, drawn.

Sub-topologies are clusters (a global store's group too); inside them the sources, processors
and sinks, and the stores connected to processors (cylinders, dashed undirected edges).
A global store's node counts one task's copy.
Topics sit outside the clusters: input and output topics as ellipses, repartition topics
dashed, global topics with a double border. Edges are ``describe()``'s: topic -> source,
``-->`` between nodes, sink -> topic. With a run's counters (``metrics``), an edge into a node
with one predecessor carries the records that node processed, and a node that dropped records
says how many and why.

DOT is always available (``topologyDot``); SVG and PNG need Graphviz's ``dot`` program
(Debian package ``graphviz``) through the ``graphviz`` Python package (``renderTopology``).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

__all__ = ["renderTopology", "topologyDot"]

_SOURCE, _PROCESSOR, _SINK = "#d9f2d9", "#dde8f7", "#fbe3c9"
_TOPIC, _STORE = "#fff6c2", "#eeeeee"


def nodeId(name: str) -> str:
    return f"n_{name}"


def topicId(topic: str) -> str:
    return f"t_{topic}"


def storeId(store: str) -> str:
    return f"s_{store}"


def topologyDot(topology, metrics=None, name: str = "topology"):
    """The topology as a ``graphviz.Digraph`` (``.source`` is the DOT text).

    Parameters
    ----------
    topology : Topology
    metrics : dict of MetricName to float, optional
        A run's counters (``KafkaStreams.metrics()``, ``TopologyTestDriver.metrics()``):
        ``process-total`` per node labels the edges, ``kspark-dropped-records`` the nodes.
    name : str
        The graph's name.

    Returns
    -------
    graphviz.Digraph
        Node ids: ``n_<node>``, ``t_<topic>``, ``s_<store>``.
    """
    import graphviz

    from ._topology import ProcessorNodeSpec, SinkNodeSpec, SourceNodeSpec

    # every task holds a copy of each global store and applies all of the global topic: a global
    # node's count is one copy's (the largest), not the sum over tasks
    globalNodes = {n.name for sub in topology.globalSubtopologies() for n in sub.nodes}
    processed: Counter = Counter()
    dropped: defaultdict[str, Counter] = defaultdict(Counter)
    for metric, value in (metrics or {}).items():
        node = metric.tag("processor-node-id")
        if metric.name == "process-total" and node:
            processed[node] = max(processed[node], int(value)) if node in globalNodes else processed[node] + int(value)
        elif metric.group == "kspark-dropped-records" and node is not None:
            dropped[node][metric.tag("reason")] += int(value)

    internal = set(topology.internalTopics())
    globalTopics = set(topology.globalTopics())
    graph = graphviz.Digraph(name, graph_attr={"rankdir": "TB", "fontname": "Helvetica", "fontsize": "11",
                                                "nodesep": "0.3", "ranksep": "0.35"},
                             node_attr={"fontname": "Helvetica", "fontsize": "10"},
                             edge_attr={"fontname": "Helvetica", "fontsize": "9", "color": "#555555"})

    def count(node: str) -> dict:
        return {"label": f"{processed[node]:,}"} if metrics is not None else {}

    topics: list[str] = []
    edges: list[tuple[str, str, dict]] = []
    for sub in topology._nodeGroups():
        title = f"Sub-topology {sub.id}" + (" (global store, a copy in every task)" if sub.isGlobal else "")
        with graph.subgraph(name=f"cluster_{sub.id}") as cluster:
            cluster.attr(label=title, style="rounded", color="#888888", fontsize="11", labeljust="l")
            for spec in sub.nodes:
                label, fill = spec.name, _PROCESSOR
                if isinstance(spec, SourceNodeSpec):
                    label, fill = f"Source\\n{spec.name}", _SOURCE
                    for topic in spec.topics:
                        topics.append(topic)
                        edges.append((topicId(topic), nodeId(spec.name), count(spec.name)))
                elif isinstance(spec, SinkNodeSpec):
                    label, fill = f"Sink\\n{spec.name}", _SINK
                    topics.append(spec.topic)
                    edges.append((nodeId(spec.name), topicId(spec.topic), count(spec.name)))
                drops = dropped.get(spec.name)
                if drops and sum(drops.values()):
                    label += "\\n" + "\\n".join(f"dropped {n:,}: {reason}" for reason, n in sorted(drops.items()))
                cluster.node(nodeId(spec.name), label=label, shape="box", style="rounded,filled", fillcolor=fill,
                             color="#c0392b" if drops and sum(drops.values()) else "#666666")
                if isinstance(spec, (ProcessorNodeSpec, SinkNodeSpec)):
                    for parent in spec.parents:
                        edges.append((nodeId(parent), nodeId(spec.name), count(spec.name) if len(spec.parents) == 1 else {}))
                for store in getattr(spec, "stores", ()):
                    cluster.node(storeId(store), label=store, shape="cylinder", style="filled", fillcolor=_STORE,
                                 color="#666666")
                    edges.append((nodeId(spec.name), storeId(store), {"dir": "none", "style": "dashed"}))
    for topic in dict.fromkeys(topics):
        attrs = {"shape": "ellipse", "style": "filled", "fillcolor": _TOPIC, "color": "#666666"}
        label = topic
        if topic in internal:
            attrs["style"] = "filled,dashed"
            label = f"{topic}\\n(repartition topic)"
        elif topic in globalTopics:
            attrs["peripheries"] = "2"
            label = f"{topic}\\n(global topic)"
        graph.node(topicId(topic), label=label, **attrs)
    for tail, head, attrs in edges:
        graph.edge(tail, head, **attrs)
    return graph


def renderTopology(topology, path, metrics=None) -> Path:
    """Write the picture of ``topology`` to ``path``: ``.dot``/``.gv`` the DOT text, ``.svg``
    or ``.png`` (or any format Graphviz knows) rendered by Graphviz's ``dot``, with the DOT text
    next to it (same name, ``.dot``).

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    RuntimeError
        If a picture format is asked for and Graphviz's ``dot`` program is not installed (the
        DOT file is written anyway).
    """
    import graphviz

    path = Path(path)
    fmt = path.suffix.lstrip(".").lower()
    graph = topologyDot(topology, metrics)
    dotPath = path if fmt in ("dot", "gv") else path.with_suffix(".dot")
    dotPath.parent.mkdir(parents=True, exist_ok=True)
    dotPath.write_text(graph.source)
    if dotPath == path:
        return path
    try:
        graphviz.render("dot", fmt, dotPath, outfile=path, quiet=True)
    except graphviz.ExecutableNotFound as e:
        raise RuntimeError(f"Cannot draw {path}: Graphviz's 'dot' program is not installed (Debian: apt-get install "
                           f"graphviz); the DOT text is in {dotPath}") from e
    return path

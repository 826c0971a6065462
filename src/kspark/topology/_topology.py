from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable

from ..errors import TopologyException
from ..processor import TimestampExtractor
from ..serialization import Serde
from ..state import StoreBuilder

__all__ = ["Subtopology", "Topology"]

StreamPartitioner = Callable[[str, Any, Any, int], "int | None"]
"""``partition(topic, key, value, numPartitions) -> int`` (Kafka ``StreamPartitioner``); ``None`` = default."""


@dataclass
class SourceNodeSpec:
    name: str
    topics: list[str]
    keySerde: Serde | None = None
    valueSerde: Serde | None = None
    timestampExtractor: TimestampExtractor | None = None
    isGlobal: bool = False  # the source of a global store (addGlobalStore / globalTable)


@dataclass
class ProcessorNodeSpec:
    name: str
    supplier: Callable[[], Any]
    parents: list[str]
    stores: list[str] = field(default_factory=list)


@dataclass
class SinkNodeSpec:
    name: str
    topic: str
    parents: list[str]
    keySerde: Serde | None = None
    valueSerde: Serde | None = None
    partitioner: StreamPartitioner | None = None


NodeSpec = SourceNodeSpec | ProcessorNodeSpec | SinkNodeSpec


@dataclass
class Subtopology:
    """A connected group of nodes: Kafka's sub-topology (one task per input partition).

    ``sourceTopics`` and ``sinkTopics`` are the *raw* names; internal (repartition) topics get
    the ``<application.id>-`` prefix at run time (``Topology.decorate``).
    """

    id: int
    nodes: list[NodeSpec]
    stores: list[str]
    isGlobal: bool = False  # a global store's group: "for global store (will not generate tasks)"

    @property
    def sourceTopics(self) -> list[str]:
        return [t for n in self.nodes if isinstance(n, SourceNodeSpec) for t in n.topics]

    @property
    def sinkTopics(self) -> list[str]:
        return [n.topic for n in self.nodes if isinstance(n, SinkNodeSpec)]


_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]+$")


class Topology:
    """A processing graph of sources, processors, stores and sinks (Kafka ``Topology``).

    Built with ``StreamsBuilder.build()`` or by hand with ``addSource``/``addProcessor``/
    ``addSink``/``addStateStore``. Node and store names must be unique.
    """

    def __init__(self) -> None:
        self._nodes: dict[str, NodeSpec] = {}
        self._storeBuilders: dict[str, StoreBuilder] = {}
        self._internalTopics: dict[str, int | None] = {}  # raw name -> enforced partition count
        self._copartitionGroups: list[set[str]] = []
        self._children: dict[str, list[str]] = {}

    # ------------------------------------------------------------------ building
    def addSource(
        self,
        name: str,
        *topics: str,
        keySerde: Serde | None = None,
        valueSerde: Serde | None = None,
        timestampExtractor: TimestampExtractor | None = None,
    ) -> "Topology":
        """Add a source node reading ``topics`` (Kafka ``Topology#addSource``)."""
        if not topics:
            raise TopologyException("You must provide at least one topic")
        for topic in topics:
            if not _LEGAL_TOPIC.match(topic):
                raise TopologyException(f"Topic name \"{topic}\" is illegal")
            for other in self._nodes.values():
                if isinstance(other, SourceNodeSpec) and topic in other.topics:
                    raise TopologyException(f"Topic {topic} has already been registered by another source.")
        self._addNode(SourceNodeSpec(name, list(topics), keySerde, valueSerde, timestampExtractor), [])
        return self

    def addProcessor(self, name: str, supplier: Callable[[], Any], *parentNames: str) -> "Topology":
        """Add a processor; ``supplier()`` returns a new ``Processor`` per task (Kafka ``Topology#addProcessor``)."""
        if not callable(supplier):
            raise TypeError("processor supplier must be a callable taking no argument")
        if not parentNames:
            raise TopologyException(f"Processor {name} must have at least one parent")
        self._addNode(ProcessorNodeSpec(name, supplier, list(parentNames)), parentNames)
        return self

    def addSink(
        self,
        name: str,
        topic: str,
        *parentNames: str,
        keySerde: Serde | None = None,
        valueSerde: Serde | None = None,
        partitioner: StreamPartitioner | None = None,
    ) -> "Topology":
        """Add a sink writing to ``topic`` (Kafka ``Topology#addSink``)."""
        if not parentNames:
            raise TopologyException(f"Sink {name} must have at least one parent")
        self._addNode(SinkNodeSpec(name, topic, list(parentNames), keySerde, valueSerde, partitioner), parentNames)
        return self

    def addStateStore(self, storeBuilder: StoreBuilder, *processorNames: str) -> "Topology":
        """Add a store and connect it to ``processorNames`` (Kafka ``Topology#addStateStore``)."""
        name = storeBuilder.name()
        if name in self._storeBuilders:
            raise TopologyException(f"A different StateStore has already been added with the name {name}")
        self._storeBuilders[name] = storeBuilder
        for processor in processorNames:
            self.connectProcessorAndStateStores(processor, name)
        return self

    def connectProcessorAndStateStores(self, processorName: str, *storeNames: str) -> "Topology":
        node = self._nodes.get(processorName)
        if not isinstance(node, ProcessorNodeSpec):
            raise TopologyException(f"Processor {processorName} is not added yet.")
        for store in storeNames:
            if store not in self._storeBuilders:
                raise TopologyException(f"StateStore {store} is not added yet.")
            if store not in node.stores:
                node.stores.append(store)
        return self

    def addGlobalStore(
        self,
        storeBuilder: StoreBuilder,
        sourceName: str,
        keyDeserializer: Serde | None,
        valueDeserializer: Serde | None,
        topic: str,
        processorName: str,
        stateUpdateSupplier: Callable[[], Any],
        timestampExtractor: TimestampExtractor | None = None,
    ) -> "Topology":
        """Add a global store fed from every partition of ``topic`` by ``stateUpdateSupplier()``'s
        processor (Kafka ``Topology#addGlobalStore``; ``None`` serdes use the defaults).

        The source and processor form a group of their own ("Sub-topology: N for global store
        (will not generate tasks)"); any processor may read the store with ``getStateStore``
        without being connected to it. How hosts keep it up to date: see ``kspark.dsl.GlobalKTable``.

        Raises
        ------
        TopologyException
            If a name is taken, the topic is already a source, or ``sourceName == processorName``.
        """
        if sourceName == processorName:
            raise TopologyException("sourceName and processorName must be different.")
        self.addSource(sourceName, topic, keySerde=keyDeserializer, valueSerde=valueDeserializer,
                       timestampExtractor=timestampExtractor)
        self._nodes[sourceName].isGlobal = True
        self.addProcessor(processorName, stateUpdateSupplier, sourceName)
        self.addStateStore(storeBuilder, processorName)
        return self

    def _addNode(self, spec: NodeSpec, parents) -> None:
        if spec.name in self._nodes:
            raise TopologyException(f"Processor {spec.name} is already added.")
        for parent in parents:
            if parent == spec.name:
                raise TopologyException(f"Processor {spec.name} cannot be a predecessor of itself.")
            if parent not in self._nodes:
                raise TopologyException(f"Parent processor {parent} is not added yet for {spec.name}")
            if isinstance(self._nodes[parent], SinkNodeSpec):
                raise TopologyException(f"Sink {parent} cannot be used a parent.")
        self._nodes[spec.name] = spec
        self._children[spec.name] = []
        for parent in parents:
            self._children[parent].append(spec.name)

    def _addInternalTopic(self, topic: str, numPartitions: int | None) -> None:
        self._internalTopics[topic] = numPartitions

    def _copartition(self, topics: set[str]) -> None:
        self._copartitionGroups.append(set(topics))

    # ------------------------------------------------------------------ queries
    def children(self, name: str) -> list[str]:
        return self._children[name]

    def storeBuilders(self) -> dict[str, StoreBuilder]:
        return dict(self._storeBuilders)

    def internalTopics(self) -> dict[str, int | None]:
        """Raw names of repartition topics -> enforced partition count (None if not enforced)."""
        return dict(self._internalTopics)

    def copartitionGroups(self) -> list[set[str]]:
        """Sets of raw source topic names that must have the same partition count (rule J-6)."""
        return [set(g) for g in self._copartitionGroups]

    def sourceTopics(self) -> list[str]:
        """Topics read by sub-topologies (global topics excluded: ``globalTopics()``)."""
        return [t for n in self._nodes.values() if isinstance(n, SourceNodeSpec) and not n.isGlobal for t in n.topics]

    def globalTopics(self) -> list[str]:
        """Topics of global stores (``addGlobalStore``, ``StreamsBuilder.globalTable``)."""
        return [t for n in self._nodes.values() if isinstance(n, SourceNodeSpec) and n.isGlobal for t in n.topics]

    def subtopologies(self) -> list[Subtopology]:
        """Nodes grouped as Kafka groups them: connected by a parent edge or a shared store.

        Numbered as Kafka numbers node groups (by sorted source names), global-store groups
        included; those are left out here (they generate no tasks): ``globalSubtopologies()``.
        """
        return [s for s in self._nodeGroups() if not s.isGlobal]

    def globalSubtopologies(self) -> list[Subtopology]:
        """The groups of global stores: a global source and its state-update processor."""
        return [s for s in self._nodeGroups() if s.isGlobal]

    def globalStoreNames(self) -> set[str]:
        return {store for s in self.globalSubtopologies() for store in s.stores}

    def _nodeGroups(self) -> list[Subtopology]:
        parent = {n: n for n in self._nodes}

        def find(x: str) -> str:
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        def union(a: str, b: str) -> None:
            ra, rb = find(a), find(b)
            if ra != rb:
                parent[rb] = ra

        storeOwner: dict[str, str] = {}
        for spec in self._nodes.values():
            for p in getattr(spec, "parents", []):
                union(p, spec.name)
            for store in getattr(spec, "stores", []):
                if store in storeOwner:
                    union(storeOwner[store], spec.name)
                else:
                    storeOwner[store] = spec.name
        groups: dict[str, list[NodeSpec]] = {}
        for spec in self._nodes.values():
            groups.setdefault(find(spec.name), []).append(spec)
        # Kafka numbers node groups by their source node names in sorted order
        # (InternalTopologyBuilder.makeNodeGroups), so ids are predictable.
        def firstSource(nodes: list[NodeSpec]) -> tuple[int, str]:
            names = sorted(n.name for n in nodes if isinstance(n, SourceNodeSpec))
            return (0, names[0]) if names else (1, nodes[0].name)

        result = []
        for i, nodes in enumerate(sorted(groups.values(), key=firstSource)):
            stores = []
            for n in nodes:
                for s in getattr(n, "stores", []):
                    if s not in stores:
                        stores.append(s)
            sub = Subtopology(i, nodes, stores)
            sub.isGlobal = any(isinstance(n, SourceNodeSpec) and n.isGlobal for n in nodes)
            result.append(sub)
        return result

    def describe(self) -> "TopologyDescription":
        """The sub-topologies with their sources, processors, stores and sinks (Kafka ``Topology#describe``)."""
        return TopologyDescription(self)

    @staticmethod
    def decorate(applicationId: str, topic: str, internal: bool) -> str:
        """Internal topics are named ``<application.id>-<name>`` at run time (rule RP-3)."""
        return f"{applicationId}-{topic}" if internal else topic


class TopologyDescription:
    """Printable description; ``str()`` renders Kafka's ``TopologyDescription`` format."""

    def __init__(self, topology: Topology) -> None:
        self._topology = topology

    def subtopologies(self) -> list[Subtopology]:
        return self._topology.subtopologies()

    def __str__(self) -> str:
        t = self._topology
        parentsOf: dict[str, list[str]] = {n: [] for n in t._nodes}
        for name, children in t._children.items():
            for c in children:
                parentsOf[c].append(name)
        size: dict[str, int] = {}

        def subtreeSize(name: str) -> int:  # Kafka's AbstractNode.size: 1 + sizes of successors
            if name not in size:
                size[name] = 1 + sum(subtreeSize(c) for c in t._children[name])
            return size[name]

        lines = ["Topologies:"]
        for sub in t._nodeGroups():
            if sub.isGlobal:  # Kafka's GlobalStore.toString: source, processor, no blank line
                source = next(n for n in sub.nodes if isinstance(n, SourceNodeSpec))
                processor = next(n for n in sub.nodes if isinstance(n, ProcessorNodeSpec))
                lines += [f"   Sub-topology: {sub.id} for global store (will not generate tasks)",
                          f"    Source: {source.name} (topics: [{', '.join(source.topics)}])",
                          f"      --> {processor.name}",
                          f"    Processor: {processor.name} (stores: [{', '.join(processor.stores)}])",
                          "      --> none", f"      <-- {source.name}"]
                continue
            lines.append(f"   Sub-topology: {sub.id}")
            # Kafka's NODE_COMPARATOR: larger sub-tree first, then by name
            for n in sorted(sub.nodes, key=lambda n: (-subtreeSize(n.name), n.name)):
                children = t._children[n.name]
                if isinstance(n, SourceNodeSpec):
                    lines.append(f"    Source: {n.name} (topics: [{', '.join(n.topics)}])")
                elif isinstance(n, ProcessorNodeSpec):
                    lines.append(f"    Processor: {n.name} (stores: [{', '.join(n.stores)}])")
                else:
                    lines.append(f"    Sink: {n.name} (topic: {n.topic})")
                if not isinstance(n, SinkNodeSpec):
                    lines.append(f"      --> {', '.join(children) if children else 'none'}")
                if not isinstance(n, SourceNodeSpec):
                    lines.append(f"      <-- {', '.join(parentsOf[n.name])}")
            lines.append("")
        return "\n".join(lines) + "\n"

    def __repr__(self) -> str:
        return str(self)

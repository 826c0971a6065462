from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable

from ..errors import TopologyException
from .._auto_offset_reset import AutoOffsetReset
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
    topicPattern: "re.Pattern | None" = None  # a pattern source: ``topics`` is [its pattern string]
    offsetReset: AutoOffsetReset | None = None  # Kafka: Consumed's / addSource's AutoOffsetReset


@dataclass
class ProcessorNodeSpec:
    name: str
    supplier: Callable[[], Any]
    parents: list[str]
    stores: list[str] = field(default_factory=list)
    # a global store's processor: a task that restores the store from the global topic runs the
    # topic's records through a new instance of it (Kafka's reprocessOnRestore, KIP-813: True for
    # addGlobalStore); False: the records' bytes are the store's entries (GlobalKTable)
    reprocessOnRestore: bool = True


@dataclass
class SinkNodeSpec:
    name: str
    topic: str | None  # None for a sink whose topicExtractor picks the topic per record
    parents: list[str]
    keySerde: Serde | None = None
    valueSerde: Serde | None = None
    partitioner: StreamPartitioner | None = None
    topicExtractor: Any = None  # Kafka TopicNameExtractor: extract(key, value, recordContext) -> topic


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
        """Topics of static sinks (a ``TopicNameExtractor`` sink's topics are known per record only)."""
        return [n.topic for n in self.nodes if isinstance(n, SinkNodeSpec) and n.topic is not None]


_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]+$")


class _NullKeyPolicy:
    """Whether a repartition filter drops null keys (rule RP-2); shared with its processors."""

    dropNullKeys = True


def supplierGet(method: str, supplier) -> Callable[[], Any]:
    """The ``get`` of a ``ProcessorSupplier``: ``supplier`` itself if it is a function or class,
    its ``get`` method if it is a supplier object.

    Raises
    ------
    TypeError
        If ``supplier`` is neither.
    """
    get = supplier if callable(supplier) and not callable(getattr(supplier, "get", None)) else getattr(
        supplier, "get", None)
    if not callable(get):
        raise TypeError(f"{method}(): the processor supplier must be a function (or class) taking no argument "
                        f"that returns a new Processor, or an object with get(); got {type(supplier).__name__}")
    return get


class Topology:
    """A processing graph of sources, processors, stores and sinks (Kafka ``Topology``).

    Built with ``StreamsBuilder.build()`` or by hand with ``addSource``/``addProcessor``/
    ``addSink``/``addStateStore``. Node and store names must be unique.
    """

    def __init__(self) -> None:
        self._nodes: dict[str, NodeSpec] = {}
        self._storeBuilders: dict[str, StoreBuilder] = {}
        self._globalStores: set[str] = set()  # names of addGlobalStore's stores (Kafka's globalStateBuilders)
        self._internalTopics: dict[str, int | None] = {}  # raw name -> enforced partition count
        self._copartitionGroups: list[set[str]] = []
        self._children: dict[str, list[str]] = {}
        self._nullKeyPolicies: dict[str, _NullKeyPolicy] = {}
        self._relaxedJoins: list[str] = []

    # ------------------------------------------------------------------ building
    def addSource(
        self,
        name: "str | AutoOffsetReset",
        *topics: "str | re.Pattern",
        keySerde: Serde | None = None,
        valueSerde: Serde | None = None,
        timestampExtractor: TimestampExtractor | None = None,
        offsetReset: AutoOffsetReset | None = None,
    ) -> "Topology":
        """Add a source node reading ``topics``, or every topic matching one ``re.Pattern``
        (Kafka ``Topology#addSource``). A pattern source has one queue named by the pattern
        string, as in Kafka's TopologyTestDriver; the Spark host needs its topics by name.
        Kafka's ``addSource(AutoOffsetReset, name, topics...)`` form is taken by type: the
        source's topics then use that reset policy instead of ``auto.offset.reset``.

        Raises
        ------
        TopologyException
            For no topic, an illegal topic name, a topic already read by another source, or a
            pattern matching one ("Pattern <p> will match a topic that has already been
            registered by another source.").
        """
        if isinstance(name, AutoOffsetReset):  # addSource(offsetReset, name, topics...)
            if offsetReset is not None or not topics:
                raise TypeError("Topology.addSource(): give the AutoOffsetReset once, before the name")
            offsetReset, name, topics = name, topics[0], topics[1:]
        if offsetReset is not None and not isinstance(offsetReset, AutoOffsetReset):
            raise TypeError(f"Topology.addSource(): offsetReset must be an AutoOffsetReset, got {offsetReset!r}")
        if not topics:
            raise TopologyException("You must provide at least one topic")
        pattern = None
        if any(isinstance(t, re.Pattern) for t in topics):
            if len(topics) != 1:
                raise TopologyException("A source reads either topic names or one topic pattern")
            pattern = topics[0]
            for other in self._nodes.values():
                if isinstance(other, SourceNodeSpec) and other.topicPattern is None and any(
                        pattern.fullmatch(t) for t in other.topics):
                    raise TopologyException(
                        f"Pattern {pattern.pattern} will match a topic that has already been registered by another source.")
            topics = (pattern.pattern,)
        for topic in topics if pattern is None else ():
            if not isinstance(topic, str) or not _LEGAL_TOPIC.match(topic):
                raise TopologyException(f"Topic name \"{topic}\" is illegal")
            for other in self._nodes.values():
                if isinstance(other, SourceNodeSpec) and (
                        topic in other.topics if other.topicPattern is None else other.topicPattern.fullmatch(topic)):
                    raise TopologyException(f"Topic {topic} has already been registered by another source.")
        self._addNode(SourceNodeSpec(name, list(topics), keySerde, valueSerde, timestampExtractor,
                                     topicPattern=pattern, offsetReset=offsetReset), [])
        return self

    def addProcessor(self, name: str, supplier: Callable[[], Any], *parentNames: str) -> "Topology":
        """Add a processor (Kafka ``Topology#addProcessor``). ``supplier`` returns a new
        ``Processor`` per task: a function (or class) taking no argument, or an object with
        ``get()``; if it also has ``stores()`` (Kafka ``ConnectedStoreProvider``), the
        ``StoreBuilder``s it returns are added and connected to the processor."""
        get = supplierGet("Topology.addProcessor", supplier)
        if not parentNames:
            raise TopologyException(f"Processor {name} must have at least one parent")
        self._addNode(ProcessorNodeSpec(name, get, list(parentNames)), parentNames)
        self._addSupplierStores(name, supplier)
        return self

    def _addSupplierStores(self, processorName: str, supplier) -> list[str]:
        """Kafka ``ConnectedStoreProvider``: add the ``StoreBuilder``s of ``supplier.stores()`` (if it
        has that method) and connect them to ``processorName``; returns their names."""
        stores = getattr(supplier, "stores", None) if not isinstance(supplier, type) else None
        builders = list(stores() or ()) if callable(stores) else []
        for builder in builders:
            self.addStateStore(builder, processorName)
        return [b.name() for b in builders]

    def addSink(
        self,
        name: str,
        topic,
        *parentNames: str,
        keySerde: Serde | None = None,
        valueSerde: Serde | None = None,
        partitioner: StreamPartitioner | None = None,
    ) -> "Topology":
        """Add a sink writing to ``topic``: a topic name, or a ``TopicNameExtractor`` (a function
        ``(key, value, recordContext) -> topic`` or an object with that ``extract`` method) that
        picks the topic per record (Kafka ``Topology#addSink``)."""
        if not parentNames:
            raise TopologyException(f"Sink {name} must have at least one parent")
        extractor = None
        if not isinstance(topic, str):
            extractor = getattr(topic, "extract", topic)
            if not callable(extractor):
                raise TypeError(f"Sink {name}: topic must be a str or a TopicNameExtractor, got {type(topic).__name__}")
            topic = None
        self._addNode(SinkNodeSpec(name, topic, list(parentNames), keySerde, valueSerde, partitioner, extractor),
                      parentNames)
        return self

    def addStateStore(self, storeBuilder: StoreBuilder, *processorNames: str) -> "Topology":
        """Add a store and connect it to ``processorNames`` (Kafka ``Topology#addStateStore``)."""
        name = storeBuilder.name()
        if name in self._storeBuilders and self._storeBuilders[name] is not storeBuilder:  # Kafka: isCompatibleWith
            raise TopologyException(f"A different StateStore has already been added with the name {name}")
        self._storeBuilders[name] = storeBuilder
        for processor in processorNames:
            self.connectProcessorAndStateStores(processor, name)
        return self

    def connectProcessorAndStateStores(self, processorName: str, *storeNames: str) -> "Topology":
        """Give processor ``processorName`` access to stores ``storeNames`` (Kafka
        ``Topology#connectProcessorAndStateStores``).

        Raises
        ------
        TopologyException
            If the processor or a store is not added yet, or a store is a global store (any
            processor reads those without being connected; Kafka's message).
        """
        node = self._nodes.get(processorName)
        if not isinstance(node, ProcessorNodeSpec):
            raise TopologyException(f"Processor {processorName} is not added yet.")
        for store in storeNames:
            if store not in self._storeBuilders:
                raise TopologyException(f"StateStore {store} is not added yet.")
            if store in self._globalStores:  # Kafka's InternalTopologyBuilder.connectProcessorAndStateStore
                raise TopologyException(f"Global StateStore {store} can be used by a Processor without being "
                                        "specified; it should not be explicitly passed.")
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
        self._globalStores.add(storeBuilder.name())
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

    def _repartitionFilter(self, filterName: str) -> "_NullKeyPolicy":
        """The null-key policy of a repartition topic's filter node (rule RP-2): drops null keys
        until a relaxed join is added downstream."""
        policy = self._nullKeyPolicies[filterName] = _NullKeyPolicy()
        return policy

    def _markRelaxedNullKeyJoin(self, name: str) -> None:
        """``name`` is a join that accepts null keys (KIP-962 left joins; Kafka's
        ``NULL_KEY_RELAXED_JOIN`` label): every repartition filter upstream of it, across
        repartition topics, lets null keys through (Kafka ``NodesWithRelaxedNullKeyJoinDownstream``)."""
        if name not in self._relaxedJoins:
            self._relaxedJoins.append(name)
        seen, todo = set(), [name]
        while todo:
            node = todo.pop()
            if node in seen:
                continue
            seen.add(node)
            if node in self._nullKeyPolicies:
                self._nullKeyPolicies[node].dropNullKeys = False
            spec = self._nodes[node]
            todo.extend(getattr(spec, "parents", ()))
            if isinstance(spec, SourceNodeSpec):
                todo.extend(n.name for n in self._nodes.values()
                            if isinstance(n, SinkNodeSpec) and n.topic in spec.topics and n.topic in self._internalTopics)

    def _insertRepartitionBefore(self, nodeName: str, topic: str, filterName: str, filterSupplier,
                                 sinkName: str, sourceName: str) -> None:
        """Put ``filter -> sink(topic) | source(topic)`` between ``nodeName`` and its parents, the new
        nodes placed right before it in insertion order. Used by ``StreamsBuilder.build`` to
        repartition in front of a stateful processor (kspark's addition)."""
        for name in (filterName, sinkName, sourceName):
            if name in self._nodes:
                raise TopologyException(f"Processor {name} is already added.")
        for other in self._nodes.values():
            if isinstance(other, SourceNodeSpec) and topic in other.topics:
                raise TopologyException(f"Topic {topic} has already been registered by another source.")
        target = self._nodes[nodeName]
        parents = list(target.parents)
        from ..processor import FailOnInvalidTimestamp

        # a repartition topic is read with the record timestamps written to it (Kafka:
        # FailOnInvalidTimestamp), never with default.timestamp.extractor
        new = [ProcessorNodeSpec(filterName, filterSupplier, parents), SinkNodeSpec(sinkName, topic, [filterName]),
               SourceNodeSpec(sourceName, [topic], timestampExtractor=FailOnInvalidTimestamp())]
        for parent in parents:
            children = self._children[parent]
            children[children.index(nodeName)] = filterName
        self._children[filterName], self._children[sinkName], self._children[sourceName] = [sinkName], [], [nodeName]
        target.parents = [sourceName]
        self._internalTopics[topic] = None
        reordered: dict[str, NodeSpec] = {}
        for name, spec in self._nodes.items():
            if name == nodeName:
                reordered.update((n.name, n) for n in new)
            reordered[name] = spec
        self._nodes = reordered
        for join in self._relaxedJoins:  # the new filter may sit upstream of a relaxed join
            self._markRelaxedNullKeyJoin(join)

    # ------------------------------------------------------------------ queries
    def children(self, name: str) -> list[str]:
        return self._children[name]

    def storeBuilders(self) -> dict[str, StoreBuilder]:
        return dict(self._storeBuilders)

    def internalTopics(self) -> dict[str, int | None]:
        """Raw names of repartition topics -> enforced partition count (None if not enforced)."""
        return dict(self._internalTopics)

    def copartitionGroups(self) -> list[set[str]]:
        """Sets of raw source topic names that must have the same partition count (rule J-6).

        Groups sharing a topic are merged as Kafka's ``InternalTopologyBuilder.copartitionGroups``
        does: each registered group joins the group of its first already-seen topic.
        """
        groupOf: dict[str, set[str]] = {}
        merged: list[set[str]] = []
        for topics in self._copartitionGroups:
            group = next((groupOf[t] for t in topics if t in groupOf), None)
            if group is None:
                group = set()
                merged.append(group)
            group.update(topics)
            for t in topics:
                groupOf[t] = group
        unique = {id(g): g for g in groupOf.values()}
        return [set(g) for g in merged if id(g) in unique]

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
        # Kafka (since 2.4, KAFKA-9020) numbers node groups in the order their first node was
        # added to the topology (InternalTopologyBuilder.makeNodeGroups walks nodeFactories), so
        # upstream sub-topologies come first.

        result = []
        for i, nodes in enumerate(groups.values()):
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

    def toDot(self, metrics=None) -> str:
        """This description as Graphviz DOT text (kspark's addition; see ``kspark.topology._dot``):
        sub-topologies as clusters, topics, stores, and with ``metrics`` (a run's counters, as
        ``KafkaStreams.metrics()`` returns them) the records processed and dropped per node."""
        from ._dot import topologyDot

        return topologyDot(self._topology, metrics).source

    def render(self, path, metrics=None):
        """Write this description's picture to ``path`` (``.dot``, or ``.svg``/``.png``/... drawn by
        Graphviz's ``dot`` program, with the ``.dot`` text beside it); returns ``path`` as a ``Path``.

        Raises
        ------
        RuntimeError
            If a picture is asked for and the ``dot`` program is not installed (the ``.dot`` is written).
        """
        from ._dot import renderTopology

        return renderTopology(self._topology, path, metrics)

    def __str__(self) -> str:
        from ._describe import describeSubtopologyNodes, javaHashOrder

        t = self._topology
        parentsOf = {name: list(getattr(spec, "parents", [])) for name, spec in t._nodes.items()}
        out = ["Topologies:\n "]
        for sub in t._nodeGroups():
            if sub.isGlobal:  # Kafka's GlobalStore.toString: source, processor, no blank line
                source = next(n for n in sub.nodes if isinstance(n, SourceNodeSpec))
                processor = next(n for n in sub.nodes if isinstance(n, ProcessorNodeSpec))
                out.append(f"  Sub-topology: {sub.id} for global store (will not generate tasks)\n"
                           f"    Source: {source.name} (topics: [{', '.join(source.topics)}])\n      --> {processor.name}\n"
                           f"    Processor: {processor.name} (stores: [{', '.join(processor.stores)}])\n"
                           f"      --> none\n      <-- {source.name}\n")
                continue
            # Kafka: "Topologies:\n " then "  " + "Sub-topology: <id>\n" + nodes + "\n" for each
            out.append(f"  Sub-topology: {sub.id}\n")
            ordered, successors, predecessors = describeSubtopologyNodes([n.name for n in sub.nodes], parentsOf)
            for name in ordered:
                n = t._nodes[name]
                succ = ", ".join(successors[name]) or "none"
                pred = ", ".join(predecessors[name]) or "none"
                if isinstance(n, SourceNodeSpec):
                    # Kafka: a pattern source prints Pattern.toString(), without brackets
                    topics = n.topics[0] if n.topicPattern is not None else (
                        f"[{', '.join(javaHashOrder(n.topics, fromCollection=True))}]")
                    out.append(f"    Source: {name} (topics: {topics})\n      --> {succ}\n")
                elif isinstance(n, ProcessorNodeSpec):
                    stores = ", ".join(javaHashOrder(n.stores))
                    out.append(f"    Processor: {name} (stores: [{stores}])\n      --> {succ}\n      <-- {pred}\n")
                elif n.topic is None:  # Kafka's Sink.toString for a TopicNameExtractor
                    out.append(f"    Sink: {name} (extractor class: {_javaClassName(n.topicExtractor)})\n"
                               f"      <-- {pred}\n")
                else:
                    out.append(f"    Sink: {name} (topic: {n.topic})\n      <-- {pred}\n")
            out.append("\n")
        return "".join(out)

    def __repr__(self) -> str:
        return str(self)


def _javaClassName(extractor) -> str:
    owner = getattr(extractor, "__self__", None)
    target = type(owner) if owner is not None else extractor
    return f"{getattr(target, '__module__', '')}.{getattr(target, '__qualname__', type(target).__name__)}"

"""Topologies: nodes, stores, sub-topologies, co-partitioning (Kafka ``Topology``, ``InternalTopologyBuilder``)."""

from ._copartition import resolvePartitionCounts
from ._topology import StreamPartitioner, Subtopology, Topology, TopologyDescription

__all__ = ["StreamPartitioner", "Subtopology", "Topology", "TopologyDescription", "resolvePartitionCounts"]

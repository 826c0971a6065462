from __future__ import annotations

from ..errors import MissingSourceTopicException, TaskAssignmentException, TopologyException
from ._topology import Topology

__all__ = ["resolvePartitionCounts"]


def resolvePartitionCounts(topology: Topology, external: dict[str, int | None]) -> dict[str, int]:
    """Partition count of every topic the topology reads, writes or creates (rules RP-4, RP-5).

    Parameters
    ----------
    topology : Topology
    external : dict of raw topic name -> partition count, or None when the topic does not exist

    Returns
    -------
    dict of raw topic name -> partition count, internal (repartition) topics included.

    Raises
    ------
    MissingSourceTopicException
        If a source topic does not exist (``"Missing source topics. [a, b]"``, Kafka's text).
    TopologyException
        If a co-partition group's external topics differ in partition count
        (``"Invalid topology: Topics not co-partitioned: [{a=2, b=1}]"``), or enforced
        repartition counts disagree (Kafka's ``CopartitionedTopicsEnforcer`` wording).
    TaskAssignmentException
        If a repartition topic's count cannot be derived from its upstream sub-topology.
    """
    internal = topology.internalTopics()
    counts: dict[str, int] = {}
    missing = sorted(t for t in topology.sourceTopics() if t not in internal and not external.get(t))
    if missing:
        raise MissingSourceTopicException(missing)
    for topic, n in external.items():
        if n:
            counts[topic] = n
    enforced = {t: n for t, n in internal.items() if n is not None}
    counts.update(enforced)

    # RP-4: a repartition topic without an enforced count takes the max count of the source
    # topics of the sub-topologies that write into it, leaving out repartition topics not known
    # yet (Kafka's computePartitionCount: a foreign-key join's subscription and response topics
    # feed each other's writers); sub-topology by sub-topology as Kafka, until all are known.
    subs = topology.subtopologies()
    pending = list(dict.fromkeys([t for s in subs for t in s.sourceTopics if t in internal] + list(internal)))
    pending = [t for t in pending if t not in counts]
    while pending:
        progress = False
        for topic in list(pending):
            known = [counts[t] for s in subs if topic in s.sinkTopics for t in s.sourceTopics if t in counts]
            if known:
                counts[topic] = max(known)
                pending.remove(topic)
                progress = True
        if not progress:
            raise TaskAssignmentException(
                "Failed to compute number of partitions for all repartition topics, make sure all user input "
                f"topics are created and all Pattern subscriptions match at least one topic in the cluster: {pending}"
            )

    # RP-5: co-partition enforcement.
    for group in topology.copartitionGroups():
        repartition = sorted(t for t in group if t in internal)
        externalTopics = sorted(t for t in group if t not in internal)
        if not externalTopics:
            groupEnforced = {t: enforced[t] for t in repartition if t in enforced}
            if groupEnforced:
                if len(set(groupEnforced.values())) > 1:
                    raise TopologyException(
                        f"Following topics do not have the same number of partitions: [{_javaMap(groupEnforced)}]"
                    )
                target = next(iter(groupEnforced.values()))
            else:
                target = max(counts[t] for t in repartition)
        else:
            externalCounts = {t: counts[t] for t in externalTopics}
            if len(set(externalCounts.values())) > 1:
                raise TopologyException(f"Topics not co-partitioned: [{_javaMap(externalCounts)}]")
            target = next(iter(externalCounts.values()))
        for topic in repartition:
            if topic in enforced and enforced[topic] != target:
                raise TopologyException(
                    f"Number of partitions [{enforced[topic]}] of repartition topic [{topic}] doesn't match "
                    f"number of partitions [{target}] of the source topic."
                )
            counts[topic] = target
    return counts


def _javaMap(m: dict[str, int]) -> str:
    return "{" + ", ".join(f"{k}={v}" for k, v in sorted(m.items())) + "}"

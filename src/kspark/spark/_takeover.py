"""Checks before kspark takes over the state of an application that ran before it (issue 33):
a Kafka Streams application stopped to move to kspark, or a kspark application whose
``state.dir`` is new.

A new checkpoint (no committed micro-batch in ``state.dir``) resumes the consumer group's
committed offsets, and its tasks restore their stores from the changelog topics (the module
docstring of :mod:`kspark.state._restore`). That is only right if the changelogs present are
those of this topology's stores, in formats kspark reads; otherwise the application would
continue from the committed offsets with empty or misread stores, and its output would be wrong
without any error. :func:`checkTakeover` refuses such a start before any record is processed,
naming the store, the topic and the reason.

The checks run on the driver, on Kafka, for the sub-topologies whose checkpoint is new and whose
source topics have committed offsets in the group ``application.id`` that show records were
processed (state existed; not offsets at the first records without metadata, as Kafka's
``kafka-streams-application-reset`` leaves them):

- every store with logging enabled has its changelog topic ``<application.id>-<store>-changelog``
  (else: refused, unless ``kspark.allow.missing.changelogs`` is true, when it starts empty);
- a store kspark keeps only in its checkpoint (a custom store kind), or one whose logging is
  disabled in this topology, has no changelog with records;
- the first records of each changelog partition are in the layout of the store's kind (Kafka's
  key schemas, the suppression buffer's changelog format 3, the store's key and value serdes for
  key-value stores);
- when every checkpoint is new: no changelog, repartition or foreign-key topic of the
  application belongs to no store or topic of this topology (a store or sub-topology the port
  lacks, or names generated in another order: Kafka numbers generated names by the order of the
  DSL calls).
"""

from __future__ import annotations

import logging

from ..config import StreamsConfig
from ..errors import StreamsException

log = logging.getLogger("kspark.spark")

__all__ = ["ALLOW_MISSING_CHANGELOGS_CONFIG", "checkTakeover", "formatProblem"]

ALLOW_MISSING_CHANGELOGS_CONFIG = StreamsConfig.ALLOW_MISSING_CHANGELOGS_CONFIG
_INTERNAL_SUFFIXES = ("-changelog", "-repartition", "-subscription-registration-topic",
                      "-subscription-response-topic")
_SNIFF = 16  # records read at the start of each changelog partition


def formatProblem(store, key: bytes | None, value: bytes | None, headers) -> str | None:
    """Why kspark cannot read a changelog record of ``store`` (as its builder built it, before it
    is made persistent), or None when its layout is the one kspark restores."""
    from ..state._join_stores import DuplicatesWindowStore
    from ..state._stores import KeyValueStore, SessionStore, TimestampedKeyValueStore, WindowStore
    from ..state._suppression_buffer import TimeOrderedKeyValueBuffer

    if key is None:
        return "a record without a key"
    if isinstance(store, SessionStore):
        if len(key) < 16:
            return f"a key of {len(key)} bytes: Kafka's session key is [key][end: 8 bytes][start: 8 bytes]"
    elif isinstance(store, (WindowStore, DuplicatesWindowStore)):
        if len(key) < 12:
            return f"a key of {len(key)} bytes: Kafka's window key is [key][start: 8 bytes][seqnum: 4 bytes]"
    elif isinstance(store, TimeOrderedKeyValueBuffer):
        if value is not None:
            version = [v for k, v in headers or () if k == "v"]
            if not version or bytes(version[-1]) != b"\x03":
                shown = bytes(version[-1]).hex() if version else "none"
                return (f"suppression buffer changelog format with header v={shown}: kspark reads format 3 "
                        "(Kafka 2.6 and later) only")
    elif type(store) in (KeyValueStore, TimestampedKeyValueStore):
        topic = getattr(store, "_serdeTopic", "")
        for what, serde, data in (("key", getattr(store, "_keySerde", None), key),
                                  ("value", getattr(store, "_valueSerde", None), value)):
            if serde is None or data is None:
                continue
            try:
                serde.deserialize(topic, data)
            except Exception as e:  # noqa: BLE001 - reported as the reason
                return f"its {what} serde {type(serde).__name__} cannot read {bytes(data[:32]).hex()} ({type(e).__name__}: {e})"
    return None


def checkTakeover(topics, config: StreamsConfig, topology, plans: list[dict], newCheckpoints: set[int]) -> None:
    """Refuse to start new checkpoints on state that this topology cannot take over (see the
    module docstring); ``newCheckpoints``: the ids of the sub-topologies without a committed batch.

    Raises
    ------
    StreamsException
        Naming the store, the topic and the reason.
    """
    appId = config.get(StreamsConfig.APPLICATION_ID_CONFIG)
    allowMissing = bool(config.get(ALLOW_MISSING_CHANGELOGS_CONFIG))
    builders = topology.storeBuilders()
    problems: list[str] = []
    # the application ran before if the group committed offsets for any of its source or
    # repartition topics: then every store had state (a sub-topology downstream of a repartition
    # topic included, even if its own input has no commits yet)
    committed = sorted({t for plan in plans if plan["subtopology"].id in newCheckpoints for t in plan["sources"]
                        if t not in plan["globalSources"] and _processedBefore(topics, appId, t)})
    if not committed:
        return
    for plan in plans:
        if plan["subtopology"].id not in newCheckpoints:
            continue
        for name, changelog in plan["changelogs"].items():
            expected = f"{appId}-{name}-changelog"
            store = builders[name].build(config.defaultKeySerde(), config.defaultValueSerde())
            store._serdeTopic = expected
            partitions = topics.partitionsFor(expected)
            if changelog is None or not _persistentKind(store):
                if partitions and _holdsRecords(topics, expected):
                    why = ("has logging disabled in this topology" if changelog is None
                           else f"is a {type(store).__name__}, which kspark keeps in its checkpoint, not restored from "
                                "a changelog")
                    problems.append(f"store {name} {why}, but its changelog topic {expected} holds records: its state "
                                    "would be lost")
                continue
            if partitions is None:
                if allowMissing:
                    log.warning("Store %s starts empty: its changelog topic %s does not exist although consumer group "
                                "%s has committed offsets (%s=true)", name, changelog, appId,
                                ALLOW_MISSING_CHANGELOGS_CONFIG)
                else:
                    problems.append(
                        f"store {name}: its changelog topic {changelog} does not exist, but consumer group {appId} has "
                        f"committed offsets for {', '.join(committed)}, so the application ran before and the store "
                        f"had state; it would start empty. Check that the topology creates its stores in the order "
                        f"of the original (generated names are numbered by it), or set "
                        f"{ALLOW_MISSING_CHANGELOGS_CONFIG}=true to start it empty")
                continue
            problem = _sniff(topics, store, changelog, partitions)
            if problem:
                problems.append(f"store {name}: changelog topic {problem}")
    if len(newCheckpoints) == len(plans):
        problems += _unknownInternalTopics(topics, appId, plans)
    if problems:
        raise StreamsException(
            f"kspark cannot take over the state of application.id {appId}:\n- " + "\n- ".join(problems)
            + "\nNothing was processed.")


def _processedBefore(topics, appId: str, topic: str) -> bool:
    """Whether group ``appId`` committed offsets for ``topic`` that show records were processed:
    any offset past the partition's first or committed with metadata (Kafka Streams and kspark
    always commit their offset metadata). Offsets at the first record without metadata are what
    Kafka's reset tool (``kafka-streams-application-reset``, ``StreamsResetter``: input topics to
    the earliest offset, internal topics deleted) leaves: the application starts from scratch
    with empty stores, as Kafka Streams does after it."""
    committed = topics.committedOffsets(appId, topic)
    if not committed:
        return False
    beginnings = topics.beginningOffsets(topic)
    return any(metadata or offset > beginnings.get(p, 0) for p, (offset, metadata) in committed.items())


def _persistentKind(store) -> bool:
    from ..state._persistent import _PERSISTENT

    return type(store) in _PERSISTENT


def _holdsRecords(topics, topic: str) -> bool:
    ends, starts = topics.endOffsets(topic), topics.beginningOffsets(topic)
    return any(ends[p] > starts.get(p, 0) for p in ends)


def _sniff(topics, store, topic: str, partitions: int) -> str | None:
    """``"<topic>-<partition> offset <o>: <reason>"`` for the first record of the first
    ``_SNIFF`` of each partition that kspark cannot read, else None."""
    starts, ends = topics.beginningOffsets(topic), topics.endOffsets(topic)
    for p in range(partitions):
        start = starts.get(p, 0)
        end = min(ends.get(p, 0), start + _SNIFF)
        if end <= start:
            continue
        from ..runtime.stream_task import decodeHeaders

        for table in topics.readBatches(topic, p, start, end):
            for offset, key, value, headers in zip(*(table.column(c).to_pylist()
                                                     for c in ("offset", "key", "value", "headers"))):
                problem = formatProblem(store, key, value, decodeHeaders(headers))
                if problem:
                    return f"{topic}-{p} offset {offset}: {problem}"
    return None


def _unknownInternalTopics(topics, appId: str, plans: list[dict]) -> list[str]:
    """Internal topics of ``appId`` on the cluster that no store or topic of this topology uses."""
    known = {t for plan in plans for t in plan["changelogs"].values() if t}
    known |= {t for plan in plans for t in plan["topicName"].values()}
    known |= {f"{appId}-{name}-changelog" for plan in plans for name in plan["changelogs"]}
    problems = []
    for topic in sorted(topics.listTopics()):
        if not topic.startswith(f"{appId}-") or not topic.endswith(_INTERNAL_SUFFIXES) or topic in known:
            continue
        if topic.endswith("-changelog"):
            store = topic[len(appId) + 1:-len("-changelog")]
            problems.append(f"changelog topic {topic}: no store {store} in this topology (its stores: "
                            f"{', '.join(sorted(n for plan in plans for n in plan['changelogs']))}); the topology "
                            "differs from the one that wrote it")
        elif _holdsRecords(topics, topic):
            problems.append(f"internal topic {topic}: this topology neither reads nor writes it (its internal "
                            f"topics: {', '.join(sorted(_internal(plans)) or ['none'])}); its records would never "
                            "be processed: the sub-topologies differ from those that wrote it")
    return problems


def _internal(plans: list[dict]) -> set[str]:
    return {t for plan in plans for logical, t in plan["topicName"].items() if t != logical}


_KINDS = {"keyValue": "key-value", "timestampedKeyValue": "timestamped key-value", "window": "window",
          "timestampedWindow": "timestamped window", "session": "session", "versioned": "versioned key-value",
          "suppressionBuffer": "suppression buffer", "streamJoinWindow": "stream-stream join window",
          "outerJoin": "stream-stream outer join"}


def storeKind(store) -> str:
    """A store's kind as its changelog layout names it (``kspark.state._persistent.changelogConfigOf``'s kinds)."""
    from ..state._join_stores import DuplicatesWindowStore, ListValueStore
    from ..state._stores import SessionStore, TimestampedKeyValueStore, WindowStore
    from ..state._suppression_buffer import TimeOrderedKeyValueBuffer
    from ..state._versioned import VersionedKeyValueStore

    if isinstance(store, DuplicatesWindowStore):
        return _KINDS["streamJoinWindow"]
    if isinstance(store, WindowStore):
        return _KINDS["timestampedWindow" if store.timestamped else "window"]
    for cls, kind in ((SessionStore, "session"), (VersionedKeyValueStore, "versioned"), (ListValueStore, "outerJoin"),
                      (TimeOrderedKeyValueBuffer, "suppressionBuffer"), (TimestampedKeyValueStore, "timestampedKeyValue")):
        if isinstance(store, cls):
            return _KINDS[kind]
    return _KINDS["keyValue"] if _persistentKind(store) else f"{type(store).__name__} (kept in kspark's checkpoint)"


def internalTopicsText(topology, config: StreamsConfig) -> str:
    """The changelog and repartition topics of ``topology`` for the application ``application.id``
    (``<application.id>`` where the config has none), as ``kspark run --describe`` prints them
    after the topology: what a Kafka Streams application moving to kspark (or back) must have in
    common with it."""
    from ..topology import Topology

    appId = config.get(StreamsConfig.APPLICATION_ID_CONFIG) or "<application.id>"
    builders = topology.storeBuilders()
    lines = [f"Internal topics of application.id {appId}:", "  Changelog topics (one per store with logging enabled):"]
    subs = topology.subtopologies()
    for sub in subs:
        for name in sub.stores:
            store = builders[name].build(config.defaultKeySerde(), config.defaultValueSerde())
            enabled = getattr(builders[name], "loggingEnabled", None)
            if enabled is not None and not enabled():
                lines.append(f"    (none: logging disabled)  store {name} ({storeKind(store)}), sub-topology {sub.id}")
            else:
                lines.append(f"    {appId}-{name}-changelog  store {name} ({storeKind(store)}), sub-topology {sub.id}")
    internal = topology.internalTopics()
    lines.append("  Repartition topics:" if internal else "  Repartition topics: none")
    for raw in internal:
        writers = [str(s.id) for s in subs if raw in s.sinkTopics]
        readers = [str(s.id) for s in subs if raw in s.sourceTopics]
        lines.append(f"    {Topology.decorate(appId, raw, True)}  written by sub-topology {', '.join(writers) or '-'}, "
                     f"read by sub-topology {', '.join(readers) or '-'}")
    return "\n".join(lines) + "\n"

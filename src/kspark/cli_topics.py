"""``kspark topics create|produce|consume|list|describe``: Kafka's console tools for kspark's topics.

The topics are the local ones under ``--topics-dir`` (default ``kspark.topics.dir``), or a
Kafka cluster's with ``--bootstrap-server host:port``; ``--config app.properties`` takes both, the
client keys and the default serdes from an application's properties (the file ``kspark run``
reads). Like ``kafka-topics.sh``, ``kafka-console-producer.sh`` and ``kafka-console-consumer.sh``:

- ``create --topic T --partitions N [--if-not-exists] [--topic-config k=v]``;
- ``list``; ``describe [--topic T]``: partitions with their start and end offsets;
- ``produce --topic T``: one record per line of stdin (or ``--file``); the line is the value,
  with ``--property parse.key=true`` the text before ``key.separator`` (default a tab) is the
  key, and with kspark's ``--property parse.timestamp=true`` the text before the first
  separator is the timestamp in ms (default: now, as Kafka's producer stamps it). A field equal
  to ``null.marker`` is null. Keys and values are parsed from text for their serde (``Long``:
  an integer, ``JSON``: JSON text, ``String``: as is), serialized by it, and the record goes to
  Kafka's partition for its key bytes (murmur2, rule DP-2; null keys to one partition per run,
  as Kafka's sticky partitioner fills one batch);
- ``consume --topic T [--from-beginning | --partition P --offset N] [--max-messages N]
  [--timeout-ms MS]``: prints each record's value (``--property print.key=true``,
  ``print.timestamp``, ``print.partition``, ``print.offset`` add fields, joined by
  ``key.separator``), waiting for new ones until ``--max-messages``, ``--timeout-ms`` without
  a new record, or Ctrl-C; then "Processed a total of N messages" on stderr.

``--key-serde`` / ``--value-serde`` name a serde: ``String``, ``Long``, ``Integer``, ``Short``,
``Double``, ``Float``, ``Boolean``, ``UUID``, ``ByteArray``, ``JSON``, ``Void`` (``Serdes.*``),
Kafka's class name (``org.apache.kafka.common.serialization.Serdes$LongSerde``) or a Python
path; the defaults are the config's ``default.key.serde`` / ``default.value.serde`` (kspark's:
``String`` and ``JSON``).
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

__all__ = ["addParser", "run"]

_SUBCOMMANDS = ("create", "list", "describe", "produce", "consume")


def addParser(commands) -> None:
    """Add ``topics`` and its subcommands to ``kspark``'s argument parser."""
    topics = commands.add_parser("topics", help="create, list, describe, produce to and consume from topics",
                                 description=__doc__.split("\n\n")[0])
    sub = topics.add_subparsers(dest="action", required=True)
    for name in _SUBCOMMANDS:
        p = sub.add_parser(name, help={
            "create": "create a topic", "list": "list the topics", "describe": "partitions and offsets",
            "produce": "records from stdin, one per line", "consume": "print records"}[name])
        where = p.add_mutually_exclusive_group()
        where.add_argument("--bootstrap-server", metavar="HOST:PORT", help="a Kafka cluster (else the local topics)")
        where.add_argument("--topics-dir", metavar="DIR", help="the local topics' directory (kspark.topics.dir)")
        p.add_argument("--config", "-c", metavar="app.properties",
                       help="an application's properties: bootstrap.servers or kspark.topics.dir, client keys, serdes")
        if name in ("create", "produce", "consume"):
            p.add_argument("--topic", required=True)
        if name == "describe":
            p.add_argument("--topic", help="only this topic")
        if name == "create":
            p.add_argument("--partitions", type=int, required=True)
            p.add_argument("--replication-factor", type=int, default=-1, help="Kafka only (default: the broker's)")
            p.add_argument("--if-not-exists", action="store_true")
            p.add_argument("--topic-config", action="append", default=[], metavar="KEY=VALUE", help="a topic config")
        if name in ("produce", "consume"):
            p.add_argument("--key-serde", metavar="SERDE", help="default: the config's default.key.serde (String)")
            p.add_argument("--value-serde", metavar="SERDE", help="default: the config's default.value.serde (JSON)")
            p.add_argument("--property", action="append", default=[], metavar="KEY=VALUE",
                           help="parse.key, parse.timestamp, key.separator, null.marker (produce); "
                                "print.key, print.timestamp, print.partition, print.offset, key.separator (consume)")
        if name == "produce":
            p.add_argument("--file", metavar="PATH", help="read the lines from this file, not stdin")
        if name == "consume":
            start = p.add_mutually_exclusive_group()
            start.add_argument("--from-beginning", action="store_true", help="from the first record (default: new ones)")
            start.add_argument("--offset", type=int, help="from this offset of --partition")
            p.add_argument("--partition", type=int, help="only this partition")
            p.add_argument("--max-messages", type=int, help="stop after this many records")
            p.add_argument("--timeout-ms", type=int, help="stop when no record came for this long")


class _Failure(Exception):
    """A user error: printed as ``kspark topics: <message>``, exit status 1."""


def run(args) -> int:
    """Run a parsed ``kspark topics`` command; returns the exit status."""
    from .errors import ConfigException, StreamsException
    from .topics import OffsetOutOfRangeException, TopicExistsException, UnknownTopicOrPartitionException

    try:
        config = _config(args)
        topics = _open(config)
    except (ConfigException, _Failure, OSError) as e:
        print(f"kspark topics: {e}", file=sys.stderr)
        return 1
    try:
        with topics:
            return {"create": _create, "list": _list, "describe": _describe, "produce": _produce,
                    "consume": _consume}[args.action](topics, config, args)
    except (TopicExistsException, UnknownTopicOrPartitionException, OffsetOutOfRangeException, StreamsException,
            ConfigException, _Failure, ValueError) as e:  # Kafka unreachable: StreamsException naming the servers
        print(f"kspark topics: {e}", file=sys.stderr)
        return 1


def _config(args):
    from .cli import readProperties
    from .config import StreamsConfig

    props: dict[str, Any] = dict(readProperties(args.config)) if args.config else {}
    if args.bootstrap_server:
        props["bootstrap.servers"] = args.bootstrap_server
    if args.topics_dir:
        props.pop("bootstrap.servers", None)
        props["kspark.topics.dir"] = args.topics_dir
    return StreamsConfig(props)


def _open(config):
    from .topics import openTopics

    return openTopics(config)


def _where(config) -> str:
    return (f"bootstrap.servers={','.join(config.get('bootstrap.servers'))}" if config.usesKafka()
            else f"kspark.topics.dir={config.get('kspark.topics.dir')}")


def _unknown(topics, name: str, config) -> None:
    from .topics import UnknownTopicOrPartitionException

    if topics.partitionsFor(name) is None:
        raise UnknownTopicOrPartitionException(f"Topic '{name}' does not exist ({_where(config)}); "
                                               f"create it with: kspark topics create --topic {name} --partitions N")


# ------------------------------------------------------------------ create, list, describe
def _create(topics, config, args) -> int:
    if args.partitions < 1:
        raise _Failure(f"--partitions must be at least 1, got {args.partitions}")
    topicConfig = dict(_pair(kv, "--topic-config") for kv in args.topic_config)
    existed = args.if_not_exists and topics.partitionsFor(args.topic) is not None
    topics.createTopic(args.topic, args.partitions, ifNotExists=args.if_not_exists, config=topicConfig,
                       replicationFactor=args.replication_factor)
    if not existed:
        print(f"Created topic {args.topic}.")  # kafka-topics.sh's line
    return 0


def _list(topics, config, args) -> int:
    for name in topics.listTopics():
        print(name)
    return 0


def _describe(topics, config, args) -> int:
    names = [args.topic] if args.topic else topics.listTopics()
    for name in names:
        _unknown(topics, name, config)
        begin, end = topics.beginningOffsets(name), topics.endOffsets(name)
        print(f"Topic: {name}\tPartitionCount: {len(end)}\tRecords: {sum(end[p] - begin[p] for p in end)}")
        for p in sorted(end):
            print(f"\tTopic: {name}\tPartition: {p}\tStartOffset: {begin[p]}\tEndOffset: {end[p]}")
    return 0


# ------------------------------------------------------------------ produce, consume
def _pair(text: str, option: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise _Failure(f"{option} takes KEY=VALUE, got {text!r}")
    return key, value


def _properties(args, known: tuple[str, ...]) -> dict[str, str]:
    props = dict(_pair(kv, "--property") for kv in args.property)
    unknown = sorted(set(props) - set(known))
    if unknown:
        raise _Failure(f"unknown --property {', '.join(unknown)} for {args.action}; known: {', '.join(known)}")
    return props


def _serde(name: str | None, default, option: str):
    """The serde ``name`` stands for (``Serdes.<name>()``, a Kafka class name or a Python path)."""
    from .config import StreamsConfig
    from .errors import ConfigException
    from .serialization import Serdes

    if name is None:
        return default
    if not name.startswith("_") and callable(getattr(Serdes, name, None)) and name not in ("serdeFrom", "ListSerde"):
        return getattr(Serdes, name)()
    try:
        return StreamsConfig({"default.key.serde": name}).defaultKeySerde()
    except ConfigException as e:
        raise _Failure(f"{option} {name}: not a serde ({e})") from None


def _isTrue(props: dict, key: str) -> bool:
    return props.get(key, "false").strip().lower() == "true"


def _parseText(serde, text: str, topic: str, what: str, line: int):
    """The value ``text`` stands for under ``serde`` (what its serializer takes)."""
    import uuid

    from .serialization import Serdes

    kind = type(serde)
    try:
        if kind is type(Serdes.JSON()):
            return json.loads(text)
        if kind in (type(Serdes.Long()), type(Serdes.Integer()), type(Serdes.Short())):
            return int(text)
        if kind in (type(Serdes.Double()), type(Serdes.Float())):
            return float(text)
        if kind is type(Serdes.Boolean()):
            if text.strip().lower() not in ("true", "false"):
                raise ValueError("expected true or false")
            return text.strip().lower() == "true"
        if kind is type(Serdes.UUID()):
            return uuid.UUID(text)
        if kind in (type(Serdes.ByteArray()), type(Serdes.Bytes()), type(Serdes.ByteBuffer())):
            return text.encode("utf-8")
    except ValueError as e:
        raise _Failure(f"line {line}: the {what} {text!r} is not a {serde!r} value for topic {topic}: {e}") from None
    return text  # String, and serdes of the user's, which get the text


def _produce(topics, config, args) -> int:
    from .runtime.partitioner import partitionForKey

    props = _properties(args, ("parse.key", "parse.timestamp", "key.separator", "null.marker"))
    _unknown(topics, args.topic, config)
    keySerde = _serde(args.key_serde, config.defaultKeySerde(), "--key-serde")
    valueSerde = _serde(args.value_serde, config.defaultValueSerde(), "--value-serde")
    separator, nullMarker = props.get("key.separator", "\t"), props.get("null.marker")
    parseKey, parseTimestamp = _isTrue(props, "parse.key"), _isTrue(props, "parse.timestamp")
    stickyPartition = None
    records = []
    source = open(args.file, encoding="utf-8") if args.file else sys.stdin
    try:
        for number, raw in enumerate(source, 1):
            line = raw.rstrip("\r\n")
            if not line:
                continue
            fields = []
            for flag, what in ((parseTimestamp, "timestamp"), (parseKey, "key")):
                if flag:
                    head, sep, line = line.partition(separator)
                    if not sep:
                        raise _Failure(f"line {number}: no key.separator {separator!r} after the {what} "
                                       f"(parse.{what}=true): {raw.rstrip()!r}")
                    fields.append(head)
            timestamp = time.time_ns() // 1_000_000
            if parseTimestamp:
                text = fields.pop(0)
                try:
                    timestamp = int(text)
                except ValueError:
                    raise _Failure(f"line {number}: the timestamp {text!r} is not an integer (ms)") from None
                if timestamp < 0:
                    raise _Failure(f"line {number}: the timestamp {timestamp} is negative")
            key = None
            if parseKey:
                text = fields.pop(0)
                key = None if text == nullMarker else _parseText(keySerde, text, args.topic, "key", number)
            value = None if line == nullMarker else _parseText(valueSerde, line, args.topic, "value", number)
            records.append((keySerde.serialize(args.topic, key), valueSerde.serialize(args.topic, value), timestamp))
    finally:
        if args.file:
            source.close()

    def partitioner(keyBytes, numPartitions):
        nonlocal stickyPartition
        if keyBytes is not None:
            return partitionForKey(keyBytes, numPartitions)  # DP-2
        if stickyPartition is None:  # Kafka's sticky partitioner: one partition for the batch
            import random

            stickyPartition = random.randrange(numPartitions)
        return stickyPartition

    counts = topics.produce(args.topic, records, partitioner=partitioner)
    print(f"Produced {len(records)} records to {args.topic} "
          f"({', '.join(f'partition {p}: {n}' for p, n in sorted(counts.items())) or 'none'}).", file=sys.stderr)
    return 0


def _render(value: Any) -> str:
    """A deserialized key or value as the console consumer prints it."""
    if value is None:
        return "null"
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8", "replace")
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return str(value)


def _consume(topics, config, args) -> int:
    props = _properties(args, ("print.key", "print.timestamp", "print.partition", "print.offset", "key.separator"))
    _unknown(topics, args.topic, config)
    keySerde = _serde(args.key_serde, config.defaultKeySerde(), "--key-serde")
    valueSerde = _serde(args.value_serde, config.defaultValueSerde(), "--value-serde")
    separator = props.get("key.separator", "\t")
    ends = topics.endOffsets(args.topic)
    if args.partition is not None and args.partition not in ends:
        raise _Failure(f"topic {args.topic} has no partition {args.partition} (partitions 0-{len(ends) - 1})")
    if args.offset is not None and args.partition is None:
        raise _Failure("--offset needs --partition")
    partitions = [args.partition] if args.partition is not None else sorted(ends)
    if args.from_beginning:
        positions = {p: o for p, o in topics.beginningOffsets(args.topic).items() if p in partitions}
    elif args.offset is not None:
        positions = {args.partition: args.offset}
    else:  # Kafka's console consumer without --from-beginning: only records produced from now on
        positions = {p: ends[p] for p in partitions}
    kind = topics.timestampType(args.topic) if hasattr(topics, "timestampType") else "CreateTime"
    flags = [_isTrue(props, k) for k in ("print.timestamp", "print.partition", "print.offset", "print.key")]
    limit = args.max_messages
    printed = 0
    lastRecord = time.monotonic()

    def line(p: int, offset: int, ts: int, key: bytes | None, value: bytes | None) -> str:
        fields = []
        if flags[0]:
            fields.append(f"{kind}:{ts}")
        if flags[1]:
            fields.append(f"Partition:{p}")
        if flags[2]:
            fields.append(f"Offset:{offset}")
        try:
            if flags[3]:
                fields.append(_render(keySerde.deserialize(args.topic, key)))
            fields.append(_render(valueSerde.deserialize(args.topic, value)))
        except Exception as e:
            raise _Failure(f"the record at {args.topic}-{p} offset {offset} does not deserialize with "
                           f"{keySerde!r} / {valueSerde!r}: {type(e).__name__}: {e}") from None
        return separator.join(fields)

    try:
        while limit is None or printed < limit:
            ends = topics.endOffsets(args.topic)
            got = False
            for p in partitions:
                for batch in (topics.readBatches(args.topic, p, positions[p], ends[p]) if positions[p] < ends[p] else ()):
                    for offset, ts, key, value in zip(*(batch.column(c).to_pylist()
                                                        for c in ("offset", "timestamp", "key", "value"))):
                        if limit is not None and printed >= limit:
                            break
                        print(line(p, offset, ts, key, value), flush=True)
                        printed += 1
                        positions[p] = offset + 1
                        got = True
                if limit is None or printed < limit:
                    positions[p] = max(positions[p], ends[p])  # offsets may have gaps
            if got:
                lastRecord = time.monotonic()
                continue
            if args.timeout_ms is not None and (time.monotonic() - lastRecord) * 1000 >= args.timeout_ms:
                break
            time.sleep(0.2)
    except KeyboardInterrupt:
        pass
    print(f"Processed a total of {printed} messages", file=sys.stderr)
    return 0

"""Kafka topics through confluent-kafka (librdkafka): the backend kspark uses when
``bootstrap.servers`` is set.

Reads keep Kafka's offsets (with their gaps: transaction markers, aborted records,
compaction), record timestamps (CreateTime or LogAppendTime, as the broker delivers them) and
headers; ``read_committed`` is kspark's default isolation level. Writes from Spark tasks go
through :class:`KafkaSinkWriter`: an idempotent producer (``at_least_once``) or one Kafka
transaction per writer task and micro-batch that also commits the batch's input offsets to the
consumer group ``application.id`` (``exactly_once_v2``, as Kafka Streams' ``StreamTask`` does).
"""

from __future__ import annotations

import bisect
import logging
import os
import re
import struct
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from itertools import chain, repeat

import pyarrow as pa

from ._api import READ_SCHEMA, OffsetOutOfRangeException, Topics
from ._local import TopicExistsException, UnknownTopicOrPartitionException

__all__ = ["KafkaSinkWriter", "KafkaTopics", "librdkafkaConfig"]

log = logging.getLogger("kspark.topics")
# librdkafka's own log lines (connection attempts, retries) go to Python logging, not stderr; the
# calls that fail raise their own errors
_librdkafkaLog = logging.getLogger("kspark.topics.librdkafka")
_librdkafkaLog.setLevel(logging.CRITICAL + 1)

_TIMEOUT_S = 30.0  # default for every admin, metadata and read call (admin default.api.timeout.ms overrides)
_JAVA_ONLY = {
    # Java client settings with no librdkafka meaning: the serdes are kspark's, the rest is the
    # Java client's own machinery
    "key.serializer", "value.serializer", "key.deserializer", "value.deserializer", "max.poll.records",
    "default.api.timeout.ms", "interceptor.classes", "partitioner.class", "metric.reporters",
    "metrics.num.samples", "metrics.recording.level", "metrics.sample.window.ms", "auto.include.jmx.reporter",
    "buffer.memory", "max.block.ms", "delivery.timeout.ms.config", "retry.backoff.max.ms", "security.providers",
    "sasl.jaas.config", "sasl.login.class", "sasl.client.callback.handler.class", "sasl.login.callback.handler.class",
    "ssl.truststore.password", "ssl.keymanager.algorithm", "ssl.trustmanager.algorithm", "ssl.protocol", "ssl.provider",
    "ssl.secure.random.implementation", "ssl.engine.factory.class", "ssl.enabled.protocols", "client.dns.lookup",
    "partition.assignment.strategy", "exclude.internal.topics", "allow.auto.create.topics", "enable.metrics.push",
}
_JAAS = re.compile(r'(\w+)\s*=\s*"([^"]*)"')
_RENAMED = {  # Java client key -> librdkafka's name for the same setting
    "fetch.max.wait.ms": "fetch.wait.max.ms",
    "max.request.size": "message.max.bytes",
    "receive.buffer.bytes": "socket.receive.buffer.bytes",
    "send.buffer.bytes": "socket.send.buffer.bytes",
}


def librdkafkaConfig(props: Mapping[str, str], kind: str, userKeys: set[str] | None = None) -> dict[str, str]:
    """``props`` (Java client keys, as ``StreamsConfig.clientConfigs`` gives them) as a librdkafka
    configuration: the same keys where librdkafka has them (most do), ``sasl.jaas.config``'s
    ``username``/``password`` as ``sasl.username``/``sasl.password``, the key and trust stores as
    librdkafka reads them (:func:`_sslConfig`), a few keys under librdkafka's names
    (``fetch.max.wait.ms`` -> ``fetch.wait.max.ms``, ...), and keys with no librdkafka meaning
    dropped, with one WARNING each (logger ``kspark.topics``) for those in ``userKeys`` (the keys
    the user set; the default: all).

    Raises
    ------
    kspark.ConfigException
        If librdkafka rejects a value, or cannot read a key or trust store of that type, naming
        the key.
    """
    from confluent_kafka import KafkaException

    from ..errors import ConfigException

    conf: dict[str, str] = _sslConfig(props)
    for key, value in props.items():
        if key in _SSL_STORE_KEYS:
            continue
        if key == "sasl.jaas.config":
            credentials = dict(_JAAS.findall(str(value)))
            for java, librdkafka in (("username", "sasl.username"), ("password", "sasl.password")):
                if java in credentials:
                    conf.setdefault(librdkafka, credentials[java])
            continue
        if key in _JAVA_ONLY:
            if userKeys is None or key in userKeys:
                log.warning("%s config %s has no librdkafka equivalent and is ignored", kind, key)
            continue
        conf[_RENAMED.get(key, key)] = str(value)
    probe = {**conf, "group.id": conf.get("group.id", "kspark-config-probe")} if kind == "consumer" else dict(conf)
    for _ in range(len(conf) + 1):
        try:
            _client(kind, probe)
            return conf
        except KafkaException as e:
            match = re.search(r'No such configuration property: "([^"]+)"', str(e))
            if match is None:
                from .._secrets import redact

                raise ConfigException(redact(f"Invalid {kind} configuration for Kafka: {e}")) from None
            if userKeys is None or match.group(1) in userKeys:
                log.warning("%s config %s is unknown to librdkafka and is ignored", kind, match.group(1))
            conf.pop(match.group(1), None)
            probe.pop(match.group(1), None)
    return conf


_SSL_STORE_KEYS = {"ssl.truststore.location", "ssl.truststore.type", "ssl.truststore.certificates",
                   "ssl.keystore.location", "ssl.keystore.type", "ssl.keystore.password", "ssl.keystore.key",
                   "ssl.keystore.certificate.chain", "ssl.endpoint.identification.algorithm"}


def _sslConfig(props: Mapping[str, str]) -> dict[str, str]:
    """The Java client's key and trust store settings as librdkafka's (which reads PEM files and
    strings, and PKCS#12 key stores; Java's ``JKS`` stores are not readable by it):

    - ``ssl.truststore.type=PEM`` with ``ssl.truststore.location`` -> ``ssl.ca.location``; with
      ``ssl.truststore.certificates`` -> ``ssl.ca.pem``;
    - ``ssl.keystore.type=PEM`` with ``ssl.keystore.location`` (the private key and the
      certificate chain in one file, as Kafka reads it) -> ``ssl.key.location`` and
      ``ssl.certificate.location``; with ``ssl.keystore.key`` / ``ssl.keystore.certificate.chain``
      -> ``ssl.key.pem`` / ``ssl.certificate.pem``; ``ssl.key.password`` decrypts the key (same name);
    - ``ssl.keystore.type=PKCS12`` -> ``ssl.keystore.location`` and ``ssl.keystore.password``;
    - ``ssl.endpoint.identification.algorithm`` empty (Java's "no host name check") -> ``none``.

    Raises
    ------
    kspark.ConfigException
        For a store type librdkafka cannot read, naming the key and the types it can.
    """
    from ..errors import ConfigException

    conf: dict[str, str] = {}
    trustType = str(props.get("ssl.truststore.type") or ("PEM" if "ssl.truststore.certificates" in props else "JKS")).upper()
    if "ssl.truststore.location" in props or "ssl.truststore.certificates" in props:
        if trustType == "PEM":
            if "ssl.truststore.location" in props:
                conf["ssl.ca.location"] = str(props["ssl.truststore.location"])
            else:
                conf["ssl.ca.pem"] = str(props["ssl.truststore.certificates"])
        else:
            raise ConfigException(f"Invalid value {trustType} for configuration ssl.truststore.type: kspark's Kafka "
                                  "client (librdkafka) reads trust stores of type PEM only")
    keyType = str(props.get("ssl.keystore.type") or ("PEM" if "ssl.keystore.key" in props else "JKS")).upper()
    if "ssl.keystore.location" in props or "ssl.keystore.key" in props:
        if keyType == "PEM" and "ssl.keystore.location" in props:
            conf["ssl.key.location"] = conf["ssl.certificate.location"] = str(props["ssl.keystore.location"])
        elif keyType == "PEM":
            conf["ssl.key.pem"] = str(props["ssl.keystore.key"])
            if "ssl.keystore.certificate.chain" in props:
                conf["ssl.certificate.pem"] = str(props["ssl.keystore.certificate.chain"])
        elif keyType == "PKCS12" and "ssl.keystore.location" in props:
            conf["ssl.keystore.location"] = str(props["ssl.keystore.location"])
            if props.get("ssl.keystore.password") is not None:
                conf["ssl.keystore.password"] = str(props["ssl.keystore.password"])
        else:
            raise ConfigException(f"Invalid value {keyType} for configuration ssl.keystore.type: kspark's Kafka "
                                  "client (librdkafka) reads key stores of type PEM or PKCS12 (a file) only")
    if "ssl.endpoint.identification.algorithm" in props:
        algorithm = str(props["ssl.endpoint.identification.algorithm"] or "").strip()
        conf["ssl.endpoint.identification.algorithm"] = algorithm.lower() or "none"
    return conf


def _client(kind: str, conf: dict):
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient

    client = {"consumer": Consumer, "producer": Producer}.get(kind, AdminClient)({**conf, "logger": _librdkafkaLog})
    if kind == "consumer":
        client.close()
    return client


_ATTEMPT_S = 5.0  # an idempotent admin read not answered within this is asked again (``_retrying``)


class _NoAnswer(Exception):
    """An admin request's attempt got no answer in time (``KafkaTopics._await``)."""


def _unreachable(servers: str, error: object, timeoutS: float = _TIMEOUT_S) -> Exception:
    from ..errors import StreamsException

    return StreamsException(
        f"The Kafka cluster at bootstrap.servers={servers} did not answer within {timeoutS:g} s: {error}")


def topicAuthorizationException(topics: Iterable[str]) -> Exception:
    """Kafka's ``TopicAuthorizationException`` text ("Not authorized to access topics: [a, b]"),
    as a ``StreamsException``."""
    from ..errors import StreamsException

    return StreamsException("org.apache.kafka.common.errors.TopicAuthorizationException: Not authorized to access "
                            f"topics: [{', '.join(sorted(set(topics)))}]")


def _authenticationException(error) -> Exception:
    """Kafka's ``SaslAuthenticationException`` (or ``SslAuthenticationException``) with the
    broker's reason, from librdkafka's ``_AUTHENTICATION`` error ("SASL authentication error:
    <reason> (after 3ms in state AUTH_REQ)")."""
    from ..errors import StreamsException

    text = error.str() if hasattr(error, "str") else str(error)
    kind = "SslAuthenticationException" if text.startswith("SSL") else "SaslAuthenticationException"
    reason = re.sub(r"^(SASL|SSL) authentication error: ", "", text)
    reason = re.sub(r"\s*\(after \d+ms in state \w+\)$", "", reason)
    return StreamsException(f"org.apache.kafka.common.errors.{kind}: {reason}")


class KafkaTopics(Topics):
    """Topics of a Kafka cluster (confluent-kafka's ``AdminClient``, ``Consumer`` and ``Producer``).

    Parameters
    ----------
    adminConfig, consumerConfig, producerConfig : mapping of str to str
        Client configurations with Java client keys (``bootstrap.servers`` required), as
        ``StreamsConfig.clientConfigs("admin" | "consumer" | "producer")`` gives them;
        ``isolation.level`` of the consumer sets what end offsets and reads see.
    userKeys : set of str, optional
        The client keys the user set: only those get a WARNING when librdkafka cannot use them.

    Every call gives up after the admin config's ``default.api.timeout.ms`` (default 30 s here).

    Raises
    ------
    kspark.ConfigException
        If a client setting is invalid for librdkafka.
    kspark.StreamsException
        From any call, if the cluster does not answer within 30 s (naming ``bootstrap.servers``).
    """

    def __init__(self, adminConfig: Mapping[str, str], consumerConfig: Mapping[str, str] | None = None,
                 producerConfig: Mapping[str, str] | None = None, userKeys: set[str] | None = None) -> None:
        self.timeoutS = int(adminConfig.get("default.api.timeout.ms", _TIMEOUT_S * 1000)) / 1000
        self.adminConfig = librdkafkaConfig(adminConfig, "admin", userKeys)
        self.consumerConfig = librdkafkaConfig(consumerConfig or adminConfig, "consumer", userKeys)
        self.producerConfig = librdkafkaConfig(producerConfig or adminConfig, "producer", userKeys)
        self.servers = self.adminConfig.get("bootstrap.servers", "")
        self._admin = None
        self._authError = None

    def __getstate__(self) -> dict:  # shipped to Spark's Python workers: without the live client
        return {**self.__dict__, "_admin": None, "_authError": None}

    def _adminClient(self):
        if self._admin is None:
            from confluent_kafka.admin import AdminClient

            self._admin = AdminClient({**self.adminConfig, "logger": _librdkafkaLog, "error_cb": self._onError})
        return self._admin

    def _onError(self, error) -> None:
        from confluent_kafka import KafkaError

        if error.code() == KafkaError._AUTHENTICATION:
            self._authError = error

    def _failedAuthentication(self) -> Exception | None:
        """Kafka's authentication exception if the admin client's last connection was refused
        for its credentials (librdkafka retries them; Kafka's clients fail)."""
        if self._admin is not None:
            self._admin.poll(0)  # serves error_cb
        return _authenticationException(self._authError) if self._authError is not None else None

    def _readCommitted(self) -> bool:
        return self.consumerConfig.get("isolation.level", "read_committed") == "read_committed"

    # ------------------------------------------------------------------ admin
    def _metadata(self, name: str | None = None):
        from confluent_kafka import KafkaException

        # in steps of at most 2 s: credentials the broker refused fail the call at once, with
        # Kafka's authentication error, where librdkafka would retry them until the timeout
        deadline = time.monotonic() + self.timeoutS
        while True:
            try:
                return self._adminClient().list_topics(topic=name, timeout=min(2.0, max(0.1, deadline - time.monotonic())))
            except KafkaException as e:
                refused = self._failedAuthentication()
                if refused is not None:
                    raise refused from None
                if time.monotonic() >= deadline:
                    raise _unreachable(self.servers, e.args[0], self.timeoutS) from None

    def partitionsFor(self, name: str) -> int | None:
        """Number of partitions of ``name`` on the cluster, or None if it does not exist.

        Raises
        ------
        kspark.StreamsException
            With Kafka's ``TopicAuthorizationException`` text if the principal may not describe it.
        """
        from confluent_kafka import KafkaError

        topic = self._metadata(name).topics.get(name)
        if topic is not None and topic.error is not None and topic.error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED:
            raise topicAuthorizationException([name])
        if topic is None or topic.error is not None:
            return None
        return len(topic.partitions)

    def checkAuthorized(self, reads: Iterable[str], writes: Iterable[str]) -> None:
        """Check that the principal may read ``reads`` and write ``writes`` (the topics' authorized
        operations, KIP-430), so that a run fails before its first batch instead of at its first
        write.

        Raises
        ------
        kspark.StreamsException
            With Kafka's ``TopicAuthorizationException`` text naming every topic it may not
            read or write.
        """
        from confluent_kafka import KafkaError, KafkaException, TopicCollection
        from confluent_kafka.admin import AclOperation

        needs = {t: {AclOperation.READ} for t in reads}
        for t in writes:
            needs.setdefault(t, set()).add(AclOperation.WRITE)
        if not needs:
            return
        futures = self._adminClient().describe_topics(TopicCollection(sorted(needs)), request_timeout=self.timeoutS,
                                                      include_authorized_operations=True)
        denied = []
        for name, future in futures.items():
            try:
                allowed = self._await(future).authorized_operations
            except KafkaException as e:
                if e.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED:
                    denied.append(name)
                    continue
                raise
            if allowed is not None and AclOperation.ALL not in allowed and not needs[name] <= set(allowed):
                denied.append(name)
        if denied:
            raise topicAuthorizationException(denied)

    def _led(self, name: str, numPartitions: int) -> bool:
        """Whether ``name`` has ``numPartitions`` partitions, each with a leader."""
        topic = self._metadata(name).topics.get(name)
        return (topic is not None and topic.error is None and len(topic.partitions) == numPartitions
                and all(p.leader >= 0 for p in topic.partitions.values()))

    def listTopics(self) -> list[str]:
        """Names of the cluster's topics (internal ones excluded), sorted."""
        return sorted(t for t in self._metadata().topics if not t.startswith("__"))

    def createTopic(self, name: str, numPartitions: int, *, ifNotExists: bool = False,
                    config: Mapping[str, str] | None = None, replicationFactor: int = -1) -> None:
        """Create ``name`` on the cluster (``replicationFactor`` -1: the broker's
        ``default.replication.factor``) and wait until its metadata shows every partition.

        Raises
        ------
        TopicExistsException
            If it exists, unless ``ifNotExists`` and it has ``numPartitions`` partitions.
        """
        from confluent_kafka import KafkaError, KafkaException
        from confluent_kafka.admin import NewTopic

        future = self._adminClient().create_topics(
            [NewTopic(name, numPartitions, replicationFactor, config=dict(config or {}))],
            request_timeout=self.timeoutS)[name]
        try:
            self._await(future)
        except KafkaException as e:
            error = e.args[0]
            if error.code() != KafkaError.TOPIC_ALREADY_EXISTS:
                if error.code() in (KafkaError._TRANSPORT, KafkaError._TIMED_OUT):
                    raise _unreachable(self.servers, error, self.timeoutS) from None
                raise ValueError(f"Creating topic {name}: {error.str()}") from None
            existing = self.partitionsFor(name)
            if ifNotExists and existing == numPartitions:
                return
            detail = "" if existing == numPartitions else f" It has {existing} partitions, not {numPartitions}."
            raise TopicExistsException(f"Topic '{name}' already exists.{detail}") from None
        deadline = time.monotonic() + self.timeoutS
        while not self._led(name, numPartitions):  # metadata and leaders follow the creation
            if time.monotonic() > deadline:
                raise _unreachable(self.servers, f"topic {name} was created but its metadata did not appear",
                                   self.timeoutS)
            time.sleep(0.05)

    def deleteTopic(self, name: str) -> None:
        """Delete ``name`` and wait until the cluster no longer lists it."""
        future = self._adminClient().delete_topics([name], request_timeout=self.timeoutS)[name]
        from confluent_kafka import KafkaError, KafkaException

        try:
            self._await(future)
        except KafkaException as e:
            if e.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                raise UnknownTopicOrPartitionException(f"This server does not host this topic-partition: {name}") from None
            raise
        deadline = time.monotonic() + self.timeoutS
        while self.partitionsFor(name) is not None and time.monotonic() < deadline:
            time.sleep(0.05)

    def topicId(self, name: str) -> str | None:
        """The topic's id (Kafka ``Uuid``, base64), new whenever the topic is created again."""
        from confluent_kafka import KafkaException, TopicCollection

        future = self._adminClient().describe_topics(TopicCollection([name]), request_timeout=self.timeoutS)[name]
        try:
            return str(self._await(future).topic_id)
        except KafkaException:
            return None

    # ------------------------------------------------------------------ offsets
    def _listOffsets(self, name: str, spec) -> dict[int, int]:
        from confluent_kafka import IsolationLevel, TopicPartition

        numPartitions = self.partitionsFor(name)
        if numPartitions is None:
            raise UnknownTopicOrPartitionException(f"This server does not host this topic-partition: {name}")
        level = IsolationLevel.READ_COMMITTED if self._readCommitted() else IsolationLevel.READ_UNCOMMITTED
        def listOffsets(attemptS: float) -> dict[int, int]:
            futures = self._adminClient().list_offsets({TopicPartition(name, p): spec for p in range(numPartitions)},
                                                       isolation_level=level, request_timeout=self.timeoutS)
            return {tp.partition: self._await(f, attemptS).offset for tp, f in futures.items()}

        return self._retrying(listOffsets)

    def offsetsForTimes(self, name: str, timestampMs: int) -> dict[int, int]:
        """Partition -> first offset whose record timestamp is at least ``timestampMs``, else the
        end offset (the broker's time index: ``ListOffsets`` with a timestamp)."""
        from confluent_kafka.admin import OffsetSpec

        found = self._listOffsets(name, OffsetSpec.for_timestamp(timestampMs))
        ends = self.endOffsets(name) if any(o < 0 for o in found.values()) else {}
        return {p: o if o >= 0 else ends[p] for p, o in found.items()}

    def _await(self, future, attemptS: float | None = None):
        """``future.result()`` of an admin request; no answer within the timeout raises the
        ``StreamsException`` naming ``bootstrap.servers`` (not a bare ``TimeoutError``). With
        ``attemptS`` (inside :meth:`_retrying`): no answer within ``attemptS`` s raises
        ``_NoAnswer``, and the request is made again."""
        try:
            return future.result(timeout=self.timeoutS if attemptS is None else attemptS)
        except TimeoutError:
            if attemptS is not None:
                raise _NoAnswer from None
            raise _unreachable(self.servers, "no answer to an admin request", self.timeoutS) from None

    def _retrying(self, call):
        """``call(attemptS)``, an idempotent read, again while it fails with a retriable error (a new
        topic's leaders or a restarted broker's coordinators not ready yet) or gets no answer within
        ``attemptS`` (``_ATTEMPT_S``: a request sent to a broker that then stopped is not answered
        even once the broker is back), for at most the timeout."""
        from confluent_kafka import KafkaException

        deadline = time.monotonic() + self.timeoutS
        while True:
            try:
                return call(max(0.05, min(_ATTEMPT_S, deadline - time.monotonic())))
            except _NoAnswer:
                if time.monotonic() >= deadline:
                    raise _unreachable(self.servers, "no answer to an admin request", self.timeoutS) from None
                self._admin = None  # asked again on a new client: the old one may hold the dead connection
            except KafkaException as e:
                if not _transient(e.args[0]) or time.monotonic() > deadline:
                    raise _unreachable(self.servers, e.args[0], self.timeoutS) from None
                time.sleep(0.1)

    def endOffsets(self, name: str) -> dict[int, int]:
        """Partition -> end offset: the last stable offset under ``read_committed`` (records of
        open transactions lie beyond it), else the high watermark."""
        from confluent_kafka.admin import OffsetSpec

        return self._listOffsets(name, OffsetSpec.latest())

    def beginningOffsets(self, name: str) -> dict[int, int]:
        """Partition -> log start offset (records before it were deleted by retention)."""
        from confluent_kafka.admin import OffsetSpec

        return self._listOffsets(name, OffsetSpec.earliest())

    def committedOffsets(self, groupId: str, name: str) -> dict[int, tuple[int, str | None]]:
        """Partition -> (offset, metadata) committed by consumer group ``groupId`` for ``name``
        (partitions without a committed offset are left out; none for a topic that does not exist)."""
        from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

        numPartitions = self.partitionsFor(name) or 0
        if numPartitions == 0:  # no such topic (yet): nothing committed
            return {}
        request = ConsumerGroupTopicPartitions(groupId, [TopicPartition(name, p) for p in range(numPartitions)])
        result = self._retrying(lambda attemptS: self._await(self._adminClient().list_consumer_group_offsets(
            [request], request_timeout=self.timeoutS, require_stable=True)[groupId], attemptS))
        return {tp.partition: (tp.offset, _metadataOf(tp)) for tp in result.topic_partitions if tp.offset >= 0}

    # ------------------------------------------------------------------ reads
    def readBatches(self, name: str, partition: int, start: int, end: int, maxRows: int = 65536) -> Iterator[pa.Table]:
        """The records with offsets in ``[start, end)`` as ``READ_SCHEMA`` tables, read by a
        consumer assigned to the partition (aborted records and control records are not
        delivered under ``read_committed``, so offsets can have gaps).

        Raises
        ------
        OffsetOutOfRangeException
            If ``start`` is no longer in the log (deleted by retention), naming the topic,
            partition and offset.
        kspark.StreamsException
            If the range cannot be read within 30 s of the last progress.
        """
        if start >= end:
            return
        from confluent_kafka import KafkaError, TopicPartition

        from ..runtime.stream_task import encodeHeaders

        consumer = _pooledConsumer(self.consumerConfig)
        consumer.assign([TopicPartition(name, partition, start)])
        try:
            pending: list = []  # messages of the range not yet yielded, in offset order
            deadline = time.monotonic() + self.timeoutS
            done = False
            while not done:
                messages = consumer.consume(num_messages=min(maxRows, 100_000), timeout=0.05)
                if messages:
                    data = [m for m in messages if m.error() is None]
                    if data:  # progress; error events (a broker down: one per reconnect) are not
                        deadline = time.monotonic() + self.timeoutS
                    for m in messages if len(data) < len(messages) else ():
                        error = m.error()
                        if error is None:
                            continue
                        code = error.code()
                        if code == KafkaError._PARTITION_EOF:
                            done = done or m.offset() >= end  # else the log end is below the plan: wait
                        elif code in (KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE):
                            raise OffsetOutOfRangeException(
                                f"Offset {start} of {name}-{partition} is out of range (the log starts later): {error.str()}")
                        elif error.fatal() or not error.retriable():
                            raise _unreachable(self.servers, f"reading {name}-{partition} at {start}: {error.str()}",
                                               self.timeoutS)
                    if data and data[-1].offset() >= end - 1:  # the range's last offset reached: cut there
                        done = True
                        offsets = [m.offset() for m in data]
                        data = data[:bisect.bisect_left(offsets, end)]
                    pending += data
                while len(pending) >= maxRows or (done and pending):
                    chunk, pending = pending[:maxRows], pending[maxRows:]
                    yield _messagesTable(chunk, encodeHeaders)
                if not done and time.monotonic() > deadline:
                    raise _unreachable(self.servers, f"reading {name}-{partition} [{start}, {end}) made no progress",
                                      self.timeoutS)
        finally:
            consumer.unassign()

    # ------------------------------------------------------------------ writes
    def produce(self, name: str, records: Iterable[tuple], *,
                partitioner: Callable[[bytes | None, int], int]) -> dict[int, int]:
        """Produce ``(key, value, timestamp_ms[, headers])`` records with an idempotent producer
        and wait until every one is acknowledged; returns partition -> records written.

        Raises
        ------
        UnknownTopicOrPartitionException
            If the topic does not exist.
        kspark.StreamsException
            If a record is not acknowledged, with the broker's error.
        """
        from confluent_kafka import Producer

        from ..errors import StreamsException

        numPartitions = self.partitionsFor(name)
        if numPartitions is None:
            raise UnknownTopicOrPartitionException(f"This server does not host this topic-partition: {name}")
        producer = Producer({**FAILED_DELIVERIES_ONLY, **self.producerConfig, "enable.idempotence": "true", "linger.ms": "20",
                             "logger": _librdkafkaLog})
        errors: list = []
        counts: dict[int, int] = {}

        delivered = _deliveryErrors(errors)
        for record in records:
            key, value, timestamp = record[:3]
            partition = partitioner(key, numPartitions)
            _produce(producer, name, partition, key, value, timestamp, record[3] if len(record) > 3 else None, delivered)
            counts[partition] = counts.get(partition, 0) + 1
        if producer.flush(self.timeoutS) > 0 or errors:
            raise StreamsException(f"Producing to {name} failed: {errors[0] if errors else 'not acknowledged in time'}")
        return dict(sorted(counts.items()))

    def close(self) -> None:
        self._admin = None


def _metadataOf(tp) -> str | None:
    """``tp.metadata`` of a committed offset, read around librdkafka issue #4649: librdkafka hands
    over committed metadata without a terminating NUL, and confluent-kafka copies it up to the
    next NUL in memory, so the string can carry bytes of whatever followed it (issue 33's test
    saw a ``UnicodeDecodeError`` on Kafka Streams' 12 characters of base64). The string is then
    read from the ``TopicPartition``'s C field as Latin-1, garbage included: the readers of
    kspark's and Kafka Streams' metadata (``decodeStreamsMetadata``, ``_committedBatch``) stop
    where its format ends. None if that field cannot be found."""
    try:
        return tp.metadata
    except UnicodeDecodeError:
        pass
    import ctypes

    offset = _metadataFieldOffset()
    if offset is None:
        return None
    pointer = ctypes.c_void_p.from_address(id(tp) + offset).value
    return None if not pointer else ctypes.string_at(pointer).decode("latin-1")


_METADATA_FIELD: list = []


def _metadataFieldOffset() -> int | None:
    """The offset of confluent-kafka's ``TopicPartition`` C field ``metadata`` (a ``char *``),
    found on a probe object whose other fields hold small numbers; None if not found."""
    if not _METADATA_FIELD:
        import ctypes

        from confluent_kafka import TopicPartition

        probe = TopicPartition("kspark-probe-topic", 1, 2, metadata="kspark-probe-metadata", leader_epoch=3)
        found = None
        for offset in range(16, type(probe).__basicsize__ - 7, 8):
            pointer = ctypes.c_void_p.from_address(id(probe) + offset).value
            if pointer and pointer > 1 << 16 and ctypes.string_at(pointer, 22) == b"kspark-probe-metadata\x00":
                found = offset
                break
        _METADATA_FIELD.append(found)
    return _METADATA_FIELD[0]


def _transient(error) -> bool:
    """Whether ``error`` passes by itself (librdkafka's retriable flag is not set on every admin
    response error, e.g. a group coordinator still loading its offsets)."""
    from confluent_kafka import KafkaError

    return error.retriable() or error.code() in (
        KafkaError._NOENT,  # "Failed to query partition leaders: No leaders found": a broker starting up
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS, KafkaError.COORDINATOR_NOT_AVAILABLE, KafkaError.NOT_COORDINATOR,
        KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE, KafkaError.REQUEST_TIMED_OUT)


def _messagesTable(messages: list, encodeHeaders) -> pa.Table:
    """Consumed messages as a ``READ_SCHEMA`` table (one comprehension per column: a call per
    record and column is the cost of reading Kafka from Python)."""
    headers = [m.headers() for m in messages]
    return pa.Table.from_arrays(
        [pa.array([m.offset() for m in messages], pa.int64()),
         pa.array([m.timestamp()[1] for m in messages], pa.int64()),
         pa.array([m.key() for m in messages], pa.binary()), pa.array([m.value() for m in messages], pa.binary()),
         pa.array([encodeHeaders(tuple(h)) if h else None for h in headers], pa.binary())],
        schema=READ_SCHEMA)


def _produce(producer, topic, partition, key, value, timestamp, headers, callback) -> None:
    """``producer.produce`` that waits for room when librdkafka's local queue is full.

    The arguments go by position, in ``Producer.produce``'s order (topic, value, key, partition,
    callback, on_delivery, timestamp, headers): its keyword parsing cost as much as the rest of
    the call (0.8 against 0.4 µs, bench/README.md round 32)."""
    while True:
        try:
            if headers:
                producer.produce(topic, value, key, partition, callback, None, timestamp, _headerList(headers))
            else:
                producer.produce(topic, value, key, partition, callback, None, timestamp)
            return
        except BufferError:
            producer.poll(0.05)


def _headerList(headers: tuple) -> list:
    """A record's ``(key, value)`` headers as ``produce`` takes them: values as bytes (or None),
    as the staged ``headers`` column gives them back (``encodeHeaders``/``decodeHeaders``)."""
    return [(k, v if v is None or type(v) is bytes else bytes(v)) for k, v in headers]


def _produceRecords(producer, produced: list, callback) -> int:
    """Produce a task's drained output (``ProducedRecord`` tuples and ``ProducedColumns``, as
    ``StreamTask.drainProducedChunks`` gives it) record by record, in its order; returns the
    records produced. The same records (topic, partition, timestamp, key, value, headers) in the
    same order per partition as staging them (``_producedParts``) then ``_produceTable``, without
    the Arrow tables in between (the stream threads, bench/README.md round 32).

    Raises ``ValueError`` for a record with a null partition, as staging does."""
    from ..runtime.stream_task import ProducedColumns

    def rows(item) -> Iterable[tuple]:
        if type(item) is not ProducedColumns:
            return (item,)
        n = len(item.timestamps)
        return zip(repeat(item.topic, n), item.partitions.tolist(), item.timestamps.tolist(), item.keys.to_pylist(),
                   item.values.to_pylist(), item.headers if item.headers is not None else repeat((), n))

    return _produceRows(producer, chain.from_iterable(map(rows, produced)), callback)


def _produceChangelog(producer, records: list, partition: int, callback) -> int:
    """Produce changelog records (``PersistentTaskState.flush``'s ``(topic, key, value,
    timestamp, headers)`` tuples) to ``partition`` in their order, as ``_produceRecords``; a None
    timestamp is the time they are sent, as staging stamps them (``_changelogColumns``)."""
    now = int(time.time() * 1000)
    return _produceRows(producer, ((topic, partition, now if timestamp is None else timestamp, key, value, headers)
                                   for topic, key, value, timestamp, headers in records), callback)


def _produceRows(producer, rows: Iterable[tuple], callback) -> int:
    """``producer.produce`` of each ``(topic, partition, timestamp, key, value, headers)`` row."""
    n = 0
    zeros: dict = {}
    produce = producer.produce
    for topic, partition, timestamp, key, value, headers in rows:
        if partition is None:
            raise ValueError("A produced record has a topic but a null partition")
        if timestamp == 0:
            zeros[(topic, partition)] = zeros.get((topic, partition), 0) + 1
        try:
            if headers:
                produce(topic, value, key, partition, callback, None, timestamp, _headerList(headers))
            else:
                produce(topic, value, key, partition, callback, None, timestamp)
        except BufferError:
            _produce(producer, topic, partition, key, value, timestamp, headers, callback)
        n += 1
        if n & 0x3FFF == 0:
            producer.poll(0)
    producer.poll(0)
    for (topic, partition), count in zeros.items():
        _warnTimestampZero(topic, partition, count)
    return n


def _warnTimestampZero(topic: str, partition: int, n: int) -> None:
    log.warning("%d records to %s-%d have timestamp 0, which librdkafka (Kafka's C client) replaces by the "
                "time they are produced", n, topic, partition)


_CONSUMERS: dict[tuple, object] = {}


def _pooledConsumer(config: Mapping[str, str]):
    """A consumer for assigned reads, kept per process and configuration (creating one costs a
    metadata round trip); it never joins its group nor commits."""
    key = tuple(sorted(config.items()))
    consumer = _CONSUMERS.get(key)
    if consumer is None:
        from confluent_kafka import Consumer

        consumer = _CONSUMERS[key] = Consumer({**_readerConfig(config), "logger": _librdkafkaLog})
    return consumer


# Fetch sizes of the reader's consumer unless the user set either (consumer.max.partition.fetch.bytes,
# consumer.fetch.max.bytes): a range read wants the partition in few large fetches. With
# librdkafka's 1 MB per partition, reading P2's prices waited on fetch round trips half the
# time: 7.6 against 3.3 us per record with 16 MB (bench/README.md, round 16).
_READER_FETCH_BYTES = {"max.partition.fetch.bytes": str(16 << 20), "fetch.max.bytes": str(64 << 20)}

# librdkafka postpones a partition's next fetch by fetch.queue.backoff.ms (default 1000) once its
# local queue holds queued.min.messages (100K); a 16 MB fetch of small records does. The pooled
# reader then waited about 1 s at the start of almost every range after its first (each
# micro-batch's, each part of a split range): P1-kafka's records, 250K offsets read as the range
# after the one before, 1.35-1.44 s against 0.45-0.52 s with 10 ms (bench/README.md, round 17).
# A consumer configuration that sets it keeps its value (librdkafka's own key: Java has none).
_READER_FETCH_QUEUE_BACKOFF_MS = "10"


def _readerConfig(config: Mapping[str, str]) -> dict[str, str]:
    """The librdkafka configuration of ``_pooledConsumer`` for ``config`` (the consumer client
    configs): a reader that never commits and stops at the end of the planned range."""
    fetchBytes = {} if set(_READER_FETCH_BYTES) & set(config) else _READER_FETCH_BYTES
    return {
        **fetchBytes, "fetch.queue.backoff.ms": _READER_FETCH_QUEUE_BACKOFF_MS, **config,
        "group.id": config.get("group.id", "kspark-reader"), "enable.auto.commit": "false",
        "enable.auto.offset.store": "false", "enable.partition.eof": "true", "auto.offset.reset": "error",
        # a range ends where it was planned: a fetch that finds nothing new (a partition whose
        # last offset is a commit marker) should answer at once, not after Kafka's 500 ms
        "fetch.wait.max.ms": config.get("fetch.wait.max.ms", "10"),
    }


# ---------------------------------------------------------------------- transactional sink
_PRODUCERS: dict[str, object] = {}


class _ProducerOwners:
    """Which process on this machine last initialized each transactional id: one small file
    per id in the temporary directory, holding ``<pid> <nonce>`` of the latest
    ``init_transactions``.

    A writer task moves between Python workers from one micro-batch to the next, and each
    worker's ``init_transactions`` fences the producer the id's previous worker keeps. Without
    this, the next worker to get the task found out from the broker: its first request failed
    as fenced, the transaction was aborted and the batch written again with a new producer, on
    the batch's critical path (bench/README.md, round 19). With it, a worker sees that another
    process has taken the id since, and makes its new producer before its records arrive
    (:meth:`KafkaSinkWriter.prepare`). Only a hint: a producer is fenced by the broker as before
    (on a cluster, a worker on another machine is not seen here)."""

    def __init__(self) -> None:
        import tempfile
        import uuid

        self._dir = os.path.join(tempfile.gettempdir(), f"kspark-producer-owners-{os.getuid()}")
        self._me = f"{os.getpid()} {uuid.uuid4().hex}"

    def _path(self, transactionalId: str) -> str:
        import hashlib

        return os.path.join(self._dir, hashlib.sha256(transactionalId.encode()).hexdigest()[:32])

    def claim(self, transactionalId: str) -> None:
        """Record this process as the id's latest initializer."""
        try:
            os.makedirs(self._dir, exist_ok=True)
            path = self._path(transactionalId)
            tmp = f"{path}.{os.getpid()}.tmp"
            with open(tmp, "w") as f:
                f.write(self._me)
            os.replace(tmp, path)
        except OSError:
            pass

    def mine(self, transactionalId: str) -> bool:
        """Whether no other process on this machine claimed the id after this one did."""
        try:
            with open(self._path(transactionalId)) as f:
                return f.read() == self._me
        except OSError:
            return True  # no record: let the broker tell


_OWNERS: _ProducerOwners | None = None


def _owners() -> _ProducerOwners:
    global _OWNERS
    if _OWNERS is None or not _OWNERS._me.startswith(f"{os.getpid()} "):  # a forked worker makes its own
        _OWNERS = _ProducerOwners()
    return _OWNERS
_MARK = "kspark1"


def encodeStreamsMetadata(partitionTime: int, processorMetadata: Mapping[str, int]) -> str:
    """Offset commit metadata as Kafka Streams writes it (``TopicPartitionMetadata.encode``):
    base64 of ``[2][partition time: long][processor metadata]``, the processor metadata
    ``[entries: int]`` then per entry ``[key length: int][key: UTF-8][value: long]`` (none when
    empty); a partition time of -1 is unknown (Kafka ``RecordQueue.UNKNOWN``)."""
    import base64

    meta = b""
    if processorMetadata:
        meta = struct.pack(">i", len(processorMetadata)) + b"".join(
            struct.pack(">i", len(k.encode())) + k.encode() + struct.pack(">q", v) for k, v in processorMetadata.items())
    return base64.b64encode(b"\x02" + struct.pack(">q", partitionTime) + meta).decode("ascii")


def decodeStreamsMetadata(text: str | None) -> tuple[int, dict[str, int]] | None:
    """(partition time, processor metadata) of Kafka Streams' offset commit metadata (format 1 or
    2, ``TopicPartitionMetadata.decode``); None for metadata of another form (Kafka then logs
    "Unsupported offset metadata" and takes the partition time as unknown)."""
    import base64
    import binascii

    if not text:
        return None
    # the base64 text, without anything after it (librdkafka issue #4649: see _metadataOf)
    found = _BASE64_PREFIX.match(text)
    encoded = found.group(0) if found else ""
    encoded = encoded[:len(encoded) // 4 * 4]
    try:
        data = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        return None
    if data[:1] not in (b"\x01", b"\x02") or len(data) < 9:
        return None
    (partitionTime,) = struct.unpack_from(">q", data, 1)
    processorMetadata: dict[str, int] = {}
    if data[:1] == b"\x02" and len(data) > 9:
        try:
            (n,), pos = struct.unpack_from(">i", data, 9), 13
            for _ in range(n):
                (size,) = struct.unpack_from(">i", data, pos)
                key = data[pos + 4:pos + 4 + size].decode("utf-8")
                (processorMetadata[key],) = struct.unpack_from(">q", data, pos + 4 + size)
                pos += 12 + size
        except (struct.error, UnicodeDecodeError, ValueError):
            processorMetadata = {}  # bytes after the partition time that are not processor metadata
    return partitionTime, processorMetadata


_BASE64_PREFIX = re.compile(r"[A-Za-z0-9+/]*={0,2}")


def batchMarker(checkpointId: str, batchId: int, partitionTime: int = -1) -> str:
    """The metadata committed with a micro-batch's input offsets: Kafka Streams' own
    (:func:`encodeStreamsMetadata`: the partition's time, so a Kafka Streams application taking
    the application over resumes with it) with the processor metadata entry
    ``kspark1:<checkpoint id>`` = batch id: which checkpoint (Spark's query id, new for every new
    checkpoint) and batch wrote them. Kafka Streams keeps processor metadata entries it does not
    know and commits them again.

    Committed through :func:`sendOffsetsToTransaction`, byte for byte (no NUL after it), so
    that Kafka Streams' strict Base64 decoder reads it."""
    return encodeStreamsMetadata(partitionTime, {f"{_MARK}:{checkpointId}": batchId})


def sendOffsetsToTransaction(producer, offsets: list, groupMetadata: bytes, timeoutS: float) -> None:
    """``producer.send_offsets_to_transaction(offsets, groupMetadata, timeoutS)`` committing each
    offset's metadata string as exactly its UTF-8 bytes, as Kafka's Java clients do.

    confluent-kafka's own call commits a NUL byte after every metadata string (``py_to_c_parts``
    in its ``confluent_kafka.c`` sets ``metadata_size = strlen(metadata) + 1``; librdkafka sends
    ``metadata_size`` bytes as the protocol's metadata string). Kafka Streams' strict Base64
    decoder (``TopicPartitionMetadata.decode``) refuses such metadata: it logs "Unsupported
    offset metadata found" and takes the partition time as unknown, so a Java application that
    takes a kspark application back would lose its partition times. This function therefore
    builds librdkafka's ``rd_kafka_topic_partition_list_t`` itself (through ctypes, on the
    librdkafka that confluent-kafka loaded) with ``metadata_size = len(metadata)`` and calls
    ``rd_kafka_send_offsets_to_transaction`` on the producer's ``rd_kafka_t``. Where that
    handle cannot be found (another Python build or confluent-kafka layout), it falls back to
    confluent-kafka's call, with a warning naming the consequence.

    Raises
    ------
    confluent_kafka.KafkaException
        librdkafka's error, with its retriable, fatal and abort-required flags, as
        confluent-kafka raises it.
    """
    from confluent_kafka import cimpl

    if not isinstance(producer, cimpl.Producer):  # a test double
        producer.send_offsets_to_transaction(offsets, groupMetadata, timeoutS)
        return
    lib = _rdkafka()
    handle = _producerHandle(producer, lib)
    if handle is None:
        producer.send_offsets_to_transaction(offsets, groupMetadata, timeoutS)
        return
    import ctypes

    cgmd = ctypes.c_void_p()
    raw = bytes(groupMetadata)
    _raiseRdkafka(lib, lib.rd_kafka_consumer_group_metadata_read(ctypes.byref(cgmd), raw, len(raw)))
    parts = lib.rd_kafka_topic_partition_list_new(len(offsets))
    try:
        for tp in offsets:
            element = lib.rd_kafka_topic_partition_list_add(parts, tp.topic.encode(), tp.partition).contents
            element.offset = tp.offset
            if tp.metadata is not None:
                data = tp.metadata.encode("utf-8")
                buffer = lib.malloc(max(len(data), 1))  # freed by rd_kafka_topic_partition_list_destroy
                ctypes.memmove(buffer, data, len(data))
                element.metadata = buffer
                element.metadata_size = len(data)
        _raiseRdkafka(lib, lib.rd_kafka_send_offsets_to_transaction(handle, parts, cgmd, int(timeoutS * 1000)))
    finally:
        lib.rd_kafka_topic_partition_list_destroy(parts)
        lib.rd_kafka_consumer_group_metadata_destroy(cgmd)


_RDKAFKA: list = []


def _rdkafka():
    """librdkafka's C functions used by :func:`sendOffsetsToTransaction`, looked up through
    confluent-kafka's extension module (so the very librdkafka it loaded, wheel or system)."""
    if not _RDKAFKA:
        import ctypes

        from confluent_kafka import cimpl

        class Partition(ctypes.Structure):  # rd_kafka_topic_partition_t (rdkafka.h, stable ABI)
            _fields_ = [("topic", ctypes.c_char_p), ("partition", ctypes.c_int32), ("offset", ctypes.c_int64),
                        ("metadata", ctypes.c_void_p), ("metadata_size", ctypes.c_size_t),
                        ("opaque", ctypes.c_void_p), ("err", ctypes.c_int), ("_private", ctypes.c_void_p)]

        lib = ctypes.CDLL(cimpl.__file__)
        lib.malloc = ctypes.CDLL(None).malloc
        lib.malloc.restype, lib.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
        signatures = {
            "rd_kafka_topic_partition_list_new": (ctypes.c_void_p, [ctypes.c_int]),
            "rd_kafka_topic_partition_list_add": (ctypes.POINTER(Partition),
                                                  [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int32]),
            "rd_kafka_topic_partition_list_destroy": (None, [ctypes.c_void_p]),
            "rd_kafka_consumer_group_metadata_read": (ctypes.c_void_p, [ctypes.POINTER(ctypes.c_void_p),
                                                                        ctypes.c_char_p, ctypes.c_size_t]),
            "rd_kafka_consumer_group_metadata_destroy": (None, [ctypes.c_void_p]),
            "rd_kafka_send_offsets_to_transaction": (ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_void_p,
                                                                       ctypes.c_void_p, ctypes.c_int]),
            "rd_kafka_name": (ctypes.c_char_p, [ctypes.c_void_p]),
            "rd_kafka_error_code": (ctypes.c_int, [ctypes.c_void_p]),
            "rd_kafka_error_string": (ctypes.c_char_p, [ctypes.c_void_p]),
            "rd_kafka_error_is_fatal": (ctypes.c_int, [ctypes.c_void_p]),
            "rd_kafka_error_is_retriable": (ctypes.c_int, [ctypes.c_void_p]),
            "rd_kafka_error_txn_requires_abort": (ctypes.c_int, [ctypes.c_void_p]),
            "rd_kafka_error_destroy": (None, [ctypes.c_void_p]),
        }
        for name, (restype, argtypes) in signatures.items():
            function = getattr(lib, name)
            function.restype, function.argtypes = restype, argtypes
        _RDKAFKA.append(lib)
    return _RDKAFKA[0]


def _producerHandle(producer, lib) -> int | None:
    """The ``rd_kafka_t *`` of a confluent-kafka ``Producer``: the first field after
    ``PyObject_HEAD`` of its C struct ``Handle`` (``confluent_kafka.h``), checked by the client
    name librdkafka gives it (``<client.id>#producer-<n>``). None, with a warning, if not there."""
    import ctypes

    if type(producer).__basicsize__ >= object.__basicsize__ + ctypes.sizeof(ctypes.c_void_p):
        pointer = ctypes.c_void_p.from_address(id(producer) + object.__basicsize__).value
        if pointer and pointer > 1 << 16:
            name = lib.rd_kafka_name(pointer) or b""
            if b"#producer-" in name:
                return pointer
    if not _HANDLE_WARNED:
        _HANDLE_WARNED.append(True)
        log.warning("librdkafka's producer handle was not found in confluent-kafka's Producer: offsets are committed "
                    "through confluent-kafka, with a NUL byte after their metadata, which Kafka Streams cannot read "
                    "(a Java application taking this one over starts with unknown partition times)")
    return None


_HANDLE_WARNED: list = []


def _raiseRdkafka(lib, error) -> None:
    """Raise librdkafka's ``rd_kafka_error_t *`` (if any) as confluent-kafka's KafkaException."""
    if not error:
        return
    from confluent_kafka import KafkaError, KafkaException

    try:
        raised = KafkaException(KafkaError(lib.rd_kafka_error_code(error),
                                           (lib.rd_kafka_error_string(error) or b"").decode("utf-8", "replace"),
                                           fatal=bool(lib.rd_kafka_error_is_fatal(error)),
                                           retriable=bool(lib.rd_kafka_error_is_retriable(error)),
                                           txn_requires_abort=bool(lib.rd_kafka_error_txn_requires_abort(error))))
    finally:
        lib.rd_kafka_error_destroy(error)
    raise raised


def initTransactions(producer, timeoutS: float) -> None:
    """``producer.init_transactions(timeoutS)`` once a metadata request brought a broker
    connection up. librdkafka's ProducerId state machine, finding the transaction coordinator
    not connected yet, tries again only after a 500 ms timer (``rd_kafka_idemp_pid_fsm``,
    "Coordinator not up"); a new producer's ``init_transactions`` took 0.51 s on one local
    broker, 0.01 s after the metadata request (0.06 s)."""
    producer.list_topics(timeout=timeoutS)
    producer.init_transactions(timeoutS)


def _bounded(call: Callable[[], object], timeoutS: float, what: str):
    """``call()`` (a blocking librdkafka transaction call given its own timeout) in a helper
    thread, given up after ``timeoutS`` seconds with a retriable ``KafkaException(_TIMED_OUT)``.

    librdkafka's ``send_offsets_to_transaction`` can block past its timeout, forever, when the
    group coordinator went away and came back (a broker restart: librdkafka issues #5456 and
    #5511); kspark's broker-outage test hung on it. The writer then drops that producer (its
    thread stays blocked in C), and the next attempt's producer fences it with
    ``init_transactions``.
    """
    import threading

    from confluent_kafka import KafkaError, KafkaException

    outcome: dict = {}

    def run() -> None:
        try:
            outcome["value"] = call()
        except BaseException as e:  # noqa: BLE001 - handed to the caller
            outcome["error"] = e

    thread = threading.Thread(target=run, name=f"kspark-{what}", daemon=True)
    thread.start()
    thread.join(timeoutS)
    if thread.is_alive():
        raise KafkaException(KafkaError(KafkaError._TIMED_OUT, f"{what} did not return within {timeoutS:g} s",
                                        retriable=True))
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")


def _committedBatch(metadata: str | None, checkpointId: str) -> int | None:
    """The batch id of ``checkpointId`` in committed metadata (:func:`batchMarker`'s, or
    ``kspark1:<checkpoint id>:<batch id>`` as kspark wrote it before), else None."""
    decoded = decodeStreamsMetadata(metadata)
    if decoded is not None:
        return decoded[1].get(f"{_MARK}:{checkpointId}")
    found = re.match(rf"{_MARK}:([^:]+):(\d+)", metadata or "")
    if found and found.group(1) == checkpointId:
        return int(found.group(2))
    return None


class KafkaSinkWriter:
    """Writes one Spark task's output of one micro-batch to Kafka (executor side).

    ``at_least_once``: an idempotent producer; the write returns once every record is
    acknowledged, so a batch is never committed by Spark before its records are in Kafka (a
    replayed batch can write them again).

    ``exactly_once_v2``: a transactional producer with ``transactional.id`` =
    ``<transactionalIdPrefix>-<writer>`` (stable per application, sub-topology and writer task, so
    a retried or restarted writer fences the old one and aborts its open transaction). One
    transaction per task and batch holds the records and the task's input positions, committed
    to the consumer group ``application.id`` with ``send_offsets_to_transaction`` and the
    metadata ``kspark1:<checkpoint id>:<batch id>``. Before writing, the writer reads the group's
    committed metadata for its positions: when it names this checkpoint and this batch (or a
    later one), the batch was already committed by an earlier attempt and nothing is written.
    """

    def __init__(self, producerConfig: Mapping[str, str], consumerConfig: Mapping[str, str], groupId: str,
                 exactlyOnce: bool, transactionalIdPrefix: str, ownerClientId: str | None = None) -> None:
        self.producerConfig = dict(producerConfig)
        self.consumerConfig = dict(consumerConfig)
        self.groupId = groupId
        self.exactlyOnce = exactlyOnce
        self.prefix = transactionalIdPrefix
        self.ownerClientId = ownerClientId
        self.onStep = None  # callable(step name), called as a write passes each step (timing only)

    def write(self, writer: int, checkpointId: str, batchId: int, parts: list[tuple[str, int, pa.Table]],
              positions: dict[tuple[str, int], int], partitionTimes: dict[tuple[str, int], int] | None = None) -> int:
        """Write ``parts`` — ``(topic, partition, RECORD_SCHEMA table)`` in order — and, under
        exactly-once, commit ``positions`` ((topic, partition) -> next offset) with them, each
        with its partition time from ``partitionTimes`` (-1 where unknown) in the metadata.

        Under exactly-once the offsets are sent first in the transaction (a round trip to the
        coordinator that tells a producer it was fenced before it sends any record: a writer
        task moves between Python workers, and the newest one's producer fences the others);
        a fenced or otherwise failed transaction is aborted by the broker, so the writer takes
        its transactional id back and writes the batch again, up to three times.

        Returns the records written (0 when an earlier attempt already committed this batch).

        Raises
        ------
        kspark.StreamsException
            If the transaction fails three times (e.g. two attempts of this writer task keep
            fencing each other), or a record is not acknowledged.
        """
        from confluent_kafka import KafkaException, TopicPartition

        if not self.exactlyOnce:
            return self._writeIdempotent(parts)
        transactionalId = f"{self.prefix}-{writer}"
        times = partitionTimes or {}
        offsets = [TopicPartition(t, p, o, batchMarker(checkpointId, batchId, times.get((t, p), -1)))
                   for (t, p), o in sorted(positions.items())]
        step = self.onStep or (lambda name: None)
        for attempt in range(3):
            producer = self._transactionalProducer(transactionalId)
            errors: list = []
            try:
                step("producer")
                if positions and self._alreadyCommitted(positions, checkpointId, batchId):
                    log.info("%s: batch %d already committed by an earlier attempt; nothing written",
                             transactionalId, batchId)
                    return 0
                step("checked")
                producer.begin_transaction()
                if offsets:
                    metadata = self._groupMetadata()
                    _bounded(lambda: sendOffsetsToTransaction(producer, offsets, metadata, _TIMEOUT_S),
                             _TIMEOUT_S * 1.2, "send_offsets_to_transaction")
                step("offsetsSent")
                written = sum(_produceTable(producer, t, p, table, _deliveryErrors(errors)) for t, p, table in parts)
                step("produced")
                _bounded(lambda: producer.commit_transaction(_TIMEOUT_S * 4), _TIMEOUT_S * 4.8, "commit_transaction")
                step("committed")
                if errors:  # not expected after a successful commit, but never silently
                    raise _sinkError(transactionalId, errors[0])
                return written
            except KafkaException as e:
                _PRODUCERS.pop(transactionalId, None)
                if _fenced(e):
                    self._failIfFencedByAnotherInstance(transactionalId, e)
                try:
                    producer.abort_transaction(_TIMEOUT_S)
                except KafkaException:
                    pass
                if attempt == 2 or any(_denied(err) for err in errors):  # ACLs do not change by retrying
                    raise _sinkError(transactionalId, errors[0] if errors else e) from None
                log.info("%s: batch %d transaction failed (%s); writing it again", transactionalId, batchId, e)
        raise AssertionError("unreachable")

    def _failIfFencedByAnotherInstance(self, transactionalId: str, error) -> None:
        """A producer fenced while the group ``application.id`` has a member that is not this
        instance's driver (``ownerClientId``): another instance took the task over. Fail with
        Kafka's ``ProducerFencedException`` text rather than take the transactional id back,
        which would fence the other one in turn and interleave their transactions. (Fenced with
        no other member: a newer Python worker of this instance ran the task; its id is taken back.)"""
        if self.ownerClientId is None:
            return
        try:
            others = [m for m in groupMembers(self.consumerConfig, self.groupId) if m.client_id != self.ownerClientId]
        except Exception:  # noqa: BLE001 - cannot tell: fail rather than risk interleaving
            others = None
        if others == []:
            return
        who = f"consumer group {self.groupId} has the member {_describeMember(others[0])}" if others else \
            f"consumer group {self.groupId} could not be described"
        raise _sinkError(transactionalId, f"ProducerFencedException: There is a newer producer with the same "
                                          f"transactionalId which fences the current one. ({who}: another instance of "
                                          f"this application writes its tasks; this one stops. librdkafka: {error})")

    def _writeIdempotent(self, parts) -> int:
        from confluent_kafka import Producer

        key = f"idempotent:{sorted(self.producerConfig.items())}"
        producer = _PRODUCERS.get(key)
        if producer is None:
            producer = _PRODUCERS[key] = Producer({**FAILED_DELIVERIES_ONLY, **self.producerConfig, "enable.idempotence": "true",
                                                   "logger": _librdkafkaLog})
        errors: list = []
        written = sum(_produceTable(producer, t, p, table, _deliveryErrors(errors)) for t, p, table in parts)
        if producer.flush(_TIMEOUT_S * 4) > 0 or errors:
            raise _sinkError("idempotent producer", errors[0] if errors else "records not acknowledged in time")
        return written

    def prepare(self, writer: int) -> None:
        """Under exactly-once, make sure this process holds a current producer for writer
        ``writer``'s transactional id (one that no other process on this machine fenced since
        it was made), making a new one if not: called before the records arrive, so that
        ``init_transactions`` runs while the batch's tasks are still processing. Errors are
        left to :meth:`write`."""
        if not self.exactlyOnce:
            return
        try:
            self._transactionalProducer(f"{self.prefix}-{writer}")
        except Exception:  # noqa: BLE001 - write() tries again and reports it
            pass

    def _transactionalProducer(self, transactionalId: str):
        producer = _PRODUCERS.get(transactionalId)
        if producer is not None and not _owners().mine(transactionalId):
            _PRODUCERS.pop(transactionalId, None)  # fenced by another process's init_transactions
            producer = None
        if producer is None:
            from confluent_kafka import KafkaException, Producer

            conf = dict(self.producerConfig)
            # librdkafka: a record's delivery timeout must fit in the transaction's
            timeout = conf.get("transaction.timeout.ms", "60000")
            if int(conf.get("delivery.timeout.ms", timeout)) > int(timeout):
                conf["delivery.timeout.ms"] = timeout
            producer = Producer({**FAILED_DELIVERIES_ONLY, **conf, "transactional.id": transactionalId,
                                 "logger": _librdkafkaLog})
            _owners().claim(transactionalId)  # before: the previous owner stops using its producer
            try:
                initTransactions(producer, _TIMEOUT_S)  # fences older producers with this id
            except KafkaException as e:
                raise _sinkError(transactionalId, e) from None
            _PRODUCERS[transactionalId] = producer
        return producer

    def _groupConsumer(self):
        return _pooledConsumer({**self.consumerConfig, "group.id": self.groupId, "isolation.level": "read_committed"})

    def _groupMetadata(self):
        return self._groupConsumer().consumer_group_metadata()

    def _alreadyCommitted(self, positions: dict[tuple[str, int], int], checkpointId: str, batchId: int) -> bool:
        from confluent_kafka import TopicPartition

        (topic, partition), _ = min(positions.items())
        committed = self._groupConsumer().committed([TopicPartition(topic, partition)], timeout=_TIMEOUT_S)[0]
        done = _committedBatch(_metadataOf(committed), checkpointId)
        return done is not None and done >= batchId


def _produceTable(producer, topic: str, partition: int, table: pa.Table, callback) -> int:
    from ..runtime.stream_task import decodeHeaders

    keys = table.column("key").to_pylist()
    values = table.column("value").to_pylist()
    timestamps = table.column("timestamp").to_pylist()
    if 0 in timestamps:
        _warnTimestampZero(topic, partition, timestamps.count(0))
    headerCol = table.column("headers")
    headers = [decodeHeaders(h) for h in headerCol.to_pylist()] if headerCol.null_count < len(keys) else None
    for i, (key, value, timestamp) in enumerate(zip(keys, values, timestamps)):
        _produce(producer, topic, partition, key, value, timestamp, headers[i] if headers else None, callback)
        if i & 0x3FFF == 0x3FFF:
            producer.poll(0)
    producer.poll(0)
    return len(keys)


def _fenced(error) -> bool:
    """Whether a confluent-kafka ``KafkaException`` says the producer was fenced (Kafka's
    ``ProducerFencedException`` / ``InvalidProducerEpochException``, librdkafka's ``_FENCED``)."""
    from confluent_kafka import KafkaError

    inner = error.args[0] if error.args else None
    code = inner.code() if isinstance(inner, KafkaError) else None
    return code in (KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH) \
        or "fenced" in str(error).lower()


# librdkafka's delivery reports for failed records only: kspark's producers are all given
# ``_deliveryErrors``' callback, which acts on errors alone. A report for every delivered record
# was a Message built and a Python call per record (about 0.1 CPU-us per record of a stream
# thread's output and changelog, bench/README.md round 36).
FAILED_DELIVERIES_ONLY = {"delivery.report.only.error": True}


def _deliveryErrors(errors: list) -> Callable:
    """A delivery callback that adds each failed record's error to ``errors``: Kafka's
    ``TopicAuthorizationException`` text naming the topic for librdkafka's
    ``TOPIC_AUTHORIZATION_FAILED`` ("Broker: Topic authorization failed"), else librdkafka's error."""
    from confluent_kafka import KafkaError

    def delivered(err, msg) -> None:
        if err is not None:
            denied = err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
            errors.append(topicAuthorizationException([msg.topic()]) if denied else err)

    return delivered


def _denied(error: object) -> bool:
    return "TopicAuthorizationException" in str(error)


def _sinkError(who: str, error: object) -> Exception:
    from ..errors import StreamsException

    return StreamsException(f"Writing to Kafka with {who} failed: {error}")


# ---------------------------------------------------------------------- the application's group
def groupMembers(adminConfig: Mapping[str, str], groupId: str, timeoutS: float = _TIMEOUT_S) -> list:
    """The live members of consumer group ``groupId`` (confluent-kafka ``MemberDescription``:
    ``member_id``, ``client_id``, ``host``), as ``kafka-consumer-groups --describe`` lists them;
    empty for a group without members or none at all."""
    from confluent_kafka.admin import AdminClient

    from confluent_kafka import KafkaError, KafkaException

    admin = AdminClient({**{k: v for k, v in adminConfig.items() if k not in _NOT_ADMIN}, "logger": _librdkafkaLog})
    deadline = time.monotonic() + timeoutS
    while True:
        try:
            description = admin.describe_consumer_groups([groupId], request_timeout=timeoutS)[groupId].result(timeoutS)
            return list(description.members or [])
        except TimeoutError:
            raise _unreachable(adminConfig.get("bootstrap.servers"), "no answer to DescribeGroups", timeoutS) from None
        except KafkaException as e:
            code = e.args[0].code() if e.args and isinstance(e.args[0], KafkaError) else None
            if code == KafkaError.GROUP_ID_NOT_FOUND:
                return []
            # a new cluster's group coordinator (__consumer_offsets) may still be coming up
            if code not in (KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_NOT_AVAILABLE,
                            KafkaError.COORDINATOR_LOAD_IN_PROGRESS) or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


_NOT_ADMIN = {"group.id", "isolation.level", "enable.auto.commit", "auto.offset.reset", "enable.auto.offset.store",
              "session.timeout.ms", "max.poll.interval.ms", "heartbeat.interval.ms", "partition.assignment.strategy",
              "group.instance.id", "fetch.wait.max.ms", "max.partition.fetch.bytes", "fetch.max.bytes",
              "fetch.min.bytes", "enable.partition.eof", "fetch.queue.backoff.ms", "queued.min.messages",
              "queued.max.messages.kbytes", "check.crcs", "client.rack", "transactional.id", "enable.idempotence",
              "acks", "linger.ms", "batch.size", "compression.type", "retries", "delivery.timeout.ms",
              "transaction.timeout.ms", "max.in.flight.requests.per.connection", "message.max.bytes"}


def _describeMember(member) -> str:
    return f"{member.client_id} on host {member.host.lstrip('/')} (member id {member.member_id})"


class GroupMember:
    """The driver of a kspark application as a member of the consumer group ``application.id``,
    as each of a Kafka Streams instance's stream threads is one: ``kafka-consumer-groups
    --describe`` shows it, with the source topics' partitions assigned to it (paused: kspark's
    tasks read them by offset range, and this member never fetches nor commits).

    :meth:`join` refuses to start when the group has a live member that is not this instance
    (another kspark instance, or a Java Kafka Streams instance of the same application): Kafka
    Streams would split the tasks between them, while two kspark instances would each process
    every partition. A member that died leaves the group when its ``session.timeout.ms`` passes.

    Parameters
    ----------
    topics : KafkaTopics
        The application's cluster (its admin and consumer settings).
    groupId : str
        ``application.id``.
    clientId : str
        This member's ``client.id``, unique per instance (the executors' writers tell this
        instance's members from another's by it).
    sourceTopics : list of str
        The topics it subscribes to.
    """

    def __init__(self, topics: "KafkaTopics", groupId: str, clientId: str, sourceTopics: list[str]) -> None:
        self.topics, self.groupId, self.clientId, self.sourceTopics = topics, groupId, clientId, sorted(sourceTopics)
        self._consumer = None
        self._thread = None
        self._stop = threading.Event()
        self._assigned = threading.Event()

    def _refuseIfOthers(self) -> None:
        from ..errors import StreamsException

        others = [m for m in groupMembers(self.topics.adminConfig, self.groupId, self.topics.timeoutS)
                  if m.client_id != self.clientId]
        if others:
            raise StreamsException(
                f"Another instance of application.id {self.groupId} is running: its consumer group has the live "
                f"member {_describeMember(others[0])}"
                + (f" and {len(others) - 1} more" if len(others) > 1 else "")
                + ". Two instances would each process every partition; stop the other one (a member that died "
                "leaves the group when its session.timeout.ms has passed), then start this one again.")

    def join(self) -> None:
        """Check that the group has no other live member, join it and wait for its assignment.

        Raises
        ------
        kspark.StreamsException
            Naming the other member's client id and host, if the group has one (checked before
            and after joining), or if the group is not joined within the admin timeout.
        """
        from confluent_kafka import Consumer

        from ..errors import StreamsException

        self._refuseIfOthers()
        conf = {k: v for k, v in self.topics.consumerConfig.items() if k != "isolation.level"}
        self._consumer = Consumer({**conf, "group.id": self.groupId, "client.id": self.clientId,
                                   "enable.auto.commit": "false", "enable.auto.offset.store": "false",
                                   "logger": _librdkafkaLog})

        def onAssign(consumer, partitions) -> None:
            consumer.assign(partitions)
            consumer.pause(partitions)  # kspark's tasks read by offset range: never fetch here
            self._assigned.set()

        self._consumer.subscribe(self.sourceTopics, on_assign=onAssign)
        self._thread = threading.Thread(target=self._poll, name=f"kspark-group-member-{self.groupId}", daemon=True)
        self._thread.start()
        if not self._assigned.wait(self.topics.timeoutS):
            self.close()
            raise StreamsException(f"The driver did not join consumer group {self.groupId} within "
                                   f"{self.topics.timeoutS:g} s (bootstrap.servers={self.topics.servers})")
        try:
            self._refuseIfOthers()  # another instance that joined at the same time
        except BaseException:
            self.close()
            raise

    def _poll(self) -> None:
        while not self._stop.is_set():
            try:
                self._consumer.poll(0.2)  # heartbeats and rebalances; its partitions are paused
            except Exception:  # noqa: BLE001 - closed meanwhile
                if self._stop.is_set():
                    return
                time.sleep(0.2)

    def close(self) -> None:
        """Leave the group (at once, not after the session timeout)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        if self._consumer is not None:
            try:
                self._consumer.close()
            except Exception:  # noqa: BLE001 - already closed
                pass
            self._consumer = None

"""Secrets never printed: the values of Kafka's ``PASSWORD``-type configuration keys show as
``[hidden]``, as Kafka's ``org.apache.kafka.common.config.types.Password.toString()`` prints them.

``StreamsConfig`` registers the values of such keys (:func:`register`): every ``ConfigDef`` key
of type ``PASSWORD`` of Kafka's clients and of Kafka Streams (``ssl.key.password``,
``sasl.jaas.config``, ``ssl.keystore.password``, ...), under any client prefix, plus the
secrets of the clients kspark uses beside them (librdkafka's ``sasl.password``, Schema
Registry's ``basic.auth.user.info``, ``bearer.auth.token``, ...); for ``sasl.jaas.config`` the
``password="..."`` inside it too. From then on, every log record of the process has them
replaced by ``[hidden]`` (a wrapped ``logging`` record factory, so whatever handler prints it),
and kspark's own outputs (errors, the JVM's stderr, the CLI's messages) pass through
:func:`redact`.
"""

from __future__ import annotations

import logging
import re
import threading
from typing import Any

from . import _config_keys_kafka as _kafka

__all__ = ["HIDDEN", "isSecretKey", "redact", "register"]

HIDDEN = "[hidden]"

_PASSWORD_KEYS = frozenset(key for defs in (_kafka.STREAMS, _kafka.CONSUMER, _kafka.PRODUCER, _kafka.ADMIN)
                           for key, definition in defs.items() if definition[0] == "PASSWORD")
_OTHER_SECRETS = frozenset({
    "sasl.password", "sasl.oauthbearer.client.secret", "ssl.key.pem", "ssl_key",  # librdkafka's names
    "basic.auth.user.info", "bearer.auth.token", "bearer.auth.client.secret",  # Schema Registry clients
})
_PREFIXES = ("main.consumer.", "restore.consumer.", "global.consumer.", "consumer.", "producer.", "admin.",
             "schema.registry.")
_JAAS_SECRET = re.compile(r'\b(?:password|secret|token)\s*=\s*"([^"]*)"', re.IGNORECASE)

_values: set[str] = set()
_lock = threading.Lock()
_installed = False


def isSecretKey(key: str) -> bool:
    """Whether ``key`` (with or without a client prefix) names a secret: a Kafka ``PASSWORD`` key."""
    for prefix in _PREFIXES:
        if key.startswith(prefix):
            key = key[len(prefix):]
            break
    return key in _PASSWORD_KEYS or key in _OTHER_SECRETS


def show(key: str, text: str) -> str:
    """``text`` (a value of ``key`` as printed), or ``[hidden]`` if ``key`` is a secret."""
    return HIDDEN if isSecretKey(key) else text


def register(key: str, value: Any) -> None:
    """Remember ``value`` of ``key`` as a secret if ``key`` is one (see the module doc)."""
    if value is None or not isSecretKey(key):
        return
    text = str(value).strip()
    found = [text, *(m.group(1) for m in _JAAS_SECRET.finditer(text))]
    with _lock:
        _values.update(v for v in found if len(v) >= 3)  # too short to be told from other text
    _installLogRedaction()


def redact(text: str) -> str:
    """``text`` with every registered secret value replaced by ``[hidden]``."""
    if not _values or not text:
        return text
    for value in sorted(_values, key=len, reverse=True):
        if value in text:
            text = text.replace(value, HIDDEN)
    return text


def _installLogRedaction() -> None:
    global _installed
    with _lock:
        if _installed:
            return
        _installed = True
    previous = logging.getLogRecordFactory()

    def factory(*args, **kwargs) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        if _values:
            try:
                message = record.getMessage()
            except Exception:  # noqa: BLE001 - a broken format is the handler's to report
                return record
            hidden = redact(message)
            if hidden != message:
                record.msg, record.args = hidden, None
            if record.exc_info and record.exc_info[0] is not None:
                text = logging.Formatter().formatException(record.exc_info)
                if redact(text) != text:
                    record.exc_text = redact(text)
        return record

    logging.setLogRecordFactory(factory)

"""``Change``: a KTable update (Kafka ``kstream.internals.Change``). Defined below ``state`` because
the suppression buffer store holds them (and its persistent form reads them back from bytes); the
DSL's processors import it from ``kspark.dsl._internals.common``."""

from __future__ import annotations

from typing import Any, NamedTuple

__all__ = ["Change"]


class Change(NamedTuple):
    """A KTable update flowing between KTable nodes (Kafka ``Change``): new and old value, and
    ``isLatest``: False for an out-of-order update of a versioned table (KIP-914), which the
    operators of a versioned table's descendants skip (joins, groupBy, foreign-key joins)."""

    newValue: Any
    oldValue: Any
    isLatest: bool = True

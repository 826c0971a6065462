"""Kafka's Java overloads, resolved by argument type: the one helper every DSL method uses.

A Java overload family such as ``count()``, ``count(Named)``, ``count(Materialized)``,
``count(Named, Materialized)`` is, in kspark, one method whose optional parameters are *slots*
in Java's order (``named``, ``materialized``). ``bind`` places each argument in the first slot,
at or after the previous argument's, whose kind accepts it; ``None`` takes the next slot. So
``count(Materialized.as_("c"))`` binds ``materialized``, ``Consumed.with_(None, Serdes.Long())``
binds the value serde, and an argument no remaining slot accepts (``count(materialized,
named)``, ``count(Produced...)``, ``named=Materialized...``) raises ``TypeError`` naming Kafka's
accepted forms. Nothing is ever bound by position alone.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

__all__ = ["Kind", "bind", "check", "instanceOf", "FUNCTION"]


class Kind:
    """What a slot accepts: ``name`` (for messages) and ``accepts(value) -> bool``."""

    __slots__ = ("name", "accepts")

    def __init__(self, name: str, accepts: Callable[[Any], bool]) -> None:
        self.name, self.accepts = name, accepts


def instanceOf(name: str, *types: type) -> Kind:
    """A kind accepting instances of ``types`` (``bool`` is never an ``int`` here)."""
    return Kind(name, lambda v: isinstance(v, types) and not (isinstance(v, bool) and bool not in types))


FUNCTION = Kind("function", callable)


def _describe(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 60 else text[:57] + '...'}"


def bind(method: str, forms: str, slots: Sequence[Kind], values: Sequence) -> list:
    """Place ``values`` (the method's optional arguments, in its parameter order) into ``slots``.

    Parameters
    ----------
    method : str
        ``"KGroupedStream.count"``, for messages.
    forms : str
        Kafka's accepted forms, e.g. ``"count(), count(Named), count(Materialized), count(Named, Materialized)"``.
    slots : sequence of Kind
        What each slot accepts, in Java's parameter order.
    values : sequence
        The arguments as given (unset parameters are None).

    Returns
    -------
    list
        One value per slot (None where nothing was given).

    Raises
    ------
    TypeError
        If an argument fits no slot at or after the previous argument's.
    """
    out = [None] * len(slots)
    cursor = 0
    for n, value in enumerate(values):
        if value is None:
            cursor += cursor < len(slots)
            continue
        for i in range(cursor, len(slots)):
            if slots[i].accepts(value):
                out[i] = value
                cursor = i + 1
                break
        else:
            raise TypeError(f"{method}(): argument {n + 1} ({_describe(value)}) fits none of Kafka's overloads: "
                            f"{forms}")
    return out


def check(method: str, what: str, kind: Kind, value: Any, nullable: bool = True) -> Any:
    """``value`` if ``kind`` accepts it (or it is None and ``nullable``), else ``TypeError``."""
    if (value is None and nullable) or (value is not None and kind.accepts(value)):
        return value
    raise TypeError(f"{method}(): {what} must be {kind.name}, got {_describe(value)}")

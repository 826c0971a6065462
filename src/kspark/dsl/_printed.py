"""``Printed``: where and how ``KStream.print`` writes (Kafka ``Printed``)."""

from __future__ import annotations

import copy
from typing import Callable

from ..errors import TopologyException

__all__ = ["Printed"]


class Printed:
    """Target and format of ``KStream.print`` (Kafka ``Printed``).

    Each record is written as one line ``[label]: text`` where ``text`` is
    ``withKeyValueMapper``'s ``mapper(key, value)`` or ``"key, value"`` (None printed as ``null``),
    and ``label`` defaults to the name of the stream's node being printed.

    ``toFile(path)`` creates (truncates) the file at once, as Kafka does; under Spark each task
    appends to that path on its executor. ``withX`` methods return a modified copy.

    Raises
    ------
    TopologyException
        From ``toFile`` for an empty path or a file that cannot be created.
    """

    def __init__(self, path: str | None = None) -> None:
        self.path = path
        self.label: str | None = None
        self.mapper: Callable | None = None
        self.name: str | None = None

    @staticmethod
    def toSysOut() -> "Printed":
        return Printed()

    @staticmethod
    def toFile(filePath: str) -> "Printed":
        if filePath is None:
            raise TypeError("filePath can't be null")
        if not str(filePath).strip():
            raise TopologyException("filePath can't be an empty string")
        try:
            open(filePath, "w", encoding="utf-8").close()
        except OSError as e:
            raise TopologyException(f"Unable to write stream to file at [{filePath}] {e}") from e
        return Printed(str(filePath))

    def withLabel(self, label: str) -> "Printed":
        if label is None:
            raise TypeError("label can't be null")
        p = copy.copy(self)
        p.label = label
        return p

    def withKeyValueMapper(self, mapper: Callable) -> "Printed":
        if mapper is None:
            raise TypeError("mapper can't be null")
        p = copy.copy(self)
        p.mapper = mapper
        return p

    def withName(self, processorName: str) -> "Printed":
        p = copy.copy(self)
        p.name = processorName
        return p

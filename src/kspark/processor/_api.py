from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Callable

from ._punctuation import Cancellable
from ._record import Record, RecordMetadata

__all__ = ["ContextualFixedKeyProcessor", "ContextualProcessor", "FixedKeyProcessor", "FixedKeyProcessorContext",
           "FixedKeyProcessorSupplier", "Processor", "ProcessorContext", "ProcessorSupplier"]

ProcessorSupplier = Callable[[], "Processor"]
"""A callable taking no argument and returning a new ``Processor`` (Kafka ``ProcessorSupplier``).

Called once per task, so every task gets its own processor instance."""


class ProcessorContext(ABC):
    """What a processor can do with its task (Kafka ``api.ProcessorContext``)."""

    @abstractmethod
    def forward(self, record: Record, childName: str | None = None) -> None:
        """Send ``record`` to every child node, or only to ``childName``."""

    @abstractmethod
    def getStateStore(self, name: str) -> Any:
        """Return a store connected to this processor.

        Raises
        ------
        StreamsException
            If the store is not connected to the processor (rule E-1).
        """

    @abstractmethod
    def schedule(self, interval, type, callback) -> "Cancellable":
        """Call ``callback(timestamp)`` every ``interval`` (ms or timedelta) of ``type`` time.

        STREAM_TIME schedules are aligned to 0 and first fire on the first record; WALL_CLOCK_TIME
        ones first fire at registration time + interval; missed intervals are skipped (rules P-1..P-6).

        Raises
        ------
        ValueError
            If ``interval`` is below 1 ms ("The minimum supported scheduling interval is 1 millisecond.").
        """

    @abstractmethod
    def recordMetadata(self) -> RecordMetadata | None:
        """Topic, partition and offset of the record being processed (None in a punctuator)."""

    @abstractmethod
    def taskId(self) -> str:
        """The task id, ``"<subtopology>_<partition>"``."""

    @abstractmethod
    def applicationId(self) -> str:
        ...

    @abstractmethod
    def currentStreamTimeMs(self) -> int:
        """The task's stream time in ms (-1 before the first record; rule T-13)."""

    @abstractmethod
    def currentSystemTimeMs(self) -> int:
        """Wall-clock time in ms (the driver's mock time under TopologyTestDriver)."""

    @abstractmethod
    def appConfigs(self) -> dict:
        """The application's configuration, key -> value (Kafka ``ProcessorContext#appConfigs``)."""


class Processor(ABC):
    """A record processor (Kafka ``api.Processor``): ``init(context)``, ``process(record)``, ``close()``."""

    def init(self, context: ProcessorContext) -> None:
        pass

    @abstractmethod
    def process(self, record: Record) -> None:
        ...

    def close(self) -> None:
        pass


class ContextualProcessor(Processor):
    """A ``Processor`` that keeps its context; read it with ``self.context()`` (Kafka ``ContextualProcessor``)."""

    _context: ProcessorContext | None = None

    def init(self, context: ProcessorContext) -> None:
        self._context = context

    def context(self) -> ProcessorContext:
        return self._context  # type: ignore[return-value]


class FixedKeyProcessorContext(ProcessorContext):
    """The context of a ``processValues`` processor (Kafka ``api.FixedKeyProcessorContext``):
    ``forward(fixedKeyRecord[, childName])`` sends a ``FixedKeyRecord`` (the input's key; a plain
    ``Record`` with another key raises ``StreamsException``)."""


class FixedKeyProcessor(ABC):
    """A processor that may change values but not keys, for ``KStream.processValues`` (Kafka
    ``api.FixedKeyProcessor``): ``init(FixedKeyProcessorContext)``, ``process(FixedKeyRecord)``,
    ``close()``."""

    def init(self, context: FixedKeyProcessorContext) -> None:
        pass

    @abstractmethod
    def process(self, record) -> None:
        ...

    def close(self) -> None:
        pass


class ContextualFixedKeyProcessor(FixedKeyProcessor):
    """A ``FixedKeyProcessor`` that keeps its context; read it with ``self.context()`` (Kafka
    ``ContextualFixedKeyProcessor``)."""

    _context: FixedKeyProcessorContext | None = None

    def init(self, context: FixedKeyProcessorContext) -> None:
        self._context = context

    def context(self) -> FixedKeyProcessorContext:
        return self._context  # type: ignore[return-value]


FixedKeyProcessorSupplier = Callable[[], FixedKeyProcessor]
"""A callable (or an object with ``get()``) returning a new ``FixedKeyProcessor`` (Kafka
``FixedKeyProcessorSupplier``)."""

"""Processor API (Kafka ``org.apache.kafka.streams.processor`` and ``processor.api``)."""

from ._api import *  # noqa: F403
from ._extractors import *  # noqa: F403
from ._punctuation import *  # noqa: F403
from ._record import *  # noqa: F403
from ._api import __all__ as _a
from ._extractors import __all__ as _e
from ._punctuation import __all__ as _p
from ._record import __all__ as _r

__all__ = sorted(_a + _e + _p + _r)

"""State stores (Kafka ``org.apache.kafka.streams.state``)."""

from . import _queryable, _stores, _versioned
from ._queryable import *  # noqa: F403
from ._stores import *  # noqa: F403
from ._versioned import *  # noqa: F403

__all__ = _stores.__all__ + _queryable.__all__ + _versioned.__all__

"""State stores (Kafka ``org.apache.kafka.streams.state``)."""

from ._stores import *  # noqa: F403
from ._stores import __all__  # noqa: F401

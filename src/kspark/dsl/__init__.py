"""The Streams DSL (Kafka ``org.apache.kafka.streams.kstream``)."""

from ._branched import Branched, BranchedKStream
from ._builder import StreamsBuilder
from ._cogrouped import (CogroupedKStream, SessionWindowedCogroupedKStream, SlidingWindowedCogroupedKStream,
                         TimeWindowedCogroupedKStream)
from ._printed import Printed
from ._config_objects import Consumed, Grouped, Joined, Materialized, Named, Produced, Repartitioned, StreamJoined
from ._global_ktable import GlobalKTable
from ._grouped import KGroupedStream, SessionWindowedKStream, SlidingWindowedKStream, TimeWindowedKStream
from ._suppress import EmitStrategy, Suppressed
from ._windows import (JoinWindows, SessionWindow, SessionWindows, SlidingWindows, TimeWindow, TimeWindows, Window, Windowed,
                       WindowedSerdes, Windows)
from ._internals.common import Change
from ._kstream import KStream
from ._ktable import KTable
from ._kgrouped_table import KGroupedTable

__all__ = ["Branched", "BranchedKStream", "Printed", "Change", "CogroupedKStream", "Consumed", "EmitStrategy", "Suppressed", "GlobalKTable", "Grouped", "Joined", "JoinWindows", "KGroupedStream", "KGroupedTable", "KStream", "KTable", "Materialized", "Named", "Produced", "Repartitioned", "SessionWindow", "SessionWindowedCogroupedKStream", "SessionWindowedKStream", "SessionWindows", "SlidingWindowedCogroupedKStream", "SlidingWindowedKStream", "SlidingWindows", "StreamJoined", "StreamsBuilder", "TimeWindow",
           "TimeWindowedCogroupedKStream", "TimeWindowedKStream", "TimeWindows", "Window", "Windowed", "WindowedSerdes", "Windows"]

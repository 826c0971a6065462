"""The exact task engine (no Spark import): record queues, stream time, processor graph, stores."""

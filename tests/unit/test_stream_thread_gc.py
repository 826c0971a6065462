"""The continuous host's stream threads pause Python's cyclic garbage collector for their poll
loop, and the micro-batch host's Python workers for each batch, and collect whole now and then
(``kspark.spark._stream_threads.PausedCollector``): cyclic garbage made by a topology is still
freed, and the collector is left as it was found."""

import gc
import time
import weakref

from kspark.spark._stream_threads import PausedCollector


class _Node:
    def __init__(self) -> None:
        self.me = self  # a reference cycle: reference counting alone never frees it


def _cycles(n: int, freed: list) -> None:
    for _ in range(n):
        weakref.finalize(_Node(), freed.append, 1)


def test_cyclic_garbage_waits_for_a_collection_and_is_then_freed():
    gc.collect()
    freed: list = []
    with PausedCollector(intervalS=3600, maxPending=50_000) as collector:
        _cycles(2_000, freed)
        assert not gc.isenabled()
        assert collector.maybeCollect() is False  # neither due nor past the bound
        assert freed == []  # no automatic collection ran
        _cycles(60_000, freed)  # past maxPending tracked objects
        assert collector.maybeCollect() is True
        assert len(freed) == 62_000
        assert collector.collections == 1
    assert gc.isenabled()


def test_a_collection_is_due_after_the_interval_and_the_collector_stays_as_found():
    freed: list = []
    gc.disable()
    try:
        with PausedCollector(intervalS=0.0, maxPending=10**9) as collector:
            _cycles(10, freed)
            assert collector.maybeCollect() is True
            assert len(freed) == 10
        assert not gc.isenabled()  # it was off before: left off
    finally:
        gc.enable()


def test_the_interval_runs_across_enters_as_a_workers_micro_batches_enter_it():
    freed: list = []
    collector = PausedCollector(intervalS=1.0, maxPending=10**9)
    with collector:  # a first batch, just after the worker made its collector
        _cycles(10, freed)
        assert collector.maybeCollect() is False
    time.sleep(1.1)
    with collector:  # a later batch: due since the collector's creation, though just entered
        assert collector.maybeCollect() is True
        assert len(freed) == 10
    assert gc.isenabled()

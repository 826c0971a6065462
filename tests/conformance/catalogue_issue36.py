"""Issue 36's classes of input in the catalogue: foreign-key joins whose result table is not
cached (deletes of non-joining records and foreign-key moves to missing keys), processing,
punctuation, deserialization and production errors with a dead-letter queue, joins of windowed
tables, emit-final aggregations throttled by a wall-clock emit interval, and window stores at
their retention edge. Each
scenario's Java twin, same name and order, is in ``java/conformance/Issue36.java``; the scenarios
register into ``catalogue.CATALOGUE`` (imported at the end of ``catalogue.py``)."""

from __future__ import annotations

from datetime import timedelta

from kspark import (Consumed, ContextualProcessor, EmitStrategy, KeyValue, Materialized, Produced, PunctuationType,
                    Record, Serdes, SessionWindows, SlidingWindows, Stores, TimeWindows)

from .catalogue import (LONGS, STREAM, TWO_STREAMS, TWO_TABLES, TWO_TABLES_LEADING, Gen, generateSteps, keys, orDash,
                        scenario, serdeBytes, wk)


def hexs(s: str | None) -> str | None:
    return None if s is None else s.encode().hex()


def fk(v):
    return v[0:1]


# ------------------------------------------------------------------------------ foreign-key joins, result not cached
F = "fkJoin"
FK = dict(cached=True, inputs=TWO_TABLES, leading=TWO_TABLES_LEADING, records=30)


def _buildOf(name, b, p):
    """Build the topology of scenario ``name``."""
    from .catalogue import CATALOGUE
    CATALOGUE[name].build(b, p)


def uncached(named: bool) -> Materialized:
    """KTableKTableForeignKeyJoinIntegrationTest's result table: "the cache suppresses some of the
    unnecessary tombstones we want to make assertions about"."""
    if named:
        return Materialized.as_(Stores.inMemoryKeyValueStore("fk")).withValueSerde(Serdes.String()).withCachingDisabled()
    return Materialized.with_(None, Serdes.String()).withCachingDisabled()


def _deletesAndMoves(rng):
    """KTableKTableForeignKeyJoinIntegrationTest's shouldEmitTombstoneWhenDeletingNonJoiningRecords
    (key a) and joinShouldProduceNullsWhenValueHasNonMatchingForeignKey (key b), with the foreign
    key as the value's first letter: right keys b, c, d are missing until d is added."""
    steps = [("in1", "a", "b1"), ("in1", "a", None), ("in1", "a", None),
             ("in1", "b", "b1"), ("in1", "b", "c1"), ("in1", "b", "x1"), ("in2", "b", "r"), ("in1", "b", "b2"),
             ("in1", "b", "c2"), ("in1", "b", "b3"), ("in2", "b", None), ("in1", "b", None), ("in1", "c", "x")]
    return [{"pipe": t, "k": hexs(k), "v": hexs(v), "ts": 1000 + i, "h": []} for i, (t, k, v) in enumerate(steps)]


UNCACHED_STORE = ({"name": "fk", "kind": "kv"},)


@scenario("fk.join.uncached", F, stores=UNCACHED_STORE, **FK)
def _(b, p):
    left = b.table("in1")
    left.join(b.table("in2"), lambda v: fk(v), lambda a, c: a + "|" + c, uncached(True)).toStream().to("out")


@scenario("fk.leftJoin.uncached", F, stores=UNCACHED_STORE, **FK)
def _(b, p):
    left = b.table("in1")
    left.leftJoin(b.table("in2"), lambda v: fk(v), lambda a, c: a + "|" + orDash(c), uncached(True)) \
        .toStream().to("out")


@scenario("fk.join.uncached.rejoin", F, outputs=("out", "rej"), **FK)
def _(b, p):
    left = b.table("in1")
    joined = left.join(b.table("in2"), lambda v: fk(v), lambda a, c: a + "|" + c, uncached(False))
    joined.toStream().to("out")
    joined.join(left, lambda j, a: "rejoin(" + j + "," + a + ")", Materialized.with_(None, Serdes.String())) \
        .toStream().to("rej")


@scenario("fk.leftJoin.uncached.rejoin", F, outputs=("out", "rej"), **FK)
def _(b, p):
    left = b.table("in1")
    joined = left.leftJoin(b.table("in2"), lambda v: fk(v), lambda a, c: a + "|" + orDash(c), uncached(False))
    joined.toStream().to("out")
    joined.leftJoin(left, lambda j, a: "rejoin(" + j + "," + orDash(a) + ")",
                    Materialized.as_(Stores.inMemoryKeyValueStore("fk-rejoin")).withValueSerde(Serdes.String())
                    .withCachingDisabled()).toStream().to("rej")


for _name in ("fk.join.uncached", "fk.leftJoin.uncached"):
    @scenario(_name + ".deletesAndMoves", F, java=_name, stores=UNCACHED_STORE, steps=_deletesAndMoves, cached=True)
    def _(b, p, _build=_name):
        from .catalogue import CATALOGUE
        CATALOGUE[_build].build(b, p)

for _name in ("fk.join.uncached.rejoin", "fk.leftJoin.uncached.rejoin"):
    @scenario(_name + ".deletesAndMoves", F, java=_name, outputs=("out", "rej"), steps=_deletesAndMoves, cached=True)
    def _(b, p, _build=_name):
        from .catalogue import CATALOGUE
        CATALOGUE[_build].build(b, p)


# ------------------------------------------------------------------------------ processing errors and the dead-letter queue
F = "failure"
DLQ = {"errors.dead.letter.queue.topic.name": "dlq"}
CONTINUE = {"processing.exception.handler": "LogAndContinueProcessingExceptionHandler"}
LONG_VALUES = {"in": Gen(keys(), serdeBytes("Long", bad=0.2))}
F20 = ("FINDINGS F20: what a failing step wrote (a failing handler's dead-letter record) shows at once in "
       "kspark's driver, at the next call in Kafka's")


def _failOnX(v):
    if v is not None and v.startswith("x"):
        raise RuntimeError("boom " + v)
    return v


def _failingMapValues(b, p):
    b.stream("in").mapValues(_failOnX).to("out")


def _longsThrough(b, p):
    b.stream("in", Consumed.with_(Serdes.String(), Serdes.Long())).to("out", Produced.with_(Serdes.String(), Serdes.Long()))


scenario("fail.processing.dlq", F, java="fail.processing", outputs=("out", "dlq"), config=DLQ,
         xfail=F20)(_failingMapValues)
scenario("fail.processing.continue.dlq", F, java="fail.processing", outputs=("out", "dlq"),
         config={**DLQ, **CONTINUE})(_failingMapValues)
scenario("fail.deserialization.dlq", F, java="fail.deserialization", inputs=LONG_VALUES, outputs=("out", "dlq"),
         config=DLQ)(_longsThrough)
scenario("fail.deserialization.continue.dlq", F, java="fail.deserialization", inputs=LONG_VALUES,
         outputs=("out", "dlq"),
         config={**DLQ, "default.deserialization.exception.handler": "LogAndContinueExceptionHandler"})(_longsThrough)


@scenario("fail.sink.wrongSerde.dlq", F, java="fail.sink.wrongSerde", inputs={"in": Gen(keys(), serdeBytes("Long", bad=0))},
          outputs=("out", "dlq"), config=DLQ, xfail=F20)
def _(b, p):
    b.stream("in", Consumed.with_(Serdes.String(), Serdes.Long())).mapValues(lambda v: v).to("out")


class FailingTicker(ContextualProcessor):
    """Forwards what it gets; its stream-time punctuator (every second) fails every other time."""

    def init(self, context):
        super().init(context)
        self.ticks = 0

        def tick(t):
            self.ticks += 1
            if (self.ticks - 1) % 2 == 1:
                raise RuntimeError(f"tick {t}")
            context.forward(Record("tick", str(t), t))

        context.schedule(timedelta(milliseconds=1000), PunctuationType.STREAM_TIME, tick)

    def process(self, record):
        self.context().forward(record)


def _failingTicker(b, p):
    b.stream("in").process(FailingTicker).to("out")


scenario("fail.punctuate", F, outputs=("out",), xfail=F20)(_failingTicker)
scenario("fail.punctuate.dlq", F, java="fail.punctuate", outputs=("out", "dlq"), config=DLQ, xfail=F20)(_failingTicker)
scenario("fail.punctuate.continue.dlq", F, java="fail.punctuate", outputs=("out", "dlq"),
         config={**DLQ, **CONTINUE})(_failingTicker)


def _failingReduce(b, p):
    def reducer(a, v):
        if v.endswith("x"):
            raise RuntimeError("boom " + a + "+" + v)
        return a + v

    b.stream("in").selectKey(lambda k, v: None if v is None else v[0:1]).groupByKey().reduce(reducer) \
        .toStream().to("out")


scenario("fail.processing.repartitioned.dlq", F, java="fail.processing.repartitioned", outputs=("out", "dlq"),
         cached=True, config={**DLQ, **CONTINUE, "application.id": "app"})(_failingReduce)


# ------------------------------------------------------------------------------ joins of windowed tables (item 3)
F = "table"
WJ = dict(cached=True, inputs=TWO_STREAMS, records=30)


def ms(v: int) -> timedelta:
    return timedelta(milliseconds=v)


def _slidingTable(b, topic, emitFinal):
    w = b.stream(topic).groupByKey().windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(ms(500), ms(300)))
    if emitFinal:
        w = w.emitStrategy(EmitStrategy.onWindowClose())
    return w.aggregate(lambda: "0", lambda k, v, a: a + "+" + orDash(v))


@scenario("wtable.sliding.join", F, **WJ)
def _(b, p):
    """KStreamSlidingWindowAggregateTest.testJoin's topology."""
    t1 = _slidingTable(b, "in1", False)
    t1.join(_slidingTable(b, "in2", False), lambda a, c: a + "%" + c).toStream() \
        .map(lambda w, v: KeyValue.pair(wk(w), v)).to("out")


@scenario("wtable.sliding.join.emitFinal", F, **WJ)
def _(b, p):
    t1 = _slidingTable(b, "in1", True)
    t1.join(_slidingTable(b, "in2", True), lambda a, c: a + "%" + c).toStream() \
        .map(lambda w, v: KeyValue.pair(wk(w), v)).to("out")


@scenario("wtable.time.leftJoin", F, **WJ)
def _(b, p):
    windows = TimeWindows.ofSizeAndGrace(ms(1000), ms(500)).advanceBy(ms(500))
    t1 = b.stream("in1").groupByKey().windowedBy(windows).count()
    t2 = b.stream("in2").groupByKey().windowedBy(windows).reduce(lambda a, v: a + orDash(v))
    t1.leftJoin(t2, lambda c, r: str(c) + "/" + orDash(r)).toStream() \
        .map(lambda w, v: KeyValue.pair(wk(w), v)).to("out")


@scenario("wtable.session.outerJoin", F, **WJ)
def _(b, p):
    windows = SessionWindows.ofInactivityGapAndGrace(ms(500), ms(300))
    t1 = b.stream("in1").groupByKey().windowedBy(windows).count()
    t2 = b.stream("in2").groupByKey().windowedBy(windows).count()
    t1.outerJoin(t2, lambda a, c: orDash(a) + "/" + orDash(c)).toStream() \
        .map(lambda w, v: KeyValue.pair(wk(w), v)).to("out")


@scenario("wtable.stream.join", F, **WJ)
def _(b, p):
    windows = TimeWindows.ofSizeWithNoGrace(ms(1000))
    t2 = b.stream("in2").groupByKey().windowedBy(windows).count()
    b.stream("in1").groupByKey().windowedBy(windows).count().toStream() \
        .leftJoin(t2, lambda c, d: str(c) + "/" + orDash(d)).map(lambda w, v: KeyValue.pair(wk(w), v)).to("out")


def _twoTopics(*records):
    return lambda rng: [{"pipe": t, "k": hexs(k), "v": hexs(v), "ts": ts, "h": []} for t, k, v, ts in records]


# tests/unit/test_windowed_table_joins.py's inputs
SESSION_JOIN = _twoTopics(("in1", "a", "x", 100), ("in2", "a", "y", 100), ("in1", "a", "x", 400),
                          ("in2", "b", "y", 500), ("in2", "a", "y", 450), ("in1", "b", "x", 2000))
TIME_JOIN = _twoTopics(("in1", "a", "x", 100), ("in2", "a", "p", 200), ("in1", "a", "x", 700), ("in2", "b", "q", 900),
                       ("in2", "a", None, 950), ("in1", "b", "x", 1200))
for _name, _steps in (("wtable.session.outerJoin", SESSION_JOIN), ("wtable.time.leftJoin", TIME_JOIN)):
    @scenario(_name + ".fixed", F, java=_name, cached=True, steps=_steps)
    def _(b, p, _build=_name):
        _buildOf(_build, b, p)


@scenario("wtable.cogroup.join", "failure", **WJ)
def _(b, p):
    """A windowed cogroup's table cannot be read by key: Kafka's KTablePassThrough value getter
    needs a key-value store (KeyValueStoreWrapper) and fails when the task starts."""
    windows = TimeWindows.ofSizeWithNoGrace(ms(1000))
    g1 = b.stream("in1").groupByKey()
    cogrouped = g1.cogroup(lambda k, v, a: a + orDash(v)).windowedBy(windows).aggregate(lambda: "")
    counts = b.stream("in2").groupByKey().windowedBy(windows).count()
    cogrouped.join(counts, lambda a, c: a + "/" + str(c)).toStream().map(lambda w, v: KeyValue.pair(wk(w), v)).to("out")


# ------------------------------------------------------------------------------ wall-clock emit intervals (item 4)

F = "timeWindows"
INTERVAL = {"__emit.interval.ms.kstreams.windowed.aggregation__": "1000"}


def _emitIntervalSteps(rng):
    """30 generated records with 10 wall-clock advances among them, some shorter than the interval."""
    steps = generateSteps(STREAM, rng, 30)
    for i in sorted(rng.sample(range(len(steps)), 10), reverse=True):
        steps.insert(i, {"advance": rng.choice([200, 500, 1000, 2500])})
    return steps


INTERVAL_FIXED = (("a", 100), ("b", 1600), 1000, ("c", 1700), ("a", 2600), 500, ("b", 2700), 500, ("c", 2800),
                  ("c", 2900), 2500, ("a", 3100), ("a", 3900), 1000, ("b", 3950))


def _intervalFixed(rng):
    """tests/unit/test_emit_interval.py's input: records and wall-clock advances."""
    steps = []
    for step in INTERVAL_FIXED:
        steps.append({"advance": step} if isinstance(step, int) else
                     {"pipe": "in", "k": hexs(step[0]), "v": hexs("x"), "ts": step[1], "h": []})
    return steps


@scenario("wcount.emitFinal.emitInterval", F, java="wcount.emitFinal", cached=True, steps=_emitIntervalSteps,
          config=INTERVAL)
def _(b, p):
    (b.stream("in").groupByKey().windowedBy(TimeWindows.ofSizeAndGrace(ms(1000), ms(500)))
     .emitStrategy(EmitStrategy.onWindowClose()).count().toStream()
     .map(lambda w, c: KeyValue.pair(wk(w), c)).to("out", LONGS))


@scenario("scount.emitFinal.emitInterval", "sessionWindows", java="scount.emitFinal", cached=True,
          steps=_emitIntervalSteps, config=INTERVAL)
def _(b, p):
    (b.stream("in").groupByKey()
     .windowedBy(SessionWindows.ofInactivityGapAndGrace(ms(500), ms(300)))
     .emitStrategy(EmitStrategy.onWindowClose()).count().toStream()
     .map(lambda w, c: KeyValue.pair(wk(w), c)).to("out", LONGS))


def _slidingEmitFinal(b, p):
    (b.stream("in").groupByKey().windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(ms(500), ms(200)))
     .emitStrategy(EmitStrategy.onWindowClose()).count()
     .toStream().map(lambda w, c: KeyValue.pair(wk(w), c)).to("out", LONGS))


scenario("sliding.count.emitFinal.emitInterval", "slidingWindows", java="sliding.count.emitFinal", cached=True,
         steps=_emitIntervalSteps, config=INTERVAL)(_slidingEmitFinal)

scenario("wcount.emitFinal.noInterval.fixed", F, java="wcount.emitFinal", cached=True, steps=_intervalFixed)(
    lambda b, p: _buildOf("wcount.emitFinal.emitInterval", b, p))

for _name, _family in (("wcount.emitFinal", F), ("scount.emitFinal", "sessionWindows"),
                       ("sliding.count.emitFinal", "slidingWindows")):
    @scenario(_name + ".emitInterval.fixed", _family, java=_name, cached=True, steps=_intervalFixed, config=INTERVAL)
    def _(b, p, _build=_name + ".emitInterval"):
        _buildOf(_build, b, p)


# ------------------------------------------------------------------------------ window-store retention edges (item 5)
def _steps(*records):
    return lambda rng: [{"pipe": "in", "k": hexs(k), "v": hexs("x"), "ts": ts, "h": []} for k, ts in records]


# d = 500, grace 200, retention 1200: c's late record makes the store's time 2000 (its right window
# [2000, 2500]), so a's left window [800, 1300] starts exactly at the retention edge when a@1500
# comes; d@2100 closes a's right window [1301, 1801] if a@1500 created it
SLIDING_EDGE = _steps(("a", 1300), ("c", 2000), ("c", 1999), ("a", 1500), ("d", 2100), ("d", 2600))

scenario("sliding.count.emitFinal.retentionEdge", "slidingWindows", java="sliding.count.emitFinal", cached=True,
         steps=SLIDING_EDGE)(_slidingEmitFinal)


def _slidingEmitFinalInMemory(b, p):
    """A store supplier of the user's: Kafka's in-memory window store, not the time-ordered one."""
    (b.stream("in").groupByKey().windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(ms(500), ms(200)))
     .emitStrategy(EmitStrategy.onWindowClose())
     .count(Materialized.as_(Stores.inMemoryWindowStore("sw", ms(1200), ms(500), False)))
     .toStream().map(lambda w, c: KeyValue.pair(wk(w), c)).to("out", LONGS))


SW = ({"name": "sw", "kind": "twindow"},)
scenario("sliding.count.emitFinal.inMemory", "slidingWindows", cached=True, stores=SW, records=30)(
    _slidingEmitFinalInMemory)
scenario("sliding.count.emitFinal.inMemory.retentionEdge", "slidingWindows", java="sliding.count.emitFinal.inMemory",
         cached=True, stores=SW, steps=SLIDING_EDGE)(_slidingEmitFinalInMemory)

# hopping windows of 1000 every 500, grace 500, retention 1500: b@3000 makes the store's time 3000
# and closes a's window [1500, 2500), which starts exactly at the retention edge
TIME_EDGE = _steps(("a", 1500), ("b", 3000), ("c", 3600))
HOPPING = TimeWindows.ofSizeAndGrace(ms(1000), ms(500)).advanceBy(ms(500))


def _hoppingEmitFinal(b, p):
    (b.stream("in").groupByKey().windowedBy(HOPPING).emitStrategy(EmitStrategy.onWindowClose()).count().toStream()
     .map(lambda w, c: KeyValue.pair(wk(w), c)).to("out", LONGS))


def _hoppingEmitFinalInMemory(b, p):
    """A store supplier of the user's: Kafka's in-memory window store, not the time-ordered one."""
    (b.stream("in").groupByKey().windowedBy(HOPPING).emitStrategy(EmitStrategy.onWindowClose())
     .count(Materialized.as_(Stores.inMemoryWindowStore("tw", ms(1500), ms(1000), False))).toStream()
     .map(lambda w, c: KeyValue.pair(wk(w), c)).to("out", LONGS))


TW = ({"name": "tw", "kind": "twindow"},)
scenario("wcount.hopping.emitFinal", F, cached=True, records=30)(_hoppingEmitFinal)
scenario("wcount.hopping.emitFinal.retentionEdge", F, java="wcount.hopping.emitFinal", cached=True,
         steps=TIME_EDGE)(_hoppingEmitFinal)
scenario("wcount.hopping.emitFinal.inMemory", F, cached=True, stores=TW, records=30)(_hoppingEmitFinalInMemory)
scenario("wcount.hopping.emitFinal.inMemory.retentionEdge", F, java="wcount.hopping.emitFinal.inMemory", cached=True,
         stores=TW, steps=TIME_EDGE)(_hoppingEmitFinalInMemory)

"""Issue 36's classes of input in the catalogue: foreign-key joins whose result table is not
cached (deletes of non-joining records and foreign-key moves to missing keys), processing,
punctuation, deserialization and production errors with a dead-letter queue, ... Each
scenario's Java twin, same name and order, is in ``java/conformance/Issue36.java``; the scenarios
register into ``catalogue.CATALOGUE`` (imported at the end of ``catalogue.py``)."""

from __future__ import annotations

from datetime import timedelta

from kspark import Consumed, ContextualProcessor, Materialized, Produced, PunctuationType, Record, Serdes, Stores

from .catalogue import TWO_TABLES, TWO_TABLES_LEADING, Gen, keys, orDash, scenario, serdeBytes


def hexs(s: str | None) -> str | None:
    return None if s is None else s.encode().hex()


def fk(v):
    return v[0:1]


# ------------------------------------------------------------------------------ foreign-key joins, result not cached
F = "fkJoin"
FK = dict(cached=True, inputs=TWO_TABLES, leading=TWO_TABLES_LEADING, records=30)


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

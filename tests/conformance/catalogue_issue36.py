"""Issue 36's classes of input in the catalogue: foreign-key joins whose result table is not
cached (deletes of non-joining records and foreign-key moves to missing keys), ... Each
scenario's Java twin, same name and order, is in ``java/conformance/Issue36.java``; the scenarios
register into ``catalogue.CATALOGUE`` (imported at the end of ``catalogue.py``)."""

from __future__ import annotations

from kspark import Materialized, Serdes, Stores

from .catalogue import TWO_TABLES, TWO_TABLES_LEADING, orDash, scenario


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

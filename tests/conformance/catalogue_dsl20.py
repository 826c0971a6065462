"""Issue 20's operators in the catalogue: stream-stream joins, sliding windows, cogroup,
foreign-key table-table joins, versioned tables, and the driver's store read operations. Each
scenario's Java twin, same name and order, is in ``java/conformance/Issue20.java``; the scenarios
register into ``catalogue.CATALOGUE`` (imported at the end of ``catalogue.py``)."""

from __future__ import annotations

from datetime import timedelta

from kspark import (
    EmitStrategy, Grouped, JoinWindows, Joined, KeyValue, Materialized, Named, Serdes, SessionWindows, SlidingWindows,
    StreamJoined, Stores, Suppressed, TableJoined, TimeWindows,
)

from .catalogue import (LONGS, STREAM, STREAM_TABLE, STREAM_VALUES, TABLE, TABLE_LEADING, TWO_STREAMS, TWO_TABLES,
                        TWO_TABLES_LEADING, orDash, scenario, wk)


def ms(v: int) -> timedelta:
    return timedelta(milliseconds=v)


# ------------------------------------------------------------------------------ stream-stream joins
F = "streamJoin"
SSJ = dict(inputs=TWO_STREAMS, records=30)


@scenario("ssjoin.join", F, **SSJ)
def _(b, p):
    left = b.stream("in1")
    left.join(b.stream("in2"), lambda a, c: a + "+" + c, JoinWindows.ofTimeDifferenceWithNoGrace(ms(500))).to("out")


@scenario("ssjoin.leftJoin", F, **SSJ)
def _(b, p):
    left = b.stream("in1")
    left.leftJoin(b.stream("in2"), lambda a, c: a + "+" + orDash(c),
                  JoinWindows.ofTimeDifferenceAndGrace(ms(500), ms(200))).to("out")


@scenario("ssjoin.outerJoin", F, **SSJ)
def _(b, p):
    left = b.stream("in1")
    left.outerJoin(b.stream("in2"), lambda a, c: orDash(a) + "+" + orDash(c),
                   JoinWindows.ofTimeDifferenceAndGrace(ms(500), ms(300))).to("out")


@scenario("ssjoin.join.beforeAfter", F, **SSJ)
def _(b, p):
    left = b.stream("in1")
    left.join(b.stream("in2"), lambda a, c: a + "+" + c,
              JoinWindows.ofTimeDifferenceWithNoGrace(ms(300)).before(ms(100)).after(ms(700))).to("out")


@scenario("ssjoin.leftJoin.of", F, **SSJ)
def _(b, p):
    left = b.stream("in1")
    left.leftJoin(b.stream("in2"), lambda a, c: a + "+" + orDash(c), JoinWindows.of(ms(500))).to("out")


@scenario("ssjoin.outerJoin.withKey", F, **SSJ)
def _(b, p):
    left = b.stream("in1")
    left.outerJoin(b.stream("in2"), lambda k, a, c: orDash(k) + ":" + orDash(a) + "+" + orDash(c),
                   JoinWindows.ofTimeDifferenceWithNoGrace(ms(400))).to("out")


@scenario("ssjoin.self", F, **SSJ)
def _(b, p):
    s = b.stream("in1")
    s.join(s, lambda a, c: a + "+" + c, JoinWindows.ofTimeDifferenceWithNoGrace(ms(300))).to("out")


@scenario("ssjoin.streamJoined", F, **SSJ)
def _(b, p):
    left = b.stream("in1")
    left.outerJoin(b.stream("in2"), lambda a, c: orDash(a) + "+" + orDash(c),
                   JoinWindows.ofTimeDifferenceAndGrace(ms(500), ms(100)),
                   StreamJoined.with_(Serdes.String(), Serdes.String(), Serdes.String()).withName("sj").withStoreName("st")
                   ).to("out")


@scenario("ssjoin.suppliers", F, **SSJ)
def _(b, p):
    left = b.stream("in1")
    left.leftJoin(b.stream("in2"), lambda a, c: a + "+" + orDash(c),
                  JoinWindows.ofTimeDifferenceAndGrace(ms(500), ms(100)),
                  StreamJoined.with_(Stores.inMemoryWindowStore("this-s", ms(1100), ms(1000), True),
                                     Stores.inMemoryWindowStore("other-s", ms(1100), ms(1000), True))).to("out")


@scenario("ssjoin.rekeyed", F, **SSJ)
def _(b, p):
    left = b.stream("in1").selectKey(lambda k, v: None if v is None else v[0:1])
    right = b.stream("in2").selectKey(lambda k, v: None if v is None else v[0:1])
    left.leftJoin(right, lambda a, c: a + "+" + orDash(c), JoinWindows.ofTimeDifferenceWithNoGrace(ms(500))).to("out")


# ------------------------------------------------------------------------------ sliding windows
F = "slidingWindows"
SLW = dict(cached=True, inputs=STREAM, records=30)


@scenario("sliding.count", F, **SLW)
def _(b, p):
    (b.stream("in").groupByKey().windowedBy(SlidingWindows.ofTimeDifferenceWithNoGrace(ms(500))).count()
     .toStream().map(lambda w, c: KeyValue.pair(wk(w), c)).to("out", LONGS))


@scenario("sliding.count.grace", F, **SLW)
def _(b, p):
    (b.stream("in").groupByKey().windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(ms(500), ms(300))).count()
     .toStream().map(lambda w, c: KeyValue.pair(wk(w), c)).to("out", LONGS))


@scenario("sliding.reduce", F, **{**SLW, "inputs": STREAM_VALUES})
def _(b, p):
    (b.stream("in").groupByKey().windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(ms(400), ms(200)))
     .reduce(lambda a, v: a + "+" + v).toStream().map(lambda w, v: KeyValue.pair(wk(w), v)).to("out"))


@scenario("sliding.aggregate.materialized", F, stores=({"name": "sw", "kind": "twindow"},), **SLW)
def _(b, p):
    (b.stream("in").groupByKey().windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(ms(500), ms(300)))
     .aggregate(lambda: "", lambda k, v, a: a + "|" + orDash(v), Named.as_("sagg"),
                Materialized.as_("sw").withRetention(ms(60000)))
     .toStream().map(lambda w, v: KeyValue.pair(wk(w), v)).to("out"))


@scenario("sliding.count.emitFinal", F, **SLW)
def _(b, p):
    (b.stream("in").groupByKey().windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(ms(500), ms(200)))
     .emitStrategy(EmitStrategy.onWindowClose()).count()
     .toStream().map(lambda w, c: KeyValue.pair(wk(w), c)).to("out", LONGS))


@scenario("sliding.count.suppress", F, **SLW)
def _(b, p):
    (b.stream("in").groupByKey().windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(ms(500), ms(200)))
     .count(Materialized.with_(Serdes.String(), Serdes.Long()))
     .suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded()))
     .toStream().map(lambda w, c: KeyValue.pair(wk(w), c)).to("out", LONGS))


# ------------------------------------------------------------------------------ cogroup
F = "cogroup"
COG = dict(cached=True, inputs=TWO_STREAMS, records=30)


def js(v) -> str:
    """``v`` as Java's string concatenation renders it (a windowed aggregator meets null values)."""
    return "null" if v is None else v


def _cogrouped(b, g2=None):
    g1 = b.stream("in1").groupByKey()
    g2 = g2 or b.stream("in2").groupByKey()
    return g1.cogroup(lambda k, v, a: a + "a" + js(v)).cogroup(g2, lambda k, v, a: a + "b" + js(v))


@scenario("cogroup.aggregate", F, **COG)
def _(b, p):
    _cogrouped(b).aggregate(lambda: "").toStream().to("out")


@scenario("cogroup.named.materialized", F, stores=({"name": "cg-store", "kind": "tkv"},), **COG)
def _(b, p):
    _cogrouped(b).aggregate(lambda: "", Named.as_("cg"), Materialized.as_("cg-store")).toStream().to("out")


@scenario("cogroup.rekeyed", F, **COG)
def _(b, p):
    g1 = b.stream("in1").groupByKey()
    g2 = b.stream("in2").groupBy(lambda k, v: None if v is None else v[0:1], Grouped.as_("by-first"))
    (g1.cogroup(lambda k, v, a: a + "a" + js(v)).cogroup(g2, lambda k, v, a: a + "b" + js(v))
     .aggregate(lambda: "").toStream().to("out"))


@scenario("cogroup.windowed.time", F, **COG)
def _(b, p):
    (_cogrouped(b).windowedBy(TimeWindows.ofSizeAndGrace(ms(1000), ms(500)))
     .aggregate(lambda: "").toStream().map(lambda w, v: KeyValue.pair(wk(w), v)).to("out"))


@scenario("cogroup.windowed.sliding", F, **COG)
def _(b, p):
    (_cogrouped(b).windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(ms(500), ms(300)))
     .aggregate(lambda: "").toStream().map(lambda w, v: KeyValue.pair(wk(w), v)).to("out"))


@scenario("cogroup.windowed.session", F, **COG)
def _(b, p):
    (_cogrouped(b).windowedBy(SessionWindows.ofInactivityGapAndGrace(ms(500), ms(300)))
     .aggregate(lambda: "", lambda k, a1, a2: a1 + "|" + a2, Materialized.as_("cs"))
     .toStream().map(lambda w, v: KeyValue.pair(wk(w), orDash(v))).to("out"))


# ------------------------------------------------------------------------------ foreign-key table-table joins
F = "fkJoin"
FK = dict(cached=True, inputs=TWO_TABLES, leading=TWO_TABLES_LEADING, records=30)
FK_STORE = ({"name": "fk", "kind": "tkv"},)


def fk(v):
    return v[0:1]


@scenario("fk.join", F, **FK)
def _(b, p):
    left = b.table("in1")
    left.join(b.table("in2"), lambda v: fk(v), lambda a, c: a + "|" + c).toStream().to("out")


@scenario("fk.leftJoin", F, **FK)
def _(b, p):
    left = b.table("in1")
    left.leftJoin(b.table("in2"), lambda v: fk(v), lambda a, c: a + "|" + orDash(c)).toStream().to("out")


@scenario("fk.join.biFunction", F, **FK)
def _(b, p):
    left = b.table("in1")
    left.join(b.table("in2"), lambda k, v: "x" if k == "a" else fk(v), lambda a, c: a + "|" + c).toStream().to("out")


@scenario("fk.join.materialized", F, stores=FK_STORE, **FK)
def _(b, p):
    left = b.table("in1")
    left.join(b.table("in2"), lambda v: fk(v), lambda a, c: a + "|" + c, Materialized.as_("fk")).toStream().to("out")


@scenario("fk.leftJoin.tableJoined.materialized", F, stores=FK_STORE, **FK)
def _(b, p):
    left = b.table("in1")
    left.leftJoin(b.table("in2"), lambda v: fk(v), lambda a, c: a + "|" + orDash(c), TableJoined.as_("fkj"),
                  Materialized.as_("fk")).toStream().to("out")


@scenario("fk.join.tableJoined", F, **FK)
def _(b, p):
    left = b.table("in1")
    left.join(b.table("in2"), lambda v: fk(v), lambda a, c: a + "|" + c, TableJoined.as_("fkj")).toStream().to("out")


@scenario("fk.join.nullForeignKey", F, **FK)
def _(b, p):
    left = b.table("in1")
    left.join(b.table("in2"), lambda v: None if v.startswith("x") else fk(v), lambda a, c: a + "|" + c) \
        .toStream().to("out")


@scenario("fk.leftJoin.nullForeignKey", F, **FK)
def _(b, p):
    left = b.table("in1")
    left.leftJoin(b.table("in2"), lambda v: None if v.startswith("x") else fk(v), lambda a, c: a + "|" + orDash(c)) \
        .toStream().to("out")


@scenario("fk.join.chained", F, stores=FK_STORE, **FK)
def _(b, p):
    left = b.table("in1")
    fkJoined = left.join(b.table("in2"), lambda v: fk(v), lambda a, c: a + "|" + c, Materialized.as_("fk"))
    left.join(fkJoined, lambda a, j: a + "=" + j).toStream().to("out")


@scenario("fk.join.mapValuesLeft", F, **FK)
def _(b, p):
    left = b.table("in1").mapValues(lambda v: v + "!")
    left.join(b.table("in2"), lambda v: fk(v), lambda a, c: a + "|" + c).toStream().to("out")


@scenario("fk.leftJoin.filterRight", F, **FK)
def _(b, p):
    left = b.table("in1")
    right = b.table("in2").filter(lambda k, v: len(v) > 1)
    left.leftJoin(right, lambda v: fk(v), lambda a, c: a + "|" + orDash(c)).toStream().to("out")


# ------------------------------------------------------------------------------ versioned tables
F = "versioned"
VJOIN = dict(cached=True, inputs=STREAM_TABLE, records=30)
VTBL = dict(cached=True, inputs=TABLE, leading=TABLE_LEADING, records=30)
VTBL2 = dict(cached=True, inputs=TWO_TABLES, leading=TWO_TABLES_LEADING, records=30)
AS_OF = [0, 500, 1000, 2000, 3000, 5000, 8000, 12000]


def versionedStore(name: str, historyMs: int) -> Materialized:
    return Materialized.as_(Stores.persistentVersionedKeyValueStore(name, ms(historyMs)))


def vstore(name: str, probe: str = "abcx") -> tuple:
    return ({"name": name, "kind": "versioned", "probe": list(probe), "asOf": AS_OF},)


@scenario("vjoin.table", F, stores=vstore("vt"), **VJOIN)
def _(b, p):
    t = b.table("tbl", versionedStore("vt", 2000))
    b.stream("in").join(t, lambda v, tv: v + "|" + tv).to("out")


@scenario("vleftJoin.table", F, **VJOIN)
def _(b, p):
    t = b.table("tbl", versionedStore("vt", 2000))
    b.stream("in").leftJoin(t, lambda v, tv: v + "|" + orDash(tv)).to("out")


@scenario("vjoin.grace", F, **VJOIN)
def _(b, p):
    t = b.table("tbl", versionedStore("vt", 2000))
    b.stream("in").join(t, lambda v, tv: v + "|" + tv,
                        Joined.with_(Serdes.String(), Serdes.String(), Serdes.String(), "vj", ms(400))).to("out")


@scenario("vleftJoin.grace", F, **VJOIN)
def _(b, p):
    t = b.table("tbl", versionedStore("vt", 2000))
    b.stream("in").leftJoin(t, lambda v, tv: v + "|" + orDash(tv), Joined.as_("vj").withGracePeriod(ms(700))).to("out")


@scenario("vjoin.grace.filtered", F, **VJOIN)
def _(b, p):
    t = b.table("tbl", versionedStore("vt", 2000)).filter(lambda k, v: len(v) > 1)
    b.stream("in").join(t, lambda v, tv: v + "|" + tv, Joined.as_("vj").withGracePeriod(ms(300))).to("out")


@scenario("vjoin.grace.notVersioned", F, **VJOIN)
def _(b, p):
    t = b.table("tbl")
    b.stream("in").join(t, lambda v, tv: v + "|" + tv, Joined.as_("vj").withGracePeriod(ms(300))).to("out")


@scenario("vjoin.grace.pastRetention", F, **VJOIN)
def _(b, p):
    t = b.table("tbl", versionedStore("vt", 200))
    b.stream("in").join(t, lambda v, tv: v + "|" + tv, Joined.as_("vj").withGracePeriod(ms(300))).to("out")


@scenario("vtable.toStream", F, stores=vstore("vt", "abcd"), **VTBL)
def _(b, p):
    b.table("in", versionedStore("vt", 1000)).toStream().to("out")


@scenario("vtoTable", F, stores=vstore("vt", "abcd"), **VTBL)
def _(b, p):
    b.stream("in").toTable(versionedStore("vt", 1000)).toStream().to("out")


@scenario("vtable.filter", F, **VTBL)
def _(b, p):
    b.table("in", versionedStore("vt", 1000)).filter(lambda k, v: len(v) > 1).toStream().to("out")


@scenario("vtable.groupBy.count", F, **VTBL)
def _(b, p):
    (b.table("in", versionedStore("vt", 1000)).groupBy(lambda k, v: KeyValue.pair(v[0:1], v)).count()
     .toStream().to("out", LONGS))


@scenario("vtable.join.table", F, **VTBL2)
def _(b, p):
    left = b.table("in1", versionedStore("v1", 1000))
    left.leftJoin(b.table("in2", versionedStore("v2", 1000)), lambda a, c: a + "|" + orDash(c)).toStream().to("out")


@scenario("vfk.join", F, **VTBL2)
def _(b, p):
    left = b.table("in1", versionedStore("v1", 1000))
    left.join(b.table("in2", versionedStore("v2", 1000)), lambda v: fk(v), lambda a, c: a + "|" + c) \
        .toStream().to("out")


@scenario("vtable.suppress", F, **VTBL)
def _(b, p):
    (b.table("in", versionedStore("vt", 1000))
     .suppress(Suppressed.untilTimeLimit(ms(1000), Suppressed.BufferConfig.unbounded())).toStream().to("out"))


# ------------------------------------------------------------------------------ the driver's store reads (issue 20 item 6)
F = "stores"


@scenario("stores.kv.ops", F, java="count.named.materialized", cached=True,
          stores=({"name": "cnt-store", "kind": "kv-ops"},))
def _(b, p):
    b.stream("in").groupByKey().count(Named.as_("cnt"), Materialized.as_("cnt-store")).toStream().to("out", LONGS)


@scenario("stores.window.ops", F, java="wcount.named.materialized", cached=True,
          stores=({"name": "wstore", "kind": "window-ops", "probe": list("abd"), "from": 1000, "to": 6000},))
def _(b, p):
    (b.stream("in").groupByKey().windowedBy(TimeWindows.ofSizeWithNoGrace(ms(1000)))
     .count(Named.as_("wc"), Materialized.as_("wstore").withRetention(timedelta(minutes=1)))
     .toStream().map(lambda w, c: KeyValue.pair(wk(w), c)).to("out", LONGS))


@scenario("stores.session.count", F, cached=True,
          stores=({"name": "ss", "kind": "session-ops", "probe": list("abd"), "from": 1000, "to": 6000},))
def _(b, p):
    (b.stream("in").groupByKey().windowedBy(SessionWindows.ofInactivityGapAndGrace(ms(500), ms(300)))
     .count(Materialized.as_("ss")).toStream().map(lambda w, c: KeyValue.pair(wk(w), orDash(c))).to("out"))

package conformance;

import static conformance.Catalogue.orDash;
import static conformance.Catalogue.sb;

import conformance.Harness.Scenario;
import java.time.Duration;
import java.util.Map;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.processor.PunctuationType;
import org.apache.kafka.streams.processor.api.ContextualProcessor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;

/**
 * Issue 36's classes of input as a Kafka Streams user writes them: foreign-key joins whose result
 * is not cached (deletes and foreign-key moves), ... Twins of the same names in
 * tests/conformance/catalogue_issue36.py, in the same order.
 */
final class Issue36 {
    private Issue36() {
    }

    static void all(final Map<String, Scenario> m) {
        fkJoins(m);
        deadLetterQueue(m);
    }

    static String fk(final String v) {
        return v.substring(0, 1);
    }

    // ------------------------------------------------------------------ foreign-key joins, result not cached
    /** KTableKTableForeignKeyJoinIntegrationTest's result table: "the cache suppresses some of the
     *  unnecessary tombstones we want to make assertions about". */
    static Materialized<String, String, KeyValueStore<Bytes, byte[]>> uncached(final boolean named) {
        return named
            ? Materialized.<String, String>as(Stores.inMemoryKeyValueStore("fk")).withValueSerde(Serdes.String())
                .withCachingDisabled()
            : Materialized.<String, String, KeyValueStore<Bytes, byte[]>>with(null, Serdes.String()).withCachingDisabled();
    }

    static void fkJoins(final Map<String, Scenario> m) {
        m.put("fk.join.uncached", p -> sb(b -> {
            final KTable<String, String> left = b.table("in1");
            left.join(b.<String, String>table("in2"), v -> fk(v), (a, c) -> a + "|" + c, uncached(true))
                .toStream().to("out");
        }));
        m.put("fk.leftJoin.uncached", p -> sb(b -> {
            final KTable<String, String> left = b.table("in1");
            left.leftJoin(b.<String, String>table("in2"), v -> fk(v), (a, c) -> a + "|" + orDash(c), uncached(true))
                .toStream().to("out");
        }));
        m.put("fk.join.uncached.rejoin", p -> sb(b -> {
            final KTable<String, String> left = b.table("in1");
            final KTable<String, String> joined =
                left.join(b.<String, String>table("in2"), v -> fk(v), (a, c) -> a + "|" + c, uncached(false));
            joined.toStream().to("out");
            joined.join(left, (j, a) -> "rejoin(" + j + "," + a + ")", Materialized.with(null, Serdes.String()))
                .toStream().to("rej");
        }));
        m.put("fk.leftJoin.uncached.rejoin", p -> sb(b -> {
            final KTable<String, String> left = b.table("in1");
            final KTable<String, String> joined =
                left.leftJoin(b.<String, String>table("in2"), v -> fk(v), (a, c) -> a + "|" + orDash(c), uncached(false));
            joined.toStream().to("out");
            joined.leftJoin(left, (j, a) -> "rejoin(" + j + "," + orDash(a) + ")",
                Materialized.<String, String>as(Stores.inMemoryKeyValueStore("fk-rejoin")).withValueSerde(Serdes.String())
                    .withCachingDisabled())
                .toStream().to("rej");
        }));
    }

    // ------------------------------------------------------------------ processing errors and the dead-letter queue
    /** Forwards what it gets; its stream-time punctuator (every second) fails every other time. */
    static final class FailingTicker extends ContextualProcessor<String, String, String, String> {
        private int ticks;

        @Override
        public void init(final ProcessorContext<String, String> context) {
            super.init(context);
            context.schedule(Duration.ofMillis(1000), PunctuationType.STREAM_TIME, t -> {
                if (ticks++ % 2 == 1) {
                    throw new IllegalStateException("tick " + t);
                }
                context.forward(new Record<>("tick", Long.toString(t), t));
            });
        }

        @Override
        public void process(final Record<String, String> record) {
            context().forward(record);
        }
    }

    static void deadLetterQueue(final Map<String, Scenario> m) {
        m.put("fail.punctuate", p -> sb(b -> b.<String, String>stream("in").process(FailingTicker::new).to("out")));
        m.put("fail.processing.repartitioned", p -> sb(b -> b.<String, String>stream("in")
            .selectKey((k, v) -> v == null ? null : v.substring(0, 1)).groupByKey()
            .reduce((a, v) -> {
                if (v.endsWith("x")) {
                    throw new IllegalStateException("boom " + a + "+" + v);
                }
                return a + v;
            }).toStream().to("out")));
    }
}

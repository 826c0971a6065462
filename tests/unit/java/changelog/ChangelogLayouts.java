package changelog;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Comparator;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyDescription;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.EmitStrategy;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.Joined;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.SlidingWindows;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.internals.SessionWindow;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.processor.internals.InternalTopicConfig;
import org.apache.kafka.streams.processor.internals.InternalTopicManager;
import org.apache.kafka.streams.processor.internals.InternalTopologyBuilder;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.TimestampedWindowStore;
import org.apache.kafka.streams.state.ValueAndTimestamp;
import org.apache.kafka.streams.state.WindowStore;
import org.apache.kafka.streams.test.TestRecord;

/**
 * Kafka Streams' own changelog records and changelog topic configs, for kspark's
 * {@code kspark.state._changelog} to be checked against (tests/unit/test_changelog_layouts.py).
 *
 * <p>Each scenario builds one small topology with logging on (Kafka's default), pipes a fixed
 * input through {@link TopologyTestDriver} (caching off, wall clock at 0) and reports:
 * <ul>
 * <li>{@code records}: every record TTD captured on a {@code *-changelog} topic, in send order
 *     (TTD keeps all the producer's records by topic; read with ByteArray deserializers): key and
 *     value hex (null for a tombstone), the record timestamp (null when Kafka sends none and the
 *     producer would stamp it) and the headers; for a stream-table join buffer also
 *     {@code restoredAs}: the timestamp and store key Kafka's restore derives from the key;</li>
 * <li>{@code configs}: per changelog topic, the class Kafka's {@code InternalTopologyBuilder.
 *     subtopologyToTopicsInfo()} chose and {@code InternalTopicConfig.properties(defaults,
 *     additionalRetention)}: the configs {@code InternalTopicManager.makeReady} creates the topic
 *     with, where the two arguments are read from an {@code InternalTopicManager} built on the
 *     scenario's StreamsConfig (its {@code topic.*} configs and
 *     {@code windowstore.changelog.additional.retention.ms});</li>
 * <li>{@code stores}: the store names of {@code describe()}.</li>
 * </ul>
 * Usage: {@code java changelog.ChangelogLayouts} prints one JSON object, scenario name to result.
 */
public final class ChangelogLayouts {
    static final String APP = "cl";
    static final JsonNodeFactory F = JsonNodeFactory.instance;
    static Path stateDir;

    public static void main(final String[] args) throws Exception {
        stateDir = Files.createTempDirectory("kspark-changelog-layouts-");
        final ObjectNode out = F.objectNode();
        try {
            count(out);
            table(out);
            windowed(out, "windowed", false);
            windowed(out, "windowedFinal", true);
            session(out, "session", false);
            session(out, "sessionFinal", true);
            sliding(out);
            streamJoin(out, "innerJoin");
            streamJoin(out, "leftJoin");
            streamJoin(out, "outerJoin");
            suppressFinal(out);
            suppressTimeLimit(out);
            versionedJoin(out);
            fkJoin(out);
            papi(out);
            consistency(out);
        } finally {
            try (java.util.stream.Stream<Path> paths = Files.walk(stateDir)) {
                paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
        System.out.println(new ObjectMapper().writerWithDefaultPrettyPrinter().writeValueAsString(out));
    }

    // ------------------------------------------------------------------------------ scenarios
    /** groupByKey().count(): a timestamped key-value store. */
    static void count(final ObjectNode out) throws Exception {
        final StreamsBuilder b = new StreamsBuilder();
        b.<String, String>stream("in").groupByKey().count(Materialized.as("counts"));
        run(out, "count", b.build(), new Properties(), d -> {
            final TestInputTopic<String, String> in = input(d, "in");
            in.pipeInput("a", "x", 10);
            in.pipeInput("b", "y", 20);
            in.pipeInput("a", "z", 5);    // out of order: the count keeps timestamp 10
        });
    }

    /** A materialized KTable source, with a tombstone and an out-of-order update. */
    static void table(final ObjectNode out) throws Exception {
        final StreamsBuilder b = new StreamsBuilder();
        b.table("tin", Materialized.as("table-store"));
        run(out, "table", b.build(), new Properties(), d -> {
            final TestInputTopic<String, String> in = input(d, "tin");
            in.pipeInput("a", "v1", 5);
            in.pipeInput("b", "w", 7);
            in.pipeInput("a", null, 9);
            in.pipeInput("a", "v2", 3);
        });
    }

    /** windowedBy(TimeWindows size 10, grace 5).count(), emitting updates (retention 1000) or final results. */
    static void windowed(final ObjectNode out, final String name, final boolean emitFinal) throws Exception {
        final StreamsBuilder b = new StreamsBuilder();
        if (emitFinal) {
            b.<String, String>stream("in").groupByKey()
                .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(10), Duration.ofMillis(5)))
                .emitStrategy(EmitStrategy.onWindowClose())
                .count(Materialized.as("win-final"));
        } else {
            b.<String, String>stream("in").groupByKey()
                .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(10), Duration.ofMillis(5)))
                .count(Materialized.<String, Long, WindowStore<org.apache.kafka.common.utils.Bytes, byte[]>>as("win")
                    .withRetention(Duration.ofMillis(1000)));
        }
        run(out, name, b.build(), new Properties(), d -> {
            final TestInputTopic<String, String> in = input(d, "in");
            in.pipeInput("a", "1", 3);
            in.pipeInput("a", "2", 7);
            in.pipeInput("a", "2b", 6);   // out of order: the window keeps timestamp 7
            in.pipeInput("b", "3", 12);
            in.pipeInput("a", "4", 25);
            in.pipeInput("a", "5", 8);   // its window [0,10) closed at stream time 15: dropped
        });
    }

    /** windowedBy(SessionWindows gap 5, grace 2).count(), emitting updates or final results. */
    static void session(final ObjectNode out, final String name, final boolean emitFinal) throws Exception {
        final StreamsBuilder b = new StreamsBuilder();
        final var windowed = b.<String, String>stream("in").groupByKey()
            .windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofMillis(5), Duration.ofMillis(2)));
        if (emitFinal) {
            windowed.emitStrategy(EmitStrategy.onWindowClose()).count(Materialized.as("sess-final"));
        } else {
            windowed.count(Materialized.as("sess"));
        }
        run(out, name, b.build(), new Properties(), d -> {
            final TestInputTopic<String, String> in = input(d, "in");
            in.pipeInput("a", "1", 0);
            in.pipeInput("a", "2", 4);    // merges [0,0] into [0,4]
            in.pipeInput("b", "3", 10);
            in.pipeInput("a", "4", 20);
            in.pipeInput("a", "5", 12);   // session [12,12] closed (close time 13): dropped
            in.pipeInput("a", "6", 16);   // merges [20,20] into [16,20]
        });
    }

    /** windowedBy(SlidingWindows difference 10, grace 5).count(). */
    static void sliding(final ObjectNode out) throws Exception {
        final StreamsBuilder b = new StreamsBuilder();
        b.<String, String>stream("in").groupByKey()
            .windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(10), Duration.ofMillis(5)))
            .count(Materialized.as("slide"));
        run(out, "sliding", b.build(), new Properties(), d -> {
            final TestInputTopic<String, String> in = input(d, "in");
            in.pipeInput("a", "1", 5);
            in.pipeInput("a", "2", 12);
            in.pipeInput("b", "3", 30);
        });
    }

    /** Stream-stream join, window 10 before and after, grace 5: inner, left or outer. */
    static void streamJoin(final ObjectNode out, final String kind) throws Exception {
        final StreamsBuilder b = new StreamsBuilder();
        final KStream<String, String> left = b.stream("L");
        final KStream<String, String> right = b.stream("R");
        final JoinWindows w = JoinWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(10), Duration.ofMillis(5));
        final KStream<String, String> joined;
        if (kind.equals("innerJoin")) {
            joined = left.join(right, (l, r) -> l + "+" + r, w);
        } else if (kind.equals("leftJoin")) {
            joined = left.leftJoin(right, (l, r) -> l + "+" + r, w);
        } else {
            joined = left.outerJoin(right, (l, r) -> l + "+" + r, w);
        }
        joined.to("out");
        run(out, kind, b.build(), new Properties(), d -> {
            final TestInputTopic<String, String> l = input(d, "L");
            final TestInputTopic<String, String> r = input(d, "R");
            l.pipeInput("a", "l1", 0);
            l.pipeInput("a", "l1b", 0);   // same key and time: a list of two in the outer store
            r.pipeInput("b", "r1", 3);    // no partner
            r.pipeInput("a", "r2", 5);    // joins both a's
            l.pipeInput("c", "l2", 6);    // no partner
            l.pipeInput("z", "late", 100); // stream time 100: the outer store's records are emitted
        });
    }

    /** windowedBy(TimeWindows size 10, no grace).count().suppress(untilWindowCloses). */
    static void suppressFinal(final ObjectNode out) throws Exception {
        final StreamsBuilder b = new StreamsBuilder();
        b.<String, String>stream("in").groupByKey()
            .windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofMillis(10)))
            .count(Materialized.with(Serdes.String(), Serdes.Long()))  // the windowed key serde suppress needs
            .suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded()))
            .toStream().to("out");
        run(out, "suppressFinal", b.build(), new Properties(), d -> {
            final TestInputTopic<String, String> in = input(d, "in");
            final RecordHeaders h = new RecordHeaders();
            h.add("h", new byte[] {1, 2});
            in.pipeInput(new TestRecord<>("a", "1", h, 1L));
            in.pipeInput("a", "2", 2);
            in.pipeInput("b", "3", 5);
            in.pipeInput("c", "4", 12);   // closes [0,10): a and b are emitted
        });
    }

    /** A KTable's mapValues(first character).suppress(untilTimeLimit 10 ms): prior, old and new values. */
    static void suppressTimeLimit(final ObjectNode out) throws Exception {
        final StreamsBuilder b = new StreamsBuilder();
        final KTable<String, String> t = b.table("tin");
        t.mapValues(v -> v.substring(0, 1))
            .suppress(Suppressed.untilTimeLimit(Duration.ofMillis(10),
                Suppressed.BufferConfig.maxRecords(100).emitEarlyWhenFull()))
            .toStream().to("out");
        run(out, "suppressTimeLimit", b.build(), new Properties(), d -> {
            final TestInputTopic<String, String> in = input(d, "tin");
            in.pipeInput("a", "k0", 100);
            in.pipeInput("b", "x0", 200);  // stream time 200: a (buffered at 100) is emitted
            in.pipeInput("a", "k1", 195);  // Change(k, k): the old value is the prior value
            in.pipeInput("a", "k2", 196);  // Change(k, k): the old value equals the prior value
            in.pipeInput("a", "m", 197);   // Change(m, k)
            final RecordHeaders h = new RecordHeaders();
            h.add("hk", "hv".getBytes(StandardCharsets.UTF_8));
            h.add("nul", null);
            in.pipeInput(new TestRecord<>("c", "z9", h, 198L));
        });
    }

    /** A versioned KTable (history 100) joined by a stream with grace 10. */
    static void versionedJoin(final ObjectNode out) throws Exception {
        final StreamsBuilder b = new StreamsBuilder();
        final KTable<String, String> t = b.table("vin",
            Materialized.as(Stores.persistentVersionedKeyValueStore("vstore", Duration.ofMillis(100))));
        b.<String, String>stream("sin")
            .join(t, (s, v) -> s + "+" + v,
                Joined.<String, String, String>with(Serdes.String(), Serdes.String(), Serdes.String())
                    .withGracePeriod(Duration.ofMillis(10)))
            .to("out");
        run(out, "versionedJoin", b.build(), new Properties(), d -> {
            final TestInputTopic<String, String> v = input(d, "vin");
            final TestInputTopic<String, String> s = input(d, "sin");
            v.pipeInput("a", "t1", 10);
            v.pipeInput("a", "t0", 5);     // an older version
            v.pipeInput("a", null, 20);    // a tombstone from 20 on
            s.pipeInput("a", "s1", 12);    // buffered
            s.pipeInput("a", "s2", 30);    // stream time 30: s1 (12 <= 20) joins as of 12
        });
    }

    /** A foreign-key table-table join: left values "fk|payload". */
    static void fkJoin(final ObjectNode out) throws Exception {
        final StreamsBuilder b = new StreamsBuilder();
        final KTable<String, String> left = b.table("lin");
        final KTable<String, String> right = b.table("rin");
        left.join(right, v -> v.split("\\|")[0], (l, r) -> l + "+" + r).toStream().to("out");
        run(out, "fkJoin", b.build(), new Properties(), d -> {
            final TestInputTopic<String, String> l = input(d, "lin");
            final TestInputTopic<String, String> r = input(d, "rin");
            l.pipeInput("p1", "f1|x", 1);
            l.pipeInput("p2", "f1|y", 2);
            r.pipeInput("f1", "R1", 3);
            l.pipeInput("p1", "f2|x", 4);  // foreign key change: f1's subscription deleted
            l.pipeInput("p2", null, 5);    // left delete
        });
    }

    /** Processor API stores, with a per-store log config, global topic.* configs and a 1 s additional retention. */
    static void papi(final ObjectNode out) throws Exception {
        final StreamsBuilder b = new StreamsBuilder();
        b.addStateStore(Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore("papi-kv"),
            Serdes.String(), Serdes.String()));
        b.addStateStore(Stores.windowStoreBuilder(
                Stores.persistentWindowStore("papi-win", Duration.ofMillis(100), Duration.ofMillis(10), false),
                Serdes.String(), Serdes.String())
            .withLoggingEnabled(Map.of("retention.ms", "7777", "segment.bytes", "1048576")));
        b.addStateStore(Stores.windowStoreBuilder(
            Stores.inMemoryWindowStore("papi-dup", Duration.ofMillis(100), Duration.ofMillis(10), true),
            Serdes.String(), Serdes.String()));
        b.addStateStore(Stores.timestampedWindowStoreBuilder(
            Stores.persistentTimestampedWindowStore("papi-tdup", Duration.ofMillis(100), Duration.ofMillis(10), true),
            Serdes.String(), Serdes.String()));
        b.addStateStore(Stores.sessionStoreBuilder(Stores.persistentSessionStore("papi-sess", Duration.ofMillis(100)),
            Serdes.String(), Serdes.String()));
        b.addStateStore(Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore("papi-nolog"),
            Serdes.String(), Serdes.String()).withLoggingDisabled());
        b.<String, String>stream("in").process(StoresProcessor::new,
            "papi-kv", "papi-win", "papi-dup", "papi-tdup", "papi-sess", "papi-nolog");
        final Properties p = new Properties();
        p.put("topic.min.insync.replicas", "2");
        p.put("topic.retention.ms", "999");
        p.put(StreamsConfig.WINDOW_STORE_CHANGE_LOG_ADDITIONAL_RETENTION_MS_CONFIG, "1000");
        run(out, "papi", b.build(), p, d -> {
            final TestInputTopic<String, String> in = input(d, "in");
            in.pipeInput("a", "v1", 10);
            in.pipeInput("b", "v2", 20);
            in.pipeInput("a", "del", 30);
        });
    }

    /** groupByKey().count() with internal.iq.consistency.offset.vector.enabled: position headers. */
    static void consistency(final ObjectNode out) throws Exception {
        final StreamsBuilder b = new StreamsBuilder();
        b.<String, String>stream("in").groupByKey().count(Materialized.as("counts"));
        final Properties p = new Properties();
        p.put(StreamsConfig.InternalConfig.IQ_CONSISTENCY_OFFSET_VECTOR_ENABLED, true);
        run(out, "consistency", b.build(), p, d -> {
            final TestInputTopic<String, String> in = input(d, "in");
            in.pipeInput("a", "x", 10);
            in.pipeInput("a", "y", 11);
        });
    }

    static final class StoresProcessor implements Processor<String, String, Void, Void> {
        KeyValueStore<String, String> kv;
        WindowStore<String, String> win;
        WindowStore<String, String> dup;
        TimestampedWindowStore<String, String> tdup;
        SessionStore<String, String> sess;
        KeyValueStore<String, String> nolog;

        @Override
        public void init(final ProcessorContext<Void, Void> context) {
            kv = context.getStateStore("papi-kv");
            win = context.getStateStore("papi-win");
            dup = context.getStateStore("papi-dup");
            tdup = context.getStateStore("papi-tdup");
            sess = context.getStateStore("papi-sess");
            nolog = context.getStateStore("papi-nolog");
        }

        @Override
        public void process(final Record<String, String> r) {
            final String k = r.key();
            final long t = r.timestamp();
            final Windowed<String> session = new Windowed<>(k, new SessionWindow(t - 5, t));
            nolog.put(k, r.value());
            if (r.value().equals("del")) {
                kv.delete(k);
                win.put(k, null, 10);     // a window store delete
                sess.remove(new Windowed<>(k, new SessionWindow(5, 10)));
                return;
            }
            kv.put(k, r.value());
            win.put(k, r.value(), t);
            dup.put(k, r.value(), t);
            dup.put(k, r.value() + "'", t);  // a duplicate: the next sequence number
            tdup.put(k, ValueAndTimestamp.make(r.value(), t + 1), t);  // logged with the value's timestamp
            sess.put(session, r.value());
        }
    }

    // ------------------------------------------------------------------------------ driver
    static TestInputTopic<String, String> input(final TopologyTestDriver d, final String topic) {
        return d.createInputTopic(topic, new StringSerializer(), new StringSerializer());
    }

    interface Steps {
        void pipe(TopologyTestDriver driver) throws Exception;
    }

    static void run(final ObjectNode out, final String name, final Topology topology, final Properties extra,
                    final Steps steps) throws Exception {
        final Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, APP);
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "unused:9092");
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        props.put(StreamsConfig.STATE_DIR_CONFIG, Files.createTempDirectory(stateDir, name).toString());
        props.putAll(extra);
        final ObjectNode result = F.objectNode();
        result.put("describe", topology.describe().toString());
        final ArrayNode stores = result.putArray("stores");
        final TreeSet<String> storeNames = new TreeSet<>();
        for (final TopologyDescription.Subtopology s : topology.describe().subtopologies()) {
            for (final TopologyDescription.Node n : s.nodes()) {
                if (n instanceof TopologyDescription.Processor) {
                    storeNames.addAll(((TopologyDescription.Processor) n).stores());
                }
            }
        }
        storeNames.forEach(stores::add);
        try (TopologyTestDriver driver = new TopologyTestDriver(topology, props, Instant.ofEpochMilli(0))) {
            steps.pipe(driver);
            result.set("configs", configs(topology, new StreamsConfig(props)));
            final ObjectNode records = result.putObject("records");
            for (final String topic : new TreeSet<>(driver.producedTopicNames())) {
                if (!topic.endsWith("-changelog")) {
                    continue;
                }
                final ArrayNode list = records.putArray(topic);
                for (final TestRecord<byte[], byte[]> r : driver.createOutputTopic(topic,
                        new ByteArrayDeserializer(), new ByteArrayDeserializer()).readRecordsToList()) {
                    final ObjectNode n = record(r);
                    if (topic.endsWith("-Buffer-changelog")) {
                        n.set("restoredAs", bufferRestore(r.key()));
                    }
                    list.add(n);
                }
            }
        }
        out.set(name, result);
    }

    /** Per changelog topic: Kafka's InternalTopicConfig class and the configs it creates the topic with. */
    static ObjectNode configs(final Topology topology, final StreamsConfig config) throws Exception {
        final InternalTopologyBuilder builder = (InternalTopologyBuilder) field(Topology.class, "internalTopologyBuilder")
            .get(topology);
        // InternalTopicManager's own reading of topic.* and windowstore.changelog.additional.retention.ms
        final InternalTopicManager manager = new InternalTopicManager(Time.SYSTEM, null, config);
        @SuppressWarnings("unchecked")
        final Map<String, String> defaults =
            (Map<String, String>) field(InternalTopicManager.class, "defaultTopicConfigs").get(manager);
        final long additional = (long) field(InternalTopicManager.class, "windowChangeLogAdditionalRetention").get(manager);
        final Map<String, InternalTopicConfig> changelogs = new TreeMap<>();
        for (final InternalTopologyBuilder.TopicsInfo info : builder.subtopologyToTopicsInfo().values()) {
            changelogs.putAll(info.stateChangelogTopics);
        }
        final ObjectNode result = F.objectNode();
        for (final Map.Entry<String, InternalTopicConfig> e : changelogs.entrySet()) {
            final ObjectNode c = result.putObject(e.getKey());
            c.put("class", e.getValue().getClass().getSimpleName());
            final ObjectNode properties = c.putObject("properties");
            new TreeMap<>(e.getValue().properties(defaults, additional)).forEach(properties::put);
        }
        return result;
    }

    /** What Kafka's restore of a stream-table join buffer changelog record derives from its key
     *  (RocksDBTimeOrderedKeyValueBytesStore.getWriteBatches): its timestamp and the store key. */
    static ObjectNode bufferRestore(final byte[] key) throws Exception {
        final Method ts = Class.forName("org.apache.kafka.streams.state.internals.WindowKeySchema")
            .getDeclaredMethod("extractStoreTimestamp", byte[].class);
        final Method storeKey = Class.forName(
                "org.apache.kafka.streams.state.internals.PrefixedWindowKeySchemas$TimeFirstWindowKeySchema")
            .getDeclaredMethod("fromNonPrefixWindowKey", byte[].class);
        ts.setAccessible(true);
        storeKey.setAccessible(true);
        final ObjectNode n = F.objectNode();
        n.put("ts", (long) ts.invoke(null, (Object) key));
        n.put("storeKey", hex((byte[]) storeKey.invoke(null, (Object) key)));
        return n;
    }

    static Field field(final Class<?> c, final String name) throws NoSuchFieldException {
        final Field f = c.getDeclaredField(name);
        f.setAccessible(true);
        return f;
    }

    static ObjectNode record(final TestRecord<byte[], byte[]> r) {
        final ObjectNode n = F.objectNode();
        n.put("k", r.key() == null ? null : hex(r.key()));
        n.put("v", r.value() == null ? null : hex(r.value()));
        if (r.getRecordTime() == null) {
            n.putNull("ts");
        } else {
            n.put("ts", r.timestamp());
        }
        final ArrayNode headers = n.putArray("h");
        for (final Header h : r.headers()) {
            final ArrayNode pair = headers.addArray();
            pair.add(h.key());
            pair.add(h.value() == null ? null : hex(h.value()));
        }
        return n;
    }

    static String hex(final byte[] b) {
        final StringBuilder s = new StringBuilder(b.length * 2);
        for (final byte x : b) {
            s.append(Character.forDigit((x >> 4) & 0xF, 16)).append(Character.forDigit(x & 0xF, 16));
        }
        return s.toString();
    }

    private ChangelogLayouts() { }
}

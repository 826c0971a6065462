package migration;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.CloseOptions;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Joined;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.processor.api.ContextualFixedKeyProcessor;
import org.apache.kafka.streams.processor.api.FixedKeyRecord;
import org.apache.kafka.streams.state.Stores;

/**
 * The Java side of tests/kafka/test_migration.py: Kafka Streams applications of one topology
 * (the test's {@code buildTopology} is its line-by-line port), exactly_once_v2, caches off, in
 * one JVM, driven by lines on standard input:
 *
 * <ul>
 *   <li>{@code start <application.id> <input prefix> <output prefix>}: start an application (prints
 *       {@code running <application.id>} once it runs);
 *   <li>{@code hold <application.id>}: from now on the application commits only when it closes
 *       (until then it requests a commit after every record of both sub-topologies, so they see
 *       each other's records at once): what its first sub-topology writes to the repartition
 *       topic stays unread by the second;
 *   <li>{@code close <application.id>}: close it cleanly (prints {@code closed <application.id>}).
 * </ul>
 *
 * <p>It prints {@code seen <application.id> <n>} for every order the first sub-topology
 * processes. End of input closes every application; any failure prints "MIGRATION FAILED" and
 * exits 1; so does running longer than {@code maxSeconds} (the first argument after the
 * bootstrap servers and the state directory).
 */
public final class Migration {
    static final long GAP_MS = 5_000, GRACE_MS = 2_000, WINDOW_MS = 10_000;
    private static final Map<String, Boolean> HOLD = new ConcurrentHashMap<>();
    private static final Map<String, AtomicLong> SEEN = new ConcurrentHashMap<>();

    private Migration() {}

    /** The topology: input topics {@code <in>users}, {@code <in>orders}; output {@code <out>totals}, {@code windows}, {@code sessions}, {@code times}. */
    static Topology topology(final String appId, final String in, final String out) {
        final Serde<String> s = Serdes.String();
        final Serde<Long> l = Serdes.Long();
        final StreamsBuilder b = new StreamsBuilder();
        // a plain (not timestamped) key-value store: its changelog holds the bare values
        final KTable<String, String> users = b.table(in + "users", Consumed.with(s, s),
            Materialized.<String, String>as(Stores.persistentKeyValueStore("user-regions")).withKeySerde(s).withValueSerde(s));
        final KStream<String, Long> orders = b.stream(in + "orders", Consumed.with(s, l))
            .processValues(() -> new CommitRequests<Long>(appId, true), Named.as("commit-requests"));
        // stream-table join, then a KTable aggregation through a repartition topic
        orders.join(users, (amount, region) -> region + ":" + amount, Joined.with(s, l, s))
            .groupBy((user, v) -> v.split(":")[0], Grouped.with(s, s))
            .aggregate(() -> 0L, (region, v, total) -> total + Long.parseLong(v.split(":")[1]), Materialized.with(s, l))
            .toStream().processValues(() -> new CommitRequests<Long>(appId, false), Named.as("commit-requests-totals"))
            .to(out + "totals", Produced.with(s, l));
        // time windows (a timestamped window store)
        orders.groupByKey(Grouped.with(s, l)).windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(WINDOW_MS),
                Duration.ofMillis(GRACE_MS)))
            .reduce(Long::sum)
            .toStream().map((w, v) -> KeyValue.pair(w.key() + "@" + w.window().start(), v))
            .to(out + "windows", Produced.with(s, l));
        // session windows and a suppression buffer
        orders.groupByKey(Grouped.with(s, l)).windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofMillis(GAP_MS),
                Duration.ofMillis(GRACE_MS)))
            .count()
            .suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded()))
            .toStream().map((w, c) -> KeyValue.pair(w.key() + "@" + w.window().start() + "/" + w.window().end(), c))
            .to(out + "sessions", Produced.with(s, l));
        // the task's stream time as each order is processed (after a restart: from the committed offset metadata)
        orders.processValues(() -> new ContextualFixedKeyProcessor<String, Long, Long>() {
            @Override
            public void process(final FixedKeyRecord<String, Long> record) {
                context().forward(record.withValue(context().currentStreamTimeMs()));
            }
        }, Named.as("stream-time")).to(out + "times", Produced.with(s, l));
        return b.build();
    }

    /** Requests a commit after every record unless the application holds; counts the orders. */
    static final class CommitRequests<V> extends ContextualFixedKeyProcessor<String, V, V> {
        private final String appId;
        private final boolean count;

        CommitRequests(final String appId, final boolean count) {
            this.appId = appId;
            this.count = count;
        }

        @Override
        public void process(final FixedKeyRecord<String, V> record) {
            if (count) {
                say("seen " + appId + " " + SEEN.get(appId).incrementAndGet());
            }
            if (!HOLD.getOrDefault(appId, false)) {
                context().commit();
            }
            context().forward(record);
        }
    }

    static Properties props(final String bootstrap, final String stateDir, final String appId) {
        final Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        // commits: requested, or on close (a held application's transaction stays open for up to a minute)
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 60_000);
        p.put(StreamsConfig.producerPrefix("transaction.timeout.ms"), 60_000);
        p.put(StreamsConfig.REPARTITION_PURGE_INTERVAL_MS_CONFIG, Long.MAX_VALUE);
        p.put(StreamsConfig.consumerPrefix("session.timeout.ms"), 6_000);
        p.put(StreamsConfig.consumerPrefix("heartbeat.interval.ms"), 500);
        return p;
    }

    public static void main(final String[] args) throws Exception {
        final String bootstrap = args[0], stateDir = args[1];
        final long deadline = System.nanoTime() + Long.parseLong(args[2]) * 1_000_000_000L;
        final Map<String, KafkaStreams> apps = new ConcurrentHashMap<>();
        final Thread watchdog = new Thread(() -> {
            while (System.nanoTime() < deadline) {
                try {
                    Thread.sleep(200);
                } catch (final InterruptedException e) {
                    return;
                }
            }
            say("MIGRATION FAILED: ran longer than " + args[2] + " s");
            Runtime.getRuntime().halt(1);
        });
        watchdog.setDaemon(true);
        watchdog.start();
        final BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            final String[] cmd = line.trim().split(" ");
            switch (cmd[0]) {
                case "start": {
                    final String appId = cmd[1];
                    SEEN.put(appId, new AtomicLong());
                    final Topology topology = topology(appId, cmd[2], cmd[3]);
                    say("topology " + appId + "\n" + topology.describe() + "end of topology");
                    final KafkaStreams streams = new KafkaStreams(topology, props(bootstrap, stateDir, appId));
                    streams.setStateListener((now, before) -> {
                        if (now == KafkaStreams.State.RUNNING) {
                            say("running " + appId);
                        }
                    });
                    streams.setUncaughtExceptionHandler(e -> {
                        say("MIGRATION FAILED: " + appId);
                        e.printStackTrace(System.out);
                        System.out.flush();
                        Runtime.getRuntime().halt(1);
                        return null;
                    });
                    apps.put(appId, streams);
                    streams.start();
                    break;
                }
                case "hold":
                    HOLD.put(cmd[1], true);
                    say("holding " + cmd[1]);
                    break;
                case "close":
                    close(apps.remove(cmd[1]), cmd[1]);
                    break;
                default:
                    say("MIGRATION FAILED: unknown command " + line);
                    System.exit(1);
            }
        }
        for (final Map.Entry<String, KafkaStreams> app : apps.entrySet()) {
            close(app.getValue(), app.getKey());
        }
        System.exit(0);
    }

    private static synchronized void say(final String line) {
        System.out.println(line);
        System.out.flush();
    }

    /** Closes and leaves the group (KIP-1153): a plain close stays a member until its session
     * times out, and the test's next instance of the application would wait that out. */
    private static void close(final KafkaStreams streams, final String appId) {
        if (!streams.close(CloseOptions.groupMembershipOperation(CloseOptions.GroupMembershipOperation.LEAVE_GROUP)
                .withTimeout(Duration.ofSeconds(30)))) {
            say("MIGRATION FAILED: " + appId + " did not close within 30 s");
            System.exit(1);
        }
        say("closed " + appId + " " + streams.state());
    }
}

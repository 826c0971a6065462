package bench;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * P5's Java side: {@code stream(input).groupByKey().count(Materialized.as("counts"))} with String
 * keys and values, the counts written to {@code output} as Longs: default RocksDB store with its
 * changelog, record cache off ({@code statestore.cache.max.bytes=0} and
 * {@code withCachingDisabled()}, so every record writes the store and emits an update, as kspark's
 * run with {@code statestore.cache.max.bytes=0}), exactly_once_v2, commit.interval.ms 100 (Kafka's
 * default under EOS), 2 stream threads (the 2 cores).
 *
 * <p>Arguments are {@code key=value}: bootstrap, appId, input, output, stateDir, threads
 * (default 2), commitMs (default 100).
 *
 * <p>Phases, driven by the benchmark over standard input and output. Phase 0 runs from
 * {@code KafkaStreams.start()} until the group's committed offsets (committed in the same
 * transactions as the output and the changelog) reach the input's end offsets as of the start
 * (polled every 20 ms); the application is then paused ({@code KafkaStreams.pause()}) and one
 * JSON line is printed: phase, records, seconds, cpu_seconds (the whole JVM: stream threads,
 * RocksDB, GC, JIT), peak_rss_mb (VmHWM, reset at the phase's start through
 * /proc/self/clear_refs). Each line "GO" read from standard input starts the next phase: the
 * peak RSS is reset, the input's end offsets are listed again (the benchmark has produced that
 * phase's records while the application was paused), the application resumes, and the clock
 * runs until the committed offsets reach those ends; then it pauses again and prints the
 * phase's line. "STOP" or the end of standard input closes the application and exits 0. A
 * stream thread failure prints "STREAMS FAILED" and exits 1.
 */
public final class KeyCount {
    private KeyCount() {}

    static Topology topology(final String input, final String output) {
        final StreamsBuilder b = new StreamsBuilder();
        b.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
                .groupByKey(Grouped.with(Serdes.String(), Serdes.String()))
                .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("counts")
                        .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()).withCachingDisabled())
                .toStream()
                .to(output, Produced.with(Serdes.String(), Serdes.Long()));
        return b.build();
    }

    public static void main(final String[] argv) throws Exception {
        final Map<String, String> args = java.util.Arrays.stream(argv)
                .map(a -> a.split("=", 2)).collect(Collectors.toMap(a -> a[0], a -> a[1]));
        final Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, args.get("appId"));
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args.get("bootstrap"));
        props.put(StreamsConfig.STATE_DIR_CONFIG, args.get("stateDir"));
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, Integer.parseInt(args.getOrDefault("threads", "2")));
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, Integer.parseInt(args.getOrDefault("commitMs", "100")));
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0L);
        props.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        final String input = args.get("input");
        final KafkaStreams streams = new KafkaStreams(topology(input, args.get("output")), props);
        streams.setUncaughtExceptionHandler(e -> {
            System.out.println("STREAMS FAILED");
            e.printStackTrace(System.out);
            System.out.flush();
            Runtime.getRuntime().halt(1);
            return StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        final Properties adminProps = new Properties();
        adminProps.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args.get("bootstrap"));
        final BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        try (Admin admin = Admin.create(adminProps)) {
            long before = 0;
            for (int phase = 0; ; phase++) {
                if (phase > 0) {
                    final String line = stdin.readLine();
                    if (line == null || line.trim().equals("STOP")) break;
                }
                resetPeakRss();
                final Map<TopicPartition, Long> ends = Offsets.endOffsets(admin, input);
                final long total = ends.values().stream().mapToLong(Long::longValue).sum();
                final double cpu0 = SessionCount.cpuSeconds();
                final long t0 = System.nanoTime();
                if (phase == 0) streams.start();
                else streams.resume();
                while (!Offsets.caughtUp(admin, args.get("appId"), ends)) {
                    TimeUnit.MILLISECONDS.sleep(20);
                }
                final double seconds = (System.nanoTime() - t0) / 1e9;
                final double cpu = SessionCount.cpuSeconds() - cpu0;
                streams.pause();
                System.out.printf("{\"phase\": %d, \"records\": %d, \"seconds\": %.3f, \"cpu_seconds\": %.2f, "
                        + "\"peak_rss_mb\": %d}%n", phase, total - before, seconds, cpu, SessionCount.peakRssMb());
                System.out.flush();
                before = total;
            }
        }
        streams.close();
    }

    private static void resetPeakRss() {
        try {
            Files.writeString(Path.of("/proc/self/clear_refs"), "5");  // resets VmHWM to the current RSS
        } catch (Exception e) {
            // not Linux, or not allowed: the peak is then the process's since its start
        }
    }
}

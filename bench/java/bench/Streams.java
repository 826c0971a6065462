package bench;

import java.io.InputStream;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;

/**
 * P4's Java side: the session count as a Kafka Streams application on a broker, 2 stream threads,
 * exactly_once_v2, commit.interval.ms 100 (Kafka's default under EOS), default (RocksDB) store
 * with its changelog, as a Kafka Streams user would deploy it.
 *
 * <p>Arguments are {@code key=value}: bootstrap, appId, input, output, stateDir, mode.
 * {@code mode=backlog}: the input topic is filled beforehand; the clock runs from
 * {@code KafkaStreams.start()} until the group's committed offsets (committed in the same
 * transactions as the output) reach the input's end offsets, polled every 20 ms; prints one JSON
 * line (seconds, cpu_seconds of the whole JVM in that interval, peak_rss_mb) and exits.
 * {@code mode=live}: prints "RUNNING" once the application is running and runs until standard
 * input closes, then prints the JSON line for its whole run. Any stream thread failure prints
 * "STREAMS FAILED" and exits 1.
 */
public final class Streams {
    private Streams() {}

    public static void main(final String[] argv) throws Exception {
        final Map<String, String> args = java.util.Arrays.stream(argv)
                .map(a -> a.split("=", 2)).collect(Collectors.toMap(a -> a[0], a -> a[1]));
        final Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, args.get("appId"));
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args.get("bootstrap"));
        props.put(StreamsConfig.STATE_DIR_CONFIG, args.get("stateDir"));
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 2);
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
        props.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        final String input = args.get("input");
        final KafkaStreams streams = new KafkaStreams(
                SessionCount.topology(input, args.get("output"), false), props);
        streams.setUncaughtExceptionHandler(e -> {
            System.out.println("STREAMS FAILED");
            e.printStackTrace(System.out);
            System.out.flush();
            Runtime.getRuntime().halt(1);
            return StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        final boolean backlog = args.get("mode").equals("backlog");
        final Properties adminProps = new Properties();
        adminProps.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args.get("bootstrap"));
        try (Admin admin = Admin.create(adminProps)) {
            Map<TopicPartition, Long> ends = Map.of();
            long records = 0;
            if (backlog) {
                ends = Offsets.endOffsets(admin, input);
                records = ends.values().stream().mapToLong(Long::longValue).sum();
            }
            final double cpu0 = SessionCount.cpuSeconds();
            final long t0 = System.nanoTime();
            streams.start();
            if (backlog) {
                while (!Offsets.caughtUp(admin, args.get("appId"), ends)) {
                    TimeUnit.MILLISECONDS.sleep(20);
                }
            } else {
                while (streams.state() != KafkaStreams.State.RUNNING) {
                    TimeUnit.MILLISECONDS.sleep(20);
                }
                System.out.println("RUNNING");
                System.out.flush();
                final InputStream stdin = System.in;
                while (stdin.read() >= 0) {
                    // until the benchmark closes our standard input
                }
            }
            final double seconds = (System.nanoTime() - t0) / 1e9;
            final double cpu = SessionCount.cpuSeconds() - cpu0;
            streams.close();
            System.out.printf("{\"records\": %d, \"seconds\": %.3f, \"cpu_seconds\": %.2f, \"peak_rss_mb\": %d}%n",
                    records, seconds, cpu, SessionCount.peakRssMb());
            System.out.flush();
        }
    }
}

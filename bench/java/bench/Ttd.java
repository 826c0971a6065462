package bench;

import java.nio.file.Path;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.test.TestRecord;

/**
 * P3's Java side: the session count in Kafka Streams' own TopologyTestDriver, record at a time
 * ({@code pipeInput(key, null, timestamp)}), over the records of a file.
 *
 * <p>Arguments: {@code <records file> <passes> <rocksdb|memory>}. Each pass builds a new driver
 * and pipes every record; the clock runs from the driver's construction to the last record piped
 * (reading the records file, JVM start and the digest excluded). Prints one JSON line per pass:
 * records, seconds, cpu_seconds (the whole JVM, JIT and GC threads included), outputs, digest
 * (see {@link SessionCount.Digest}), peak_rss_mb.
 */
public final class Ttd {
    private Ttd() {}

    public static void main(final String[] args) throws Exception {
        final List<String[]> rows = SessionCount.readRecords(Path.of(args[0]));
        final int n = rows.size();
        final String[] keys = new String[n];
        final long[] timestamps = new long[n];
        for (int i = 0; i < n; i++) {
            keys[i] = rows.get(i)[0];
            timestamps[i] = Long.parseLong(rows.get(i)[1]);
        }
        rows.clear();
        final int passes = Integer.parseInt(args[1]);
        final boolean inMemory = args[2].equals("memory");
        final Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, "bench-p3-java");
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "unused:9092");
        for (int pass = 0; pass < passes; pass++) {
            final double cpu0 = SessionCount.cpuSeconds();
            final long t0 = System.nanoTime();
            try (TopologyTestDriver driver =
                    new TopologyTestDriver(SessionCount.topology("requests", "sessions", inMemory), props)) {
                final TestInputTopic<String, String> in =
                        driver.createInputTopic("requests", new StringSerializer(), new StringSerializer());
                for (int i = 0; i < n; i++) {
                    in.pipeInput(keys[i], null, timestamps[i]);
                }
                final TestOutputTopic<byte[], byte[]> out =
                        driver.createOutputTopic("sessions", new ByteArrayDeserializer(), new ByteArrayDeserializer());
                final long outputs = out.getQueueSize();
                final double seconds = (System.nanoTime() - t0) / 1e9;
                final double cpu = SessionCount.cpuSeconds() - cpu0;
                final SessionCount.Digest digest = new SessionCount.Digest();
                for (final TestRecord<byte[], byte[]> r : out.readRecordsToList()) {
                    digest.update(r.key(), r.value(), r.timestamp());
                }
                System.out.printf("{\"pass\": %d, \"records\": %d, \"seconds\": %.4f, \"cpu_seconds\": %.3f, "
                                + "\"outputs\": %d, \"digest\": \"%s\", \"peak_rss_mb\": %d, \"store\": \"%s\"}%n",
                        pass, n, seconds, cpu, outputs, digest.hex(), SessionCount.peakRssMb(),
                        inMemory ? "in-memory" : "rocksdb");
                System.out.flush();
            }
        }
    }
}

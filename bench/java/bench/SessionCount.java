package bench;

import java.io.BufferedReader;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.WindowedSerdes;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.Stores;

/** What the benchmark programs share: bench/run.py's P3/P4 topology, the output digest, CPU and RSS. */
final class SessionCount {
    static final Duration GAP = Duration.ofMinutes(30);

    private SessionCount() {}

    /**
     * bench/run.py's {@code sessionCountTopology}: session count per String key, 30 min gap, no
     * grace, cache off (every update and tombstone emitted), written with the session-windowed
     * String serde and Long values. {@code inMemory}: Stores.inMemorySessionStore instead of the
     * default (RocksDB) store.
     */
    static Topology topology(final String source, final String sink, final boolean inMemory) {
        final StreamsBuilder b = new StreamsBuilder();
        final Materialized<String, Long, SessionStore<Bytes, byte[]>> store = inMemory
                ? Materialized.<String, Long>as(Stores.inMemorySessionStore("sessions", GAP))
                : Materialized.<String, Long, SessionStore<Bytes, byte[]>>as("sessions");
        b.stream(source, Consumed.with(Serdes.String(), Serdes.String()))
                .groupByKey()
                .windowedBy(SessionWindows.ofInactivityGapWithNoGrace(GAP))
                .count(store.withKeySerde(Serdes.String()).withCachingDisabled())
                .toStream()
                .to(sink, Produced.with(WindowedSerdes.sessionWindowedSerdeFrom(String.class), Serdes.Long()));
        return b.build();
    }

    /** Records as bench/run.py writes them: one {@code <key>\t<timestamp ms>} line each. */
    static List<String[]> readRecords(final Path file) throws IOException {
        final List<String[]> out = new ArrayList<>();
        try (BufferedReader r = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
            for (String line = r.readLine(); line != null; line = r.readLine()) {
                final int tab = line.lastIndexOf('\t');
                out.add(new String[] {line.substring(0, tab), line.substring(tab + 1)});
            }
        }
        return out;
    }

    /**
     * SHA-256 over the output records in order, as bench/run.py's {@code digestUpdate}: per record
     * the key's length (4 bytes big endian) and bytes, the value's length (-1 for null) and bytes,
     * the timestamp (8 bytes big endian).
     */
    static final class Digest {
        private final MessageDigest sha;

        Digest() {
            try {
                sha = MessageDigest.getInstance("SHA-256");
            } catch (NoSuchAlgorithmException e) {
                throw new IllegalStateException(e);
            }
        }

        void update(final byte[] key, final byte[] value, final long timestamp) {
            final ByteBuffer b = ByteBuffer.allocate(16);
            b.putInt(key == null ? -1 : key.length);
            sha.update(b.array(), 0, 4);
            if (key != null) sha.update(key);
            b.clear();
            b.putInt(value == null ? -1 : value.length);
            sha.update(b.array(), 0, 4);
            if (value != null) sha.update(value);
            b.clear();
            b.putLong(timestamp);
            sha.update(b.array(), 0, 8);
        }

        String hex() {
            return HexFormat.of().formatHex(sha.digest());
        }
    }

    /** CPU time of this JVM (all threads: JIT, GC, RocksDB included), in seconds. */
    static double cpuSeconds() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                .getProcessCpuTime() / 1e9;
    }

    /** This process's peak resident set (VmHWM), in MiB. */
    static long peakRssMb() throws IOException {
        for (final String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("VmHWM:")) return Long.parseLong(line.replaceAll("[^0-9]", "")) / 1024;
        }
        return -1;
    }
}

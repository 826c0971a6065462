package conformance;

import static conformance.Harness.F;
import static conformance.Harness.canon;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import java.time.Instant;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.VersionedKeyValueStore;
import org.apache.kafka.streams.state.VersionedRecord;
import org.apache.kafka.streams.state.WindowStore;

/**
 * The read operations of the driver's stores (Kafka's ReadOnly*Store methods), each result as
 * rows {@code [step, operation, key, value]} so the order of every iterator is compared too
 * (tests/conformance/harness.py dumps the same rows).
 */
final class Queries {
    private Queries() {
    }

    @SuppressWarnings("unchecked")
    static void dump(final String kind, final Object store, final JsonNode spec, final ArrayNode rows) {
        final int[] step = {0};
        switch (kind) {
            case "versioned": {
                final VersionedKeyValueStore<String, Object> s = (VersionedKeyValueStore<String, Object>) store;
                for (final JsonNode key : spec.path("probe")) {
                    row(rows, step, "get", key.asText(), versioned(s.get(key.asText())));
                    for (final JsonNode asOf : spec.path("asOf")) {
                        row(rows, step, "get@" + asOf.asLong(), key.asText(), versioned(s.get(key.asText(), asOf.asLong())));
                    }
                }
                break;
            }
            case "kv-ops": {
                final KeyValueStore<String, Object> s = (KeyValueStore<String, Object>) store;
                all(rows, step, "range(b,c)", s.range("b", "c"));
                all(rows, step, "range(null,b)", s.range(null, "b"));
                all(rows, step, "range(c,null)", s.range("c", null));
                all(rows, step, "range(c,b)", s.range("c", "b"));
                all(rows, step, "reverseRange(b,d)", s.reverseRange("b", "d"));
                all(rows, step, "reverseAll", s.reverseAll());
                all(rows, step, "prefixScan(a)", s.prefixScan("a", new StringSerializer()));
                all(rows, step, "prefixScan()", s.prefixScan("", new StringSerializer()));
                // approximateNumEntries is left out: RocksDB's estimate counts overwritten keys too
                break;
            }
            case "window-ops": {
                final WindowStore<String, Object> s = (WindowStore<String, Object>) store;
                final Instant from = Instant.ofEpochMilli(spec.path("from").asLong()), to = Instant.ofEpochMilli(spec.path("to").asLong());
                for (final JsonNode key : spec.path("probe")) {
                    final String k = key.asText();
                    all(rows, step, "fetch(" + k + ",from,to)", s.fetch(k, from, to));
                    all(rows, step, "backwardFetch(" + k + ",from,to)", s.backwardFetch(k, from, to));
                    row(rows, step, "fetch(" + k + ",from)", null, s.fetch(k, from.toEpochMilli()));
                }
                break;
            }
            case "session-ops": {
                final SessionStore<String, Object> s = (SessionStore<String, Object>) store;
                final long from = spec.path("from").asLong(), to = spec.path("to").asLong();
                for (final JsonNode key : spec.path("probe")) {
                    final String k = key.asText();
                    all(rows, step, "fetch(" + k + ")", s.fetch(k));
                    all(rows, step, "backwardFetch(" + k + ")", s.backwardFetch(k));
                    all(rows, step, "findSessions(" + k + ",from,to)", s.findSessions(k, from, to));
                    all(rows, step, "backwardFindSessions(" + k + ",from,to)", s.backwardFindSessions(k, from, to));
                }
                break;
            }
            default:
                throw new IllegalArgumentException("unknown store kind " + kind);
        }
    }

    static JsonNode versioned(final VersionedRecord<?> r) {
        if (r == null) {
            return F.nullNode();
        }
        final com.fasterxml.jackson.databind.node.ObjectNode n = F.objectNode();
        final ArrayNode a = n.putArray("vr");
        a.add(canon(r.value()));
        a.add(r.timestamp());
        if (r.validTo().isPresent()) {
            a.add(r.validTo().get());
        } else {
            a.addNull();
        }
        return n;
    }

    static void row(final ArrayNode rows, final int[] step, final String op, final Object key, final Object value) {
        final ArrayNode row = rows.addArray();
        row.add(step[0]++);
        row.add(op);
        row.add(key instanceof JsonNode ? (JsonNode) key : canon(key));
        row.add(value instanceof JsonNode ? (JsonNode) value : canon(value));
    }

    static <K, V> void all(final ArrayNode rows, final int[] step, final String op, final KeyValueIterator<K, V> it) {
        try (it) {
            row(rows, step, op + ":start", null, null);
            while (it.hasNext()) {
                final KeyValue<K, V> kv = it.next();
                row(rows, step, op, kv.key, kv.value);
            }
        }
    }
}

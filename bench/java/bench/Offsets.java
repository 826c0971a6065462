package bench;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

/** The backlog clock's offsets, shared by the bench programs: a topic's log ends, and whether a
 *  group's committed offsets reached them. */
final class Offsets {
    private Offsets() {
    }

    /** Partition -> log end offset of {@code topic}. */
    static Map<TopicPartition, Long> endOffsets(final Admin admin, final String topic) throws Exception {
        final int partitions = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic).partitions().size();
        final Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
        for (int p = 0; p < partitions; p++) latest.put(new TopicPartition(topic, p), OffsetSpec.latest());
        return admin.listOffsets(latest).all().get().entrySet().stream().collect(
                Collectors.toMap(Map.Entry::getKey, e -> e.getValue().offset()));
    }

    /** Whether {@code group} has committed every non-empty partition of {@code ends} up to its end. */
    static boolean caughtUp(final Admin admin, final String group, final Map<TopicPartition, Long> ends)
            throws Exception {
        final Map<TopicPartition, OffsetAndMetadata> committed =
                admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
        for (final Map.Entry<TopicPartition, Long> end : ends.entrySet()) {
            final OffsetAndMetadata c = committed.get(end.getKey());
            if (end.getValue() > 0 && (c == null || c.offset() < end.getValue())) return false;
        }
        return true;
    }
}

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.coordinator.common.runtime.CoordinatorRecord;
import org.apache.kafka.coordinator.group.GroupCoordinatorRecordSerde;
import org.apache.kafka.coordinator.transaction.generated.TransactionLogKey;
import org.apache.kafka.coordinator.transaction.generated.TransactionLogValue;

/**
 * Reads an internal topic (__consumer_offsets or __transaction_state) from a broker with Apache
 * Kafka's own consumer, every partition from the start to its end offset, and decodes each record
 * with Kafka's own readers: GroupCoordinatorRecordSerde for __consumer_offsets (what
 * OffsetsMessageFormatter uses), the generated TransactionLogKey / TransactionLogValue for
 * __transaction_state (TransactionLog.read).  One JSON line per record on stdout (the generated
 * JSON converters' field names); a record Kafka cannot decode fails the program.
 *
 * Arguments: bootstrap servers, topic, isolation level (read_uncommitted or read_committed),
 * time budget in milliseconds.
 */
public final class CoordinatorLogReader {
    private static final ObjectMapper JSON = new ObjectMapper();

    private CoordinatorLogReader() {
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = args[1];
        String isolation = args[2];
        long deadline = System.currentTimeMillis() + Long.parseLong(args[3]);
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put(ConsumerConfig.CHECK_CRCS_CONFIG, "true");
        GroupCoordinatorRecordSerde serde = new GroupCoordinatorRecordSerde();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            List<TopicPartition> partitions = new ArrayList<>();
            for (PartitionInfo info : consumer.partitionsFor(topic, Duration.ofMillis(10_000))) {
                partitions.add(new TopicPartition(topic, info.partition()));
            }
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            Map<TopicPartition, Long> ends = consumer.endOffsets(partitions);
            while (!caughtUp(consumer, ends)) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("not at the end offsets " + ends + " in time");
                }
                for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(200))) {
                    System.out.println(JSON.writeValueAsString(decode(serde, topic, record)));
                }
            }
            ObjectNode end = JSON.createObjectNode();
            for (TopicPartition tp : partitions) {
                end.put(Integer.toString(tp.partition()), consumer.position(tp));
            }
            ObjectNode done = JSON.createObjectNode();
            done.set("positions", end);
            System.out.println(JSON.writeValueAsString(done));
        }
    }

    private static boolean caughtUp(KafkaConsumer<byte[], byte[]> consumer, Map<TopicPartition, Long> ends) {
        for (Map.Entry<TopicPartition, Long> end : ends.entrySet()) {
            if (consumer.position(end.getKey()) < end.getValue()) {
                return false;
            }
        }
        return true;
    }

    private static ObjectNode decode(GroupCoordinatorRecordSerde serde, String topic,
                                     ConsumerRecord<byte[], byte[]> record) {
        ObjectNode out = JSON.createObjectNode();
        out.put("partition", record.partition());
        out.put("offset", record.offset());
        out.put("timestamp", record.timestamp());
        out.put("timestampType", record.timestampType().toString());
        ByteBuffer key = ByteBuffer.wrap(record.key());
        ByteBuffer value = record.value() == null ? null : ByteBuffer.wrap(record.value());
        if (topic.equals("__consumer_offsets")) {
            CoordinatorRecord decoded = serde.deserialize(key, value);
            requireConsumed(key, "key");
            if (value != null) {
                requireConsumed(value, "value");
            }
            ApiMessage keyMessage = decoded.key();
            out.put("recordType", keyMessage.apiKey());
            out.set("key", org.apache.kafka.coordinator.group.generated.CoordinatorRecordJsonConverters
                .writeRecordKeyAsJson(keyMessage));
            if (decoded.value() == null) {
                out.putNull("value");
            } else {
                short version = decoded.value().version();
                out.put("valueVersion", version);
                out.set("value", org.apache.kafka.coordinator.group.generated.CoordinatorRecordJsonConverters
                    .writeRecordValueAsJson(decoded.value().message(), version));
            }
            return out;
        }
        // TransactionLog.read: the key's record type (0), the key; the value's version, the value.
        short recordType = key.getShort();
        if (recordType != 0) {
            throw new IllegalStateException("unknown __transaction_state record type " + recordType);
        }
        TransactionLogKey txnKey = new TransactionLogKey(new ByteBufferAccessor(key), (short) 0);
        requireConsumed(key, "key");
        out.put("recordType", recordType);
        out.set("key", org.apache.kafka.coordinator.transaction.generated.TransactionLogKeyJsonConverter
            .write(txnKey, (short) 0));
        if (value == null) {
            out.putNull("value");
            return out;
        }
        short version = value.getShort();
        TransactionLogValue txnValue = new TransactionLogValue(new ByteBufferAccessor(value), version);
        requireConsumed(value, "value");
        out.put("valueVersion", version);
        JsonNode json = org.apache.kafka.coordinator.transaction.generated.TransactionLogValueJsonConverter
            .write(txnValue, version);
        out.set("value", json);
        return out;
    }

    private static void requireConsumed(ByteBuffer buffer, String what) {
        if (buffer.hasRemaining()) {
            throw new IllegalStateException(buffer.remaining() + " bytes left after the " + what);
        }
    }
}

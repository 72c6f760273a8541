// One group member of the client matrix run by Apache Kafka's own Java consumer (kafka-clients).
//
// The Java twin of tests/server/server_client_worker.py (read its docstring: same config, same JSON lines,
// same close command).  Usage: java -cp <kafka-clients jars>:<build dir> JavaClientWorker CONFIG_JSON.
// Compiled at test time by tests/server/conftest.py (java_worker_command), never shipped.
//
// Timestamps: "t" is System.nanoTime() / 1e9.  On Linux, HotSpot's nanoTime reads CLOCK_MONOTONIC,
// the clock of Python's time.monotonic(), so the worker's times compare with every other process's.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.StringDeserializer;

public final class JavaClientWorker {
    private static final Object OUT_LOCK = new Object();

    private JavaClientWorker() {
    }

    // -- JSON: a flat object in (the config), one line out per event ---------------------------

    /** Parses the config: one JSON object whose values are strings, numbers, booleans or null. */
    static Map<String, Object> parseFlatObject(String text) {
        Map<String, Object> out = new LinkedHashMap<>();
        int[] at = {skipSpace(text, 0)};
        expect(text, at, '{');
        if (peek(text, at) == '}') {
            return out;
        }
        while (true) {
            String key = parseString(text, at);
            expect(text, at, ':');
            out.put(key, parseValue(text, at));
            char next = peek(text, at);
            at[0]++;
            if (next == '}') {
                return out;
            }
            if (next != ',') {
                throw new IllegalArgumentException("config JSON: expected , or } at " + (at[0] - 1));
            }
        }
    }

    private static int skipSpace(String text, int i) {
        while (i < text.length() && Character.isWhitespace(text.charAt(i))) {
            i++;
        }
        return i;
    }

    private static char peek(String text, int[] at) {
        at[0] = skipSpace(text, at[0]);
        if (at[0] >= text.length()) {
            throw new IllegalArgumentException("config JSON: unexpected end");
        }
        return text.charAt(at[0]);
    }

    private static void expect(String text, int[] at, char wanted) {
        if (peek(text, at) != wanted) {
            throw new IllegalArgumentException("config JSON: expected " + wanted + " at " + at[0]);
        }
        at[0]++;
    }

    private static String parseString(String text, int[] at) {
        expect(text, at, '"');
        StringBuilder out = new StringBuilder();
        while (true) {
            char c = text.charAt(at[0]++);
            if (c == '"') {
                return out.toString();
            }
            if (c != '\\') {
                out.append(c);
                continue;
            }
            char escaped = text.charAt(at[0]++);
            switch (escaped) {
                case 'n': out.append('\n'); break;
                case 't': out.append('\t'); break;
                case 'r': out.append('\r'); break;
                case 'b': out.append('\b'); break;
                case 'f': out.append('\f'); break;
                case 'u':
                    out.append((char) Integer.parseInt(text.substring(at[0], at[0] + 4), 16));
                    at[0] += 4;
                    break;
                default: out.append(escaped);  // \" \\ \/
            }
        }
    }

    private static Object parseValue(String text, int[] at) {
        char c = peek(text, at);
        if (c == '"') {
            return parseString(text, at);
        }
        int start = at[0];
        while (at[0] < text.length() && ",}] \t\r\n".indexOf(text.charAt(at[0])) < 0) {
            at[0]++;
        }
        String word = text.substring(start, at[0]);
        switch (word) {
            case "null": return null;
            case "true": return Boolean.TRUE;
            case "false": return Boolean.FALSE;
            default:
                if (word.contains(".") || word.contains("e") || word.contains("E")) {
                    return Double.parseDouble(word);
                }
                return Long.parseLong(word);
        }
    }

    static String quote(String value) {
        if (value == null) {
            return "null";
        }
        StringBuilder out = new StringBuilder("\"");
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            if (c == '"' || c == '\\') {
                out.append('\\').append(c);
            } else if (c < 0x20) {
                out.append(String.format("\\u%04x", (int) c));
            } else {
                out.append(c);
            }
        }
        return out.append('"').toString();
    }

    /** One event line; {@code fields} is already-encoded JSON ("" or starting with a comma). */
    static void emit(String event, String fields) {
        double t = System.nanoTime() / 1e9;
        String line = "{\"e\": " + quote(event) + fields + ", \"t\": " + t + "}";
        synchronized (OUT_LOCK) {
            System.out.println(line);
            System.out.flush();
        }
    }

    static String partitionList(Collection<Integer> partitions) {
        StringBuilder out = new StringBuilder("[");
        for (int p : new TreeSet<>(partitions)) {
            out.append(out.length() > 1 ? ", " : "").append(p);
        }
        return out.append(']').toString();
    }

    // -- what the member owns and has handed out (server_client_worker.Book) ---------------------------

    static final class Book {
        final Set<Integer> owned = new HashSet<>();
        final Map<Integer, Long> positions = new HashMap<>();
        int batches;

        void assigned(Collection<Integer> partitions) {
            owned.addAll(partitions);
            emit("assigned", ", \"p\": " + partitionList(partitions));
        }

        void revoked(Collection<Integer> partitions, String kind) {
            owned.removeAll(partitions);
            for (int p : partitions) {
                positions.remove(p);
            }
            emit(kind, ", \"p\": " + partitionList(partitions));
        }

        void handedOut(ConsumerRecords<String, String> records) {
            StringBuilder out = new StringBuilder(", \"r\": [");
            boolean first = true;
            for (ConsumerRecord<String, String> record : records) {
                positions.put(record.partition(), record.offset() + 1);
                out.append(first ? "" : ", ").append('[').append(record.partition()).append(", ")
                    .append(record.offset()).append(", ").append(quote(record.key())).append(", ")
                    .append(quote(record.value())).append(", [");
                boolean firstHeader = true;
                for (Header header : record.headers()) {
                    String value = header.value() == null ? null
                        : new String(header.value(), StandardCharsets.UTF_8);
                    out.append(firstHeader ? "" : ", ").append('[').append(quote(header.key())).append(", ")
                        .append(quote(value)).append(']');
                    firstHeader = false;
                }
                out.append("]]");
                first = false;
            }
            emit("records", out.append(']').toString());
            batches++;
        }

        Map<Integer, Long> toCommit() {
            Map<Integer, Long> offsets = new TreeMap<>();
            for (Map.Entry<Integer, Long> entry : positions.entrySet()) {
                if (owned.contains(entry.getKey())) {
                    offsets.put(entry.getKey(), entry.getValue());
                }
            }
            if (offsets.isEmpty()) {
                batches = 0;
            }
            return offsets;
        }

        boolean commitDue(boolean polledAny, long every) {
            return batches >= every || (!polledAny && batches > 0);
        }

        void committed(Map<Integer, Long> offsets) {
            StringBuilder out = new StringBuilder(", \"o\": {");
            boolean first = true;
            for (Map.Entry<Integer, Long> entry : offsets.entrySet()) {
                if (entry.getValue().equals(positions.get(entry.getKey()))) {
                    positions.remove(entry.getKey());
                }
                out.append(first ? "" : ", ").append(quote(String.valueOf(entry.getKey())))
                    .append(": ").append(entry.getValue());
                first = false;
            }
            batches = 0;
            emit("committed", out.append('}').toString());
        }
    }

    static List<Integer> partitionsOf(Collection<TopicPartition> partitions) {
        List<Integer> out = new ArrayList<>();
        for (TopicPartition tp : partitions) {
            out.add(tp.partition());
        }
        return out;
    }

    static long number(Map<String, Object> config, String key) {
        return ((Number) config.get(key)).longValue();
    }

    public static void main(String[] args) throws Exception {
        Map<String, Object> config = parseFlatObject(args[0]);
        String topic = (String) config.get("topic");
        String groupProtocol = config.get("group_protocol") == null ? "classic" : (String) config.get("group_protocol");
        Properties settings = new Properties();
        settings.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, config.get("bootstrap"));
        settings.put(ConsumerConfig.GROUP_ID_CONFIG, config.get("group"));
        settings.put(ConsumerConfig.CLIENT_ID_CONFIG, config.get("client_id"));
        settings.put(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG, "60000");
        settings.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        settings.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        settings.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, String.valueOf(number(config, "max_records")));
        settings.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        settings.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        if (config.get("instance_id") != null) {
            settings.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, config.get("instance_id"));
        }
        if (groupProtocol.equals("consumer")) {
            // KIP-848: the broker owns the session timeout, heartbeat interval and assignment; the Java
            // client refuses those classic settings next to group.protocol=consumer.
            settings.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
            if (config.get("server_assignor") != null) {
                settings.put(ConsumerConfig.GROUP_REMOTE_ASSIGNOR_CONFIG, config.get("server_assignor"));
            }
        } else {
            settings.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, String.valueOf(number(config, "session_timeout_ms")));
            settings.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG,
                String.valueOf(number(config, "heartbeat_interval_ms")));
            String strategy = (String) config.get("strategy");
            Class<?> assignor;
            if (strategy.equals("range")) {
                assignor = RangeAssignor.class;
            } else if (strategy.equals("cooperative-sticky")) {
                assignor = CooperativeStickyAssignor.class;
            } else {
                throw new IllegalArgumentException("unknown strategy " + strategy);
            }
            settings.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, assignor.getName());
        }
        long batchSleepMs = number(config, "batch_sleep_ms");
        long commitEvery = number(config, "commit_every");

        AtomicBoolean closing = new AtomicBoolean(false);
        Thread stdinReader = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null) {
                    if (line.trim().equals("close")) {
                        break;
                    }
                }
            } catch (Exception ignored) {
                // stdin gone: the test is gone, do not outlive it
            }
            closing.set(true);
        }, "stdin");
        stdinReader.setDaemon(true);
        stdinReader.start();

        Book book = new Book();
        // The rebalance listener runs on the polling thread, inside poll() (and close()).
        ConsumerRebalanceListener listener = new ConsumerRebalanceListener() {
            @Override
            public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                book.revoked(partitionsOf(partitions), "revoked");
            }

            @Override
            public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                book.assigned(partitionsOf(partitions));
            }

            @Override
            public void onPartitionsLost(Collection<TopicPartition> partitions) {
                book.revoked(partitionsOf(partitions), "lost");
            }
        };
        KafkaConsumer<String, String> consumer = new KafkaConsumer<>(settings);
        consumer.subscribe(List.of(topic), listener);
        emit("ready", "");

        while (!closing.get()) {
            ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(100));
            if (!records.isEmpty()) {
                book.handedOut(records);
                Thread.sleep(batchSleepMs);
            }
            if (book.commitDue(!records.isEmpty(), commitEvery)) {
                commit(consumer, book, topic);
            }
        }
        commit(consumer, book, topic);
        emit("closing", "");  // hands out nothing more: its ownership ends before close() sends LeaveGroup
        consumer.close();
        emit("closed", "");
    }

    static void commit(KafkaConsumer<String, String> consumer, Book book, String topic) {
        Map<Integer, Long> offsets = book.toCommit();
        if (offsets.isEmpty()) {
            return;
        }
        Map<TopicPartition, OffsetAndMetadata> request = new HashMap<>();
        for (Map.Entry<Integer, Long> entry : offsets.entrySet()) {
            request.put(new TopicPartition(topic, entry.getKey()), new OffsetAndMetadata(entry.getValue()));
        }
        try {
            consumer.commitSync(request);
        } catch (KafkaException error) {
            // CommitFailedException / RebalanceInProgressException after a rebalance: keep going, as an app would
            emit("commit_failed", ", \"err\": " + quote(error.toString()));
            return;
        }
        book.committed(offsets);
    }
}

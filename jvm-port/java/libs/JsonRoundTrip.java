import java.io.BufferedInputStream;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Random;
import java.util.zip.CRC32;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;

/**
 * Jackson databind over a large generated JSON document: objects to a file,
 * the file back to objects (equal), to a tree, and through the streaming
 * parser; CRC32s and sums printed. Deterministic (seeded Random).
 *
 * Arguments: OUT_FILE [ITEMS] (50000)
 */
public class JsonRoundTrip {
    public static class Tag {
        public String key;
        public int weight;

        @Override public boolean equals(Object o) {
            return o instanceof Tag && ((Tag) o).key.equals(key) && ((Tag) o).weight == weight;
        }
        @Override public int hashCode() { return Objects.hash(key, weight); }
    }

    public static class Item {
        public long id;
        public String name;
        public String text;
        public double score;
        public boolean active;
        public List<Integer> counts;
        public List<Tag> tags;
        public Map<String, String> attrs;

        @Override public boolean equals(Object o) {
            if (!(o instanceof Item)) return false;
            Item i = (Item) o;
            return id == i.id && name.equals(i.name) && text.equals(i.text)
                    && Double.compare(score, i.score) == 0 && active == i.active
                    && counts.equals(i.counts) && tags.equals(i.tags) && attrs.equals(i.attrs);
        }
        @Override public int hashCode() { return Long.hashCode(id); }
    }

    static final String ALPHABET = "abcdefghijklmnopqrstuvwxyz äöü€\"\\/\n\t✓漢字";

    static String text(Random r, int len) {
        StringBuilder sb = new StringBuilder(len);
        for (int i = 0; i < len; i++) sb.append(ALPHABET.charAt(r.nextInt(ALPHABET.length())));
        return sb.toString();
    }

    public static void main(String[] args) throws Exception {
        Path out = Paths.get(args[0]);
        int n = args.length > 1 ? Integer.parseInt(args[1]) : 50_000;
        Random r = new Random(42);
        List<Item> items = new ArrayList<>(n);
        for (int k = 0; k < n; k++) {
            Item it = new Item();
            it.id = r.nextLong();
            it.name = "item-" + k;
            it.text = text(r, r.nextInt(120));
            it.score = r.nextInt(1_000_000) / 64.0; // exact in binary and decimal
            it.active = r.nextBoolean();
            it.counts = new ArrayList<>();
            for (int j = r.nextInt(8); j > 0; j--) it.counts.add(r.nextInt());
            it.tags = new ArrayList<>();
            for (int j = r.nextInt(4); j > 0; j--) {
                Tag t = new Tag();
                t.key = "k" + r.nextInt(100);
                t.weight = r.nextInt(10);
                it.tags.add(t);
            }
            it.attrs = new LinkedHashMap<>();
            for (int j = r.nextInt(3); j > 0; j--) it.attrs.put("a" + j, text(r, 5));
            items.add(it);
        }

        ObjectMapper m = new ObjectMapper();
        m.enable(SerializationFeature.INDENT_OUTPUT);
        m.writeValue(out.toFile(), items);
        byte[] bytes = Files.readAllBytes(out);
        CRC32 crc = new CRC32();
        crc.update(bytes);
        System.out.println("items=" + n + " bytes=" + bytes.length + " crc=" + Long.toHexString(crc.getValue()));

        List<Item> back = m.readValue(out.toFile(), new TypeReference<List<Item>>() {});
        System.out.println("objects equal=" + back.equals(items));

        JsonNode tree = m.readTree(bytes);
        long ids = 0, counts = 0, tags = 0;
        double scores = 0;
        for (JsonNode node : tree) {
            ids ^= node.get("id").asLong();
            scores += node.get("score").asDouble();
            for (JsonNode c : node.get("counts")) counts += c.asInt();
            tags += node.get("tags").size();
        }
        System.out.println("tree size=" + tree.size() + " idxor=" + Long.toHexString(ids)
                + " scores=" + scores + " counts=" + counts + " tags=" + tags);

        // Compact form, written from the tree, and its CRC.
        byte[] compact = new ObjectMapper().writeValueAsBytes(tree);
        CRC32 c2 = new CRC32();
        c2.update(compact);
        System.out.println("compact bytes=" + compact.length + " crc=" + Long.toHexString(c2.getValue())
                + " same as objects=" + new String(compact, StandardCharsets.UTF_8)
                        .equals(new ObjectMapper().writeValueAsString(items)));

        // The streaming parser over the file.
        long tokens = 0, strings = 0, chars = 0;
        JsonFactory f = new JsonFactory();
        try (InputStream in = new BufferedInputStream(Files.newInputStream(out));
             JsonParser p = f.createParser(in)) {
            JsonToken t;
            while ((t = p.nextToken()) != null) {
                tokens++;
                if (t == JsonToken.VALUE_STRING) {
                    strings++;
                    chars += p.getText().length();
                }
            }
        }
        System.out.println("tokens=" + tokens + " strings=" + strings + " chars=" + chars);
    }
}

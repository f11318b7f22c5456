import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

import org.apache.lucene.analysis.Analyzer;
import org.apache.lucene.analysis.en.EnglishAnalyzer;
import org.apache.lucene.document.Document;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.StoredFields;
import org.apache.lucene.queryparser.classic.MultiFieldQueryParser;
import org.apache.lucene.queryparser.classic.ParseException;
import org.apache.lucene.queryparser.classic.QueryParser;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.store.Directory;
import org.apache.lucene.store.MMapDirectory;
import org.apache.lucene.store.NIOFSDirectory;

/**
 * What the indexer, the shard server, the front end, the bench driver and the
 * command-line searcher share: fields, analysis, shard assignment, query
 * parsing, the hit format and the merge order.
 */
final class SearchCommon {
    private SearchCommon() {}

    static final String ID = "id", URL = "url", TITLE = "title", BODY = "body";
    /** Title matches count twice as much as body matches. */
    static final Map<String, Float> BOOSTS = Map.of(TITLE, 2.0f, BODY, 1.0f);

    static Analyzer analyzer() {
        return new EnglishAnalyzer();
    }

    /** FNV-1a (32 bit) of the UTF-8 bytes of a document id: stable across JVMs and runs. */
    static int fnv1a(String id) {
        int h = 0x811c9dc5;
        for (byte b : id.getBytes(StandardCharsets.UTF_8)) {
            h ^= (b & 0xff);
            h *= 0x01000193;
        }
        return h;
    }

    /** The shard of a document: FNV-1a of its id, unsigned, modulo the number of shards. */
    static int shardOf(String id, int shards) {
        return (int) (Integer.toUnsignedLong(fnv1a(id)) % shards);
    }

    /** Opens an index directory: "mmap" (MMapDirectory) or "nio" (NIOFSDirectory). */
    static Directory open(Path p, String kind) throws IOException {
        switch (kind) {
            case "mmap": return new MMapDirectory(p);
            case "nio": return new NIOFSDirectory(p);
            default: throw new IllegalArgumentException("--dir must be mmap or nio, not " + kind);
        }
    }

    /** Parses a user query (any characters) into an OR query over title and body; null if it has no terms. */
    static Query parse(String q) {
        String s = q.strip();
        if (s.isEmpty()) return null;
        MultiFieldQueryParser p = new MultiFieldQueryParser(new String[] {TITLE, BODY}, analyzer(), BOOSTS);
        p.setDefaultOperator(QueryParser.Operator.OR);
        try {
            return p.parse(QueryParser.escape(s));
        } catch (ParseException | IndexSearcher.TooManyClauses e) {
            return null;
        }
    }

    /** One hit: the shard, Lucene's doc number in the shard, the score, and stored fields. */
    record Hit(int shard, int doc, float score, String id, String url, String title) {
        /** The wire/answer form: one line, tab-separated; the score in Float.toString form (exact). */
        String line() {
            return shard + "\t" + doc + "\t" + score + "\t" + id + "\t" + url + "\t" + title;
        }

        /** Parses {@link #line()}; throws IllegalArgumentException on a malformed line. */
        static Hit parse(String line) {
            String[] f = line.split("\t", 6);
            if (f.length != 6) throw new IllegalArgumentException("bad hit line: " + line);
            return new Hit(Integer.parseInt(f[0]), Integer.parseInt(f[1]), Float.parseFloat(f[2]), f[3], f[4], f[5]);
        }
    }

    /** The merge order: score descending, then shard, then doc number ascending. */
    static final Comparator<Hit> ORDER = Comparator.comparing(Hit::score, Comparator.reverseOrder())
            .thenComparingInt(Hit::shard).thenComparingInt(Hit::doc);

    /** The global top k of per-shard top-k lists. */
    static List<Hit> merge(List<List<Hit>> perShard, int k) {
        List<Hit> all = new ArrayList<>();
        for (List<Hit> l : perShard) all.addAll(l);
        all.sort(ORDER);
        return new ArrayList<>(all.subList(0, Math.min(k, all.size())));
    }

    /** The answer text for a list of hits: one line per hit. */
    static String answer(List<Hit> hits) {
        StringBuilder sb = new StringBuilder();
        for (Hit h : hits) sb.append(h.line()).append('\n');
        return sb.toString();
    }

    /** A searcher over one shard index. */
    static final class Shard implements AutoCloseable {
        final int shard;
        final Directory dir;
        final DirectoryReader reader;
        final IndexSearcher searcher;

        Shard(int shard, Path path, String kind) throws IOException {
            this.shard = shard;
            this.dir = open(path, kind);
            this.reader = DirectoryReader.open(dir);
            this.searcher = new IndexSearcher(reader);
        }

        /** The top k hits of this shard for a query string. */
        List<Hit> search(String q, int k) throws IOException {
            Query query = parse(q);
            List<Hit> out = new ArrayList<>();
            if (query == null || k <= 0) return out;
            TopDocs td = searcher.search(query, k);
            StoredFields sf = searcher.storedFields();
            for (ScoreDoc sd : td.scoreDocs) {
                Document d = sf.document(sd.doc);
                out.add(new Hit(shard, sd.doc, sd.score, d.get(ID), d.get(URL), d.get(TITLE)));
            }
            return out;
        }

        @Override
        public void close() throws IOException {
            reader.close();
            dir.close();
        }
    }

    /** Reads a query file: one query per line; an optional "id:" or "id<TAB>" prefix (TREC topic files) is dropped. */
    static List<String> queries(Path file, int limit) throws IOException {
        List<String> out = new ArrayList<>();
        for (String l : Files.readAllLines(file, StandardCharsets.UTF_8)) {
            String q = l;
            int t = q.indexOf('\t');
            if (t >= 0) q = q.substring(t + 1);
            else {
                int c = q.indexOf(':');
                if (c > 0 && q.substring(0, c).chars().allMatch(Character::isDigit)) q = q.substring(c + 1);
            }
            q = q.strip();
            if (q.isEmpty()) continue;
            out.add(q);
            if (limit > 0 && out.size() >= limit) break;
        }
        return out;
    }

    /** SHA-256 of the answers in query order: "#i query\n" followed by the answer text. */
    static String digest(List<String> queries, String[] answers) {
        try {
            MessageDigest md = MessageDigest.getInstance("SHA-256");
            for (int i = 0; i < queries.size(); i++) {
                md.update(transcriptEntry(i, queries.get(i), answers[i]).getBytes(StandardCharsets.UTF_8));
            }
            return HexFormat.of().formatHex(md.digest());
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    static String transcriptEntry(int i, String q, String answer) {
        return "#" + i + " " + q + "\n" + answer;
    }

    /** Parses "--name value" options (every option takes a value); exits 2 with the usage otherwise. */
    static Map<String, String> options(String[] args, String usage) {
        Map<String, String> m = new HashMap<>();
        for (int i = 0; i < args.length; i++) {
            if (!args[i].startsWith("--") || i + 1 >= args.length) {
                System.err.println("usage: " + usage);
                System.exit(2);
            }
            m.put(args[i].substring(2), args[++i]);
        }
        return m;
    }

    static String need(Map<String, String> o, String k, String usage) {
        String v = o.get(k);
        if (v == null) {
            System.err.println("missing --" + k + "; usage: " + usage);
            System.exit(2);
        }
        return v;
    }
}

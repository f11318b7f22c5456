import java.io.BufferedReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.StoredField;
import org.apache.lucene.document.StringField;
import org.apache.lucene.document.TextField;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.LogDocMergePolicy;
import org.apache.lucene.index.SerialMergeScheduler;
import org.apache.lucene.store.Directory;

/**
 * Builds N shard indexes (OUT/shard-0 … OUT/shard-(N-1)) from a corpus TSV
 * (id, url, title, body per line). A document goes to shard
 * FNV-1a(id) mod N. Single-threaded, serial merges with a fixed merge policy,
 * and a final forceMerge(1): one segment per shard whose documents are in
 * corpus order, so the same corpus gives the same doc numbers and scores on
 * every run and JVM. Prints the document count of each shard on stdout.
 */
public final class SearchIndexer {
    static final String USAGE = "SearchIndexer --corpus DOCS.tsv --out DIR --shards N [--limit DOCS] [--ram-mb MB] [--dir mmap|nio]";

    public static void main(String[] args) throws Exception {
        Map<String, String> o = SearchCommon.options(args, USAGE);
        Path corpus = Path.of(SearchCommon.need(o, "corpus", USAGE));
        Path out = Path.of(SearchCommon.need(o, "out", USAGE));
        int shards = Integer.parseInt(SearchCommon.need(o, "shards", USAGE));
        long limit = Long.parseLong(o.getOrDefault("limit", "0"));
        double ramMb = Double.parseDouble(o.getOrDefault("ram-mb", "32"));
        String kind = o.getOrDefault("dir", "nio");
        long t0 = System.nanoTime();

        Directory[] dirs = new Directory[shards];
        IndexWriter[] writers = new IndexWriter[shards];
        long[] counts = new long[shards];
        for (int s = 0; s < shards; s++) {
            Path p = out.resolve("shard-" + s);
            Files.createDirectories(p);
            dirs[s] = SearchCommon.open(p, kind);
            LogDocMergePolicy mp = new LogDocMergePolicy();
            mp.setMergeFactor(10);
            IndexWriterConfig c = new IndexWriterConfig(SearchCommon.analyzer())
                    .setOpenMode(IndexWriterConfig.OpenMode.CREATE)
                    .setMergeScheduler(new SerialMergeScheduler())
                    .setMergePolicy(mp)
                    .setRAMBufferSizeMB(ramMb)
                    .setMaxBufferedDocs(IndexWriterConfig.DISABLE_AUTO_FLUSH)
                    .setUseCompoundFile(false)
                    .setCommitOnClose(true);
            writers[s] = new IndexWriter(dirs[s], c);
        }
        long n = 0, bad = 0;
        try (BufferedReader r = Files.newBufferedReader(corpus, StandardCharsets.UTF_8)) {
            String line;
            while ((line = r.readLine()) != null) {
                if (limit > 0 && n >= limit) break;
                String[] f = line.split("\t", 4);
                if (f.length != 4) {
                    bad++;
                    continue;
                }
                Document d = new Document();
                d.add(new StringField(SearchCommon.ID, f[0], Field.Store.YES));
                d.add(new StoredField(SearchCommon.URL, f[1]));
                d.add(new TextField(SearchCommon.TITLE, f[2], Field.Store.YES));
                d.add(new TextField(SearchCommon.BODY, f[3], Field.Store.NO));
                int s = SearchCommon.shardOf(f[0], shards);
                writers[s].addDocument(d);
                counts[s]++;
                n++;
            }
        }
        for (int s = 0; s < shards; s++) {
            writers[s].forceMerge(1);
            writers[s].close();
            dirs[s].close();
            System.out.println("shard " + s + " docs " + counts[s]);
        }
        System.out.println("documents " + n + " malformed " + bad);
        System.err.printf("indexed %d documents into %d shards in %.1f s%n", n, shards, (System.nanoTime() - t0) / 1e9);
    }
}

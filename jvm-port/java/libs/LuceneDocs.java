import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.zip.GZIPInputStream;

import org.apache.lucene.analysis.Analyzer;
import org.apache.lucene.analysis.en.EnglishAnalyzer;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.LongPoint;
import org.apache.lucene.document.StoredField;
import org.apache.lucene.document.StringField;
import org.apache.lucene.document.TextField;
import org.apache.lucene.index.CheckIndex;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.LogDocMergePolicy;
import org.apache.lucene.index.SerialMergeScheduler;
import org.apache.lucene.index.Term;
import org.apache.lucene.index.Terms;
import org.apache.lucene.queryparser.classic.QueryParser;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.store.Directory;
import org.apache.lucene.store.MMapDirectory;
import org.apache.lucene.util.Version;

/**
 * Indexes real text files (the test gives the host's /usr/share/doc and
 * common licences; gzip files are unpacked) with Lucene into an MMapDirectory, force-merges to one
 * segment, checks the index and runs a few queries. Deterministic: the files
 * are taken in the order listed, one thread indexes, merges are serial and keep
 * document order, and hits print with their exact float scores.
 *
 * Arguments: INDEX_DIR LIST_FILE
 * Compiled against Lucene 9.12.3 (JDK 17) and 10.x (JDK 25) from one source.
 */
public class LuceneDocs {
    /** Larger files are skipped. */
    static final int MAX_BYTES = 256 * 1024;
    /** Text beyond this many bytes (after unpacking) is not indexed. */
    static final int MAX_TEXT = 64 * 1024;

    public static void main(String[] args) throws Exception {
        Path indexDir = Paths.get(args[0]);
        // The files, one path a line, in the order they are indexed (the
        // test lists them sorted, symbolic links left out).
        List<Path> files = new ArrayList<>();
        for (String line : Files.readAllLines(Paths.get(args[1]), StandardCharsets.UTF_8)) {
            if (!line.isEmpty()) files.add(Paths.get(line));
        }
        System.out.println("lucene " + Version.LATEST.major + " files=" + files.size());

        Analyzer analyzer = new EnglishAnalyzer();
        int docs = 0;
        long bytes = 0;
        try (Directory dir = new MMapDirectory(indexDir)) {
            IndexWriterConfig cfg = new IndexWriterConfig(analyzer);
            cfg.setMergeScheduler(new SerialMergeScheduler());
            LogDocMergePolicy mp = new LogDocMergePolicy();
            mp.setMergeFactor(10);
            cfg.setMergePolicy(mp);
            cfg.setMaxBufferedDocs(200);
            cfg.setRAMBufferSizeMB(IndexWriterConfig.DISABLE_AUTO_FLUSH);
            cfg.setOpenMode(IndexWriterConfig.OpenMode.CREATE);
            try (IndexWriter w = new IndexWriter(dir, cfg)) {
                for (Path p : files) {
                    String text = read(p);
                    if (text == null) continue;
                    Document d = new Document();
                    d.add(new StringField("path", p.toString(), Field.Store.YES));
                    d.add(new TextField("body", text, Field.Store.NO));
                    d.add(new LongPoint("size", text.length()));
                    d.add(new StoredField("size", text.length()));
                    w.addDocument(d);
                    docs++;
                    bytes += text.length();
                    if (docs % 500 == 0) w.commit();
                }
                // Delete a few, then merge away the deletions.
                long deleted = 0;
                for (int i = 0; i < files.size() && deleted < 10; i += 97) {
                    w.deleteDocuments(new Term("path", files.get(i).toString()));
                    deleted++;
                }
                w.commit();
                w.forceMerge(1);
                w.commit();
            }
            System.out.println("indexed docs=" + docs + " chars=" + bytes);

            try (DirectoryReader r = DirectoryReader.open(dir)) {
                Terms terms = r.leaves().get(0).reader().terms("body");
                System.out.println("segments=" + r.leaves().size() + " numDocs=" + r.numDocs()
                        + " maxDoc=" + r.maxDoc() + " terms=" + terms.size()
                        + " sumTotalTermFreq=" + r.getSumTotalTermFreq("body")
                        + " sumDocFreq=" + r.getSumDocFreq("body"));
                IndexSearcher s = new IndexSearcher(r);
                QueryParser qp = new QueryParser("body", analyzer);
                String[] queries = {
                    "license", "\"free software\"", "copyright AND warranty",
                    "kernel OR memory", "+python -perl", "changelog~1", "debian* AND upload*",
                    "\"public domain\" OR bsd",
                };
                for (String qs : queries) {
                    Query q = qp.parse(qs);
                    TopDocs top = s.search(q, 5);
                    StringBuilder sb = new StringBuilder();
                    sb.append("query ").append(qs).append(" count=").append(s.count(q)).append('\n');
                    for (ScoreDoc sd : top.scoreDocs) {
                        Document d = s.storedFields().document(sd.doc);
                        sb.append("  ").append(sd.score).append(' ').append(d.get("path"))
                                .append(" size=").append(d.getField("size").numericValue()).append('\n');
                    }
                    System.out.print(sb);
                }
                Query range = LongPoint.newRangeQuery("size", 10_000, 20_000);
                System.out.println("size 10000..20000 count=" + s.count(range));
            }
            try (CheckIndex ci = new CheckIndex(dir)) {
                System.out.println("checkindex clean=" + ci.checkIndex().clean);
            }
        }
    }

    /** The file's text, gzip unpacked; null if it looks binary. */
    static String read(Path p) throws IOException {
        if (Files.size(p) > MAX_BYTES) return null;
        byte[] b;
        if (p.toString().endsWith(".gz")) {
            try (InputStream in = new GZIPInputStream(Files.newInputStream(p))) {
                ByteArrayOutputStream out = new ByteArrayOutputStream();
                byte[] buf = new byte[8192];
                int n;
                while ((n = in.read(buf)) > 0 && out.size() < MAX_TEXT) out.write(buf, 0, n);
                b = out.toByteArray();
            }
        } else {
            b = Files.readAllBytes(p);
        }
        for (int i = 0; i < Math.min(b.length, 8192); i++) {
            if (b[i] == 0) return null;
        }
        return new String(b, 0, Math.min(b.length, MAX_TEXT), StandardCharsets.UTF_8);
    }
}

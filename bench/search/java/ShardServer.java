import java.nio.file.Path;
import java.util.Map;

/**
 * A search server for one shard index: answers GET /search?q=…&k=… with
 * the shard's top-k hits (see SearchHttp for the protocol).
 */
public final class ShardServer {
    static final String USAGE = "ShardServer --index DIR --shard S [--dir mmap|nio] [--host 127.0.0.1] [--port 0] [--threads 4]";

    public static void main(String[] args) throws Exception {
        Map<String, String> o = SearchCommon.options(args, USAGE);
        Path dir = Path.of(SearchCommon.need(o, "index", USAGE));
        int shard = Integer.parseInt(SearchCommon.need(o, "shard", USAGE));
        String kind = o.getOrDefault("dir", "mmap");
        SearchCommon.Shard s = new SearchCommon.Shard(shard, dir, kind);
        System.err.println("shard " + shard + ": " + s.reader.numDocs() + " documents, " + s.dir.getClass().getSimpleName());
        SearchHttp.serve(o.getOrDefault("host", "127.0.0.1"), Integer.parseInt(o.getOrDefault("port", "0")),
                Integer.parseInt(o.getOrDefault("threads", "4")),
                "ok shard " + shard + " docs " + s.reader.numDocs(),
                (q, k) -> SearchCommon.answer(s.search(q, k)));
    }
}

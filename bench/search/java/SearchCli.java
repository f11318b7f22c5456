import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Runs a query file against shard index directories in this process (no
 * server): each query goes to every shard, the per-shard top k are merged
 * exactly as the front end merges them, and the answers are printed in query
 * order ("#i query" then one line per hit), then the digest the bench driver
 * prints for the same answers.
 */
public final class SearchCli {
    static final String USAGE = "SearchCli --index DIR[,DIR…] --queries FILE [--limit N] [--k 10] [--dir mmap|nio]";

    public static void main(String[] args) throws Exception {
        Map<String, String> o = SearchCommon.options(args, USAGE);
        String[] dirs = SearchCommon.need(o, "index", USAGE).split(",");
        List<String> qs = SearchCommon.queries(Path.of(SearchCommon.need(o, "queries", USAGE)),
                Integer.parseInt(o.getOrDefault("limit", "0")));
        int k = Integer.parseInt(o.getOrDefault("k", "10"));
        String kind = o.getOrDefault("dir", "mmap");
        List<SearchCommon.Shard> shards = new ArrayList<>();
        for (int i = 0; i < dirs.length; i++) shards.add(new SearchCommon.Shard(i, Path.of(dirs[i]), kind));
        String[] answers = new String[qs.size()];
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < qs.size(); i++) {
            List<List<SearchCommon.Hit>> per = new ArrayList<>();
            for (SearchCommon.Shard s : shards) per.add(s.search(qs.get(i), k));
            answers[i] = SearchCommon.answer(SearchCommon.merge(per, k));
            out.append(SearchCommon.transcriptEntry(i, qs.get(i), answers[i]));
        }
        for (SearchCommon.Shard s : shards) s.close();
        System.out.print(out);
        System.out.println("queries " + qs.size() + " digest " + SearchCommon.digest(qs, answers));
    }
}

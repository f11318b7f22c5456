import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;

/**
 * The front end: sends each query to every shard server in parallel
 * (java.net.http.HttpClient, HTTP/1.1), merges the per-shard top k by score
 * (ties: shard, then doc number) and answers with the global top k, in the
 * shard servers' protocol (SearchHttp). A shard that fails or times out
 * contributes no hits (as in Nutch's distributed search) and is counted on
 * stderr.
 */
public final class FrontEnd {
    static final String USAGE = "FrontEnd --shards HOST:PORT[,HOST:PORT…] (HOST:FIRST-LAST: consecutive ports) [--host 127.0.0.1] [--port 0] [--threads 8] [--timeout-ms 10000]";

    /** HOST:PORT,… with HOST:FIRST-LAST standing for every port from FIRST to LAST. */
    static String[] shardList(String spec) {
        List<String> out = new ArrayList<>();
        for (String s : spec.split(",")) {
            int colon = s.lastIndexOf(':');
            int dash = s.indexOf('-', colon + 1);
            if (colon > 0 && dash > 0) {
                int first = Integer.parseInt(s.substring(colon + 1, dash));
                int last = Integer.parseInt(s.substring(dash + 1));
                for (int p = first; p <= last; p++) out.add(s.substring(0, colon + 1) + p);
            } else {
                out.add(s);
            }
        }
        return out.toArray(new String[0]);
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> o = SearchCommon.options(args, USAGE);
        String[] shards = shardList(SearchCommon.need(o, "shards", USAGE));
        int threads = Integer.parseInt(o.getOrDefault("threads", "8"));
        Duration timeout = Duration.ofMillis(Long.parseLong(o.getOrDefault("timeout-ms", "10000")));
        HttpClient client = HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .executor(Executors.newFixedThreadPool(threads))
                .connectTimeout(timeout)
                .build();
        SearchHttp.serve(o.getOrDefault("host", "127.0.0.1"), Integer.parseInt(o.getOrDefault("port", "0")), threads,
                "ok frontend shards " + shards.length, (q, k) -> {
                    List<CompletableFuture<HttpResponse<String>>> fs = new ArrayList<>();
                    for (String s : shards) {
                        HttpRequest r = HttpRequest.newBuilder(
                                URI.create("http://" + s + "/search?k=" + k + "&q=" + SearchHttp.encode(q)))
                                .timeout(timeout).GET().build();
                        fs.add(client.sendAsync(r, HttpResponse.BodyHandlers.ofString()));
                    }
                    List<List<SearchCommon.Hit>> per = new ArrayList<>();
                    for (int i = 0; i < fs.size(); i++) {
                        List<SearchCommon.Hit> hits = new ArrayList<>();
                        try {
                            HttpResponse<String> r = fs.get(i).join();
                            if (r.statusCode() != 200) throw new IllegalStateException("status " + r.statusCode());
                            for (String l : r.body().split("\n")) {
                                if (!l.isEmpty()) hits.add(SearchCommon.Hit.parse(l));
                            }
                        } catch (RuntimeException e) {
                            System.err.println("shard " + shards[i] + " failed: " + e);
                            hits.clear();
                        }
                        per.add(hits);
                    }
                    return SearchCommon.answer(SearchCommon.merge(per, k));
                });
    }
}

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The closed-loop client: C threads each send the next query of the file
 * (GET /search) and wait for its answer before sending another, until every
 * query has been answered `passes` times (after `warmup` untimed queries).
 * Prints queries/s, p50/p99 latency and the SHA-256 digest of the answers in
 * query order (SearchCli prints the same digest for the same answers); with
 * --out, the answers too, in SearchCli's format. Answers that differ between
 * passes are counted as "unstable".
 */
public final class SearchBench {
    static final String USAGE = "SearchBench --url http://HOST:PORT --queries FILE [--limit N] [--k 10] [--concurrency 1] [--passes 1] [--warmup 0] [--out FILE]";

    public static void main(String[] args) throws Exception {
        Map<String, String> o = SearchCommon.options(args, USAGE);
        String url = SearchCommon.need(o, "url", USAGE);
        List<String> qs = SearchCommon.queries(Path.of(SearchCommon.need(o, "queries", USAGE)),
                Integer.parseInt(o.getOrDefault("limit", "0")));
        int k = Integer.parseInt(o.getOrDefault("k", "10"));
        int c = Integer.parseInt(o.getOrDefault("concurrency", "1"));
        int passes = Integer.parseInt(o.getOrDefault("passes", "1"));
        int warmup = Integer.parseInt(o.getOrDefault("warmup", "0"));
        HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(Duration.ofSeconds(30)).build();
        int n = qs.size();

        for (int i = 0; i < warmup; i++) ask(client, url, qs.get(i % n), k);

        String[] answers = new String[n];
        long[] lat = new long[n * passes];
        AtomicInteger next = new AtomicInteger();
        AtomicLong unstable = new AtomicLong(), errors = new AtomicLong();
        Thread[] ts = new Thread[c];
        long t0 = System.nanoTime();
        for (int t = 0; t < c; t++) {
            ts[t] = new Thread(() -> {
                int j;
                while ((j = next.getAndIncrement()) < n * passes) {
                    int qi = j % n;
                    long s = System.nanoTime();
                    String a;
                    try {
                        a = ask(client, url, qs.get(qi), k);
                    } catch (Exception e) {
                        errors.incrementAndGet();
                        a = "error\n";
                    }
                    lat[j] = System.nanoTime() - s;
                    synchronized (answers) {
                        if (answers[qi] == null) answers[qi] = a;
                        else if (!answers[qi].equals(a)) unstable.incrementAndGet();
                    }
                }
            });
            ts[t].start();
        }
        for (Thread t : ts) t.join();
        double secs = (System.nanoTime() - t0) / 1e9;
        Arrays.sort(lat);
        String digest = SearchCommon.digest(qs, answers);
        if (o.containsKey("out")) {
            StringBuilder sb = new StringBuilder();
            for (int i = 0; i < n; i++) sb.append(SearchCommon.transcriptEntry(i, qs.get(i), answers[i]));
            sb.append("queries ").append(n).append(" digest ").append(digest).append('\n');
            Files.writeString(Path.of(o.get("out")), sb, StandardCharsets.UTF_8);
        }
        System.out.printf("queries %d concurrency %d passes %d seconds %.3f qps %.1f p50_ms %.2f p99_ms %.2f errors %d unstable %d digest %s%n",
                n * passes, c, passes, secs, n * passes / secs, pct(lat, 0.50), pct(lat, 0.99),
                errors.get(), unstable.get(), digest);
    }

    static double pct(long[] sorted, double p) {
        if (sorted.length == 0) return 0;
        int i = (int) Math.ceil(p * sorted.length) - 1;
        return sorted[Math.max(0, Math.min(sorted.length - 1, i))] / 1e6;
    }

    static String ask(HttpClient client, String url, String q, int k) throws IOException, InterruptedException {
        HttpRequest r = HttpRequest.newBuilder(URI.create(url + "/search?k=" + k + "&q=" + SearchHttp.encode(q)))
                .timeout(Duration.ofSeconds(60)).GET().build();
        HttpResponse<String> resp = client.send(r, HttpResponse.BodyHandlers.ofString());
        if (resp.statusCode() != 200) throw new IOException("status " + resp.statusCode());
        return resp.body();
    }
}

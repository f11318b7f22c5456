import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import com.sun.net.httpserver.HttpServer;

/**
 * The HTTP protocol of the shard servers and the front end (JDK's built-in
 * com.sun.net.httpserver, HTTP/1.1):
 *
 *   GET /search?q=QUERY&k=K  → 200, text/plain UTF-8, one hit per line:
 *                              shard TAB doc TAB score TAB id TAB url TAB title
 *                              (score in Java's Float.toString form, exact)
 *   GET /ping                → 200, one line "ok …"
 *   anything else            → 404; a bad k → 400
 */
final class SearchHttp {
    private SearchHttp() {}

    interface Search {
        String answer(String q, int k) throws Exception;
    }

    static String encode(String q) {
        return URLEncoder.encode(q, StandardCharsets.UTF_8);
    }

    static Map<String, String> params(String raw) {
        Map<String, String> m = new HashMap<>();
        if (raw == null) return m;
        for (String kv : raw.split("&")) {
            int e = kv.indexOf('=');
            String k = e < 0 ? kv : kv.substring(0, e);
            String v = e < 0 ? "" : kv.substring(e + 1);
            try {
                m.put(URLDecoder.decode(k, StandardCharsets.UTF_8), URLDecoder.decode(v, StandardCharsets.UTF_8));
            } catch (IllegalArgumentException ignored) {
                // a malformed %-escape: the parameter is left out
            }
        }
        return m;
    }

    static void reply(HttpExchange x, int code, String body) throws IOException {
        byte[] b = body.getBytes(StandardCharsets.UTF_8);
        x.getResponseHeaders().set("Content-Type", "text/plain; charset=utf-8");
        x.sendResponseHeaders(code, b.length == 0 ? -1 : b.length);
        if (b.length > 0) {
            try (OutputStream os = x.getResponseBody()) {
                os.write(b);
            }
        }
        x.close();
    }

    /**
     * Starts a server on host:port (0 = any free port) with `threads` handler
     * threads, prints "listening PORT" on stdout, and stops it on JVM exit.
     */
    static HttpServer serve(String host, int port, int threads, String ping, Search search) throws IOException {
        // The server writes a response's headers and body separately: without
        // TCP_NODELAY, Nagle's algorithm and the client's delayed ACK hold
        // every answer back ~40 ms. Read once, when the first server starts.
        if (System.getProperty("sun.net.httpserver.nodelay") == null) {
            System.setProperty("sun.net.httpserver.nodelay", "true");
        }
        HttpServer s = HttpServer.create(new InetSocketAddress(host, port), 256);
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        HttpHandler h = x -> {
            try {
                String path = x.getRequestURI().getPath();
                if (!"GET".equals(x.getRequestMethod())) {
                    reply(x, 405, "");
                } else if ("/ping".equals(path)) {
                    reply(x, 200, ping + "\n");
                } else if ("/search".equals(path)) {
                    Map<String, String> p = params(x.getRequestURI().getRawQuery());
                    int k;
                    try {
                        k = Integer.parseInt(p.getOrDefault("k", "10"));
                    } catch (NumberFormatException e) {
                        k = -1;
                    }
                    if (k < 0 || k > 10000) {
                        reply(x, 400, "bad k\n");
                    } else {
                        reply(x, 200, search.answer(p.getOrDefault("q", ""), k));
                    }
                } else {
                    reply(x, 404, "");
                }
            } catch (Exception e) {
                try {
                    reply(x, 500, e + "\n");
                } catch (IOException ignored) {
                    x.close();
                }
            }
        };
        s.createContext("/", h);
        s.setExecutor(pool);
        s.start();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            s.stop(0);
            pool.shutdownNow();
            System.err.println("stopped");
        }));
        System.out.println("listening " + s.getAddress().getPort());
        System.out.flush();
        return s;
    }
}

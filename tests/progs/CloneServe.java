import com.sun.net.httpserver.HttpServer;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicLong;

// A server with state, to clone (tests/tests/snapshot.rs): it listens on a
// loopback port the kernel picks, writes the port to the file named by its
// argument (whole, then renamed), and answers each GET with how many it
// has answered, itself included ("served N"): a copy restored from a
// snapshot goes on counting from where the snapshot was taken.
public class CloneServe {
    public static void main(String[] args) throws Exception {
        HttpServer s = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 64);
        AtomicLong served = new AtomicLong();
        s.createContext("/", x -> {
            byte[] body = ("served " + served.incrementAndGet() + "\n").getBytes(StandardCharsets.UTF_8);
            x.sendResponseHeaders(200, body.length);
            try (var o = x.getResponseBody()) {
                o.write(body);
            }
        });
        s.start();
        Path out = Path.of(args[0]);
        Path tmp = Path.of(args[0] + ".tmp");
        Files.writeString(tmp, Integer.toString(s.getAddress().getPort()));
        Files.move(tmp, out);
    }
}

import com.sun.net.httpserver.HttpServer;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

// A server for `astraea-bench snapshot`'s time to first answer: it listens
// on a port of the loopback the kernel picks, writes the port to the file
// named by its argument (whole, then renamed), and answers every GET with
// "hi".
public class SnapServe {
    public static void main(String[] args) throws Exception {
        HttpServer s = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 16);
        byte[] hi = "hi".getBytes(StandardCharsets.UTF_8);
        s.createContext("/", x -> {
            x.sendResponseHeaders(200, hi.length);
            try (var o = x.getResponseBody()) {
                o.write(hi);
            }
        });
        s.start();
        Path out = Path.of(args[0]);
        Path tmp = Path.of(args[0] + ".tmp");
        Files.writeString(tmp, Integer.toString(s.getAddress().getPort()));
        Files.move(tmp, out);
    }
}

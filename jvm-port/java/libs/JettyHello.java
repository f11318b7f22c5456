import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.io.Content;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.util.Callback;

/**
 * A Jetty 12 server (Maven Central, unchanged): answers /hello?name=N with
 * a greeting, /count with how many requests it served, /stop by stopping.
 * It writes its port to the file given as the argument (tests/tests/java_libs.rs
 * reaches it from the host) and prints what it served when it stops.
 */
public class JettyHello {
    public static void main(String[] args) throws Exception {
        Server server = new Server();
        ServerConnector connector = new ServerConnector(server);
        connector.setPort(0);
        server.addConnector(connector);
        long[] served = new long[1];
        server.setHandler(new Handler.Abstract() {
            @Override
            public boolean handle(Request request, Response response, Callback callback) {
                String path = Request.getPathInContext(request);
                String body;
                synchronized (served) {
                    served[0]++;
                    body = switch (path) {
                        case "/hello" -> "hello, " + Request.extractQueryParameters(request).getValue("name") + "\n";
                        case "/count" -> served[0] + "\n";
                        case "/stop" -> "stopping\n";
                        default -> null;
                    };
                }
                if (body == null) {
                    Response.writeError(request, response, callback, 404);
                    return true;
                }
                response.setStatus(200);
                response.getHeaders().put(HttpHeader.CONTENT_TYPE, "text/plain; charset=utf-8");
                Content.Sink.write(response, true, body, callback);
                if (path.equals("/stop")) {
                    new Thread(() -> {
                        try {
                            Thread.sleep(200);
                            server.stop();
                        } catch (Exception e) {
                            e.printStackTrace();
                        }
                    }).start();
                }
                return true;
            }
        });
        server.start();
        Path file = Path.of(args[0]);
        Path tmp = Path.of(args[0] + ".tmp");
        Files.writeString(tmp, Integer.toString(connector.getLocalPort()), StandardCharsets.UTF_8);
        Files.move(tmp, file);
        server.join();
        System.out.println("jetty served " + served[0] + " requests");
    }
}

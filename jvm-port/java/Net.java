import com.sun.net.httpserver.HttpServer;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.net.ConnectException;
import java.net.HttpURLConnection;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.net.URI;
import java.net.URL;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Iterator;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;

/**
 * The JDK's networking in a partition: blocking sockets, an NIO selector
 * server, com.sun.net.httpserver with java.net.http.HttpClient and
 * HttpURLConnection, transferTo (sendfile), a refused connect, and the
 * asynchronous close of a socket a thread is blocked reading. Everything
 * printed is independent of ports and timing, so the host's output and a
 * partition's must be equal (tests/tests/java.rs).
 *
 * With the argument `serve FILE` it runs an HTTP server instead, writes its
 * port to FILE and answers /hello (and /bulk?mb=N) until /stop (tests that
 * reach it from the host, benchmarks); with `get URL` it prints the status
 * and body of one GET; with `sink PORT` it reads all that 127.0.0.1:PORT
 * sends and prints how much.
 */
public class Net {
    public static void main(String[] args) throws Exception {
        if (args.length == 2 && args[0].equals("serve")) {
            serve(Path.of(args[1]));
            return;
        }
        if (args.length == 2 && args[0].equals("sink")) {
            // Reads everything 127.0.0.1:PORT sends, with blocking 64 KiB
            // reads (the bulk download benchmark).
            try (Socket s = new Socket(InetAddress.getLoopbackAddress(), Integer.parseInt(args[1]))) {
                InputStream in = s.getInputStream();
                byte[] buf = new byte[64 << 10];
                long total = 0;
                for (int n; (n = in.read(buf)) > 0; ) {
                    total += n;
                }
                System.out.println(total);
            }
            return;
        }
        if (args.length == 2 && args[0].equals("get")) {
            HttpResponse<String> r = HttpClient.newHttpClient().send(
                    HttpRequest.newBuilder(URI.create(args[1])).build(),
                    HttpResponse.BodyHandlers.ofString());
            System.out.print(r.statusCode() + " " + r.body());
            return;
        }
        blocking();
        selector();
        http();
        transfer();
        refused();
        asyncClose();
        udp();
        System.out.println("done");
    }

    static void blocking() throws Exception {
        // Names resolve as on the host (glibc reads /etc/hosts through the gateway).
        System.out.println("localhost is loopback: " + InetAddress.getByName("localhost").isLoopbackAddress());
        try (ServerSocket ss = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            Thread t = new Thread(() -> {
                try (Socket s = ss.accept();
                        BufferedReader in = new BufferedReader(
                                new InputStreamReader(s.getInputStream(), StandardCharsets.UTF_8));
                        PrintWriter out = new PrintWriter(s.getOutputStream(), true)) {
                    String line;
                    while ((line = in.readLine()) != null) {
                        out.println(line.toUpperCase());
                    }
                } catch (IOException e) {
                    System.out.println("server: " + e);
                }
            });
            t.start();
            try (Socket s = new Socket(InetAddress.getLoopbackAddress(), ss.getLocalPort())) {
                s.setTcpNoDelay(true);
                System.out.println("socket: connected " + s.isConnected()
                        + ", nodelay " + s.getTcpNoDelay()
                        + ", peer port matches " + (s.getPort() == ss.getLocalPort()));
                PrintWriter out = new PrintWriter(s.getOutputStream(), true);
                BufferedReader in = new BufferedReader(
                        new InputStreamReader(s.getInputStream(), StandardCharsets.UTF_8));
                for (String w : new String[] {"alpha", "grüße", "omega"}) {
                    out.println(w);
                    System.out.println("echo: " + in.readLine());
                }
                s.shutdownOutput();
                System.out.println("after shutdownOutput: " + in.readLine());
            }
            t.join();
        }
    }

    static void selector() throws Exception {
        try (Selector sel = Selector.open();
                ServerSocketChannel server = ServerSocketChannel.open()) {
            server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            server.configureBlocking(false);
            server.register(sel, SelectionKey.OP_ACCEPT);
            int port = ((InetSocketAddress) server.getLocalAddress()).getPort();
            int clients = 5;
            CountDownLatch done = new CountDownLatch(clients);
            StringBuffer results = new StringBuffer();
            for (int i = 0; i < clients; i++) {
                int id = i;
                new Thread(() -> {
                    try (SocketChannel c = SocketChannel.open(
                            new InetSocketAddress(InetAddress.getLoopbackAddress(), port))) {
                        byte[] msg = ("client " + id + " ").repeat(1000).getBytes(StandardCharsets.UTF_8);
                        c.write(ByteBuffer.wrap(msg));
                        c.shutdownOutput();
                        ByteBuffer back = ByteBuffer.allocate(msg.length + 10);
                        while (c.read(back) >= 0) {}
                        back.flip();
                        byte[] got = new byte[back.remaining()];
                        back.get(got);
                        if (!java.util.Arrays.equals(got, msg)) {
                            results.append("client " + id + ": wrong echo\n");
                        }
                    } catch (IOException e) {
                        results.append("client " + id + ": " + e + "\n");
                    } finally {
                        done.countDown();
                    }
                }).start();
            }
            int closed = 0;
            while (closed < clients) {
                sel.select(10_000);
                Iterator<SelectionKey> it = sel.selectedKeys().iterator();
                while (it.hasNext()) {
                    SelectionKey k = it.next();
                    it.remove();
                    if (k.isAcceptable()) {
                        SocketChannel c = server.accept();
                        if (c != null) {
                            c.configureBlocking(false);
                            c.register(sel, SelectionKey.OP_READ, ByteBuffer.allocate(4096));
                        }
                    } else if (k.isReadable()) {
                        SocketChannel c = (SocketChannel) k.channel();
                        ByteBuffer b = (ByteBuffer) k.attachment();
                        int n = c.read(b);
                        if (n < 0) {
                            c.close();
                            closed++;
                            continue;
                        }
                        b.flip();
                        while (b.hasRemaining()) {
                            c.write(b);
                        }
                        b.clear();
                    }
                }
            }
            done.await();
            System.out.println("selector: " + clients + " clients echoed"
                    + (results.length() == 0 ? ", all exact" : "\n" + results));
        }
    }

    static HttpServer helloServer() throws IOException {
        HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.createContext("/hello", ex -> {
            byte[] body = ("hello, " + ex.getRequestMethod() + " "
                    + ex.getRequestURI().getQuery() + "\n").getBytes(StandardCharsets.UTF_8);
            ex.sendResponseHeaders(200, body.length);
            try (OutputStream os = ex.getResponseBody()) {
                os.write(body);
            }
        });
        server.setExecutor(Executors.newFixedThreadPool(2));
        return server;
    }

    static void http() throws Exception {
        HttpServer server = helloServer();
        server.start();
        int port = server.getAddress().getPort();
        HttpClient client = HttpClient.newHttpClient();
        for (int i = 0; i < 3; i++) {
            HttpResponse<String> r = client.send(
                    HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/hello?n=" + i)).build(),
                    HttpResponse.BodyHandlers.ofString());
            System.out.print("HttpClient: " + r.statusCode() + " " + r.body());
        }
        HttpURLConnection c = (HttpURLConnection) new URL("http://127.0.0.1:" + port + "/hello?n=url").openConnection();
        try (InputStream in = c.getInputStream()) {
            System.out.print("HttpURLConnection: " + c.getResponseCode() + " "
                    + new String(in.readAllBytes(), StandardCharsets.UTF_8));
        }
        HttpURLConnection missing = (HttpURLConnection) new URL("http://127.0.0.1:" + port + "/nothing").openConnection();
        System.out.println("missing page: " + missing.getResponseCode());
        server.stop(0);
        ((java.util.concurrent.ExecutorService) server.getExecutor()).shutdown();
    }

    static void transfer() throws Exception {
        Path f = Files.createTempFile(Path.of("."), "net", ".bin");
        byte[] data = new byte[3 << 20];
        for (int i = 0; i < data.length; i++) {
            data[i] = (byte) (i * 31 + (i >> 10));
        }
        Files.write(f, data);
        try (ServerSocketChannel server = ServerSocketChannel.open()) {
            server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            Thread t = new Thread(() -> {
                try (SocketChannel c = server.accept(); FileChannel fc = FileChannel.open(f, StandardOpenOption.READ)) {
                    long sent = 0;
                    while (sent < fc.size()) {
                        sent += fc.transferTo(sent, fc.size() - sent, c);
                    }
                } catch (IOException e) {
                    System.out.println("transferTo: " + e);
                }
            });
            t.start();
            try (SocketChannel c = SocketChannel.open(server.getLocalAddress())) {
                byte[] got = c.socket().getInputStream().readAllBytes();
                System.out.println("transferTo: " + got.length + " bytes, equal "
                        + java.util.Arrays.equals(got, data));
            }
            t.join();
        } finally {
            Files.delete(f);
        }
    }

    static void refused() throws Exception {
        // A port bound but not listening: refused, and ours while held (a
        // closed port could be taken by another program, or be the
        // client's own ephemeral port and connect to itself).
        try (Socket bound = new Socket(); Socket s = new Socket()) {
            bound.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), bound.getLocalPort()));
            System.out.println("refused: connected?!");
        } catch (ConnectException e) {
            System.out.println("refused: " + e.getClass().getSimpleName());
        }
    }

    static void asyncClose() throws Exception {
        Socket client = null;
        try (ServerSocket ss = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            client = new Socket(InetAddress.getLoopbackAddress(), ss.getLocalPort());
            Socket peer = ss.accept();
            Socket reader = client;
            CountDownLatch reading = new CountDownLatch(1);
            String[] outcome = new String[1];
            Thread t = new Thread(() -> {
                try {
                    reading.countDown();
                    int b = reader.getInputStream().read();
                    outcome[0] = "read returned " + b;
                } catch (SocketException e) {
                    outcome[0] = "SocketException: " + e.getMessage();
                } catch (IOException e) {
                    outcome[0] = e.toString();
                }
            });
            t.start();
            reading.await();
            Thread.sleep(300); // the thread is blocked in read
            client.close();
            t.join(10_000);
            System.out.println("async close: " + (t.isAlive() ? "reader still blocked" : outcome[0]));
            peer.close();
        } finally {
            if (client != null) {
                client.close();
            }
        }
    }

    static void udp() throws Exception {
        try (java.net.DatagramSocket a = new java.net.DatagramSocket(0, InetAddress.getLoopbackAddress());
                java.net.DatagramSocket b = new java.net.DatagramSocket()) {
            a.setSoTimeout(10_000);
            b.setSoTimeout(10_000);
            byte[] msg = "datagram über UDP".getBytes(StandardCharsets.UTF_8);
            b.send(new java.net.DatagramPacket(msg, msg.length, a.getLocalSocketAddress()));
            java.net.DatagramPacket got = new java.net.DatagramPacket(new byte[100], 100);
            a.receive(got);
            System.out.println("udp: " + new String(got.getData(), 0, got.getLength(), StandardCharsets.UTF_8)
                    + ", from b " + (got.getPort() == b.getLocalPort()));
            byte[] reply = "ack".getBytes(StandardCharsets.UTF_8);
            a.send(new java.net.DatagramPacket(reply, reply.length, got.getSocketAddress()));
            java.net.DatagramPacket back = new java.net.DatagramPacket(new byte[10], 10);
            b.receive(back);
            System.out.println("udp reply: " + new String(back.getData(), 0, back.getLength(), StandardCharsets.UTF_8));
        }
        try (java.nio.channels.DatagramChannel a = java.nio.channels.DatagramChannel.open();
                java.nio.channels.DatagramChannel b = java.nio.channels.DatagramChannel.open()) {
            a.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            b.connect(a.getLocalAddress());
            b.write(ByteBuffer.wrap(new byte[] {1, 2, 3, 4, 5}));
            ByteBuffer in = ByteBuffer.allocate(16);
            java.net.SocketAddress from = a.receive(in);
            System.out.println("DatagramChannel: " + in.position() + " bytes from b "
                    + from.equals(b.getLocalAddress()) + ", connected " + b.isConnected());
        }
        // A multicast group: joined on the default interface, a datagram
        // sent to it comes back through the host's multicast loopback.
        InetAddress group = InetAddress.getByName("239.255.77.41");
        try (java.net.MulticastSocket m = new java.net.MulticastSocket(0);
                java.net.DatagramSocket s = new java.net.DatagramSocket()) {
            m.joinGroup(new InetSocketAddress(group, 0), null);
            m.setSoTimeout(10_000);
            byte[] msg = "to the group".getBytes(StandardCharsets.UTF_8);
            s.send(new java.net.DatagramPacket(msg, msg.length, group, m.getLocalPort()));
            java.net.DatagramPacket got = new java.net.DatagramPacket(new byte[100], 100);
            m.receive(got);
            m.leaveGroup(new InetSocketAddress(group, 0), null);
            System.out.println("multicast: " + new String(got.getData(), 0, got.getLength(), StandardCharsets.UTF_8)
                    + ", ttl " + m.getTimeToLive());
        }
    }

    static void serve(Path portFile) throws Exception {
        HttpServer server = HttpServer.create(new InetSocketAddress(0), 0);
        CountDownLatch stop = new CountDownLatch(1);
        server.createContext("/hello", ex -> {
            byte[] body = "hello from the partition\n".getBytes(StandardCharsets.UTF_8);
            ex.sendResponseHeaders(200, body.length);
            try (OutputStream os = ex.getResponseBody()) {
                os.write(body);
            }
        });
        server.createContext("/bulk", ex -> {
            // /bulk?mb=N: N MiB of bytes (bulk transfer benchmarks).
            String q = ex.getRequestURI().getQuery();
            long mib = q != null && q.startsWith("mb=") ? Long.parseLong(q.substring(3)) : 1;
            byte[] chunk = new byte[1 << 20];
            ex.sendResponseHeaders(200, mib << 20);
            try (OutputStream os = ex.getResponseBody()) {
                for (long i = 0; i < mib; i++) {
                    os.write(chunk);
                }
            }
        });
        server.createContext("/stop", ex -> {
            ex.sendResponseHeaders(200, -1);
            ex.close();
            stop.countDown();
        });
        server.start();
        Path tmp = Path.of(portFile + ".tmp");
        Files.writeString(tmp, Integer.toString(server.getAddress().getPort()));
        Files.move(tmp, portFile);
        stop.await();
        server.stop(0);
        System.out.println("served");
    }
}

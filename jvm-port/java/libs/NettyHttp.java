import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.ServerChannel;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollDatagramChannel;
import io.netty.channel.epoll.EpollDomainSocketChannel;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerDomainSocketChannel;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.DatagramPacket;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.channel.unix.DomainSocketAddress;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpClientCodec;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.util.CharsetUtil;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32;

/**
 * Netty 4.2 over its native epoll transport (a JNI library that Netty
 * unpacks and loads, calling epoll, eventfd, timerfd, accept4, writev and
 * the socket options itself) and over NIO: an HTTP/1.1 server and keep-alive
 * clients in one JVM, a UDP echo and a Unix-domain echo. Prints only
 * deterministic results (sizes, CRC32s, counts, exception classes).
 *
 * Argument: a directory for the Unix-domain socket.
 */
public class NettyHttp {
    static final int CLIENTS = 4;
    static final int REQUESTS = 60;

    /** The deterministic body of /size/N. */
    static byte[] body(int n) {
        byte[] b = new byte[n];
        long x = n * 2654435761L + 12345;
        for (int i = 0; i < n; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
            b[i] = (byte) (x >>> 56);
        }
        return b;
    }

    static long crc(byte[] b) {
        CRC32 c = new CRC32();
        c.update(b);
        return c.getValue();
    }

    static long crc(ByteBuf b) {
        CRC32 c = new CRC32();
        c.update(b.nioBuffer());
        return c.getValue();
    }

    /** The server's handler: /size/N, POST /echo, /later/MS, /close. */
    static class Server extends SimpleChannelInboundHandler<FullHttpRequest> {
        @Override
        protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest req) {
            String uri = req.uri();
            boolean keep = HttpUtil.isKeepAlive(req);
            if (uri.startsWith("/size/")) {
                reply(ctx, Unpooled.wrappedBuffer(body(Integer.parseInt(uri.substring(6)))), keep);
            } else if (uri.equals("/echo")) {
                String s = req.content().readableBytes() + " " + Long.toHexString(crc(req.content()));
                reply(ctx, Unpooled.copiedBuffer(s, CharsetUtil.US_ASCII), keep);
            } else if (uri.startsWith("/later/")) {
                // A timer of the event loop (timerfd in the epoll transport).
                long ms = Long.parseLong(uri.substring(7));
                ctx.executor().schedule(
                        () -> reply(ctx, Unpooled.copiedBuffer("later " + ms, CharsetUtil.US_ASCII), keep),
                        ms, TimeUnit.MILLISECONDS);
            } else if (uri.equals("/close")) {
                reply(ctx, Unpooled.copiedBuffer("bye", CharsetUtil.US_ASCII), false);
            } else {
                FullHttpResponse r = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.NOT_FOUND);
                r.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, 0);
                ctx.writeAndFlush(r);
            }
        }

        static void reply(ChannelHandlerContext ctx, ByteBuf content, boolean keep) {
            FullHttpResponse r = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK, content);
            r.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, content.readableBytes());
            if (!keep) {
                r.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
                ctx.writeAndFlush(r).addListener(ChannelFutureListener.CLOSE);
            } else {
                ctx.writeAndFlush(r);
            }
        }
    }

    /** A client connection's responses, in order; null when the server closed. */
    static class Client extends SimpleChannelInboundHandler<FullHttpResponse> {
        final BlockingQueue<Object> got = new LinkedBlockingQueue<>();

        @Override
        protected void channelRead0(ChannelHandlerContext ctx, FullHttpResponse r) {
            byte[] b = new byte[r.content().readableBytes()];
            r.content().getBytes(0, b);
            got.add(r.status().code() + ":" + b.length + ":" + Long.toHexString(crc(b)));
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            got.add("closed");
        }

        String next() throws InterruptedException {
            Object o = got.poll(60, TimeUnit.SECONDS);
            if (o == null) {
                throw new IllegalStateException("no response within 60 s");
            }
            return (String) o;
        }
    }

    record Transport(String name, IoHandlerFactory io, Class<? extends ServerChannel> server,
            Class<? extends Channel> client) {}

    static int[] SIZES = {0, 1, 100, 4096, 65536, 65537, 300000, 2 << 20};

    static void http(Transport t) throws Exception {
        EventLoopGroup boss = new MultiThreadIoEventLoopGroup(1, t.io());
        EventLoopGroup workers = new MultiThreadIoEventLoopGroup(2, t.io());
        EventLoopGroup clients = new MultiThreadIoEventLoopGroup(2, t.io());
        try {
            Channel server = new ServerBootstrap().group(boss, workers).channel(t.server())
                    .option(ChannelOption.SO_BACKLOG, 128)
                    .option(ChannelOption.SO_REUSEADDR, true)
                    .childOption(ChannelOption.TCP_NODELAY, true)
                    .childHandler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            ch.pipeline().addLast(new HttpServerCodec(), new HttpObjectAggregator(16 << 20), new Server());
                        }
                    }).bind(new InetSocketAddress("127.0.0.1", 0)).sync().channel();
            int port = ((InetSocketAddress) server.localAddress()).getPort();

            Map<String, String> results = new TreeMap<>();
            List<Thread> threads = new ArrayList<>();
            List<Throwable> failures = new ArrayList<>();
            for (int c = 0; c < CLIENTS; c++) {
                final int id = c;
                Thread th = new Thread(() -> {
                    try {
                        clientRun(t, clients, port, id, results);
                    } catch (Throwable e) {
                        synchronized (failures) {
                            failures.add(e);
                        }
                    }
                });
                th.start();
                threads.add(th);
            }
            for (Thread th : threads) {
                th.join();
            }
            if (!failures.isEmpty()) {
                failures.get(0).printStackTrace();
                throw new IllegalStateException(failures.size() + " client(s) failed");
            }
            CRC32 all = new CRC32();
            for (Map.Entry<String, String> e : results.entrySet()) {
                all.update((e.getKey() + "=" + e.getValue() + "\n").getBytes(CharsetUtil.UTF_8));
            }
            System.out.println(t.name() + " http: " + results.size() + " responses, digest "
                    + Long.toHexString(all.getValue()));
            // Every size was asked for by some client; all answers for it must agree.
            for (int s : SIZES) {
                String suffix = " size " + s;
                List<String> seen = results.entrySet().stream().filter(e -> e.getKey().endsWith(suffix))
                        .map(Map.Entry::getValue).distinct().toList();
                System.out.println(t.name() + " http: /size/" + s + " -> " + seen);
            }
            System.out.println(t.name() + " http: /close -> " + results.get("c0/close"));

            // A refused connection: a port bound but not listening, held
            // while we connect (a closed port could be taken meanwhile, or
            // be the client's own ephemeral port and connect to itself).
            server.close().sync();
            Throwable cause;
            try (java.net.Socket bound = new java.net.Socket()) {
                bound.bind(new InetSocketAddress("127.0.0.1", 0));
                ChannelFuture f = new Bootstrap().group(clients).channel(t.client())
                        .handler(new Client())
                        .connect(new InetSocketAddress("127.0.0.1", bound.getLocalPort())).await();
                cause = f.cause();
            }
            System.out.println(t.name() + " connect to a closed port: "
                    + (cause instanceof ConnectException ? "ConnectException" : String.valueOf(cause)));
        } finally {
            clients.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
            workers.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
            boss.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
        }
    }

    static String key(int i, int size) {
        return String.format("%03d size %d", i, size);
    }

    static void clientRun(Transport t, EventLoopGroup group, int port, int id, Map<String, String> out)
            throws Exception {
        Client h = new Client();
        Channel ch = new Bootstrap().group(group).channel(t.client())
                .option(ChannelOption.TCP_NODELAY, true)
                .handler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel c) {
                        c.pipeline().addLast(new HttpClientCodec(), new HttpObjectAggregator(16 << 20), h);
                    }
                }).connect(new InetSocketAddress("127.0.0.1", port)).sync().channel();
        Map<String, String> mine = new TreeMap<>();
        for (int i = 0; i < REQUESTS; i++) {
            String k;
            FullHttpRequest req;
            switch (i % 4) {
                case 0, 1 -> {
                    int size = SIZES[(i / 4 + id) % SIZES.length];
                    k = key(i, size);
                    req = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.GET, "/size/" + size);
                }
                case 2 -> {
                    byte[] b = body(1000 * i + id * 7919);
                    k = String.format("%03d echo %d", i, b.length);
                    req = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.POST, "/echo",
                            Unpooled.wrappedBuffer(b));
                    req.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, b.length);
                }
                default -> {
                    k = String.format("%03d later", i);
                    req = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.GET, "/later/" + (i % 7));
                }
            }
            req.headers().set(HttpHeaderNames.HOST, "127.0.0.1");
            ch.writeAndFlush(req).sync();
            mine.put(k, h.next());
        }
        FullHttpRequest bye = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.GET, "/close");
        bye.headers().set(HttpHeaderNames.HOST, "127.0.0.1");
        ch.writeAndFlush(bye).sync();
        mine.put("close", h.next() + " then " + h.next());
        ch.closeFuture().sync();
        synchronized (out) {
            for (Map.Entry<String, String> e : mine.entrySet()) {
                out.put("c" + id + "/" + e.getKey(), e.getValue());
            }
        }
    }

    /** Echoes datagrams, and a client sends 200 of them one at a time. */
    static void udp() throws Exception {
        EventLoopGroup g = new MultiThreadIoEventLoopGroup(2, EpollIoHandler.newFactory());
        try {
            Channel echo = new Bootstrap().group(g).channel(EpollDatagramChannel.class)
                    .handler(new SimpleChannelInboundHandler<DatagramPacket>() {
                        @Override
                        protected void channelRead0(ChannelHandlerContext ctx, DatagramPacket p) {
                            ctx.writeAndFlush(new DatagramPacket(p.content().retain(), p.sender()));
                        }
                    }).bind(new InetSocketAddress("127.0.0.1", 0)).sync().channel();
            BlockingQueue<String> got = new LinkedBlockingQueue<>();
            Channel client = new Bootstrap().group(g).channel(EpollDatagramChannel.class)
                    .handler(new SimpleChannelInboundHandler<DatagramPacket>() {
                        @Override
                        protected void channelRead0(ChannelHandlerContext ctx, DatagramPacket p) {
                            got.add(p.content().readableBytes() + ":" + Long.toHexString(crc(p.content())));
                        }
                    }).bind(new InetSocketAddress("127.0.0.1", 0)).sync().channel();
            CRC32 all = new CRC32();
            for (int i = 0; i < 200; i++) {
                byte[] b = body(i * 97 % 9000 + 1);
                client.writeAndFlush(new DatagramPacket(Unpooled.wrappedBuffer(b), (InetSocketAddress) echo.localAddress())).sync();
                String r = got.poll(30, TimeUnit.SECONDS);
                if (r == null) {
                    throw new IllegalStateException("datagram " + i + " not echoed within 30 s");
                }
                all.update(r.getBytes(CharsetUtil.US_ASCII));
            }
            System.out.println("epoll udp: 200 datagrams echoed, digest " + Long.toHexString(all.getValue()));
            client.close().sync();
            echo.close().sync();
        } finally {
            g.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
        }
    }

    /** A Unix-domain stream echo through the epoll transport. */
    static void unix(Path dir) throws Exception {
        Path sock = dir.resolve("netty.sock");
        Files.deleteIfExists(sock);
        EventLoopGroup g = new MultiThreadIoEventLoopGroup(2, EpollIoHandler.newFactory());
        try {
            Channel server = new ServerBootstrap().group(g).channel(EpollServerDomainSocketChannel.class)
                    .childHandler(new ChannelInitializer<Channel>() {
                        @Override
                        protected void initChannel(Channel ch) {
                            ch.pipeline().addLast(new SimpleChannelInboundHandler<ByteBuf>() {
                                @Override
                                protected void channelRead0(ChannelHandlerContext ctx, ByteBuf b) {
                                    ctx.writeAndFlush(b.retain());
                                }
                            });
                        }
                    }).bind(new DomainSocketAddress(sock.toFile())).sync().channel();
            byte[] want = body(1 << 20);
            CountDownLatch done = new CountDownLatch(1);
            CRC32 got = new CRC32();
            long[] n = {0};
            Channel c = new Bootstrap().group(g).channel(EpollDomainSocketChannel.class)
                    .handler(new SimpleChannelInboundHandler<ByteBuf>() {
                        @Override
                        protected void channelRead0(ChannelHandlerContext ctx, ByteBuf b) {
                            got.update(b.nioBuffer());
                            n[0] += b.readableBytes();
                            if (n[0] >= want.length) {
                                done.countDown();
                            }
                        }
                    }).connect(new DomainSocketAddress(sock.toFile())).sync().channel();
            c.writeAndFlush(Unpooled.wrappedBuffer(want)).sync();
            if (!done.await(60, TimeUnit.SECONDS)) {
                throw new IllegalStateException("unix echo: " + n[0] + " bytes back within 60 s");
            }
            System.out.println("epoll unix: " + n[0] + " bytes echoed, crc " + Long.toHexString(got.getValue())
                    + (got.getValue() == crc(want) ? " (equal)" : " (DIFFERENT)"));
            c.close().sync();
            server.close().sync();
        } finally {
            g.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
        }
    }

    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args.length > 0 ? args[0] : ".");
        System.out.println("epoll available: " + Epoll.isAvailable());
        if (!Epoll.isAvailable()) {
            Epoll.unavailabilityCause().printStackTrace();
            System.exit(1);
        }
        http(new Transport("epoll", EpollIoHandler.newFactory(), EpollServerSocketChannel.class, EpollSocketChannel.class));
        http(new Transport("nio", NioIoHandler.newFactory(), NioServerSocketChannel.class, NioSocketChannel.class));
        udp();
        unix(dir);
    }
}

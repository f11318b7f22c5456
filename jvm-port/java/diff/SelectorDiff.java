import java.nio.ByteBuffer;
import java.nio.channels.Pipe;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * java.nio.channels.Selector over Pipe channels (epoll underneath on
 * Linux): readiness, timed and untimed selects, wakeup, interest changes,
 * cancelled keys, end of stream. Prints only what Linux determines (counts,
 * sorted attachments, data), never times: a timed select prints whether
 * it waited at least part of its time limit.
 */
public class SelectorDiff {
    static Selector sel;

    static String ready() {
        List<String> l = new ArrayList<>();
        for (SelectionKey k : sel.selectedKeys()) {
            StringBuilder b = new StringBuilder((String) k.attachment());
            if (k.isReadable()) b.append(":r");
            if (k.isWritable()) b.append(":w");
            l.add(b.toString());
        }
        sel.selectedKeys().clear();
        Collections.sort(l);
        return l.toString();
    }

    static void line(String what, int n) {
        System.out.println(what + " = " + n + " " + ready());
    }

    static String read(Pipe.SourceChannel c) throws Exception {
        ByteBuffer b = ByteBuffer.allocate(64);
        int n = c.read(b);
        return n < 0 ? "EOF" : new String(b.array(), 0, n, StandardCharsets.US_ASCII);
    }

    static void write(Pipe.SinkChannel c, String s) throws Exception {
        c.write(ByteBuffer.wrap(s.getBytes(StandardCharsets.US_ASCII)));
    }

    public static void main(String[] args) throws Exception {
        sel = Selector.open();
        Pipe p1 = Pipe.open(), p2 = Pipe.open();
        p1.source().configureBlocking(false);
        p1.sink().configureBlocking(false);
        p2.source().configureBlocking(false);
        SelectionKey k1 = p1.source().register(sel, SelectionKey.OP_READ, "p1");
        p2.source().register(sel, SelectionKey.OP_READ, "p2");
        SelectionKey kw = p1.sink().register(sel, SelectionKey.OP_WRITE, "w1");

        line("selectNow, sink writable", sel.selectNow());
        line("selectNow again (level-triggered)", sel.selectNow());
        kw.interestOps(0);
        line("selectNow, no interest", sel.selectNow());

        long t0 = System.nanoTime();
        int n = sel.select(200);
        long ms = (System.nanoTime() - t0) / 1_000_000;
        line("select(200) with nothing ready, waited >= 100 ms: " + (ms >= 100), n);

        write(p1.sink(), "abc");
        line("after a write to p1", sel.select(5000));
        System.out.println("read p1: " + read(p1.source()));
        line("p1 drained, selectNow", sel.selectNow());

        Thread writer = new Thread(() -> {
            try {
                Thread.sleep(100);
                write(p2.sink(), "late");
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        });
        writer.start();
        line("select() until another thread writes p2", sel.select());
        writer.join();
        System.out.println("read p2: " + read(p2.source()));

        Thread waker = new Thread(() -> {
            try {
                Thread.sleep(100);
            } catch (InterruptedException e) {
                throw new RuntimeException(e);
            }
            sel.wakeup();
        });
        waker.start();
        line("select() until wakeup()", sel.select());
        waker.join();
        sel.wakeup();
        line("select(1000) after an earlier wakeup()", sel.select(1000));

        kw.interestOps(SelectionKey.OP_WRITE);
        write(p1.sink(), "x");
        write(p2.sink(), "y");
        line("three ready", sel.select(1000));
        System.out.println("read p1: " + read(p1.source()) + ", p2: " + read(p2.source()));

        k1.cancel();
        write(p1.sink(), "z");
        line("p1 cancelled, sink writable", sel.selectNow());
        kw.cancel();
        line("all but p2 cancelled", sel.selectNow());

        p2.sink().close();
        line("p2 writer closed", sel.select(1000));
        System.out.println("read p2: " + read(p2.source()));

        List<String> seen = new ArrayList<>();
        Pipe p3 = Pipe.open();
        p3.source().configureBlocking(false);
        p3.source().register(sel, SelectionKey.OP_READ, "p3");
        write(p3.sink(), "q");
        int m = sel.select(k -> seen.add((String) k.attachment()), 1000);
        Collections.sort(seen);
        System.out.println("select(Consumer, 1000) = " + m + " " + seen);

        System.out.println("keys " + sel.keys().size());
        sel.close();
        System.out.println("closed " + !sel.isOpen());
        System.out.println("done");
    }
}

package jgf;

import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.*;

/**
 * JGF section 1 {@code JGFSyncBench}: every JMH thread calls a synchronized
 * method of one shared object ({@code method}) or enters a synchronized block
 * on one shared object ({@code object}). Run it with {@code -t N}; the score
 * is the sum over the threads.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class SyncBench {
    @State(Scope.Benchmark)
    public static class Shared {
        private int count;
        final Object lock = new Object();
        int blockCount;

        public synchronized int work() {
            return ++count;
        }
    }

    @Benchmark
    public int method(Shared s) {
        return s.work();
    }

    @Benchmark
    public int object(Shared s) {
        synchronized (s.lock) {
            return ++s.blockCount;
        }
    }
}

package jgf;

import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.*;
import org.openjdk.jmh.infra.Blackhole;

/**
 * JGF section 1 {@code JGFForkJoinBench}: the JMH thread starts
 * {@code threads} threads, each doing a trivial amount of work, and joins
 * them; one fork-join per invocation. Run it with one JMH thread.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class ForkJoinBench {
    @Param({"2"})
    public int threads;

    private final int[] sink = new int[64];

    @Benchmark
    public void forkJoin(Blackhole bh) throws InterruptedException {
        Thread[] ts = new Thread[threads];
        for (int i = 0; i < threads; i++) {
            final int id = i;
            ts[i] = new Thread(() -> sink[id * 8 % sink.length] += id);
            ts[i].start();
        }
        for (Thread t : ts) {
            t.join();
        }
        bh.consume(sink);
    }
}

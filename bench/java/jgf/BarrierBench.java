package jgf;

import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.*;

/**
 * JGF section 1 {@code JGFBarrierBench}: barrier episodes per second among
 * {@code threads} participants. The JMH thread is participant 0 and crosses
 * one barrier per invocation; participants 1.. are worker threads started for
 * the trial that cross barriers until the round the JMH thread marks as the
 * last. Run it with one JMH thread ({@code -t 1}).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class BarrierBench {
    @Param({"2"})
    public int threads;

    @Param({"simple"})
    public String kind;

    private Barrier barrier;
    private Thread[] workers;
    private long round;
    private volatile long lastRound = Long.MAX_VALUE;

    @Setup(Level.Trial)
    public void start() {
        barrier = kind.equals("tournament") ? new Barrier.Tournament(threads) : new Barrier.Simple(threads);
        round = 0;
        lastRound = Long.MAX_VALUE;
        workers = new Thread[threads - 1];
        for (int i = 1; i < threads; i++) {
            final int id = i;
            Thread t = new Thread(() -> {
                for (long r = 1; ; r++) {
                    barrier.await(id);
                    if (lastRound == r) {
                        return;
                    }
                }
            }, "jgf-barrier-" + id);
            t.setDaemon(true);
            workers[i - 1] = t;
            t.start();
        }
    }

    @Benchmark
    public void barrier() {
        round++;
        barrier.await(0);
    }

    @TearDown(Level.Trial)
    public void stop() throws InterruptedException {
        lastRound = round + 1;
        barrier();
        for (Thread t : workers) {
            t.join();
        }
    }
}

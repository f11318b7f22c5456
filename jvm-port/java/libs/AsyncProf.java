import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

import one.profiler.AsyncProfiler;

/**
 * async-profiler 3.0 (its native library, unchanged, from the Maven Central
 * jar) profiles this JVM's own busy loop with each of its CPU events:
 * `itimer` (setitimer's ITIMER_PROF), `ctimer` (a POSIX timer on each
 * thread's CPU-time clock, SIGEV_THREAD_ID) and `wall` (tgkill to every
 * thread in turn). It finds its libraries through /proc/self/maps and
 * patches their imports, takes signals on CPU time and walks the stacks.
 * Prints, per event, whether it took enough samples and whether they are
 * in this program's code. (`cpu` is left out: perf_events on the host, a
 * wall-clock sampler of the threads /proc/self/task says run where
 * perf_event_open fails, as in a partition: not the same engine.)
 */
public class AsyncProf {
    static volatile long sink;

    static long spin(long n) {
        long x = 0;
        for (long i = 0; i < n; i++) {
            x += i * i ^ (x >>> 3);
        }
        return x;
    }

    public static void main(String[] args) throws Exception {
        AsyncProfiler p = AsyncProfiler.getInstance();
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        for (String event : new String[] {"itimer", "ctimer", "wall"}) {
            String started = p.execute("start,event=" + event + ",interval=1ms").trim();
            // A second of this thread's CPU time, however long that
            // takes on a loaded machine. Linux looks at CPU-time timers at
            // its tick (250 Hz here), and only at ticks that land on this
            // process: at most 250 samples, fewer under load.
            long end = mx.getCurrentThreadCpuTime() + 1_000_000_000L;
            while (mx.getCurrentThreadCpuTime() < end) {
                sink += spin(200_000);
            }
            p.execute("stop");
            long samples = 0;
            long ours = 0;
            for (String line : p.execute("collapsed").split("\n")) {
                int sp = line.lastIndexOf(' ');
                if (sp < 0) {
                    continue;
                }
                long n = Long.parseLong(line.substring(sp + 1));
                samples += n;
                if (line.contains("AsyncProf.")) {
                    ours += n;
                }
            }
            // Wall-clock samples are of every thread, the JVM's idle ones
            // too; CPU samples of the threads that run: this one, mostly.
            boolean inProgram = event.equals("wall") ? ours > 0 : ours * 2 > samples;
            System.out.println(event + ": " + started + ", at least 20 samples " + (samples >= 20)
                    + ", in this program " + inProgram);
        }
    }
}

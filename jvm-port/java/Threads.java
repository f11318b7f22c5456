import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Threads under contention: an ExecutorService with 8 workers, synchronized
 * counters, a wait/notify bounded buffer, CountDownLatch and ConcurrentHashMap.
 * Every stdout line is deterministic; Thread.sleep(50) accuracy goes to stderr.
 *
 * Usage: java Threads
 */
public class Threads {
    static final int WORKERS = 8;

    static long counter;

    static synchronized void increment() {
        counter++;
    }

    /** A bounded buffer built on synchronized, wait and notifyAll. */
    static final class Buffer {
        private final ArrayDeque<Long> items = new ArrayDeque<>();
        private final int capacity;

        Buffer(int capacity) {
            this.capacity = capacity;
        }

        synchronized void put(long v) throws InterruptedException {
            while (items.size() == capacity) {
                wait();
            }
            items.add(v);
            notifyAll();
        }

        synchronized long take() throws InterruptedException {
            while (items.isEmpty()) {
                wait();
            }
            long v = items.poll();
            notifyAll();
            return v;
        }
    }

    public static void main(String[] args) throws Exception {
        // 1. ExecutorService: 1000 tasks over 8 workers.
        ExecutorService pool = Executors.newFixedThreadPool(WORKERS);
        List<Future<Long>> futures = new ArrayList<>();
        for (int t = 0; t < 1000; t++) {
            final long base = t;
            futures.add(pool.submit(() -> {
                long s = 0;
                for (long i = 0; i < 1000; i++) {
                    s += (base * 1000 + i) % 7919;
                }
                return s;
            }));
        }
        long executorSum = 0;
        for (Future<Long> f : futures) {
            executorSum += f.get();
        }
        System.out.println("executor tasks=1000 sum=" + executorSum);

        // 2. synchronized: 8 threads x 100000 increments.
        List<Future<?>> done = new ArrayList<>();
        for (int w = 0; w < WORKERS; w++) {
            done.add(pool.submit(() -> {
                for (int i = 0; i < 100_000; i++) {
                    increment();
                }
            }));
        }
        for (Future<?> f : done) {
            f.get();
        }
        System.out.println("synchronized counter=" + counter);

        // 3. wait/notify: 4 producers, 4 consumers, a buffer of 16.
        Buffer buffer = new Buffer(16);
        int perProducer = 25_000;
        AtomicLong consumed = new AtomicLong();
        AtomicLong consumedCount = new AtomicLong();
        List<Thread> threads = new ArrayList<>();
        for (int p = 0; p < 4; p++) {
            final int id = p;
            threads.add(new Thread(() -> {
                try {
                    for (int i = 1; i <= perProducer; i++) {
                        buffer.put((long) id * perProducer + i);
                    }
                } catch (InterruptedException e) {
                    throw new RuntimeException(e);
                }
            }, "producer-" + p));
        }
        for (int c = 0; c < 4; c++) {
            threads.add(new Thread(() -> {
                try {
                    for (int i = 0; i < perProducer; i++) {
                        consumed.addAndGet(buffer.take());
                        consumedCount.incrementAndGet();
                    }
                } catch (InterruptedException e) {
                    throw new RuntimeException(e);
                }
            }, "consumer-" + c));
        }
        threads.forEach(Thread::start);
        for (Thread t : threads) {
            t.join();
        }
        System.out.println("wait/notify items=" + consumedCount.get() + " sum=" + consumed.get());

        // 4. CountDownLatch: all workers start together, main waits for all.
        CountDownLatch start = new CountDownLatch(1);
        CountDownLatch finished = new CountDownLatch(WORKERS);
        AtomicLong latchSum = new AtomicLong();
        for (int w = 0; w < WORKERS; w++) {
            final int id = w;
            pool.execute(() -> {
                try {
                    start.await();
                    latchSum.addAndGet(id + 1);
                } catch (InterruptedException e) {
                    throw new RuntimeException(e);
                } finally {
                    finished.countDown();
                }
            });
        }
        start.countDown();
        boolean allDone = finished.await(60, TimeUnit.SECONDS);
        System.out.println("latch done=" + allDone + " sum=" + latchSum.get());

        // 5. ConcurrentHashMap: 8 workers merge into 100 shared keys.
        ConcurrentHashMap<Integer, Long> map = new ConcurrentHashMap<>();
        done.clear();
        for (int w = 0; w < WORKERS; w++) {
            final int id = w;
            done.add(pool.submit(() -> {
                for (int i = 0; i < 50_000; i++) {
                    map.merge((i + id) % 100, 1L, Long::sum);
                    map.compute(-1 - (i % 10), (k, v) -> v == null ? (long) id : v + id);
                }
            }));
        }
        for (Future<?> f : done) {
            f.get();
        }
        long mapTotal = map.entrySet().stream().filter(e -> e.getKey() >= 0).mapToLong(e -> e.getValue()).sum();
        long negTotal = map.entrySet().stream().filter(e -> e.getKey() < 0).mapToLong(e -> e.getValue()).sum();
        System.out.println("concurrenthashmap keys=" + map.size() + " total=" + mapTotal + " weighted=" + negTotal);

        pool.shutdown();
        System.out.println("pool terminated=" + pool.awaitTermination(60, TimeUnit.SECONDS));

        // 6. Thread.sleep accuracy (stderr: it depends on the machine).
        long worst = 0;
        long total = 0;
        for (int i = 0; i < 5; i++) {
            long t0 = System.nanoTime();
            Thread.sleep(50);
            long ms = (System.nanoTime() - t0) / 1_000_000;
            worst = Math.max(worst, ms);
            total += ms;
            if (ms < 50) {
                System.out.println("sleep too short: " + ms + " ms");
            }
        }
        System.err.println("Threads: sleep(50) took avg=" + total / 5 + " ms worst=" + worst + " ms");

        // 7. Thread churn: short threads started and joined 4 at a time.
        // A joined thread still has its exit to finish (it takes locks
        // the starting threads take too); the threads the OS sees must not
        // pile up (a scheduler that starved the exiting ones left
        // thousands behind). /proc/self/status counts them.
        int[] sink = new int[64];
        int maxOs = 0;
        for (int round = 0; round < 500; round++) {
            Thread[] ts = new Thread[4];
            for (int i = 0; i < ts.length; i++) {
                final int id = i;
                ts[i] = new Thread(() -> sink[id * 8] += id);
                ts[i].start();
            }
            for (Thread t : ts) {
                t.join();
            }
            if (round % 25 == 24) {
                maxOs = Math.max(maxOs, osThreads());
            }
        }
        // The peak goes to stderr: on a loaded host the host's own exits
        // lag too (ZGC beside two test runs peaked past 100), so only the
        // partition's is checked (tests/tests/java.rs).
        System.err.println("Threads: churn peaked at " + maxOs + " OS threads");
        System.out.println("churn threads=2000 sum=" + (sink[8] + sink[16] + sink[24]));
    }

    /** The process's threads, from /proc/self/status (0 if unreadable). */
    static int osThreads() throws java.io.IOException {
        for (String l : java.nio.file.Files.readAllLines(java.nio.file.Path.of("/proc/self/status"))) {
            if (l.startsWith("Threads:")) {
                return Integer.parseInt(l.substring(8).trim());
            }
        }
        return 0;
    }
}

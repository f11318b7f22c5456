import java.math.BigInteger;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.RecursiveTask;
import java.util.concurrent.atomic.LongAdder;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import java.util.stream.LongStream;

/**
 * Parallel streams and fork/join with results that do not depend on how the
 * work is split or scheduled: sums, parallel sort, grouping (sorted before
 * printing), a fork/join product tree (BigInteger factorial), a pool of its
 * own and the common pool. The parallelism is not printed.
 *
 * Arguments: [SCALE] (1)
 */
public class ParallelStreams {
    /** n! as a product tree, split by fork/join. */
    static class Product extends RecursiveTask<BigInteger> {
        private static final long serialVersionUID = 1L;
        final int lo, hi;
        Product(int lo, int hi) { this.lo = lo; this.hi = hi; }
        @Override protected BigInteger compute() {
            if (hi - lo < 64) {
                BigInteger r = BigInteger.ONE;
                for (int i = lo; i < hi; i++) r = r.multiply(BigInteger.valueOf(i));
                return r;
            }
            int mid = (lo + hi) >>> 1;
            Product left = new Product(lo, mid);
            left.fork();
            BigInteger right = new Product(mid, hi).compute();
            return right.multiply(left.join());
        }
    }

    /** A hash of a range of a long array, combined order-independently. */
    static class Hash extends RecursiveTask<Long> {
        private static final long serialVersionUID = 1L;
        final long[] a; final int lo, hi;
        Hash(long[] a, int lo, int hi) { this.a = a; this.lo = lo; this.hi = hi; }
        @Override protected Long compute() {
            if (hi - lo <= 10_000) {
                long h = 0;
                for (int i = lo; i < hi; i++) h += Long.rotateLeft(a[i] * 0x9E3779B97F4A7C15L, i & 63);
                return h;
            }
            int mid = (lo + hi) >>> 1;
            Hash l = new Hash(a, lo, mid);
            l.fork();
            return new Hash(a, mid, hi).compute() + l.join();
        }
    }

    public static void main(String[] args) throws Exception {
        int scale = args.length > 0 ? Integer.parseInt(args[0]) : 1;
        int n = 4_000_000 * scale;

        long sum = LongStream.rangeClosed(1, n).parallel().map(x -> x * x % 1_000_003).sum();
        System.out.println("sum of squares mod p=" + sum);

        long primes = IntStream.range(2, 2_000_000).parallel().filter(ParallelStreams::prime).count();
        System.out.println("primes below 2000000=" + primes);

        SplittableRandom r = new SplittableRandom(7);
        long[] a = r.longs(n).toArray();
        long[] b = a.clone();
        Arrays.parallelSort(a);
        Arrays.sort(b);
        System.out.println("parallelSort equals sort=" + Arrays.equals(a, b) + " min=" + a[0]
                + " median=" + a[n / 2] + " max=" + a[n - 1]);

        Map<Integer, Long> groups = IntStream.range(0, n).parallel().boxed()
                .collect(Collectors.groupingByConcurrent(i -> Integer.bitCount(i) % 7, Collectors.counting()));
        System.out.println("groups=" + new TreeMap<>(groups));

        List<String> words = IntStream.range(0, 200_000).parallel()
                .mapToObj(i -> Integer.toString(i * 31, 36))
                .filter(s -> s.indexOf('z') >= 0)
                .sorted()
                .collect(Collectors.toList());
        System.out.println("words=" + words.size() + " first=" + words.get(0) + " last=" + words.get(words.size() - 1));

        String joined = IntStream.range(0, 50).parallel().mapToObj(Integer::toString)
                .collect(Collectors.joining(","));
        System.out.println("ordered join=" + joined.hashCode());

        ForkJoinPool pool = new ForkJoinPool(4);
        BigInteger f = pool.submit(new Product(1, 20_001)).get();
        System.out.println("20000! bits=" + f.bitLength() + " mod 1e9+7=" + f.mod(BigInteger.valueOf(1_000_000_007)));
        long h = pool.invoke(new Hash(b, 0, b.length));
        System.out.println("fork/join hash=" + Long.toHexString(h) + " common pool hash="
                + Long.toHexString(ForkJoinPool.commonPool().invoke(new Hash(b, 0, b.length))));
        pool.shutdown();

        ConcurrentHashMap<Long, LongAdder> hist = new ConcurrentHashMap<>();
        Arrays.stream(b).parallel().forEach(x -> hist.computeIfAbsent(x >>> 60, k -> new LongAdder()).increment());
        System.out.println("histogram=" + new TreeMap<>(hist));

        double dsum = LongStream.range(0, n).parallel().mapToDouble(x -> 1.0 / (x + 1)).sorted().sum();
        System.out.println("harmonic(sorted, rounded)=" + String.format("%.9f", dsum));
    }

    static boolean prime(int x) {
        if (x % 2 == 0) return x == 2;
        for (int d = 3; (long) d * d <= x; d += 2) if (x % d == 0) return false;
        return true;
    }
}

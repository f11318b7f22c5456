/**
 * The signals the JVM relies on: implicit null checks (SIGSEGV) turned into
 * NullPointerException in JIT-compiled code, stack banging turned into a
 * recoverable StackOverflowError, and integer division by zero (SIGFPE)
 * turned into ArithmeticException.
 *
 * Usage: java Signals [NPE_COUNT]   (default 2000000)
 */
public class Signals {
    static int[] nullArray;
    static volatile Object sink;

    static int length(String s) {
        return s.length();
    }

    static int field(int[] a) {
        return a[0] + a.length;
    }

    static int divide(int a, int b) {
        return a / b;
    }

    static long remainderLong(long a, long b) {
        return a % b;
    }

    static int depth;

    static void recurse() {
        depth++;
        recurse();
    }

    static int npeLoop(int n) {
        int caught = 0;
        for (int i = 0; i < n; i++) {
            try {
                sink = length((i & 1) == 0 ? null : null);
            } catch (NullPointerException e) {
                caught++;
            }
        }
        return caught;
    }

    public static void main(String[] args) {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 2_000_000;

        // Warm up so the JIT compiles length() and npeLoop() with their
        // implicit null checks (one non-null call in every few).
        long warm = 0;
        for (int i = 0; i < 200_000; i++) {
            warm += length("x".repeat(i % 4));
            try {
                warm += field(i % 3 == 0 ? nullArray : new int[] {i});
            } catch (NullPointerException e) {
                warm++;
            }
        }
        System.out.println("warmup=" + warm);

        int caught = npeLoop(n);
        System.out.println("npe caught=" + caught + " of " + n);

        // StackOverflowError, twice: the thread recovers and can overflow again.
        for (int round = 1; round <= 2; round++) {
            depth = 0;
            try {
                recurse();
                System.out.println("no stack overflow?");
            } catch (StackOverflowError e) {
                System.out.println("stack overflow " + round + " caught deep=" + (depth > 1000));
            }
        }
        // After recovery, ordinary work still runs, including more NPEs.
        long after = 0;
        for (int i = 0; i < 1000; i++) {
            after += Integer.toString(i).length();
        }
        System.out.println("after overflow work=" + after + " npe=" + npeLoop(1000));

        // SIGFPE: integer and long division by zero, hot enough to be compiled.
        int arith = 0;
        String message = "";
        for (int i = 0; i < 100_000; i++) {
            try {
                sink = divide(i, i % 2 == 0 ? 0 : 1);
            } catch (ArithmeticException e) {
                arith++;
                if (message.isEmpty()) {
                    // The first one, from the interpreter; compiled code may
                    // throw a preallocated exception without a message.
                    message = e.getMessage();
                }
            }
            try {
                sink = remainderLong(i, i % 2 == 0 ? 0L : 3L);
            } catch (ArithmeticException e) {
                arith++;
            }
        }
        System.out.println("arithmetic caught=" + arith + " message=" + message);
        // Integer.MIN_VALUE / -1 must not trap (x86 idiv would): it is MIN_VALUE.
        System.out.println("min/-1=" + divide(Integer.MIN_VALUE, -1) + " " + remainderLong(Long.MIN_VALUE, -1));
        System.out.println("signals ok");
    }
}

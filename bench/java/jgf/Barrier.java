package jgf;

/**
 * A barrier for a fixed number of participants, each with an id in
 * {@code 0..n-1}, as in the Java Grande Forum thread benchmarks (section 1,
 * {@code JGFBarrierBench}).
 */
public interface Barrier {
    void await(int id);

    /**
     * JGF's simple barrier: a shared counter under the object's monitor;
     * the last thread to arrive wakes the others with {@code notifyAll}.
     */
    final class Simple implements Barrier {
        private final int n;
        private int count;
        private long generation;

        public Simple(int n) {
            this.n = n;
        }

        @Override
        public synchronized void await(int id) {
            long gen = generation;
            if (++count == n) {
                count = 0;
                generation++;
                notifyAll();
                return;
            }
            while (gen == generation) {
                try {
                    wait();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
        }
    }

    /**
     * JGF's tournament barrier: a lock-free 4-ary tree of flags whose sense
     * flips every episode. Thread {@code id} waits for its children, then
     * (unless it is the root) raises its own flag and spins, yielding, until
     * the root's flag flips. The flags are volatile here (JGF relied on the
     * 1.x memory model).
     */
    final class Tournament implements Barrier {
        private static final java.lang.invoke.VarHandle FLAGS =
                java.lang.invoke.MethodHandles.arrayElementVarHandle(boolean[].class);
        private final int n;
        private final boolean[] done;
        private final int maxBusyIter;

        public Tournament(int n) {
            this(n, 1);
        }

        public Tournament(int n, int maxBusyIter) {
            this.n = n;
            this.done = new boolean[n];
            this.maxBusyIter = maxBusyIter;
        }

        private boolean get(int i) {
            return (boolean) FLAGS.getVolatile(done, i);
        }

        private void spinUntil(int i, boolean value) {
            int b = maxBusyIter;
            while (get(i) != value) {
                if (--b == 0) {
                    Thread.yield();
                    b = maxBusyIter;
                }
            }
        }

        @Override
        public void await(int id) {
            boolean value = !get(id);
            int roundmask = 3;
            while ((id & roundmask) == 0 && roundmask < (n << 2)) {
                int spacing = (roundmask + 1) >> 2;
                for (int i = 1; i <= 3 && id + i * spacing < n; i++) {
                    spinUntil(id + i * spacing, value);
                }
                roundmask = (roundmask << 2) + 3;
            }
            FLAGS.setVolatile(done, id, value);
            if (id != 0) {
                spinUntil(0, value);
            }
        }
    }
}

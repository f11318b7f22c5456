// The launcher of `astraea run --warm`: it stands between the JVM and the
// application's main class, so that a snapshot of the partition is taken
// after the JVM has started and before the application is loaded. A
// partition restored from that snapshot goes on from here with the
// restoring command's arguments and runs the class they name.
//
//   java [JVM options] -cp CP:LAUNCHER astraea.Warm MainClass [args...]
package astraea;

import java.io.FileInputStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

public final class Warm {
    private Warm() {}

    public static void main(String[] args) throws Throwable {
        String list = System.getProperty("astraea.warm.preload");
        if (list != null) {
            preload(list);
            // The main class of the run snapshotted, linked and its main
            // method looked up (what a restore running it again would do
            // first), without initialising it: no application code runs.
            if (args.length > 0) {
                try {
                    Class.forName(args[0], false, ClassLoader.getSystemClassLoader())
                            .getMethod("main", String[].class);
                } catch (Throwable t) {
                    // Not there, or no main: found out after the restore.
                }
            }
        }
        String[] run = args;
        // The application's main method is called by reflection: on JDK 18
        // and later that spins method-handle classes the first time
        // (≈ 25 ms on JDK 25), which belongs before the snapshot, not after
        // each restore. A call of the same shape here does it.
        Warm.class.getDeclaredMethod("shape", String[].class).invoke(null, (Object) new String[0]);
        // What runs after a restore but not before the snapshot (the read
        // below blocks until it is taken): the arguments' parsing, and the
        // classes the JVM's exit loads and initialises. Each would load,
        // initialise and touch its pages after every restore instead.
        rehearse();
        String said = "";
        // The first run only records the classes the JVM loads; the second
        // asks for the snapshot.
        if (!Boolean.getBoolean("astraea.warm.record")) {
            try (FileInputStream in = new FileInputStream("/dev/astraea-snapshot")) {
                said = new String(in.readAllBytes(), StandardCharsets.UTF_8);
            } catch (java.io.IOException e) {
                // No snapshot this time (the partition could not take one):
                // the application runs all the same.
                System.err.println("astraea: no warm snapshot: " + e.getMessage());
            }
        }
        if (said.startsWith("restored\n")) {
            run = restoredArgs(said);
        }
        if (run.length == 0) {
            System.err.println("usage: astraea.Warm MainClass [args...]");
            System.exit(2);
        }
        Class<?> main = Class.forName(run[0], true, ClassLoader.getSystemClassLoader());
        run(main, run);
    }

    /// Loads, without initialising, the classes named in a class list of
    /// -XX:DumpLoadedClassList (one per line, the name first; lines of
    /// comments and of generated classes are skipped, and so is a class
    /// that cannot be loaded by name).
    private static void preload(String list) {
        ClassLoader app = ClassLoader.getSystemClassLoader();
        java.util.List<String> lines;
        try {
            lines = java.nio.file.Files.readAllLines(java.nio.file.Path.of(list));
        } catch (java.io.IOException e) {
            return;
        }
        for (String line : lines) {
            if (line.isEmpty() || line.startsWith("#") || line.startsWith("@")) {
                continue;
            }
            String name = line.split(" ", 2)[0].replace('/', '.');
            if (name.contains("$$") || name.contains("Species_") || name.startsWith("astraea.")) {
                continue;
            }
            try {
                Class.forName(name, false, app);
            } catch (Throwable t) {
                // Not loadable by name from here: it loads when used.
            }
        }
    }

    /// The restoring command's arguments from what the snapshot device
    /// said (`restored`, a newline, then NUL-separated words): ours are
    /// those after this class's name.
    private static String[] restoredArgs(String said) {
        String[] words = said.substring("restored\n".length()).split("\0");
        int at = Arrays.asList(words).indexOf(Warm.class.getName());
        return Arrays.copyOfRange(words, at + 1, words.length);
    }

    /// Runs, before the snapshot, the code a restored partition runs
    /// first, on values of the same shape, and loads and initialises the
    /// JDK classes the JVM's exit uses (none of them runs application
    /// code; `java.lang.Shutdown` only sets up its hook table).
    private static void rehearse() {
        try {
            byte[] said = ("restored\njava\0-cp\0.\0" + Warm.class.getName() + "\0Main\0a")
                    .getBytes(StandardCharsets.UTF_8);
            restoredArgs(new String(said, StandardCharsets.UTF_8));
            // A thread's exit walks its terminating thread-locals (an
            // identity set).
            java.util.Set<Object> set = java.util.Collections.newSetFromMap(
                    new java.util.IdentityHashMap<Object, Boolean>());
            set.add(Warm.class);
            for (Object o : set) {
                o.hashCode();
            }
            Class.forName("java.lang.Shutdown", true, null);
        } catch (Throwable t) {
            // Only time is lost: what failed here runs after the restore.
        }
    }

    /// Does nothing: what [`main`] calls by reflection ahead of the
    /// application's `main`.
    static void shape(String[] args) {}

    private static void run(Class<?> main, String[] run) throws Throwable {
        Method m = main.getMethod("main", String[].class);
        if (!Modifier.isStatic(m.getModifiers())) {
            System.err.println("Error: main method is not static in class " + run[0]);
            System.exit(1);
        }
        m.setAccessible(true);
        try {
            m.invoke(null, (Object) Arrays.copyOfRange(run, 1, run.length));
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }
}

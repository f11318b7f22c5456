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
        String[] run = args;
        String said;
        try (FileInputStream in = new FileInputStream("/dev/astraea-snapshot")) {
            said = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (java.io.IOException e) {
            // No snapshot this time (the partition could not take one):
            // the application runs all the same.
            System.err.println("astraea: no warm snapshot: " + e.getMessage());
            said = "";
        }
        if (said.startsWith("restored\n")) {
            // The restoring command's arguments, NUL-separated: ours are
            // those after this class's name.
            String[] words = said.substring("restored\n".length()).split("\0");
            int at = Arrays.asList(words).indexOf(Warm.class.getName());
            run = Arrays.copyOfRange(words, at + 1, words.length);
        }
        if (run.length == 0) {
            System.err.println("usage: astraea.Warm MainClass [args...]");
            System.exit(2);
        }
        Class<?> main = Class.forName(run[0], true, ClassLoader.getSystemClassLoader());
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

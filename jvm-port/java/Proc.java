import java.io.IOException;

/**
 * ProcessBuilder: on a host it starts `true` and prints "started"; in a
 * partition (no other processes) start() must throw IOException, printed as
 * "IOException". Either way it exits 0; a hang or a crash is the failure.
 *
 * Usage: java Proc
 */
public class Proc {
    public static void main(String[] args) throws InterruptedException {
        try {
            Process p = new ProcessBuilder("true").start();
            int code = p.waitFor();
            System.out.println("started");
            System.err.println("Proc: true exited " + code);
        } catch (IOException e) {
            System.out.println("IOException");
            System.err.println("Proc: " + e.getMessage());
        }
    }
}

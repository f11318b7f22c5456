/**
 * Exit status: prints a line and calls System.exit(3).
 *
 * Usage: java Exit3
 */
public class Exit3 {
    public static void main(String[] args) {
        System.out.println("exiting with 3");
        System.exit(3);
    }
}

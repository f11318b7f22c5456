// Another main class for the same `astraea run --warm` snapshot as
// WarmGreet (tests/tests/snapshot.rs); it throws when asked to.
public class WarmOther {
    public static void main(String[] args) {
        if (args.length > 0 && args[0].equals("throw")) {
            throw new IllegalStateException("asked to throw");
        }
        System.out.println("other: " + args.length + " arguments");
    }
}

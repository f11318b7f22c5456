// The `java -cp . Hello` of issue 16's goal: a JVM that prints one line.
public class Hello {
    public static void main(String[] args) {
        System.out.println("Hello, world");
    }
}

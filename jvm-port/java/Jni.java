/**
 * Native code: loads libhello.so (jni/hello.c) with System.loadLibrary from
 * -Djava.library.path and calls its add(int, int).
 *
 * Usage: java -Djava.library.path=DIR Jni
 */
public class Jni {
    static native int add(int a, int b);

    public static void main(String[] args) {
        System.loadLibrary("hello");
        System.out.println("add(2,3)=" + add(2, 3));
        long sum = 0;
        for (int i = 0; i < 100_000; i++) {
            sum += add(i, -i / 2);
        }
        System.out.println("calls=100000 sum=" + sum);
        System.out.println("overflow=" + add(Integer.MAX_VALUE, 1));
    }
}

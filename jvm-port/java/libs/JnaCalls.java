import com.sun.jna.Callback;
import com.sun.jna.Library;
import com.sun.jna.Memory;
import com.sun.jna.Native;
import com.sun.jna.Pointer;

/**
 * JNA 5.19 (its native libjnidispatch, unpacked from the jar and loaded)
 * calls the C library: a string argument, errno after a failed call
 * (Native.getLastError), qsort calling back into Java through a closure
 * trampoline JNA writes into executable memory, a struct filled by the
 * callee. (JNA first asks `ldconfig -p` where libc is; a partition cannot
 * start it, and JNA finds the library by its own search, as on a host
 * without ldconfig.)
 */
public class JnaCalls {
    public interface CLib extends Library {
        CLib C = Native.load("c", CLib.class);
        long strlen(String s);
        int getpid();
        int open(String path, int flags);
        int close(int fd);
        interface Cmp extends Callback { int invoke(Pointer a, Pointer b); }
        void qsort(Pointer base, long n, long size, Cmp cmp);
        int gettimeofday(Pointer tv, Pointer tz);
    }
    public static void main(String[] a) {
        System.out.println("strlen " + CLib.C.strlen("hello, partition"));
        System.out.println("pid positive " + (CLib.C.getpid() > 0));
        int fd = CLib.C.open("/definitely/not/here", 0);
        System.out.println("open " + fd + " errno " + Native.getLastError());
        Memory m = new Memory(4L * 8);
        int[] v = {42, 7, 19, 3, 25, 11, 8, 30};
        for (int i = 0; i < 8; i++) m.setInt(4L * i, v[i]);
        int[] calls = {0};
        CLib.C.qsort(m, 8, 4, (p, q) -> { calls[0]++; return Integer.compare(p.getInt(0), q.getInt(0)); });
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < 8; i++) sb.append(m.getInt(4L * i)).append(' ');
        System.out.println("qsort " + sb.toString().trim() + " callbacks>0 " + (calls[0] > 0));
        Memory tv = new Memory(16);
        System.out.println("gettimeofday " + CLib.C.gettimeofday(tv, Pointer.NULL) + " sane " + (tv.getLong(0) > 1_700_000_000L));
        System.out.println("jna " + Native.VERSION);
    }
}

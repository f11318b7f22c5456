import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * Files beyond streams: FileChannel.map READ_ONLY of the file named by its
 * argument, summed byte by byte (unsigned) into a long and cross-checked with
 * FileChannel.read, after load() and isLoaded() (madvise and mincore);
 * RandomAccessFile writes, seeks and reads in ./mapsum.bin;
 * FileChannel.tryLock on it.
 *
 * Usage: java MapSum FILE
 */
public class MapSum {
    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: java MapSum FILE");
            System.exit(2);
        }
        long mapped = 0;
        long size;
        try (FileChannel ch = FileChannel.open(Path.of(args[0]), StandardOpenOption.READ)) {
            size = ch.size();
            MappedByteBuffer map = ch.map(FileChannel.MapMode.READ_ONLY, 0, size);
            map.load();
            // mincore(2) on every JDK: true once load() has touched each page.
            boolean loaded = map.isLoaded();
            for (long i = 0; i < size; i++) {
                mapped += map.get((int) i) & 0xff;
            }
            // The same bytes through read(), in 1 MiB pieces.
            long read = 0;
            ByteBuffer buf = ByteBuffer.allocateDirect(1 << 20);
            ch.position(0);
            while (ch.read(buf) > 0) {
                buf.flip();
                while (buf.hasRemaining()) {
                    read += buf.get() & 0xff;
                }
                buf.clear();
            }
            System.out.println("size=" + size + " sum=" + mapped + " read_matches=" + (read == mapped)
                    + " loaded=" + loaded);
        }

        try (RandomAccessFile raf = new RandomAccessFile("mapsum.bin", "rw")) {
            raf.setLength(0);
            for (int i = 0; i < 1000; i++) {
                raf.writeInt(i * i);
            }
            raf.seek(4 * 500);
            int v500 = raf.readInt();
            raf.seek(4 * 10);
            raf.writeInt(-1);
            raf.seek(0);
            long sum = 0;
            for (int i = 0; i < 1000; i++) {
                sum += raf.readInt();
            }
            raf.seek(8000 + 4096);
            raf.write(7);
            System.out.println("raf length=" + raf.length() + " v500=" + v500 + " sum=" + sum
                    + " hole=" + readAt(raf, 8000 + 100) + " end=" + readAt(raf, 8000 + 4096));

            FileChannel ch = raf.getChannel();
            FileLock lock = ch.tryLock();
            System.out.println("tryLock acquired=" + (lock != null) + " shared=" + (lock != null && lock.isShared()));
            if (lock != null) {
                lock.release();
            }
            FileLock region = ch.tryLock(0, 100, false);
            System.out.println("region lock=" + (region != null && region.isValid()));
            if (region != null) {
                region.release();
            }
        }
    }

    static int readAt(RandomAccessFile raf, long pos) throws Exception {
        raf.seek(pos);
        return raf.read();
    }
}

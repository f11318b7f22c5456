// Writes DIR/fill-java.bin in 48 KiB pieces through a FileOutputStream,
// each followed by getFD().sync(), until an IOException; prints its message
// and how many bytes were written and synced before it. Byte i of the file
// is (i / 4096 * 7 + i) % 251, as in enospc.c.
import java.io.FileOutputStream;
import java.io.IOException;

public class FillDisk {
    public static void main(String[] args) throws Exception {
        final int chunk = 49152;
        long synced = 0;
        byte[] buf = new byte[chunk];
        try (FileOutputStream out = new FileOutputStream(args[0] + "/fill-java.bin")) {
            try {
                for (;;) {
                    for (int i = 0; i < chunk; i++) {
                        long off = synced + i;
                        buf[i] = (byte) ((off / 4096 * 7 + off) % 251);
                    }
                    out.write(buf);
                    out.getFD().sync();
                    synced += chunk;
                }
            } catch (IOException e) {
                System.out.println("synced " + synced + " bytes, then IOException: " + e.getMessage());
            }
        }
        System.out.println("closed");
    }
}

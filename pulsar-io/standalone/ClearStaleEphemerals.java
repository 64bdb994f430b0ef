/*
 * Deletes the ephemeral nodes a killed Pulsar standalone left in its RocksDB metadata
 * store, before the standalone starts again on the same data.
 *
 * Why: the store stamps each ephemeral node with the instance that wrote it and, on a
 * later start, deletes another instance's nodes lazily, when they are first read, with a
 * "Deleted" notification. That notification can reach the restarted bookie's
 * registration lock (/ledgers/available/<bookie>) after the bookie took the lock again.
 * The lock then revalidates; the registration read back does not compare equal to the
 * one it holds (the log says "Successfully re-acquired lock", ResourceLockImpl's branch
 * for another value), so it deletes and re-creates the node, which notifies it again:
 * the registration flaps thousands of times a second for as long as the JVM runs.
 * Ledgers cannot be created meanwhile ("Not enough non-faulty bookies"): the functions
 * worker fails to start and the JVM exits. A clean stop deletes these nodes itself;
 * after SIGKILL nothing does. Every ephemeral node found before a start is stale: the
 * store opens under a new instance id each time.
 *
 * Usage: java -cp <rocksdbjni jar> ClearStaleEphemerals.java <metadata store directory>
 * Prints the paths it deleted.
 */

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.rocksdb.Options;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksIterator;
import org.rocksdb.WriteOptions;

public class ClearStaleEphemerals {
    /** RocksdbMetadataStore's MetaValue header, format 1: sizes, version, owner, times, flag. */
    private static final int HEADER_V1 = 4 + 4 + 8 + 8 + 8 + 8 + 1;
    private static final int EPHEMERAL_FLAG_AT = 4 + 4 + 8 + 8 + 8 + 8;

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: ClearStaleEphemerals <metadata store directory>");
            System.exit(2);
        }
        RocksDB.loadLibrary();
        List<byte[]> stale = new ArrayList<>();
        try (Options options = new Options().setCreateIfMissing(false);
                RocksDB db = RocksDB.open(options, args[0]);
                WriteOptions sync = new WriteOptions().setSync(true)) {
            try (RocksIterator nodes = db.newIterator()) {
                for (nodes.seekToFirst(); nodes.isValid(); nodes.next()) {
                    if (isEphemeral(nodes.key(), nodes.value())) {
                        stale.add(nodes.key());
                    }
                }
            }
            for (byte[] key : stale) {
                db.delete(sync, key);
                System.out.println("deleted stale ephemeral node " + new String(key, StandardCharsets.UTF_8));
            }
        }
    }

    /** Whether `value` is a metadata node (a path key, not the store's own counters) marked ephemeral. */
    private static boolean isEphemeral(byte[] key, byte[] value) {
        if (key.length == 0 || key[0] != '/' || value.length < HEADER_V1) {
            return false;
        }
        ByteBuffer header = ByteBuffer.wrap(value);
        int headerSize = header.getInt();
        int format = header.getInt();
        return format == 1 && headerSize >= HEADER_V1 && value[EPHEMERAL_FLAG_AT] != 0;
    }
}

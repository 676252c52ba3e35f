// SQLite VFS shims of the durable store, registered at run time (no compile flags):
//
// - a checksum shim: every page of a database whose header reserves 8 bytes a page
//   carries a checksum of the rest of the page in them, written on each write and
//   verified on each read (a mismatch reads as SQLITE_IOERR_DATA);
// - a fault-injecting shim for tests: power cuts (what was written to a file since its
//   last xSync is lost, kept or torn, sector by sector, and the process dies), a full
//   disk, I/O errors and slow syncs;
// - a reader of a WAL file that tells what SQLite's recovery keeps of it and whether
//   intact frames follow a damaged one (damage, not an interrupted write).
#ifndef HUB_SQLITE_VFS_H
#define HUB_SQLITE_VFS_H

#include <stdint.h>

/// Registers (once per name) a checksum shim named `name` over the VFS `base`.
/// Returns an SQLite result code.
int hub_checksum_vfs_register(const char *name, const char *base);

/// Registers (once per name) the fault-injecting shim named `name` over the VFS `base`.
int hub_fault_vfs_register(const char *name, const char *base);

/// Arms the fault shim (process-wide): the `cut_after`-th write or sync of a database or
/// WAL file through it (0: never) cuts the power: each 512-byte sector written since its
/// file's last sync is kept or lost (the keep ratio drawn from `seed` at the cut), then
/// the process kills itself with SIGKILL. `control_path` (may be NULL) names a file read
/// again whenever it changes: `full` (writes fail with SQLITE_FULL), `eio` (writes and
/// syncs fail with an I/O error), `eio-read`, `stall-sync=MS`, `stall-write=MS`, one a line.
void hub_fault_configure(int64_t cut_after, uint64_t seed, const char *control_path);

/// How many writes and syncs the fault shim has seen (database and WAL files).
int64_t hub_fault_operations(void);

/// The checksum of a page of `size` bytes (a power of two from 512 to 65536) as stored
/// in its last 8 bytes; 1 when they match, 0 when not.
int hub_page_checksum_valid(const unsigned char *page, int size);

/// Keeps the WAL of connection `db` (an `sqlite3 *`) when it closes, instead of copying
/// it into the database and deleting it: for a look at a damaged database that must leave
/// its files as they are. Returns an SQLite result code.
int hub_sqlite_keep_wal_on_close(void *db);

/// Sets how many bytes at the end of each page connection `db`'s main database keeps for
/// extensions (8: the checksums), for a database not yet written or the next VACUUM.
int hub_sqlite_reserve_bytes(void *db, int bytes);

/// What a WAL file holds, as SQLite's recovery would read it.
typedef struct {
    /// 1 when the file has a valid header.
    int header_valid;
    /// The page size the header gives (0 when unreadable).
    int page_size;
    /// Whole frames in the file.
    int64_t frames;
    /// Frames recovery keeps: those through the last commit before the first frame that
    /// fails its salt or checksum.
    int64_t kept_frames;
    /// The first frame (0-based) recovery stops at, -1 when it reads to the end.
    int64_t first_bad_frame;
    /// 1 when frames of the current WAL follow the bad one intact, with a whole
    /// transaction committed after it: written and synced after the bad frame was, so
    /// the bad frame is damage, not a write that a crash interrupted.
    int damaged;
    /// Frames of the current WAL that recovery drops although they verify against
    /// their predecessor's stored checksum.
    int64_t dropped_intact_frames;
    /// 1 when one of those is a commit frame: a transaction's frames written after the bad
    /// one. A process that dies writes a WAL's frames in order and stops, so without a
    /// power cut (the same boot of the machine) this too is damage.
    int intact_commit_after;
} hub_wal_report;

/// Reads the WAL at `path`. Keys (rowids at or above `min_key`) of table-leaf pages in
/// the frames recovery drops (the bad frame's included) go into `keys` (up to
/// `max_keys`; `*key_count` says how many were found in all). Returns 0, or an errno.
int hub_wal_scan(const char *path, hub_wal_report *report, int64_t min_key,
                 int64_t *keys, int max_keys, int *key_count);

#endif

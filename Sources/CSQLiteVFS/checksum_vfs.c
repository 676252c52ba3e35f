// The checksum shim: see hub_sqlite_vfs.h.
//
// Only main database files are checksummed, and only those whose header reserves 8
// bytes a page (the store sets it before it creates a database, and converts an older
// one with VACUUM). The checksum is written into the page in the caller's buffer before
// the write goes down, so SQLite's page cache holds it too; WAL frames carry the page as
// SQLite has it and are protected by the WAL's own checksums, and a checkpoint that
// copies a frame into the database writes its checksum again.
#include "hub_sqlite_vfs.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

typedef struct ChecksumFile {
    sqlite3_file base;
    const char *name;
    int main_db;
    /// The database reserves 8 bytes a page: compute and verify.
    int active;
} ChecksumFile;

#define SUBFILE(p) ((sqlite3_file *)(((ChecksumFile *)(p)) + 1))
#define SUBVFS(v) ((sqlite3_vfs *)((v)->pAppData))

static void page_sum(const unsigned char *page, int bytes, unsigned char out[8]) {
    uint64_t a = 0x243F6A8885A308D3ULL, b = 0x13198A2E03707344ULL;
    int i = 0;
    for (; i + 16 <= bytes; i += 16) {
        uint64_t x, y;
        memcpy(&x, page + i, 8);
        memcpy(&y, page + i + 8, 8);
        a = (a ^ x) * 0x9E3779B97F4A7C15ULL;
        a ^= a >> 29;
        b = (b ^ y) * 0xC2B2AE3D27D4EB4FULL;
        b ^= b >> 31;
    }
    for (; i + 8 <= bytes; i += 8) {
        uint64_t x;
        memcpy(&x, page + i, 8);
        a = (a ^ x) * 0x9E3779B97F4A7C15ULL;
        a ^= a >> 29;
    }
    uint64_t h = a ^ (b * 0x165667B19E3779F9ULL) ^ (uint64_t)bytes;
    h ^= h >> 33;
    for (int k = 0; k < 8; k++) out[k] = (unsigned char)(h >> (8 * k));
}

static int is_page_size(int n) { return n >= 512 && n <= 65536 && (n & (n - 1)) == 0; }

int hub_page_checksum_valid(const unsigned char *page, int size) {
    if (!is_page_size(size)) return 0;
    unsigned char sum[8];
    page_sum(page, size - 8, sum);
    return memcmp(page + size - 8, sum, 8) == 0;
}

/// Page 1 says whether the database reserves the 8 bytes.
static void note_header(ChecksumFile *file, const void *buffer, int amount, sqlite3_int64 offset) {
    if (offset == 0 && amount >= 100 && memcmp(buffer, "SQLite format 3", 16) == 0) {
        file->active = ((const unsigned char *)buffer)[20] == 8;
    }
}

static int c_close(sqlite3_file *f) { return SUBFILE(f)->pMethods->xClose(SUBFILE(f)); }

static int c_read(sqlite3_file *f, void *buffer, int amount, sqlite3_int64 offset) {
    ChecksumFile *file = (ChecksumFile *)f;
    int rc = SUBFILE(f)->pMethods->xRead(SUBFILE(f), buffer, amount, offset);
    if (rc != SQLITE_OK) return rc;
    note_header(file, buffer, amount, offset);
    if (file->active && is_page_size(amount) && !hub_page_checksum_valid(buffer, amount)) {
        sqlite3_log(SQLITE_IOERR_DATA, "page checksum mismatch at offset %lld of \"%s\"", offset, file->name);
        return SQLITE_IOERR_DATA;
    }
    return rc;
}

static int c_write(sqlite3_file *f, const void *buffer, int amount, sqlite3_int64 offset) {
    ChecksumFile *file = (ChecksumFile *)f;
    note_header(file, buffer, amount, offset);
    if (file->active && is_page_size(amount)) {
        unsigned char *page = (unsigned char *)buffer;
        page_sum(page, amount - 8, page + amount - 8);
    }
    return SUBFILE(f)->pMethods->xWrite(SUBFILE(f), buffer, amount, offset);
}

static int c_truncate(sqlite3_file *f, sqlite3_int64 size) { return SUBFILE(f)->pMethods->xTruncate(SUBFILE(f), size); }
static int c_sync(sqlite3_file *f, int flags) { return SUBFILE(f)->pMethods->xSync(SUBFILE(f), flags); }
static int c_file_size(sqlite3_file *f, sqlite3_int64 *size) { return SUBFILE(f)->pMethods->xFileSize(SUBFILE(f), size); }
static int c_lock(sqlite3_file *f, int lock) { return SUBFILE(f)->pMethods->xLock(SUBFILE(f), lock); }
static int c_unlock(sqlite3_file *f, int lock) { return SUBFILE(f)->pMethods->xUnlock(SUBFILE(f), lock); }
static int c_check_reserved(sqlite3_file *f, int *out) { return SUBFILE(f)->pMethods->xCheckReservedLock(SUBFILE(f), out); }

static int c_file_control(sqlite3_file *f, int op, void *arg) {
    int rc = SUBFILE(f)->pMethods->xFileControl(SUBFILE(f), op, arg);
    if (rc == SQLITE_OK && op == SQLITE_FCNTL_VFSNAME) {
        *(char **)arg = sqlite3_mprintf("hub-checksum/%z", *(char **)arg);
    }
    return rc;
}

static int c_sector_size(sqlite3_file *f) { return SUBFILE(f)->pMethods->xSectorSize(SUBFILE(f)); }
static int c_device(sqlite3_file *f) { return SUBFILE(f)->pMethods->xDeviceCharacteristics(SUBFILE(f)); }
static int c_shm_map(sqlite3_file *f, int page, int size, int extend, void volatile **out) {
    return SUBFILE(f)->pMethods->xShmMap(SUBFILE(f), page, size, extend, out);
}
static int c_shm_lock(sqlite3_file *f, int offset, int n, int flags) {
    return SUBFILE(f)->pMethods->xShmLock(SUBFILE(f), offset, n, flags);
}
static void c_shm_barrier(sqlite3_file *f) { SUBFILE(f)->pMethods->xShmBarrier(SUBFILE(f)); }
static int c_shm_unmap(sqlite3_file *f, int delete_flag) { return SUBFILE(f)->pMethods->xShmUnmap(SUBFILE(f), delete_flag); }

/// No memory-mapped pages: a mapped page would reach SQLite unverified.
static int c_fetch(sqlite3_file *f, sqlite3_int64 offset, int amount, void **out) {
    (void)f; (void)offset; (void)amount;
    *out = 0;
    return SQLITE_OK;
}
static int c_unfetch(sqlite3_file *f, sqlite3_int64 offset, void *page) {
    sqlite3_file *sub = SUBFILE(f);
    if (sub->pMethods->iVersion > 2 && sub->pMethods->xUnfetch) return sub->pMethods->xUnfetch(sub, offset, page);
    return SQLITE_OK;
}

static const sqlite3_io_methods checksum_methods = {
    3, c_close, c_read, c_write, c_truncate, c_sync, c_file_size, c_lock, c_unlock, c_check_reserved,
    c_file_control, c_sector_size, c_device, c_shm_map, c_shm_lock, c_shm_barrier, c_shm_unmap, c_fetch, c_unfetch,
};

static int v_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags, int *out_flags) {
    sqlite3_vfs *sub = SUBVFS(vfs);
    if ((flags & SQLITE_OPEN_MAIN_DB) == 0) return sub->xOpen(sub, name, f, flags, out_flags);
    ChecksumFile *file = (ChecksumFile *)f;
    memset(file, 0, sizeof(*file));
    file->name = name;
    file->main_db = 1;
    int rc = sub->xOpen(sub, name, SUBFILE(f), flags, out_flags);
    f->pMethods = rc == SQLITE_OK ? &checksum_methods : 0;
    return rc;
}

static int v_delete(sqlite3_vfs *v, const char *name, int sync_dir) { return SUBVFS(v)->xDelete(SUBVFS(v), name, sync_dir); }
static int v_access(sqlite3_vfs *v, const char *name, int flags, int *out) { return SUBVFS(v)->xAccess(SUBVFS(v), name, flags, out); }
static int v_full_pathname(sqlite3_vfs *v, const char *name, int n, char *out) {
    return SUBVFS(v)->xFullPathname(SUBVFS(v), name, n, out);
}
static void *v_dl_open(sqlite3_vfs *v, const char *path) { return SUBVFS(v)->xDlOpen(SUBVFS(v), path); }
static void v_dl_error(sqlite3_vfs *v, int n, char *out) { SUBVFS(v)->xDlError(SUBVFS(v), n, out); }
static void (*v_dl_sym(sqlite3_vfs *v, void *handle, const char *symbol))(void) {
    return SUBVFS(v)->xDlSym(SUBVFS(v), handle, symbol);
}
static void v_dl_close(sqlite3_vfs *v, void *handle) { SUBVFS(v)->xDlClose(SUBVFS(v), handle); }
static int v_randomness(sqlite3_vfs *v, int n, char *out) { return SUBVFS(v)->xRandomness(SUBVFS(v), n, out); }
static int v_sleep(sqlite3_vfs *v, int micros) { return SUBVFS(v)->xSleep(SUBVFS(v), micros); }
static int v_current_time(sqlite3_vfs *v, double *out) { return SUBVFS(v)->xCurrentTime(SUBVFS(v), out); }
static int v_last_error(sqlite3_vfs *v, int n, char *out) { return SUBVFS(v)->xGetLastError(SUBVFS(v), n, out); }
static int v_current_time64(sqlite3_vfs *v, sqlite3_int64 *out) {
    sqlite3_vfs *sub = SUBVFS(v);
    if (sub->iVersion >= 2 && sub->xCurrentTimeInt64) return sub->xCurrentTimeInt64(sub, out);
    double days;
    int rc = sub->xCurrentTime(sub, &days);
    *out = (sqlite3_int64)(days * 86400000.0);
    return rc;
}

int hub_checksum_vfs_register(const char *name, const char *base) {
    if (sqlite3_initialize() != SQLITE_OK) return SQLITE_ERROR;
    sqlite3_mutex *guard = sqlite3_mutex_alloc(SQLITE_MUTEX_STATIC_VFS1);
    sqlite3_mutex_enter(guard);
    int rc = SQLITE_OK;
    if (sqlite3_vfs_find(name) == 0) {
        sqlite3_vfs *sub = sqlite3_vfs_find(base);
        sqlite3_vfs *vfs = sub ? calloc(1, sizeof(sqlite3_vfs)) : 0;
        char *copy = sub ? strdup(name) : 0;
        if (!sub) {
            rc = SQLITE_NOTFOUND;
        } else if (!vfs || !copy) {
            free(vfs);
            free(copy);
            rc = SQLITE_NOMEM;
        } else {
            vfs->iVersion = 2;
            vfs->szOsFile = (int)sizeof(ChecksumFile) + sub->szOsFile;
            vfs->mxPathname = sub->mxPathname;
            vfs->zName = copy;
            vfs->pAppData = sub;
            vfs->xOpen = v_open;
            vfs->xDelete = v_delete;
            vfs->xAccess = v_access;
            vfs->xFullPathname = v_full_pathname;
            vfs->xDlOpen = v_dl_open;
            vfs->xDlError = v_dl_error;
            vfs->xDlSym = v_dl_sym;
            vfs->xDlClose = v_dl_close;
            vfs->xRandomness = v_randomness;
            vfs->xSleep = v_sleep;
            vfs->xCurrentTime = v_current_time;
            vfs->xGetLastError = v_last_error;
            vfs->xCurrentTimeInt64 = v_current_time64;
            rc = sqlite3_vfs_register(vfs, 0);
        }
    }
    sqlite3_mutex_leave(guard);
    return rc;
}

int hub_sqlite_keep_wal_on_close(void *db) {
    return sqlite3_db_config((sqlite3 *)db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int *)0);
}

int hub_sqlite_reserve_bytes(void *db, int bytes) {
    return sqlite3_file_control((sqlite3 *)db, "main", SQLITE_FCNTL_RESERVE_BYTES, &bytes);
}

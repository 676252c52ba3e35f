// The fault-injecting shim for tests: see hub_sqlite_vfs.h.
//
// Writes go through to the file below at once (other connections of the process read
// them, as they would from the operating system's cache), and the bytes they replace
// are kept, per file, until the file's next successful xSync: that is what a power cut
// may take back. At the cut each 512-byte sector written since the last sync is kept or
// given back its synced bytes, so a page can come out torn; a file that grew loses the
// tail no kept sector reaches; then the process kills itself. Syncs hold the shim's lock,
// so a cut never falls between a sync's return and the forgetting of what it made
// durable. Files' names, not handles, carry the state: the store's connections each
// open the database and its WAL.
#define _GNU_SOURCE
#include "hub_sqlite_vfs.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SECTOR 512

typedef struct Undo {
    sqlite3_int64 offset;
    int length;
    unsigned char *original;
    struct Undo *next;
} Undo;

typedef struct Tracked {
    char *path;
    /// The size at the last sync (valid while `head` is not NULL).
    sqlite3_int64 synced_size;
    Undo *head, *tail;
    struct Tracked *next;
} Tracked;

typedef struct FaultFile {
    sqlite3_file base;
    Tracked *tracked;
} FaultFile;

#define SUBFILE(p) ((sqlite3_file *)(((FaultFile *)(p)) + 1))
#define SUBVFS(v) ((sqlite3_vfs *)((v)->pAppData))

static pthread_mutex_t state_lock = PTHREAD_MUTEX_INITIALIZER;
static Tracked *tracked_files;
static int64_t cut_countdown;
static int64_t operations;
static uint64_t rng_state = 0x9E3779B97F4A7C15ULL;
static char *control_file;
static struct timespec control_mtime;
static off_t control_size = -1;
static int fail_full, fail_eio, fail_eio_read, stall_sync_ms, stall_write_ms;

static uint64_t next_random(void) {
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    rng_state = x;
    return x;
}

void hub_fault_configure(int64_t cut_after, uint64_t seed, const char *control_path) {
    pthread_mutex_lock(&state_lock);
    cut_countdown = cut_after;
    rng_state = seed ? seed * 0x9E3779B97F4A7C15ULL + 1 : 0x9E3779B97F4A7C15ULL;
    free(control_file);
    control_file = control_path ? strdup(control_path) : 0;
    control_size = -1;
    fail_full = fail_eio = fail_eio_read = stall_sync_ms = stall_write_ms = 0;
    pthread_mutex_unlock(&state_lock);
}

int64_t hub_fault_operations(void) {
    pthread_mutex_lock(&state_lock);
    int64_t count = operations;
    pthread_mutex_unlock(&state_lock);
    return count;
}

/// Under the lock: reads the control file again when it changed.
static void refresh_control(void) {
    if (!control_file) return;
    struct stat info;
    if (stat(control_file, &info) != 0) {
        if (control_size != -2) fail_full = fail_eio = fail_eio_read = stall_sync_ms = stall_write_ms = 0;
        control_size = -2;
        return;
    }
    if (info.st_size == control_size && info.st_mtim.tv_sec == control_mtime.tv_sec
        && info.st_mtim.tv_nsec == control_mtime.tv_nsec) return;
    control_size = info.st_size;
    control_mtime = info.st_mtim;
    fail_full = fail_eio = fail_eio_read = stall_sync_ms = stall_write_ms = 0;
    FILE *in = fopen(control_file, "r");
    if (!in) return;
    char line[128];
    while (fgets(line, sizeof line, in)) {
        line[strcspn(line, "\r\n")] = 0;
        if (strcmp(line, "full") == 0) fail_full = 1;
        else if (strcmp(line, "eio") == 0) fail_eio = 1;
        else if (strcmp(line, "eio-read") == 0) fail_eio_read = 1;
        else if (strncmp(line, "stall-sync=", 11) == 0) stall_sync_ms = atoi(line + 11);
        else if (strncmp(line, "stall-write=", 12) == 0) stall_write_ms = atoi(line + 12);
    }
    fclose(in);
}

static void sleep_ms(int ms) {
    if (ms <= 0) return;
    struct timespec wait = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&wait, &wait) != 0 && errno == EINTR) {}
}

static Tracked *track(const char *path) {
    for (Tracked *t = tracked_files; t; t = t->next) {
        if (strcmp(t->path, path) == 0) return t;
    }
    Tracked *t = calloc(1, sizeof(Tracked));
    if (!t) return 0;
    t->path = strdup(path);
    if (!t->path) {
        free(t);
        return 0;
    }
    t->next = tracked_files;
    tracked_files = t;
    return t;
}

static void forget(Tracked *t) {
    Undo *u = t->head;
    while (u) {
        Undo *next = u->next;
        free(u->original);
        free(u);
        u = next;
    }
    t->head = t->tail = 0;
}

/// Under the lock: keeps the bytes `length` bytes at `offset` hold now, before a write or
/// a truncation changes them.
static void remember(Tracked *t, sqlite3_file *sub, sqlite3_int64 offset, int length) {
    sqlite3_int64 size = 0;
    if (sub->pMethods->xFileSize(sub, &size) != SQLITE_OK) size = 0;
    if (!t->head) t->synced_size = size;
    Undo *u = calloc(1, sizeof(Undo));
    unsigned char *original = calloc(1, (size_t)length);
    if (!u || !original) {
        free(u);
        free(original);
        return;
    }
    if (offset < size) {
        int readable = (int)((size - offset) < length ? (size - offset) : length);
        // Beyond the end the file holds nothing: zeros stand for it.
        if (sub->pMethods->xRead(sub, original, readable, offset) != SQLITE_OK) memset(original, 0, (size_t)readable);
    }
    u->offset = offset;
    u->length = length;
    u->original = original;
    if (t->tail) t->tail->next = u; else t->head = u;
    t->tail = u;
}

/// Under the lock: the power cut. Never returns.
static void cut_power(void) {
    // How much of what was not synced reaches the disk: nothing, everything, or a share.
    uint64_t pick = next_random() % 4;
    uint64_t keep_per_mille = pick == 0 ? 0 : pick == 1 ? 1000 : next_random() % 1001;
    for (Tracked *t = tracked_files; t; t = t->next) {
        if (!t->head) continue;
        int fd = open(t->path, O_WRONLY | O_CLOEXEC);
        if (fd < 0) continue;
        // Decide each sector once, oldest write first; undo newest first, so that a byte
        // written twice gets back what the sync left in it.
        size_t count = 0;
        for (Undo *u = t->head; u; u = u->next) count++;
        Undo **list = calloc(count ? count : 1, sizeof(Undo *));
        struct stat info;
        sqlite3_int64 end = fstat(fd, &info) == 0 ? info.st_size : t->synced_size;
        sqlite3_int64 kept_end = t->synced_size;
        size_t index = 0;
        for (Undo *u = t->head; u; u = u->next) list[index++] = u;
        // One decision per sector of the file's current extent.
        sqlite3_int64 sectors = (end + SECTOR - 1) / SECTOR;
        unsigned char *lost = calloc((size_t)(sectors ? sectors : 1), 1);
        unsigned char *decided = calloc((size_t)(sectors ? sectors : 1), 1);
        for (size_t i = 0; list && lost && decided && i < count; i++) {
            Undo *u = list[i];
            for (sqlite3_int64 s = u->offset / SECTOR; s * SECTOR < u->offset + u->length && s < sectors; s++) {
                if (decided[s]) continue;
                decided[s] = 1;
                lost[s] = (next_random() % 1000) >= keep_per_mille;
                if (!lost[s] && (s + 1) * SECTOR > kept_end) kept_end = (s + 1) * SECTOR;
            }
        }
        for (size_t i = count; list && lost && i > 0; i--) {
            Undo *u = list[i - 1];
            for (sqlite3_int64 s = u->offset / SECTOR; s * SECTOR < u->offset + u->length && s < sectors; s++) {
                if (!lost[s]) continue;
                sqlite3_int64 from = s * SECTOR > u->offset ? s * SECTOR : u->offset;
                sqlite3_int64 to = (s + 1) * SECTOR < u->offset + u->length ? (s + 1) * SECTOR : u->offset + u->length;
                if (pwrite(fd, u->original + (from - u->offset), (size_t)(to - from), from) < 0) break;
            }
        }
        if (kept_end < end) {
            if (ftruncate(fd, kept_end > t->synced_size ? kept_end : t->synced_size) != 0) { /* best effort */ }
        }
        free(lost);
        free(decided);
        free(list);
        close(fd);
    }
    kill(getpid(), SIGKILL);
    _exit(137);
}

/// Under the lock: counts a write or sync; true when the power goes now.
static int counts_down(void) {
    operations++;
    if (cut_countdown <= 0) return 0;
    return --cut_countdown == 0;
}

static int f_close(sqlite3_file *f) { return SUBFILE(f)->pMethods->xClose(SUBFILE(f)); }

static int f_read(sqlite3_file *f, void *buffer, int amount, sqlite3_int64 offset) {
    FaultFile *file = (FaultFile *)f;
    if (file->tracked && control_file) {
        pthread_mutex_lock(&state_lock);
        refresh_control();
        int failing = fail_eio_read;
        pthread_mutex_unlock(&state_lock);
        if (failing) return SQLITE_IOERR_READ;
    }
    return SUBFILE(f)->pMethods->xRead(SUBFILE(f), buffer, amount, offset);
}

static int f_write(sqlite3_file *f, const void *buffer, int amount, sqlite3_int64 offset) {
    FaultFile *file = (FaultFile *)f;
    if (!file->tracked) return SUBFILE(f)->pMethods->xWrite(SUBFILE(f), buffer, amount, offset);
    pthread_mutex_lock(&state_lock);
    refresh_control();
    int stall = stall_write_ms;
    if (fail_full || fail_eio) {
        int rc = fail_full ? SQLITE_FULL : SQLITE_IOERR_WRITE;
        pthread_mutex_unlock(&state_lock);
        return rc;
    }
    pthread_mutex_unlock(&state_lock);
    sleep_ms(stall);
    pthread_mutex_lock(&state_lock);
    remember(file->tracked, SUBFILE(f), offset, amount);
    int rc = SUBFILE(f)->pMethods->xWrite(SUBFILE(f), buffer, amount, offset);
    if (counts_down()) cut_power();
    pthread_mutex_unlock(&state_lock);
    return rc;
}

static int f_truncate(sqlite3_file *f, sqlite3_int64 size) {
    FaultFile *file = (FaultFile *)f;
    if (!file->tracked) return SUBFILE(f)->pMethods->xTruncate(SUBFILE(f), size);
    pthread_mutex_lock(&state_lock);
    sqlite3_int64 current = 0;
    if (SUBFILE(f)->pMethods->xFileSize(SUBFILE(f), &current) == SQLITE_OK && current > size && current - size < (1 << 30)) {
        remember(file->tracked, SUBFILE(f), size, (int)(current - size));
    }
    int rc = SUBFILE(f)->pMethods->xTruncate(SUBFILE(f), size);
    pthread_mutex_unlock(&state_lock);
    return rc;
}

static int f_sync(sqlite3_file *f, int flags) {
    FaultFile *file = (FaultFile *)f;
    if (!file->tracked) return SUBFILE(f)->pMethods->xSync(SUBFILE(f), flags);
    pthread_mutex_lock(&state_lock);
    refresh_control();
    int stall = stall_sync_ms;
    pthread_mutex_unlock(&state_lock);
    sleep_ms(stall);
    pthread_mutex_lock(&state_lock);
    if (fail_eio) {
        pthread_mutex_unlock(&state_lock);
        return SQLITE_IOERR_FSYNC;
    }
    if (counts_down()) cut_power();
    int rc = SUBFILE(f)->pMethods->xSync(SUBFILE(f), flags);
    if (rc == SQLITE_OK) forget(file->tracked);
    pthread_mutex_unlock(&state_lock);
    return rc;
}

static int f_file_size(sqlite3_file *f, sqlite3_int64 *size) { return SUBFILE(f)->pMethods->xFileSize(SUBFILE(f), size); }
static int f_lock(sqlite3_file *f, int lock) { return SUBFILE(f)->pMethods->xLock(SUBFILE(f), lock); }
static int f_unlock(sqlite3_file *f, int lock) { return SUBFILE(f)->pMethods->xUnlock(SUBFILE(f), lock); }
static int f_check_reserved(sqlite3_file *f, int *out) { return SUBFILE(f)->pMethods->xCheckReservedLock(SUBFILE(f), out); }
static int f_file_control(sqlite3_file *f, int op, void *arg) {
    int rc = SUBFILE(f)->pMethods->xFileControl(SUBFILE(f), op, arg);
    if (rc == SQLITE_OK && op == SQLITE_FCNTL_VFSNAME) *(char **)arg = sqlite3_mprintf("hub-faults/%z", *(char **)arg);
    return rc;
}
static int f_sector_size(sqlite3_file *f) { return SUBFILE(f)->pMethods->xSectorSize(SUBFILE(f)); }
/// The disk below's promises: a cut keeps or loses whole sectors, which is what
/// SQLITE_IOCAP_POWERSAFE_OVERWRITE assumes.
static int f_device(sqlite3_file *f) { return SUBFILE(f)->pMethods->xDeviceCharacteristics(SUBFILE(f)); }
static int f_shm_map(sqlite3_file *f, int page, int size, int extend, void volatile **out) {
    return SUBFILE(f)->pMethods->xShmMap(SUBFILE(f), page, size, extend, out);
}
static int f_shm_lock(sqlite3_file *f, int offset, int n, int flags) {
    return SUBFILE(f)->pMethods->xShmLock(SUBFILE(f), offset, n, flags);
}
static void f_shm_barrier(sqlite3_file *f) { SUBFILE(f)->pMethods->xShmBarrier(SUBFILE(f)); }
static int f_shm_unmap(sqlite3_file *f, int delete_flag) { return SUBFILE(f)->pMethods->xShmUnmap(SUBFILE(f), delete_flag); }
static int f_fetch(sqlite3_file *f, sqlite3_int64 offset, int amount, void **out) {
    (void)f; (void)offset; (void)amount;
    *out = 0;
    return SQLITE_OK;
}
static int f_unfetch(sqlite3_file *f, sqlite3_int64 offset, void *page) {
    (void)f; (void)offset; (void)page;
    return SQLITE_OK;
}

static const sqlite3_io_methods fault_methods = {
    3, f_close, f_read, f_write, f_truncate, f_sync, f_file_size, f_lock, f_unlock, f_check_reserved,
    f_file_control, f_sector_size, f_device, f_shm_map, f_shm_lock, f_shm_barrier, f_shm_unmap, f_fetch, f_unfetch,
};

static int v_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags, int *out_flags) {
    sqlite3_vfs *sub = SUBVFS(vfs);
    FaultFile *file = (FaultFile *)f;
    memset(file, 0, sizeof(*file));
    int rc = sub->xOpen(sub, name, SUBFILE(f), flags, out_flags);
    if (rc != SQLITE_OK) {
        f->pMethods = 0;
        return rc;
    }
    if (name && (flags & (SQLITE_OPEN_MAIN_DB | SQLITE_OPEN_WAL))) {
        pthread_mutex_lock(&state_lock);
        file->tracked = track(name);
        pthread_mutex_unlock(&state_lock);
    }
    f->pMethods = &fault_methods;
    return rc;
}

static int v_delete(sqlite3_vfs *v, const char *name, int sync_dir) {
    pthread_mutex_lock(&state_lock);
    for (Tracked *t = tracked_files; t; t = t->next) {
        if (strcmp(t->path, name) == 0) forget(t);
    }
    pthread_mutex_unlock(&state_lock);
    return SUBVFS(v)->xDelete(SUBVFS(v), name, sync_dir);
}
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

int hub_fault_vfs_register(const char *name, const char *base) {
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
            vfs->szOsFile = (int)sizeof(FaultFile) + sub->szOsFile;
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

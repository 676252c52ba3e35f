/*
 * SQLite alone, with the hub's durable store settings: what committing values costs
 * before any network, JSON or broker work. scripts/bench-durable-vs-jetstream
 * --sqlite-floor builds and runs it beside the brokers.
 *
 *   sqlite-floor DATABASE SIZE GROUP COUNT
 *
 * Appends COUNT values of SIZE bytes, GROUP per transaction, as the hub's writer does
 * (schema version 4: a group's values in one row, a JSON array, up to 256 values or
 * 64 KiB; a group of one is the value alone): 4 KiB pages, WAL, synchronous=NORMAL,
 * the unix-excl VFS (the database locked once, for the process),
 * 16 MB of page cache, a rowid table keyed subject << 44 | offset. Checkpoints run in
 * the same thread every 1,000 pages (SQLite's default), where the hub runs them on a
 * thread of their own every 4 MiB: the same work, counted here. Prints the CPU time
 * (user + system) and wall time per value.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double wall_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static double cpu_seconds(void) {
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    return r.ru_utime.tv_sec + r.ru_utime.tv_usec / 1e6 + r.ru_stime.tv_sec + r.ru_stime.tv_usec / 1e6;
}

static void check(int rc, sqlite3 *db, const char *what) {
    if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW) {
        fprintf(stderr, "sqlite-floor: %s: %s\n", what, sqlite3_errmsg(db));
        exit(1);
    }
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: sqlite-floor DATABASE SIZE GROUP COUNT\n");
        return 2;
    }
    const char *path = argv[1];
    long size = atol(argv[2]), group = atol(argv[3]), count = atol(argv[4]);
    if (size < 2 || group < 1 || count < 1) {
        fprintf(stderr, "sqlite-floor: SIZE must be at least 2, GROUP and COUNT at least 1\n");
        return 2;
    }
    sqlite3 *db;
    check(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, "unix-excl"), db, "open");
    check(sqlite3_exec(db,
        "PRAGMA page_size = 4096; PRAGMA journal_mode = WAL; PRAGMA cache_size = -16384;"
        "PRAGMA synchronous = NORMAL;"
        "CREATE TABLE IF NOT EXISTS entries(key INTEGER PRIMARY KEY, time INTEGER NOT NULL,"
        " value BLOB NOT NULL, count INTEGER NOT NULL DEFAULT 1);", 0, 0, 0), db, "schema");
    sqlite3_stmt *begin, *commit, *insert;
    check(sqlite3_prepare_v2(db, "BEGIN IMMEDIATE", -1, &begin, 0), db, "prepare");
    check(sqlite3_prepare_v2(db, "COMMIT", -1, &commit, 0), db, "prepare");
    check(sqlite3_prepare_v2(db, "INSERT INTO entries(key, time, value, count) VALUES ((1 << 44) | ?1, ?2, ?3, ?4)",
        -1, &insert, 0), db, "prepare");

    /* One value: a JSON string of `size` bytes, as the benchmark publishes. */
    char *value = malloc(size);
    memset(value, 'x', size);
    value[0] = value[size - 1] = '"';
    long row_capacity = 256 * (size + 1) + 2;
    char *row = malloc(row_capacity);

    long offset = 0;
    double wall = wall_seconds(), cpu = cpu_seconds();
    for (long done = 0; done < count;) {
        long in_group = group < count - done ? group : count - done;
        check(sqlite3_step(begin), db, "begin");
        sqlite3_reset(begin);
        while (in_group > 0) {
            /* A row: up to 256 values or 64 KiB of JSON, as the hub's writer makes them. */
            long in_row = 0, length = 1;
            row[0] = '[';
            while (in_group > 0 && in_row < 256 && length < (64 << 10)) {
                if (in_row > 0) row[length++] = ',';
                memcpy(row + length, value, size);
                length += size;
                in_row++;
                in_group--;
            }
            row[length++] = ']';
            offset += in_row;
            sqlite3_bind_int64(insert, 1, offset);
            sqlite3_bind_int64(insert, 2, 1700000000000000000LL);
            if (in_row == 1)
                sqlite3_bind_blob(insert, 3, row + 1, (int)size, SQLITE_TRANSIENT);
            else
                sqlite3_bind_blob(insert, 3, row, (int)length, SQLITE_TRANSIENT);
            sqlite3_bind_int64(insert, 4, in_row);
            check(sqlite3_step(insert), db, "insert");
            sqlite3_reset(insert);
            done += in_row;
        }
        check(sqlite3_step(commit), db, "commit");
        sqlite3_reset(commit);
    }
    wall = wall_seconds() - wall;
    cpu = cpu_seconds() - cpu;
    printf("%ld %ld %.2f %.2f %.0f\n", size, group, cpu / count * 1e6, wall / count * 1e6, count / wall);
    sqlite3_finalize(begin);
    sqlite3_finalize(commit);
    sqlite3_finalize(insert);
    sqlite3_close(db);
    free(value);
    free(row);
    return 0;
}

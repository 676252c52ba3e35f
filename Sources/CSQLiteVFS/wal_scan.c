// A reader of WAL files after SQLite's documented file format (a 32-byte header, then
// frames of a 24-byte header and a page, each checksummed together with all before it):
// see hub_sqlite_vfs.h.
#include "hub_sqlite_vfs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static uint32_t be32(const unsigned char *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

static uint32_t word(int big_endian, const unsigned char *p) {
    if (big_endian) return be32(p);
    return ((uint32_t)p[3] << 24) | ((uint32_t)p[2] << 16) | ((uint32_t)p[1] << 8) | p[0];
}

static void wal_sum(int big_endian, const unsigned char *p, size_t n, uint32_t *s0, uint32_t *s1) {
    for (size_t i = 0; i + 8 <= n; i += 8) {
        *s0 += word(big_endian, p + i) + *s1;
        *s1 += word(big_endian, p + i + 4) + *s0;
    }
}

/// Whether the frame at `frame` (header and page) carries `salt` and the checksum that
/// follows from the running sums `s0`, `s1`.
static int frame_verifies(int big_endian, const unsigned char *frame, int page_size, const unsigned char *salt,
                          uint32_t s0, uint32_t s1) {
    if (memcmp(frame + 8, salt, 8) != 0 || be32(frame) == 0) return 0;
    wal_sum(big_endian, frame, 8, &s0, &s1);
    wal_sum(big_endian, frame + 24, (size_t)page_size, &s0, &s1);
    return s0 == be32(frame + 16) && s1 == be32(frame + 20);
}

static int varint(const unsigned char *p, const unsigned char *end, uint64_t *out) {
    uint64_t value = 0;
    for (int i = 0; i < 9; i++) {
        if (p + i >= end) return 0;
        if (i == 8) {
            *out = (value << 8) | p[i];
            return 9;
        }
        value = (value << 7) | (p[i] & 0x7F);
        if ((p[i] & 0x80) == 0) {
            *out = value;
            return i + 1;
        }
    }
    return 0;
}

/// The rowids at or above `min_key` of a table-leaf page.
static void collect_keys(const unsigned char *page, int page_size, uint32_t page_number, int64_t min_key,
                         int64_t *keys, int max_keys, int *count) {
    int header = page_number == 1 ? 100 : 0;
    if (header + 8 > page_size || page[header] != 0x0D) return;
    int cells = (page[header + 3] << 8) | page[header + 4];
    const unsigned char *end = page + page_size;
    for (int i = 0; i < cells; i++) {
        int at = header + 8 + 2 * i;
        if (at + 2 > page_size) return;
        int cell = (page[at] << 8) | page[at + 1];
        if (cell <= 0 || cell >= page_size) continue;
        uint64_t payload, rowid;
        int used = varint(page + cell, end, &payload);
        if (!used) continue;
        if (!varint(page + cell + used, end, &rowid)) continue;
        if ((int64_t)rowid < min_key) continue;
        if (*count < max_keys) keys[*count] = (int64_t)rowid;
        (*count)++;
    }
}

int hub_wal_scan(const char *path, hub_wal_report *report, int64_t min_key, int64_t *keys, int max_keys,
                 int *key_count) {
    memset(report, 0, sizeof(*report));
    report->first_bad_frame = -1;
    *key_count = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return errno;
    struct stat info;
    if (fstat(fd, &info) != 0) {
        int error = errno;
        close(fd);
        return error;
    }
    size_t size = (size_t)info.st_size;
    unsigned char *data = malloc(size ? size : 1);
    if (!data) {
        close(fd);
        return ENOMEM;
    }
    size_t got = 0;
    while (got < size) {
        ssize_t n = pread(fd, data + got, size - got, (off_t)got);
        if (n <= 0) break;
        got += (size_t)n;
    }
    close(fd);
    size = got;
    if (size < 32) {
        free(data);
        return 0;
    }
    uint32_t magic = be32(data);
    int big_endian = magic & 1;
    uint32_t page_size = be32(data + 8);
    if (page_size == 1) page_size = 65536;
    int sane = (magic == 0x377f0682 || magic == 0x377f0683) && page_size >= 512 && page_size <= 65536
        && (page_size & (page_size - 1)) == 0;
    if (!sane) {
        free(data);
        return 0;
    }
    report->page_size = (int)page_size;
    size_t frame_size = 24 + (size_t)page_size;
    report->frames = (int64_t)((size - 32) / frame_size);
    const unsigned char *salt = data + 16;
    uint32_t s0 = 0, s1 = 0;
    wal_sum(big_endian, data, 24, &s0, &s1);
    report->header_valid = s0 == be32(data + 24) && s1 == be32(data + 28) && be32(data + 4) == 3007000;

    // What recovery keeps: frames while each verifies, through the last commit among them.
    int64_t bad = -1;
    if (report->header_valid) {
        for (int64_t i = 0; i < report->frames; i++) {
            const unsigned char *frame = data + 32 + (size_t)i * frame_size;
            if (!frame_verifies(big_endian, frame, (int)page_size, salt, s0, s1)) {
                bad = i;
                break;
            }
            s0 = be32(frame + 16);
            s1 = be32(frame + 20);
            if (be32(frame + 4) != 0) report->kept_frames = i + 1;
        }
    } else if (report->frames > 0) {
        bad = 0;
    }
    report->first_bad_frame = bad;

    // After the bad frame (or a bad header): intact frames of this WAL, each checked
    // against the checksum stored in the one before it.
    if (bad >= 0) {
        int commits_after = 0;
        for (int64_t j = bad + (report->header_valid ? 1 : 0); j < report->frames; j++) {
            const unsigned char *frame = data + 32 + (size_t)j * frame_size;
            const unsigned char *before = j == 0 ? data + 24 - 16 : frame - frame_size;
            if (!frame_verifies(big_endian, frame, (int)page_size, salt, be32(before + 16), be32(before + 20))) continue;
            report->dropped_intact_frames++;
            if (commits_after > 0) report->damaged = 1;
            if (be32(frame + 4) != 0) {
                commits_after++;
                report->intact_commit_after = 1;
            }
        }
    }

    // The keys in the frames recovery drops, for the caller to find which are gone.
    for (int64_t i = report->kept_frames; i < report->frames; i++) {
        const unsigned char *frame = data + 32 + (size_t)i * frame_size;
        if (memcmp(frame + 8, salt, 8) != 0) continue;
        collect_keys(frame + 24, (int)page_size, be32(frame), min_key, keys, max_keys, key_count);
    }
    free(data);
    return 0;
}

/*
 * storm-bench: a WebSocket connection storm load generator for scripts/bench-storm.
 *
 * Keeps CONCURRENCY connections in flight until TOTAL have been served: each one
 * connects to 127.0.0.1:PORT, sends an upgrade request, checks the 101 answer, reads
 * the server's first message (the hub's welcome, nats-server's INFO), sends a masked
 * close frame (1000) and waits for the server to close. One thread, epoll, no
 * libraries, so that the client costs little beside the server measured.
 *
 *   cc -O2 -o storm-bench scripts/storm-bench.c
 *   storm-bench PORT CONCURRENCY TOTAL [SUBPROTOCOL]
 *
 * Prints one line: `handshakes N seconds S rate R failed F first_message_p50_us P p99_us Q`
 * (the time from connect to the server's first message).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum phase { CONNECTING, READING_HEAD, READING_FIRST, READING_CLOSE };

struct conn {
    int fd;
    enum phase phase;
    char buf[8192];
    size_t len;
    double started;
};

static int port, concurrency, total;
static const char *subprotocol;
static int epfd, started_count, done_count, failed_count, in_flight;
static double *latencies;
static int latency_count;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void finish(struct conn *c, int ok) {
    epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    free(c);
    in_flight--;
    if (ok) done_count++; else failed_count++;
}

static void start_one(void) {
    struct conn *c = calloc(1, sizeof *c);
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0) { perror("socket"); exit(2); }
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    c->started = now();
    started_count++;
    in_flight++;
    int r = connect(c->fd, (struct sockaddr *)&a, sizeof a);
    if (r < 0 && errno != EINPROGRESS) { finish(c, 0); return; }
    c->phase = CONNECTING;
    struct epoll_event ev = { .events = EPOLLOUT | EPOLLIN, .data.ptr = c };
    epoll_ctl(epfd, EPOLL_CTL_ADD, c->fd, &ev);
}

static int send_all(int fd, const void *p, size_t n) {
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w <= 0) return -1;
        p = (const char *)p + w;
        n -= (size_t)w;
    }
    return 0;
}

/* Length of the first complete frame in buf, or 0 when incomplete; its opcode in *op. */
static size_t frame_length(const unsigned char *b, size_t n, int *op) {
    if (n < 2) return 0;
    *op = b[0] & 0x0f;
    size_t len = b[1] & 0x7f, head = 2;
    if (len == 126) { if (n < 4) return 0; len = (size_t)b[2] << 8 | b[3]; head = 4; }
    else if (len == 127) {
        if (n < 10) return 0;
        len = 0;
        for (int i = 2; i < 10; i++) len = len << 8 | b[i];
        head = 10;
    }
    if (b[1] & 0x80) head += 4;
    return n >= head + len ? head + len : 0;
}

static void on_event(struct conn *c, uint32_t events) {
    if (c->phase == CONNECTING) {
        int err = 0;
        socklen_t l = sizeof err;
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &l);
        if (err) { finish(c, 0); return; }
        char req[512];
        int n = snprintf(req, sizeof req,
            "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n%s%s%s\r\n",
            subprotocol ? "Sec-WebSocket-Protocol: " : "", subprotocol ? subprotocol : "", subprotocol ? "\r\n" : "");
        if (send_all(c->fd, req, (size_t)n)) { finish(c, 0); return; }
        c->phase = READING_HEAD;
        struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };
        epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev);
        return;
    }
    (void)events;
    for (;;) {
        ssize_t r = recv(c->fd, c->buf + c->len, sizeof c->buf - c->len, 0);
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
        if (r <= 0) {
            /* The end: expected once our close was answered. */
            finish(c, c->phase == READING_CLOSE);
            return;
        }
        c->len += (size_t)r;
        for (;;) {
            if (c->phase == READING_HEAD) {
                char *end = memmem(c->buf, c->len, "\r\n\r\n", 4);
                if (!end) { if (c->len == sizeof c->buf) { finish(c, 0); return; } break; }
                if (c->len < 12 || memcmp(c->buf, "HTTP/1.1 101", 12) != 0) { finish(c, 0); return; }
                size_t used = (size_t)(end + 4 - c->buf);
                memmove(c->buf, c->buf + used, c->len - used);
                c->len -= used;
                c->phase = READING_FIRST;
            } else if (c->phase == READING_FIRST) {
                int op;
                size_t fl = frame_length((unsigned char *)c->buf, c->len, &op);
                if (!fl) { if (c->len == sizeof c->buf) { finish(c, 0); return; } break; }
                if (latency_count < total) latencies[latency_count++] = now() - c->started;
                memmove(c->buf, c->buf + fl, c->len - fl);
                c->len -= fl;
                /* A masked close frame, 1000, key 0x01020304. */
                unsigned char close_frame[] = { 0x88, 0x82, 1, 2, 3, 4, 0x03 ^ 1, 0xe8 ^ 2 };
                if (send_all(c->fd, close_frame, sizeof close_frame)) { finish(c, 0); return; }
                c->phase = READING_CLOSE;
            } else {
                int op;
                size_t fl = frame_length((unsigned char *)c->buf, c->len, &op);
                if (!fl) { if (c->len == sizeof c->buf) c->len = 0; break; }
                memmove(c->buf, c->buf + fl, c->len - fl);
                c->len -= fl;
                /* Frames before the close (a message the server sent on) are skipped. */
            }
        }
    }
}

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: storm-bench PORT CONCURRENCY TOTAL [SUBPROTOCOL]\n");
        return 2;
    }
    port = atoi(argv[1]);
    concurrency = atoi(argv[2]);
    total = atoi(argv[3]);
    subprotocol = argc > 4 && argv[4][0] ? argv[4] : NULL;
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    latencies = calloc((size_t)total, sizeof *latencies);
    epfd = epoll_create1(EPOLL_CLOEXEC);
    double t0 = now();
    struct epoll_event events[256];
    while (done_count + failed_count < total) {
        while (in_flight < concurrency && started_count < total) start_one();
        int n = epoll_wait(epfd, events, 256, 10000);
        if (n == 0) { fprintf(stderr, "storm-bench: nothing happened for 10 s (%d in flight)\n", in_flight); return 1; }
        for (int i = 0; i < n; i++) on_event(events[i].data.ptr, events[i].events);
    }
    double seconds = now() - t0;
    qsort(latencies, (size_t)latency_count, sizeof *latencies, compare);
    double p50 = latency_count ? latencies[latency_count / 2] : 0;
    double p99 = latency_count ? latencies[(size_t)(latency_count * 0.99)] : 0;
    printf("handshakes %d seconds %.3f rate %.0f failed %d first_message_p50_us %.0f p99_us %.0f\n",
           done_count, seconds, done_count / seconds, failed_count, p50 * 1e6, p99 * 1e6);
    return failed_count ? 1 : 0;
}

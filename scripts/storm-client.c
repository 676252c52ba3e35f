/*
 * storm-client: WebSocket connection storms for scripts/storm-check and scripts/bench-storm.
 * One thread, epoll, OpenSSL for wss://, so that the client costs little beside the
 * broker measured.
 *
 *   cc -O2 -o storm-client scripts/storm-client.c -lssl -lcrypto
 *   storm-client [--tls CAFILE] [--subprotocol NAME] PORT MODE ARGS...
 *
 * Modes (every connection: connect, upgrade, read the server's first message):
 *   storm ROUNDS PARALLEL       rounds of PARALLEL connections at once, each closed with
 *                               1000 right after its first message; a round ends when all
 *                               of its connections have seen the server's close.
 *   idle COUNT BATCH SECONDS    COUNT connections opened BATCH at a time, held open
 *                               together for SECONDS (anything the server sends but a ping
 *                               or a close it did not start is counted), then closed.
 *   bench CONCURRENCY TOTAL     CONCURRENCY connections in flight until TOTAL have each
 *                               been served and closed (handshakes per second).
 *
 * Prints `key value` pairs on one line: served, failed (and failures by kind:
 * `failed.KIND N`), seconds, rate, first_message_p50_us, first_message_p99_us.
 * Exits 1 when anything failed.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum phase { CONNECTING, TLS_HANDSHAKE, READING_HEAD, READING_FIRST, HOLDING, READING_CLOSE };

enum failure {
    F_CONNECT, F_TLS, F_HEAD, F_NOT_101, F_CLOSED_EARLY, F_CLOSED_WHILE_IDLE, F_MESSAGE_WHILE_IDLE, F_TIMEOUT,
    F_COUNT
};
static const char *failure_names[F_COUNT] = {
    "connect", "tls_handshake", "upgrade_answer", "not_101", "closed_before_first_message",
    "closed_by_server_while_idle", "message_while_idle", "timeout",
};

struct conn {
    int fd;
    SSL *ssl;
    enum phase phase;
    unsigned char in[4096];
    size_t in_len;
    unsigned char out[1024];
    size_t out_len, out_sent;
    double started;
    int closing;      /* we sent our close frame */
    int done;
    int is_held;      /* in `held`: freed at the end, not when done */
};

static int port;
static const char *subprotocol;
static SSL_CTX *tls;
static int epfd;
static long served, failed, failures[F_COUNT];
static long in_flight;
static double *latencies;
static long latency_count, latency_capacity;
static struct conn **held;
static long held_count;
/* Connections finished during an event batch, freed after it (a handler may still look
   at one it finished). */
static struct conn **graveyard;
static long graveyard_count, graveyard_capacity;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void watch(struct conn *c, uint32_t events) {
    struct epoll_event ev = { .events = events, .data.ptr = c };
    epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev);
}

static void finish(struct conn *c, int failure) {
    if (c->done) return;
    c->done = 1;
    epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, NULL);
    if (c->ssl) SSL_free(c->ssl);
    close(c->fd);
    in_flight--;
    if (failure < 0) served++;
    else { failed++; failures[failure]++; }
    if (!c->is_held) {
        if (graveyard_count == graveyard_capacity) {
            graveyard_capacity = graveyard_capacity ? graveyard_capacity * 2 : 1024;
            graveyard = realloc(graveyard, (size_t)graveyard_capacity * sizeof *graveyard);
        }
        graveyard[graveyard_count++] = c;
    }
}

static void bury(void) {
    for (long i = 0; i < graveyard_count; i++) free(graveyard[i]);
    graveyard_count = 0;
}

/* >0 bytes, 0 end of stream, -1 would block, -2 error. */
static ssize_t io_read(struct conn *c, void *buf, size_t n) {
    if (!c->ssl) {
        ssize_t r = recv(c->fd, buf, n, 0);
        if (r < 0) return (errno == EAGAIN || errno == EWOULDBLOCK) ? -1 : -2;
        return r;
    }
    int r = SSL_read(c->ssl, buf, (int)n);
    if (r > 0) return r;
    int e = SSL_get_error(c->ssl, r);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return -1;
    if (e == SSL_ERROR_ZERO_RETURN) return 0;
    ERR_clear_error();
    return e == SSL_ERROR_SYSCALL && errno == 0 ? 0 : -2;
}

/* Queues `n` bytes and writes what the socket takes; 0 ok, -1 error. */
static int io_write(struct conn *c, const void *buf, size_t n) {
    if (c->out_len - c->out_sent + n > sizeof c->out) return -1;
    memmove(c->out, c->out + c->out_sent, c->out_len - c->out_sent);
    c->out_len -= c->out_sent;
    c->out_sent = 0;
    memcpy(c->out + c->out_len, buf, n);
    c->out_len += n;
    while (c->out_sent < c->out_len) {
        size_t left = c->out_len - c->out_sent;
        if (!c->ssl) {
            ssize_t w = send(c->fd, c->out + c->out_sent, left, MSG_NOSIGNAL);
            if (w < 0) return (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -1;
            c->out_sent += (size_t)w;
        } else {
            int w = SSL_write(c->ssl, c->out + c->out_sent, (int)left);
            if (w <= 0) {
                int e = SSL_get_error(c->ssl, w);
                if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return 0;
                ERR_clear_error();
                return -1;
            }
            c->out_sent += (size_t)w;
        }
    }
    return 0;
}

static void send_request(struct conn *c) {
    char req[512];
    int n = snprintf(req, sizeof req,
        "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n%s%s%s\r\n",
        subprotocol ? "Sec-WebSocket-Protocol: " : "", subprotocol ? subprotocol : "", subprotocol ? "\r\n" : "");
    if (io_write(c, req, (size_t)n) < 0) { finish(c, F_HEAD); return; }
    c->phase = READING_HEAD;
}

static void send_close(struct conn *c) {
    /* A masked close frame, 1000, key 0x01020304. */
    static const unsigned char frame[] = { 0x88, 0x82, 1, 2, 3, 4, 0x03 ^ 1, 0xe8 ^ 2 };
    c->closing = 1;
    c->phase = READING_CLOSE;
    if (io_write(c, frame, sizeof frame) < 0) finish(c, -1); /* the server went first */
}

static void open_one(void) {
    struct conn *c = calloc(1, sizeof *c);
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0) { perror("storm-client: socket"); exit(2); }
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    c->started = now();
    in_flight++;
    struct epoll_event ev = { .events = EPOLLOUT | EPOLLIN, .data.ptr = c };
    epoll_ctl(epfd, EPOLL_CTL_ADD, c->fd, &ev);
    if (connect(c->fd, (struct sockaddr *)&a, sizeof a) < 0 && errno != EINPROGRESS) { finish(c, F_CONNECT); return; }
    c->phase = CONNECTING;
}

/* Length of the first complete frame in `b`, 0 when incomplete; its opcode in *op. */
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

static void consume(struct conn *c, size_t n) {
    memmove(c->in, c->in + n, c->in_len - n);
    c->in_len -= n;
}

static void on_event(struct conn *c, uint32_t events, int holding_mode) {
    if (c->phase == CONNECTING) {
        int err = 0;
        socklen_t l = sizeof err;
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &l);
        if (err) { finish(c, F_CONNECT); return; }
        if (!(events & EPOLLOUT)) return;
        watch(c, EPOLLIN | EPOLLOUT);
        if (tls) {
            c->ssl = SSL_new(tls);
            SSL_set_fd(c->ssl, c->fd);
            SSL_set_tlsext_host_name(c->ssl, "127.0.0.1");
            c->phase = TLS_HANDSHAKE;
        } else {
            send_request(c);
            if (c->done) return;
        }
    }
    if (c->phase == TLS_HANDSHAKE) {
        int r = SSL_connect(c->ssl);
        if (r != 1) {
            int e = SSL_get_error(c->ssl, r);
            if (e == SSL_ERROR_WANT_READ) { watch(c, EPOLLIN); return; }
            if (e == SSL_ERROR_WANT_WRITE) { watch(c, EPOLLIN | EPOLLOUT); return; }
            ERR_clear_error();
            finish(c, F_TLS);
            return;
        }
        watch(c, EPOLLIN);
        send_request(c);
        if (c->done) return;
    }
    if ((events & EPOLLOUT) && c->out_sent < c->out_len) {
        if (io_write(c, "", 0) < 0) { finish(c, c->closing ? -1 : F_HEAD); return; }
    }
    watch(c, c->out_sent < c->out_len ? EPOLLIN | EPOLLOUT : EPOLLIN);
    for (;;) {
        ssize_t r = io_read(c, c->in + c->in_len, sizeof c->in - c->in_len);
        if (r == -1) return;
        if (r <= 0) {
            /* The end of the stream. */
            if (c->phase == READING_CLOSE) finish(c, -1);
            else if (c->phase == HOLDING) finish(c, F_CLOSED_WHILE_IDLE);
            else if (c->phase == READING_FIRST) finish(c, F_CLOSED_EARLY);
            else finish(c, F_HEAD);
            return;
        }
        c->in_len += (size_t)r;
        for (;;) {
            if (c->phase == READING_HEAD) {
                unsigned char *end = memmem(c->in, c->in_len, "\r\n\r\n", 4);
                if (!end) { if (c->in_len == sizeof c->in) { finish(c, F_HEAD); return; } break; }
                if (c->in_len < 12 || memcmp(c->in, "HTTP/1.1 101", 12) != 0) { finish(c, F_NOT_101); return; }
                consume(c, (size_t)(end + 4 - c->in));
                c->phase = READING_FIRST;
                continue;
            }
            int op;
            size_t fl = frame_length(c->in, c->in_len, &op);
            if (!fl) { if (c->in_len == sizeof c->in) consume(c, c->in_len); break; }
            consume(c, fl);
            if (c->phase == READING_FIRST) {
                if (op == 0x8) { finish(c, F_CLOSED_EARLY); return; }
                if (latency_count < latency_capacity) latencies[latency_count++] = now() - c->started;
                if (holding_mode) {
                    c->phase = HOLDING;
                    c->is_held = 1;
                    held[held_count++] = c;
                } else {
                    send_close(c);
                    if (c->done) return;
                }
            } else if (c->phase == HOLDING) {
                if (op == 0x9) {
                    /* A ping: answer it (masked pong, empty). */
                    static const unsigned char pong[] = { 0x8a, 0x80, 0, 0, 0, 0 };
                    if (io_write(c, pong, sizeof pong) < 0) { finish(c, F_CLOSED_WHILE_IDLE); return; }
                } else if (op == 0x8) {
                    finish(c, F_CLOSED_WHILE_IDLE);
                    return;
                } else {
                    finish(c, F_MESSAGE_WHILE_IDLE);
                    return;
                }
            } else if (c->phase == READING_CLOSE) {
                if (op == 0x8) { /* the server's close: it closes the TCP connection next */ }
            }
        }
    }
}

/* Runs the loop until nothing is in flight (or only held connections are), or `deadline`. */
static int run_until_settled(double deadline, int holding_mode) {
    struct epoll_event events[256];
    while (in_flight > held_count) {
        double left = deadline - now();
        if (left <= 0) return -1;
        int n = epoll_wait(epfd, events, 256, (int)(left * 1000) + 1);
        for (int i = 0; i < n; i++) on_event(events[i].data.ptr, events[i].events, holding_mode);
        bury();
    }
    return 0;
}

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void report(double seconds) {
    qsort(latencies, (size_t)latency_count, sizeof *latencies, compare);
    double p50 = latency_count ? latencies[latency_count / 2] : 0;
    double p99 = latency_count ? latencies[(long)(latency_count * 0.99)] : 0;
    printf("served %ld failed %ld seconds %.3f rate %.0f first_message_p50_us %.0f first_message_p99_us %.0f",
           served, failed, seconds, served / (seconds > 0 ? seconds : 1), p50 * 1e6, p99 * 1e6);
    for (int f = 0; f < F_COUNT; f++) {
        if (failures[f]) printf(" failed.%s %ld", failure_names[f], failures[f]);
    }
    printf("\n");
}

int main(int argc, char **argv) {
    int i = 1;
    const char *cafile = NULL;
    for (; i < argc && argv[i][0] == '-' && argv[i][1] == '-'; i += 2) {
        if (i + 1 >= argc) break;
        if (!strcmp(argv[i], "--tls")) cafile = argv[i + 1];
        else if (!strcmp(argv[i], "--subprotocol")) subprotocol = argv[i + 1][0] ? argv[i + 1] : NULL;
        else { fprintf(stderr, "storm-client: unknown option %s\n", argv[i]); return 2; }
    }
    if (argc - i < 2) {
        fprintf(stderr, "usage: storm-client [--tls CAFILE] [--subprotocol NAME] PORT storm ROUNDS PARALLEL | "
                        "idle COUNT BATCH SECONDS | bench CONCURRENCY TOTAL\n");
        return 2;
    }
    port = atoi(argv[i]);
    const char *mode = argv[i + 1];
    char **args = argv + i + 2;
    int nargs = argc - i - 2;
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    if (cafile) {
        tls = SSL_CTX_new(TLS_client_method());
        SSL_CTX_set_verify(tls, SSL_VERIFY_PEER, NULL);
        if (SSL_CTX_load_verify_locations(tls, cafile, NULL) != 1) {
            fprintf(stderr, "storm-client: cannot load CA file %s\n", cafile);
            return 2;
        }
    }
    epfd = epoll_create1(EPOLL_CLOEXEC);
    double t0 = now();
    if (!strcmp(mode, "storm") && nargs == 2) {
        long rounds = atol(args[0]), parallel = atol(args[1]);
        latency_capacity = rounds * parallel;
        latencies = calloc((size_t)latency_capacity, sizeof *latencies);
        for (long r = 0; r < rounds; r++) {
            for (long k = 0; k < parallel; k++) open_one();
            if (run_until_settled(now() + 30, 0) < 0) {
                fprintf(stderr, "storm-client: round %ld did not settle in 30 s (%ld in flight)\n", r + 1, in_flight);
                failed += in_flight;
                failures[F_TIMEOUT] += in_flight;
                break;
            }
        }
    } else if (!strcmp(mode, "idle") && nargs == 3) {
        long count = atol(args[0]), batch = atol(args[1]);
        double hold = atof(args[2]);
        latency_capacity = count;
        latencies = calloc((size_t)count, sizeof *latencies);
        held = calloc((size_t)count, sizeof *held);
        for (long k = 0; k < count; k += batch) {
            long n = count - k < batch ? count - k : batch;
            for (long j = 0; j < n; j++) open_one();
            if (run_until_settled(now() + 30, 1) < 0) {
                fprintf(stderr, "storm-client: a batch did not open in 30 s (%ld in flight)\n", in_flight - held_count);
                failed += in_flight - held_count;
                failures[F_TIMEOUT] += in_flight - held_count;
                break;
            }
        }
        /* Hold: the held connections are watched for anything the server sends. */
        double until = now() + hold;
        struct epoll_event events[256];
        while (now() < until) {
            int n = epoll_wait(epfd, events, 256, (int)((until - now()) * 1000) + 1);
            for (int e = 0; e < n; e++) on_event(events[e].data.ptr, events[e].events, 1);
            bury();
        }
        long still = 0;
        for (long k = 0; k < held_count; k++) {
            if (!held[k]->done) { send_close(held[k]); still++; }
        }
        held_count = 0;
        if (run_until_settled(now() + 60, 0) < 0) {
            fprintf(stderr, "storm-client: %ld connections did not close in 60 s\n", in_flight);
        }
        fprintf(stderr, "storm-client: held %ld of %ld open for %.1f s\n", still, count, hold);
    } else if (!strcmp(mode, "bench") && nargs == 2) {
        long concurrency = atol(args[0]), total = atol(args[1]), started = 0;
        latency_capacity = total;
        latencies = calloc((size_t)total, sizeof *latencies);
        struct epoll_event events[256];
        while (served + failed < total) {
            while (in_flight < concurrency && started < total) { open_one(); started++; }
            int n = epoll_wait(epfd, events, 256, 10000);
            if (n == 0) { fprintf(stderr, "storm-client: nothing happened for 10 s (%ld in flight)\n", in_flight); return 1; }
            for (int e = 0; e < n; e++) on_event(events[e].data.ptr, events[e].events, 0);
            bury();
        }
    } else {
        fprintf(stderr, "storm-client: unknown mode or arguments: %s\n", mode);
        return 2;
    }
    report(now() - t0);
    return failed ? 1 : 0;
}

/*
 * CWebsockets: the parts of libwebsockets 4.1 that Swift cannot import directly
 * (function-like macros, composite flags, container_of), exported as `cws_`
 * prefixed static const values and static inline functions.
 */
#ifndef CWEBSOCKETS_SHIM_H
#define CWEBSOCKETS_SHIM_H

#include <libwebsockets.h>
/* libev, the event library the loop runs lws on (epoll on Linux); without its
   libev 3 compatibility names, whose ev_loop function clashes with struct ev_loop. */
#define EV_COMPAT3 0
#include <ev.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

/* Bytes of headroom lws_write needs before the payload pointer (LWS_PRE). */
static const size_t cws_lws_pre = LWS_PRE;

/* Log levels (enum lws_log_levels, exported as plain ints). */
static const int cws_lll_err = LLL_ERR;
static const int cws_lll_warn = LLL_WARN;
static const int cws_lll_notice = LLL_NOTICE;
static const int cws_lll_info = LLL_INFO;
static const int cws_lll_debug = LLL_DEBUG;
static const int cws_lll_user = LLL_USER;

/* Listen-port sentinels. */
static const int cws_context_port_no_listen = CONTEXT_PORT_NO_LISTEN;
static const int cws_context_port_no_listen_server = CONTEXT_PORT_NO_LISTEN_SERVER;

/* Close status codes used by the transport. */
static const int cws_close_status_normal = LWS_CLOSE_STATUS_NORMAL;
static const int cws_close_status_going_away = LWS_CLOSE_STATUS_GOINGAWAY;
static const int cws_close_status_message_too_large = LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE;

/* lws_write protocol flags as ints. */
static const int cws_write_text = LWS_WRITE_TEXT;
static const int cws_write_binary = LWS_WRITE_BINARY;
/* On a ws connection, LWS_WRITE_HTTP writes the bytes as they are (pre-framed data). */
static const int cws_write_http = LWS_WRITE_HTTP;
/* The last piece of a plain HTTP response body. */
static const int cws_write_http_final = LWS_WRITE_HTTP_FINAL;

/* Vhost options (64-bit composite values). */
static const uint64_t cws_option_disable_ipv6 = LWS_SERVER_OPTION_DISABLE_IPV6;
static const uint64_t cws_option_explicit_vhosts = LWS_SERVER_OPTION_EXPLICIT_VHOSTS;
static const uint64_t cws_option_fail_upon_unable_to_bind = LWS_SERVER_OPTION_FAIL_UPON_UNABLE_TO_BIND;
/* TLS: needed on the context (OpenSSL init, SSL_CTX cleanup) and on every vhost using TLS. */
static const uint64_t cws_option_do_ssl_global_init = LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT;

/* Client connection flags (enum lws_client_connect_ssl_connection_flags) as ints. */
static const int cws_lccscf_use_ssl = LCCSCF_USE_SSL;
static const int cws_lccscf_allow_selfsigned = LCCSCF_ALLOW_SELFSIGNED;

/* Kills a connection at the next service opportunity, without a close handshake. */
static inline void cws_kill_async(struct lws *wsi) {
    lws_set_timeout(wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
}

/* Closes a connection now, without a close handshake: only outside lws's callbacks. */
static inline void cws_kill_sync(struct lws *wsi) {
    lws_set_timeout(wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_SYNC);
}

/* Sentinel to cancel a scheduled sul. */
static const lws_usec_t cws_set_timer_usec_cancel = LWS_SET_TIMER_USEC_CANCEL;

/*
 * A sorted-usec-list timer with a user pointer beside it, so that a Swift
 * callback can find its owner from the lws_sorted_usec_list_t it receives.
 */
typedef struct cws_timer {
    lws_sorted_usec_list_t sul;
    void *user;
} cws_timer_t;

/* Zeroes a timer and sets its user pointer. */
static inline void cws_timer_init(cws_timer_t *timer, void *user) {
    memset(timer, 0, sizeof(*timer));
    timer->user = user;
}

/* Arms (or re-arms) `timer` to call `cb` `us` microseconds from now on thread 0. */
static inline void cws_timer_schedule(struct lws_context *context, cws_timer_t *timer,
                                      sul_cb_t cb, lws_usec_t us) {
    lws_sul_schedule(context, 0, &timer->sul, cb, us);
}

/* Disarms `timer`; harmless when it is not armed. */
static inline void cws_timer_cancel(cws_timer_t *timer) {
    lws_sul_cancel(&timer->sul);
}

/* The user pointer of the cws_timer_t that embeds `sul`. */
static inline void *cws_timer_user(lws_sorted_usec_list_t *sul) {
    return lws_container_of(sul, cws_timer_t, sul)->user;
}

/* lws_write with the protocol given as an int (as lws_write_ws_flags returns it). */
static inline int cws_write(struct lws *wsi, unsigned char *buf, size_t len, int protocol) {
    return lws_write(wsi, buf, len, (enum lws_write_protocol)protocol);
}

/* Flags for one fragment of a multi-frame message. */
static inline int cws_write_ws_flags(int initial, int is_start, int is_end) {
    return lws_write_ws_flags(initial, is_start, is_end);
}

/* Sends a close reason (status + optional text) with the close frame that follows. */
static inline void cws_close_reason(struct lws *wsi, int status, const unsigned char *reason, size_t len) {
    lws_close_reason(wsi, (enum lws_close_status)status, (unsigned char *)reason, len);
}

/*
 * In LWS_CALLBACK_CLIENT_APPEND_HANDSHAKE_HEADER, `in` is an `unsigned char **`
 * cursor and `len` the space left: append one header there. Returns nonzero on
 * failure (no space).
 */
static inline int cws_append_handshake_header(struct lws *wsi, enum lws_token_indexes token,
                                              const unsigned char *value, int value_len,
                                              void *in, size_t len) {
    unsigned char **p = (unsigned char **)in;
    unsigned char *end = (*p) + len;
    return lws_add_http_header_by_token(wsi, token, value, value_len, p, end);
}


/*
 * Server sockets in lws's raw-skt role: lws accepts (and does TLS), reads, writes and
 * tells when a socket is writable; the hub parses HTTP/1.1 and WebSocket frames itself.
 */
static const uint64_t cws_option_adopt_apply_listen_accept_config = LWS_SERVER_OPTION_ADOPT_APPLY_LISTEN_ACCEPT_CONFIG;
/* Bytes written as they are (lws_write on a raw socket). */
static const int cws_write_raw = LWS_WRITE_RAW;

/* Adopts an accepted socket into `vh` in the raw-skt role, bound to the protocol named
   `protocol` (TLS first when the vhost has it). On failure lws closes the descriptor. */
static inline struct lws *cws_adopt_raw_socket(struct lws_vhost *vh, int fd, const char *protocol) {
    lws_sock_file_fd_type desc;
    desc.sockfd = fd;
    return lws_adopt_descriptor_vhost(vh, (lws_adoption_type)(LWS_ADOPT_SOCKET | LWS_ADOPT_ALLOW_SSL), desc,
                                      protocol, NULL);
}

/* Cancels the timeout lws set on `wsi` itself (a TLS server socket gets one when its
   TLS handshake completes, which lws's raw role never clears). */
static inline void cws_clear_timeout(struct lws *wsi) {
    lws_set_timeout(wsi, NO_PENDING_TIMEOUT, 0);
}

/* Shuts down the sending side of `wsi`'s socket (a FIN after what was written), so that
   the peer sees the end while what it still sends is read and dropped: a close after
   unread input would reset the connection and could lose the last answer. */
static inline void cws_shutdown_write(struct lws *wsi) {
    int fd = lws_get_socket_fd(wsi);
    if (fd >= 0) shutdown(fd, SHUT_WR);
}

/* Accepts a connection waiting on the listening socket `fd`, non-blocking and
   close-on-exec, with Nagle off as lws sets its own accepted sockets; -1 when none
   waits (or accept fails). */
static inline int cws_accept_nonblocking(int fd) {
    /* accept4 is declared only with _GNU_SOURCE, which a module header cannot set. */
    int accepted = (int)syscall(SYS_accept4, fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (accepted < 0) return -1;
    int one = 1;
    setsockopt(accepted, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return accepted;
}

/* Monotonic clock (CLOCK_MONOTONIC) in nanoseconds. */
static inline int64_t cws_monotonic_nanoseconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + (int64_t)ts.tv_nsec;
}

/* The calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID) in nanoseconds: a system
   call (about 1.5 us on a virtual machine), so only where asked for. */
static inline int64_t cws_thread_cpu_nanoseconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + (int64_t)ts.tv_nsec;
}

/*
 * libev: lws runs on a loop the hub owns (a "foreign" loop), so that each service
 * pass is one ev_run the hub controls (lws 4.1's own run_pt for libev never returns).
 */
static const uint64_t cws_option_libev = LWS_SERVER_OPTION_LIBEV;

/* A new libev loop on the best backend (epoll on Linux), or NULL. */
static inline void *cws_ev_loop_new(void) {
    return ev_loop_new(EVFLAG_AUTO | EVFLAG_NOENV | EVFLAG_NOSIGMASK);
}

/* One pass of `loop`: waits for an event unless `nowait`, then handles every ready one.
   Returns nonzero while the loop has active watchers. */
static inline int cws_ev_run(void *loop, int nowait) {
    return ev_run((struct ev_loop *)loop, nowait ? EVRUN_NOWAIT : EVRUN_ONCE);
}

/* Whether `loop` waits with epoll. */
static inline int cws_ev_backend_is_epoll(void *loop) {
    return ev_backend((struct ev_loop *)loop) == EVBACKEND_EPOLL;
}

/*
 * A timer on the libev loop that only wakes it: the hub runs its own timers after the
 * pass (lws 4.1's libev glue re-arms its own timer with ev_timer_set while it may be
 * active, so an earlier deadline can wait for a later one).
 */
typedef struct cws_ev_wakeup {
    ev_timer timer;
} cws_ev_wakeup_t;

static inline void cws_ev_wakeup_fired(struct ev_loop *loop, ev_timer *timer, int revents) {
    (void)loop; (void)timer; (void)revents;
}

static inline void cws_ev_wakeup_init(cws_ev_wakeup_t *wakeup) {
    ev_timer_init(&wakeup->timer, cws_ev_wakeup_fired, 0., 0.);
}

/* (Re)arms `wakeup` `seconds` from now (0: at the next pass). */
static inline void cws_ev_wakeup_arm(void *loop, cws_ev_wakeup_t *wakeup, double seconds) {
    struct ev_loop *l = (struct ev_loop *)loop;
    ev_timer_stop(l, &wakeup->timer);
    ev_now_update(l);
    ev_timer_set(&wakeup->timer, seconds, 0.);
    ev_timer_start(l, &wakeup->timer);
}

static inline void cws_ev_wakeup_stop(void *loop, cws_ev_wakeup_t *wakeup) {
    ev_timer_stop((struct ev_loop *)loop, &wakeup->timer);
}

static inline void cws_ev_loop_destroy(void *loop) {
    ev_loop_destroy((struct ev_loop *)loop);
}

#endif /* CWEBSOCKETS_SHIM_H */

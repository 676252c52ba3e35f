/*
 * CWebsockets: the parts of libwebsockets 4.1 that Swift cannot import directly
 * (function-like macros, composite flags, container_of), exported as `cws_`
 * prefixed static const values and static inline functions.
 */
#ifndef CWEBSOCKETS_SHIM_H
#define CWEBSOCKETS_SHIM_H

#include <libwebsockets.h>
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
static const uint64_t cws_option_validate_utf8 = LWS_SERVER_OPTION_VALIDATE_UTF8;
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

/* Monotonic clock (CLOCK_MONOTONIC) in nanoseconds. */
static inline int64_t cws_monotonic_nanoseconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + (int64_t)ts.tv_nsec;
}

#endif /* CWEBSOCKETS_SHIM_H */

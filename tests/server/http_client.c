#define _POSIX_C_SOURCE 200809L
#include "http_client.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* Bytes read but not yet consumed, per connection (tests use few descriptors at once). */
typedef struct buffered {
    int fd;
    char *data;
    size_t len, cap;
} buffered_t;

#define MAX_FDS 1024
static buffered_t buffers[MAX_FDS];

static buffered_t *buf_of(int fd) {
    if (fd < 0 || fd >= MAX_FDS) abort();
    return &buffers[fd];
}

static long long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int http_connect(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((unsigned short)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    buffered_t *b = buf_of(fd);
    b->fd = fd;
    b->len = 0;
    return fd;
}

void http_close(int fd) {
    if (fd < 0) return;
    buffered_t *b = buf_of(fd);
    free(b->data);
    memset(b, 0, sizeof *b);
    close(fd);
}

int http_send(int fd, const char *data, size_t len) {
    while (len > 0) {
        ssize_t n = send(fd, data, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return -1;
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

int http_send_str(int fd, const char *s) { return http_send(fd, s, strlen(s)); }

/* Reads more bytes into the buffer; 1 got some, 0 closed, -1 timeout or error. */
static int fill(int fd, long long deadline) {
    buffered_t *b = buf_of(fd);
    long long left = deadline - now_ms();
    if (left <= 0) return -1;
    struct pollfd p = {fd, POLLIN, 0};
    int r = poll(&p, 1, (int)left);
    if (r <= 0) return -1;
    if (b->cap - b->len < 65536) {
        b->cap = b->cap * 2 + 65536;
        b->data = realloc(b->data, b->cap);
    }
    ssize_t n = recv(fd, b->data + b->len, b->cap - b->len - 1, 0);
    if (n < 0 && errno == EINTR) return 1;
    if (n <= 0) return n == 0 ? 0 : -1;
    b->len += (size_t)n;
    b->data[b->len] = '\0';
    return 1;
}

static void consume(buffered_t *b, size_t n) {
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
}

/* Waits until the buffer holds `needle`; returns its offset or -1. */
static long find(int fd, const char *needle, long long deadline) {
    buffered_t *b = buf_of(fd);
    for (;;) {
        if (b->len > 0) {
            b->data[b->len] = '\0';
            char *at = b->len ? strstr(b->data, needle) : NULL;
            if (at != NULL) return at - b->data;
        }
        if (fill(fd, deadline) != 1) return -1;
    }
}

static int need(int fd, size_t n, long long deadline) {
    while (buf_of(fd)->len < n)
        if (fill(fd, deadline) != 1) return -1;
    return 0;
}

const char *http_header(const http_reply_t *reply, const char *name, char *buf, size_t size) {
    if (reply->head == NULL) return NULL;
    size_t nl = strlen(name);
    for (const char *line = strstr(reply->head, "\r\n"); line != NULL; line = strstr(line + 2, "\r\n")) {
        const char *h = line + 2;
        if (strncasecmp(h, name, nl) == 0 && h[nl] == ':') {
            const char *v = h + nl + 1;
            while (*v == ' ') v++;
            const char *end = strstr(v, "\r\n");
            size_t len = end ? (size_t)(end - v) : strlen(v);
            if (len >= size) len = size - 1;
            memcpy(buf, v, len);
            buf[len] = '\0';
            return buf;
        }
    }
    return NULL;
}

static void append_body(http_reply_t *r, const char *data, size_t n) {
    r->body = realloc(r->body, r->body_len + n + 1);
    memcpy(r->body + r->body_len, data, n);
    r->body_len += n;
    r->body[r->body_len] = '\0';
}

static int read_head(int fd, http_reply_t *r, long long deadline) {
    memset(r, 0, sizeof *r);
    r->body = calloc(1, 1);
    long at;
    /* 1xx answers (100 Continue) come before the real one. */
    for (;;) {
        at = find(fd, "\r\n\r\n", deadline);
        if (at < 0) return -1;
        buffered_t *b = buf_of(fd);
        if (strncmp(b->data, "HTTP/1.1 1", 10) == 0) {
            consume(b, (size_t)at + 4);
            continue;
        }
        break;
    }
    buffered_t *b = buf_of(fd);
    r->head = malloc((size_t)at + 3);
    memcpy(r->head, b->data, (size_t)at + 2);
    r->head[at + 2] = '\0';
    consume(b, (size_t)at + 4);
    if (sscanf(r->head, "HTTP/1.1 %d", &r->status) != 1) return -1;
    return 0;
}

/* Reads one chunk of a chunked body; 1 a chunk, 0 the last one, -1 failure. */
static int read_chunk(int fd, http_reply_t *r, long long deadline) {
    long at = find(fd, "\r\n", deadline);
    if (at < 0) return -1;
    buffered_t *b = buf_of(fd);
    size_t size = strtoul(b->data, NULL, 16);
    consume(b, (size_t)at + 2);
    if (need(fd, size + 2, deadline) != 0) return -1;
    if (size == 0) {
        consume(b, 2);
        return 0;
    }
    append_body(r, b->data, size);
    r->chunks = realloc(r->chunks, (r->n_chunks + 1) * sizeof *r->chunks);
    r->chunks[r->n_chunks] = malloc(size + 1);
    memcpy(r->chunks[r->n_chunks], b->data, size);
    r->chunks[r->n_chunks][size] = '\0';
    r->n_chunks++;
    consume(b, size + 2);
    return 1;
}

int http_read_reply(int fd, http_reply_t *r, int timeout_ms) {
    long long deadline = now_ms() + timeout_ms;
    if (read_head(fd, r, deadline) != 0) return -1;
    char v[64];
    if (http_header(r, "Transfer-Encoding", v, sizeof v) && strcasecmp(v, "chunked") == 0) {
        int c;
        while ((c = read_chunk(fd, r, deadline)) == 1) {
        }
        return c == 0 ? 0 : -1;
    }
    size_t len = 0;
    if (http_header(r, "Content-Length", v, sizeof v)) len = strtoul(v, NULL, 10);
    if (need(fd, len, deadline) != 0) return -1;
    append_body(r, buf_of(fd)->data, len);
    consume(buf_of(fd), len);
    return 0;
}

int http_read_head_and_first_chunk(int fd, http_reply_t *r, int timeout_ms) {
    long long deadline = now_ms() + timeout_ms;
    if (read_head(fd, r, deadline) != 0) return -1;
    return read_chunk(fd, r, deadline) == 1 ? 0 : -1;
}

int http_wait_closed(int fd, int timeout_ms) {
    long long deadline = now_ms() + timeout_ms;
    for (;;) {
        buf_of(fd)->len = 0;
        int r = fill(fd, deadline);
        if (r == 0) return 1;
        if (r < 0) {
            /* A reset counts as closed too. */
            return errno == ECONNRESET ? 1 : 0;
        }
    }
}

void http_request(int port, const char *method, const char *path, const char *headers,
                  const char *body, http_reply_t *reply) {
    memset(reply, 0, sizeof *reply);
    int fd = http_connect(port);
    if (fd < 0) return;
    size_t body_len = body ? strlen(body) : 0;
    size_t cap = strlen(method) + strlen(path) + (headers ? strlen(headers) : 0) + body_len + 256;
    char *req = malloc(cap);
    int n = snprintf(req, cap, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%s%s", method, path, headers ? headers : "",
                     body ? "Content-Type: application/json\r\n" : "");
    if (body) n += snprintf(req + n, cap - (size_t)n, "Content-Length: %zu\r\n", body_len);
    n += snprintf(req + n, cap - (size_t)n, "\r\n");
    if (body) memcpy(req + n, body, body_len);
    if (http_send(fd, req, (size_t)n + body_len) == 0) {
        if (http_read_reply(fd, reply, 60000) != 0) reply->status = 0;
    }
    free(req);
    http_close(fd);
}

void http_reply_free(http_reply_t *r) {
    free(r->head);
    free(r->body);
    for (size_t i = 0; i < r->n_chunks; i++) free(r->chunks[i]);
    free(r->chunks);
    memset(r, 0, sizeof *r);
}

char *http_read_until_close(int fd) {
    char *all = NULL;
    size_t len = 0;
    for (;;) {
        char buf[65536];
        ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        char *grown = realloc(all, len + (size_t)n + 1);
        if (grown == NULL) break;
        all = grown;
        memcpy(all + len, buf, (size_t)n);
        len += (size_t)n;
        all[len] = '\0';
    }
    return all;
}

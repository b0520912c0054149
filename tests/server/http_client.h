/* A small blocking HTTP/1.1 client over plain sockets for the server's tests: send raw bytes,
 * read one response (Content-Length or chunked), with timeouts so that no test can hang. */
#ifndef PAGODA_TEST_HTTP_CLIENT_H
#define PAGODA_TEST_HTTP_CLIENT_H

#include <stddef.h>

typedef struct http_reply {
    int status;      /* 0 when no response came */
    char *head;      /* status line and headers, NUL-terminated */
    char *body;      /* decoded body, NUL-terminated */
    size_t body_len;
    char **chunks;   /* a chunked body's chunks as sent (SSE framing checks) */
    size_t n_chunks;
} http_reply_t;

/* A connection to 127.0.0.1:port, or -1. */
int http_connect(int port);
/* Sends all of `data`; 0 or -1. */
int http_send(int fd, const char *data, size_t len);
int http_send_str(int fd, const char *s);
/* Reads one response; 0, or -1 when the connection closed or `timeout_ms` passed first. */
int http_read_reply(int fd, http_reply_t *reply, int timeout_ms);
/* Reads only the head and the first chunk of a chunked body (stream tests); 0 or -1. */
int http_read_head_and_first_chunk(int fd, http_reply_t *reply, int timeout_ms);
/* Whether the peer closed the connection within `timeout_ms` (reads and drops bytes). */
int http_wait_closed(int fd, int timeout_ms);
/* Everything the peer sends until it closes, NUL-terminated (NULL when nothing came); free() it. */
char *http_read_until_close(int fd);
void http_close(int fd);

/* One request on a new connection: method, path, extra header lines ("A: b\r\n", or NULL) and
 * a JSON body (or NULL). The reply is filled (status 0 on failure). */
void http_request(int port, const char *method, const char *path, const char *headers,
                  const char *body, http_reply_t *reply);
/* A header's value in the reply (case-insensitive name), copied into buf; NULL when absent. */
const char *http_header(const http_reply_t *reply, const char *name, char *buf, size_t size);
void http_reply_free(http_reply_t *reply);

#endif

/* The server over the bundled stories260K, started on 127.0.0.1 port 0, for the server's tests. */
#ifndef PAGODA_TEST_SERVER_FIXTURE_H
#define PAGODA_TEST_SERVER_FIXTURE_H

#include "engine_stack.h"
#include "http_client.h"

typedef struct server_fixture {
    engine_stack_t stack;
    pagoda_server_t *server;
    int port;
} server_fixture_t;

/* Opens the model and starts a server (options NULL: defaults) serving it as "stories". */
void server_fixture_start(server_fixture_t *f, const pagoda_server_options_t *options);
/* Stops and destroys the server; fails unless the engine then holds no request and no block. */
void server_fixture_stop(server_fixture_t *f);
/* cmocka setup and teardown: a default server in *state, stopped and freed after the test. */
int server_fixture_setup(void **state);
int server_fixture_teardown(void **state);
/* Waits up to `ms` for the engine to have no work and the cache to lend no block; 1 when so. */
int server_fixture_wait_idle(server_fixture_t *f, int ms);
void sleep_ms(int ms);

/* The body of a greedy 12-token completion of "Once upon a time" by "stories". */
extern const char *const kGreedy;
/* Fails unless `r` is OpenAI's error object with `status` (and `param`, when not NULL). */
void expect_error(const http_reply_t *r, int status, const char *param);
/* The "text" of a completion (the first one in `body`), copied; free() it. */
char *completion_text(const char *body);
/* Sends one completion request on a new connection without reading the answer. */
int send_completion(int port, const char *body);

#endif

/* A rank of a mesh over processes killed mid-generation: the other rank's call (rank 0's step,
 * or a follower's pagoda_engine_follow) fails with PAGODA_ERR_BACKEND naming the dead rank
 * within 10 s, later steps fail at once saying the engine failed for good, and it exits cleanly;
 * no process is left running. The ranks are this executable
 * run again with --rank, meeting on a loopback rendezvous (no launcher that would kill them all). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_util.h"

#define STORIES PAGODA_FIXTURES_DIR "/models/stories260K/stories260K.gguf"
#define KILL_AFTER_STEPS 20
#define FAIL_WITHIN_S 10.0

/* Whether a failure is the one expected: BACKEND, naming a rank that died. */
static int failed_for_death(pagoda_status_t s) {
    if (s == PAGODA_ERR_BACKEND && strstr(pagoda_last_error_message(), "has died") != NULL) return 1;
    fprintf(stderr, "unexpected: %s: %s\n", pagoda_status_string(s), pagoda_last_error_message());
    return 0;
}

/* One rank: tp=2 over two processes. Rank 0 submits eight long requests and steps; after
 * KILL_AFTER_STEPS steps it kills `victim_pid`, or itself when `die` is set. Exit 0: the call
 * that had to fail did, for the right reason. */
static int rank_main(int32_t rank, const char *rendezvous, pid_t victim_pid, int die) {
    (void)test_cpu_backend();
    pagoda_mesh_options_t mo;
    pagoda_mesh_options_default(&mo);
    mo.devices = "cpu:0";
    mo.axes = "tp=2";
    mo.rank = rank;
    mo.world_size = 2;
    mo.rendezvous = rendezvous;
    mo.timeout_ms = 10000;
    pagoda_mesh_t *mesh = NULL;
    pagoda_model_t *model = NULL;
    pagoda_kv_cache_t *cache = NULL;
    pagoda_engine_t *engine = NULL;
    if (pagoda_mesh_create(&mo, &mesh) != PAGODA_OK || pagoda_model_open(STORIES, NULL, &model) != PAGODA_OK ||
        pagoda_kv_cache_create(model, mesh, NULL, NULL, &cache) != PAGODA_OK ||
        pagoda_engine_create(model, mesh, NULL, cache, NULL, &engine) != PAGODA_OK) {
        fprintf(stderr, "rank %d: setting up: %s\n", rank, pagoda_last_error_message());
        return 2;
    }
    int ok = 0;
    if (rank != 0) {
        ok = failed_for_death(pagoda_engine_follow(engine));
    } else {
        for (int i = 0; i < 8; ++i) {
            pagoda_request_options_t ro;
            pagoda_request_options_default(&ro);
            ro.temperature = 0.0f;
            ro.max_tokens = 400;
            ro.flags = PAGODA_REQUEST_IGNORE_EOS;
            const int32_t prompt[3] = {1, 100 + i, 200 + i};
            uint64_t id;
            if (pagoda_engine_submit_tokens(engine, prompt, 3, &ro, &id) != PAGODA_OK) return 3;
        }
        for (int steps = 0; pagoda_engine_has_work(engine); ++steps) {
            if (steps == KILL_AFTER_STEPS) {
                if (die) raise(SIGKILL);
                kill(victim_pid, SIGKILL);
            }
            pagoda_status_t s = pagoda_engine_step(engine);
            pagoda_output_t out;
            memset(&out, 0, sizeof out);
            out.struct_size = sizeof out;
            while (pagoda_engine_poll(engine, &out) == PAGODA_OK) {}
            if (s != PAGODA_OK) {
                ok = failed_for_death(s);
                /* The engine is failed for good: the next step says so at once, with the cause. */
                const double start = test_seconds_now();
                s = pagoda_engine_step(engine);
                if (s != PAGODA_ERR_BACKEND || strstr(pagoda_last_error_message(), "failed for good") == NULL ||
                    strstr(pagoda_last_error_message(), "has died") == NULL || test_seconds_now() - start > 1.0) {
                    fprintf(stderr, "the step after the failure: %s: %s\n", pagoda_status_string(s),
                            pagoda_last_error_message());
                    ok = 0;
                }
                break;
            }
        }
    }
    /* Tearing down after the failure must not wait for the dead rank either. */
    pagoda_engine_destroy(engine);
    pagoda_kv_cache_destroy(cache);
    pagoda_model_destroy(model);
    pagoda_mesh_destroy(mesh);
    return ok ? 0 : 4;
}

/* Starts both ranks; rank `victim` is killed after KILL_AFTER_STEPS of rank 0's steps. The
 * other must exit 0 within FAIL_WITHIN_S of the victim's death. */
static void run_with_victim(int32_t victim) {
    char rendezvous[64];
    snprintf(rendezvous, sizeof rendezvous, "127.0.0.1:%d", test_free_loopback_port());
    int pids[2] = {0, 0};
    /* Rank 1 first: rank 0 needs its pid to kill it. */
    for (int32_t r = 1; r >= 0; --r) {
        char rank_s[16], victim_s[32];
        snprintf(rank_s, sizeof rank_s, "%d", r);
        snprintf(victim_s, sizeof victim_s, "%d", victim == 1 ? (int)pids[1] : -1);
        pids[r] = fork();
        assert_true(pids[r] >= 0);
        if (pids[r] == 0) {
            setenv("PAGODA_TEST_THREADS", "1", 1);
            execl("/proc/self/exe", "test_engine_world_fault", "--rank", rank_s, "--rendezvous", rendezvous,
                  "--victim-pid", victim_s, victim == 0 && r == 0 ? "--die" : "--live", (char *)NULL);
            _exit(127);
        }
    }
    int status[2];
    double ended[2];
    assert_int_equal(test_wait_children(pids, 2, 60.0, status, ended), 0); /* nobody hung */
    const int32_t survivor = 1 - victim;
    assert_true(WIFSIGNALED(status[victim]) && WTERMSIG(status[victim]) == SIGKILL);
    if (!WIFEXITED(status[survivor]) || WEXITSTATUS(status[survivor]) != 0)
        fail_msg("rank %d, the survivor, ended with status 0x%x", survivor, status[survivor]);
    const double took = ended[survivor] - ended[victim];
    printf("  rank %d killed: rank %d failed and exited %.3f s later\n", victim, survivor, took);
    assert_true(took < FAIL_WITHIN_S);
}

static void test_follower_killed(void **state) { (void)state; run_with_victim(1); }
static void test_leader_killed(void **state) { (void)state; run_with_victim(0); }

int main(int argc, char **argv) {
    if (argc > 1) {
        int32_t rank = -1;
        const char *rendezvous = NULL;
        pid_t victim = -1;
        int die = 0;
        for (int i = 1; i < argc; ++i) {
            if (i + 1 < argc && strcmp(argv[i], "--rank") == 0) rank = atoi(argv[++i]);
            else if (i + 1 < argc && strcmp(argv[i], "--rendezvous") == 0) rendezvous = argv[++i];
            else if (i + 1 < argc && strcmp(argv[i], "--victim-pid") == 0) victim = (pid_t)atoi(argv[++i]);
            else if (strcmp(argv[i], "--die") == 0) die = 1;
        }
        if (rank < 0 || rendezvous == NULL) return 10;
        return rank_main(rank, rendezvous, victim, die);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_follower_killed),
        cmocka_unit_test(test_leader_killed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Meshes over several processes, through the public API: ranks of this executable, run again
 * with --rank, meet on a loopback rendezvous and agree on their mesh, or all fail naming the
 * rank that disagrees; on such a mesh rank 0's engine leads and the others follow. Run with
 * --from-env under mpirun, a rank takes its rank and size from OpenMPI's environment and finds
 * the rendezvous by itself (tests/mesh/CMakeLists.txt). Two ranks also time their links into a
 * cost file that a plan then reads. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_util.h"

#define MAX_RANKS 4

/* What one rank checks; its exit code says what went wrong (0: all as expected). EXPECT_LINKS
 * times the mesh's links into the cost file PAGODA_TEST_LINKS_FILE names. */
typedef enum expectation { EXPECT_MESH, EXPECT_DISAGREEMENT, EXPECT_LINKS } expectation_t;

/* Every rank times the links (small sizes: this checks the plumbing, not the figures) and gets
 * both paths of two processes with two devices each, the same on every rank. */
static int rank_links(pagoda_mesh_t *mesh, int32_t rank) {
    pagoda_link_profile_options_t o;
    pagoda_link_profile_options_default(&o);
    o.max_bytes = 1 << 20; /* below some hundred KiB the latency hides the bandwidth */
    o.repeats = 3;
    char *links = NULL;
    const pagoda_status_t s = pagoda_link_profile(mesh, &o, getenv("PAGODA_TEST_LINKS_FILE"), &links);
    int code = 0;
    if (s != PAGODA_OK) {
        fprintf(stderr, "rank %d: pagoda_link_profile: %s: %s\n", rank, pagoda_status_string(s),
                pagoda_last_error_message());
        code = 10;
    } else if (!strstr(links, "\"path\":\"within_process\"") || !strstr(links, "\"transport\":\"threads\"") ||
               !strstr(links, "\"path\":\"within_machine\"") || !strstr(links, "\"transport\":\"shared_memory\"") ||
               strstr(links, "across_machines")) {
        fprintf(stderr, "rank %d: links %s\n", rank, links);
        code = 11;
    }
    pagoda_free(links);
    pagoda_mesh_destroy(mesh);
    return code;
}

/* `from_env`: rank, size and rendezvous are left for the library to find (under mpirun). */
static int rank_main(int32_t rank, int32_t size, const char *rendezvous, const char *devices, const char *axes,
                     expectation_t expect, int from_env) {
    (void)test_cpu_backend(); /* the freshly built plugin, not the search path's */
    pagoda_mesh_options_t o;
    pagoda_mesh_options_default(&o);
    o.devices = devices;
    o.axes = axes;
    if (!from_env) {
        o.rank = rank;
        o.world_size = size;
        o.rendezvous = rendezvous;
    }
    o.timeout_ms = 10000;
    pagoda_mesh_t *mesh = NULL;
    pagoda_status_t s = pagoda_mesh_create(&o, &mesh);
    if (expect == EXPECT_DISAGREEMENT) {
        if (s == PAGODA_ERR_INVALID_ARGUMENT && strstr(pagoda_last_error_message(), "rank 1 has 2 devices")) return 0;
        fprintf(stderr, "rank %d: expected a disagreement, got %s: %s\n", rank, pagoda_status_string(s),
                pagoda_last_error_message());
        return 1;
    }
    if (s != PAGODA_OK) {
        fprintf(stderr, "rank %d: pagoda_mesh_create: %s: %s\n", rank, pagoda_status_string(s),
                pagoda_last_error_message());
        return 2;
    }
    if (expect == EXPECT_LINKS) return rank_links(mesh, rank);
    int32_t got_rank = -1, got_size = -1;
    size_t count = 0;
    if (pagoda_mesh_world(mesh, &got_rank, &got_size) != PAGODA_OK || got_rank != rank || got_size != size ||
        pagoda_mesh_device_count_v2(mesh, &count) != PAGODA_OK || count != (size_t)size) {
        fprintf(stderr, "rank %d: world %d of %d, %zu devices\n", rank, got_rank, got_size, count);
        return 3;
    }
    for (int32_t r = 0; r < size; ++r) {
        char want[64];
        snprintf(want, sizeof want, "cpu:0@rank%d", r);
        const char *name = NULL;
        if (pagoda_mesh_device_name_v2(mesh, (size_t)r, &name) != PAGODA_OK || strcmp(name, want) != 0) {
            fprintf(stderr, "rank %d: device %d is %s, not %s\n", rank, r, name ? name : "(null)", want);
            return 4;
        }
    }
    /* Every rank makes the cache and engine; rank 0 leads (it may not follow), the others follow
     * (they may not submit) until rank 0's engine goes. */
    pagoda_model_t *model = NULL;
    pagoda_kv_cache_t *cache = NULL;
    pagoda_engine_t *engine = NULL;
    if (pagoda_model_open(PAGODA_FIXTURES_DIR "/models/stories260K/stories260K.gguf", NULL, &model) != PAGODA_OK ||
        pagoda_kv_cache_create(model, mesh, NULL, NULL, &cache) != PAGODA_OK ||
        pagoda_engine_create(model, mesh, NULL, cache, NULL, &engine) != PAGODA_OK) {
        fprintf(stderr, "rank %d: making the engine: %s\n", rank, pagoda_last_error_message());
        return 5;
    }
    if (rank == 0) {
        s = pagoda_engine_follow(engine);
        if (s != PAGODA_ERR_INVALID_ARGUMENT || strstr(pagoda_last_error_message(), "rank 0") == NULL) return 6;
    } else {
        const int32_t prompt[2] = {1, 2};
        uint64_t id;
        s = pagoda_engine_submit_tokens(engine, prompt, 2, NULL, &id);
        if (s != PAGODA_ERR_UNSUPPORTED || strstr(pagoda_last_error_message(), "submit on rank 0") == NULL) return 7;
        if ((s = pagoda_engine_follow(engine)) != PAGODA_OK) {
            fprintf(stderr, "rank %d: follow: %s\n", rank, pagoda_last_error_message());
            return 8;
        }
    }
    pagoda_engine_destroy(engine);
    pagoda_kv_cache_destroy(cache);
    pagoda_model_destroy(model);
    pagoda_mesh_destroy(mesh);
    return 0;
}

/* Starts `size` ranks of this executable, rank r naming `devices[r]` (each has two CPU
 * devices); every rank must exit 0 within 30 s, and none is left running. */
static void run_ranks(int32_t size, const char *const *devices, const char *axes, expectation_t expect) {
    char rendezvous[64], size_s[16], expect_s[16];
    snprintf(rendezvous, sizeof rendezvous, "127.0.0.1:%d", test_free_loopback_port());
    snprintf(size_s, sizeof size_s, "%d", size);
    snprintf(expect_s, sizeof expect_s, "%d", (int)expect);
    int pids[MAX_RANKS];
    for (int32_t r = 0; r < size; ++r) {
        char rank_s[16];
        snprintf(rank_s, sizeof rank_s, "%d", r);
        pids[r] = fork();
        assert_true(pids[r] >= 0);
        if (pids[r] == 0) {
            setenv("PAGODA_TEST_CPU_CONFIG", "devices=2", 1);
            execl("/proc/self/exe", "test_mesh_world", "--rank", rank_s, "--size", size_s, "--rendezvous",
                  rendezvous, "--devices", devices[r], "--axes", axes, "--expect", expect_s, (char *)NULL);
            _exit(127);
        }
    }
    int status[MAX_RANKS];
    assert_int_equal(test_wait_children(pids, size, 30.0, status, NULL), 0); /* nobody hung */
    for (int32_t r = 0; r < size; ++r)
        if (!WIFEXITED(status[r]) || WEXITSTATUS(status[r]) != 0)
            fail_msg("rank %d of %d ended with status 0x%x", r, size, status[r]);
}

static const char *const kOneEach[MAX_RANKS] = {"cpu:0", "cpu:0", "cpu:0", "cpu:0"};

static void test_two_ranks_tp(void **state) { (void)state; run_ranks(2, kOneEach, "tp=2", EXPECT_MESH); }
static void test_four_ranks_pp_tp(void **state) { (void)state; run_ranks(4, kOneEach, "pp=2,tp=2", EXPECT_MESH); }
static void test_ranks_that_disagree(void **state) {
    (void)state;
    /* Rank 1 brings two devices, rank 0 one: both refuse, naming rank 1. */
    const char *const devices[2] = {"cpu:0", "cpu:0-1"};
    run_ranks(2, devices, "", EXPECT_DISAGREEMENT);
}

/* The text of the file at `path` (at most 1 MiB), or "" when it cannot be read. */
static char *read_text(const char *path) {
    static char text[1 << 20];
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    if (f) fclose(f);
    text[n] = '\0';
    return text;
}

/* pagoda_link_profile over two ranks of two devices each: rank 0 writes both paths into the
 * cost file; with a layer entry beside them, a plan from that file prices its communication
 * with the measured link; refusals name what is wrong. */
static void test_link_profile(void **state) {
    (void)state;
    char path[64];
    snprintf(path, sizeof path, "/tmp/pagoda_test_links_%d.json", (int)getpid());
    remove(path);
    setenv("PAGODA_TEST_LINKS_FILE", path, 1);
    const char *const devices[2] = {"cpu:0-1", "cpu:0-1"};
    run_ranks(2, devices, "", EXPECT_LINKS);
    const char *text = read_text(path);
    assert_non_null(strstr(text, "\"path\": \"within_process\""));
    assert_non_null(strstr(text, "\"path\": \"within_machine\""));
    assert_null(strstr(text, "across_machines"));

    pagoda_cost_profile_options_t co;
    pagoda_cost_profile_options_default(&co);
    co.max_tokens = 16;
    co.grid = 2;
    co.repeats = 1;
    TEST_ASSERT_OK(pagoda_cost_profile(PAGODA_FIXTURES_DIR "/models/stories260K/stories260K.gguf", "cpu:0", &co,
                                       path, NULL));
    pagoda_model_t *model = NULL;
    TEST_ASSERT_OK(pagoda_model_open(PAGODA_FIXTURES_DIR "/models/stories260K/stories260K.gguf", NULL, &model));
    pagoda_plan_options_t po;
    pagoda_plan_options_default(&po);
    po.cost_file = path;
    po.mesh_shape = "2x2";
    pagoda_plan_t *plan = NULL;
    TEST_ASSERT_OK(pagoda_plan_create(model, NULL, &po, &plan));
    char *json = NULL;
    TEST_ASSERT_OK(pagoda_plan_to_json(plan, &json));
    assert_non_null(strstr(json, "\"link_source\": \"measured within_machine within nodes; assumed across nodes\""));
    pagoda_free(json);
    pagoda_plan_destroy(plan);
    pagoda_model_destroy(model);
    remove(path);

    /* One device in one process has no link; options out of range are named. */
    pagoda_mesh_t *mesh = NULL;
    TEST_ASSERT_OK(pagoda_mesh_create(NULL, &mesh));
    test_expect_failure(pagoda_link_profile(mesh, NULL, NULL, NULL), PAGODA_ERR_UNSUPPORTED, "no link to time");
    pagoda_link_profile_options_t o;
    pagoda_link_profile_options_default(&o);
    assert_int_equal(o.min_bytes, 4096);
    assert_int_equal(o.max_bytes, 8 << 20);
    o.min_bytes = 6;
    test_expect_failure(pagoda_link_profile(mesh, &o, NULL, NULL), PAGODA_ERR_INVALID_ARGUMENT, "min_bytes");
    o.min_bytes = 4096;
    o.max_bytes = 4096;
    test_expect_failure(pagoda_link_profile(mesh, &o, NULL, NULL), PAGODA_ERR_INVALID_ARGUMENT, "max_bytes");
    pagoda_mesh_destroy(mesh);
    test_expect_failure(pagoda_link_profile(NULL, NULL, NULL, NULL), PAGODA_ERR_INVALID_HANDLE, "mesh");
}

static void test_bad_worlds(void **state) {
    (void)state;
    (void)test_cpu_backend();
    pagoda_mesh_options_t o;
    pagoda_mesh_options_default(&o);
    assert_int_equal(o.rank, -1);
    assert_int_equal(o.world_size, 0);
    pagoda_mesh_t *mesh = NULL;
    o.rank = 2;
    o.world_size = 2;
    test_expect_failure(pagoda_mesh_create(&o, &mesh), PAGODA_ERR_INVALID_ARGUMENT, "out of range");
    o.rank = 0;
    o.timeout_ms = -5;
    test_expect_failure(pagoda_mesh_create(&o, &mesh), PAGODA_ERR_INVALID_ARGUMENT, "negative");
    /* Two processes with no rendezvous and no bootstrap (outside mpirun) cannot meet. */
    o.timeout_ms = 0;
    unsetenv("PAGODA_RENDEZVOUS");
    unsetenv("OMPI_MCA_ess_base_jobid");
    test_expect_failure(pagoda_mesh_create(&o, &mesh), PAGODA_ERR_INVALID_ARGUMENT, "needs a way");
    /* A rank 1 whose rank 0 never comes gives up after the timeout. */
    char rendezvous[64];
    snprintf(rendezvous, sizeof rendezvous, "127.0.0.1:%d", test_free_loopback_port());
    o.rank = 1;
    o.rendezvous = rendezvous;
    o.timeout_ms = 500;
    test_expect_failure(pagoda_mesh_create(&o, &mesh), PAGODA_ERR_BACKEND, "rank 0");
    /* One process: the world fields change nothing. */
    o.rank = 0;
    o.world_size = 1;
    TEST_ASSERT_OK(pagoda_mesh_create(&o, &mesh));
    int32_t rank = -1, size = -1;
    TEST_ASSERT_OK(pagoda_mesh_world(mesh, &rank, &size));
    assert_int_equal(rank, 0);
    assert_int_equal(size, 1);
    test_expect_failure(pagoda_mesh_world(mesh, NULL, &size), PAGODA_ERR_INVALID_ARGUMENT, "NULL");
    pagoda_mesh_destroy(mesh);
}

static int child_main(int argc, char **argv) {
    int32_t rank = -1, size = 0;
    const char *rendezvous = "", *devices = "cpu:0", *axes = "";
    expectation_t expect = EXPECT_MESH;
    int from_env = 0;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--from-env") == 0) from_env = 1;
        else if (i + 1 < argc && strcmp(argv[i], "--rank") == 0) rank = atoi(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--size") == 0) size = atoi(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--rendezvous") == 0) rendezvous = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--devices") == 0) devices = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--axes") == 0) axes = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--expect") == 0) expect = (expectation_t)atoi(argv[++i]);
    }
    if (from_env) {
        /* Under mpirun: rank, size and the rendezvous all come from OpenMPI's environment. */
        const char *r = getenv("OMPI_COMM_WORLD_RANK"), *n = getenv("OMPI_COMM_WORLD_SIZE");
        if (r == NULL || n == NULL) return 20;
        rank = atoi(r);
        size = atoi(n);
    }
    return rank_main(rank, size, rendezvous, devices, axes, expect, from_env);
}

int main(int argc, char **argv) {
    if (argc > 1) return child_main(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_worlds),
        cmocka_unit_test(test_two_ranks_tp),
        cmocka_unit_test(test_four_ranks_pp_tp),
        cmocka_unit_test(test_ranks_that_disagree),
        cmocka_unit_test(test_link_profile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

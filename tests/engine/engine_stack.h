/* The four handles every engine test opens on the bundled stories260K, and the checks every
 * test ends with: nothing left running, no KV block lent on the device or in swap. */
#ifndef PAGODA_TEST_ENGINE_STACK_H
#define PAGODA_TEST_ENGINE_STACK_H

#include "test_util.h"

#define ENGINE_STACK_MODEL PAGODA_FIXTURES_DIR "/models/stories260K/stories260K.gguf"

typedef struct engine_stack {
    pagoda_model_t *model;
    pagoda_mesh_t *mesh;
    pagoda_kv_cache_t *cache;
    pagoda_engine_t *engine;
} engine_stack_t;

/* Opens stories260K on cpu:0 with the given cache and engine options (NULL: defaults). */
void engine_stack_open(engine_stack_t *s, const pagoda_kv_cache_options_t *kv_options,
                       const pagoda_engine_options_t *engine_options);
/* Fails unless the engine is idle and the cache lends no block; then releases everything. */
void engine_stack_close(engine_stack_t *s);

pagoda_kv_cache_stats_t engine_stack_kv_stats(const engine_stack_t *s);
pagoda_engine_stats_t engine_stack_engine_stats(const engine_stack_t *s);

#endif

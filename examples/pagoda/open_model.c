/* Opening a model, the mesh it runs on and its plan, as generate and bench serve both do. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cli_placement_flag(cli_placement_t *p, const char *flag, const char *value) {
    if (strcmp(flag, "--device") == 0) p->devices = value;
    else if (strcmp(flag, "--axes") == 0) p->axes = value;
    else if (strcmp(flag, "--plan") == 0) p->plan_path = value;
    else if (strcmp(flag, "--mesh-timeout") == 0) {
        char *end = NULL;
        p->mesh_timeout_ms = strtoll(value, &end, 10);
        if (end == value || *end != '\0' || p->mesh_timeout_ms < 0) {
            fprintf(stderr, "pagoda: --mesh-timeout wants milliseconds (0 = the default), not '%s'\n", value);
            p->mesh_timeout_ms = -1; /* and the mesh refuses it */
        }
    }
    else return 0;
    return 1;
}

int cli_open_model(const char *model_path, const cli_placement_t *p, pagoda_model_t **model,
                   pagoda_mesh_t **mesh, pagoda_plan_t **plan) {
    pagoda_status_t s = pagoda_model_open(model_path, NULL, model);
    if (s != PAGODA_OK) return cli_fail("opening the model", s);
    pagoda_mesh_options_t mo;
    pagoda_mesh_options_default(&mo);
    mo.devices = p->devices;
    mo.axes = p->axes;
    mo.timeout_ms = (int64_t)p->mesh_timeout_ms;
    if ((s = pagoda_mesh_create(&mo, mesh)) != PAGODA_OK) return cli_fail("making the mesh", s);
    if (p->plan_path == NULL) return CLI_EXIT_OK;
    char *json = cli_read_file(p->plan_path);
    if (json == NULL) {
        fprintf(stderr, "pagoda: cannot read the plan %s\n", p->plan_path);
        return CLI_EXIT_FAILED;
    }
    s = pagoda_plan_from_json(json, plan);
    free(json);
    if (s != PAGODA_OK) return cli_fail("reading the plan", s);
    return CLI_EXIT_OK;
}

int cli_follow_unless_rank0(const pagoda_mesh_t *mesh, pagoda_engine_t *engine, pagoda_status_t *status) {
    int32_t rank = 0, world_size = 1;
    if ((*status = pagoda_mesh_world(mesh, &rank, &world_size)) != PAGODA_OK) {
        cli_fail("reading the mesh's processes", *status);
        return 1;
    }
    if (rank == 0) return 0;
    if ((*status = pagoda_engine_follow(engine)) != PAGODA_OK) cli_fail("following rank 0", *status);
    return 1;
}

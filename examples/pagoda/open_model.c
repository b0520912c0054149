/* Opening a model and the mesh it runs on, as generate and bench serve both do. */
#include "cli.h"

int cli_open_model(const char *model_path, const char *devices, pagoda_model_t **model,
                   pagoda_mesh_t **mesh) {
    pagoda_status_t s = pagoda_model_open(model_path, NULL, model);
    if (s != PAGODA_OK) return cli_fail("opening the model", s);
    pagoda_mesh_options_t mo;
    pagoda_mesh_options_default(&mo);
    mo.devices = devices;
    if ((s = pagoda_mesh_create(&mo, mesh)) != PAGODA_OK) return cli_fail("making the mesh", s);
    return CLI_EXIT_OK;
}

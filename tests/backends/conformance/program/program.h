/* pagoda-conformance: the conformance suite as a program a vendor runs against a plugin. Shared
 * by its three files: main (options, the families, the report), the backends (the plugin under
 * test opened from its file, the CPU backend as the reference) and the stand-ins for the few
 * cmocka functions the harness calls (harness_guard.c). */
#ifndef PAGODA_CONFORMANCE_PROGRAM_H
#define PAGODA_CONFORMANCE_PROGRAM_H

#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>

#include "conformance.h"

/* What the command line chose. */
typedef struct program_options {
    const char *plugin;    /* --plugin PATH.so */
    const char *config;    /* --config STR for the plugin's entry, or NULL */
    const char *reference; /* --reference PATH of the CPU backend, or NULL to find it */
    int32_t device;        /* --device N */
} program_options_t;

/* Opening the backends. */
enum {
    PROGRAM_OPEN_OK = 0,
    PROGRAM_OPEN_NO_DEVICE = 1, /* the entry found no device of its kind, or it has 0 devices */
    PROGRAM_OPEN_FAILED = 2     /* not loadable, refused its config, no such --device, ... */
};
/* Opens the plugin under test; on failure `why` says what happened. */
int program_open_plugin(const program_options_t *o, char *why, size_t why_size);
/* Loads the CPU backend through libpagoda's registry as the reference. */
int program_open_reference(const program_options_t *o, char *why, size_t why_size);
/* Loads the plugin through libpagoda's registry too, whose loader checks what a host needs of
 * the table (the required slots set, a valid name, optional slots in their sets): 1 when it
 * loads, 0 when it is refused (`why` says why), 2 when a plugin of the same name from another
 * file is loaded already. */
int program_check_load(const program_options_t *o, char *why, size_t why_size);
/* The plugin's name, description, device name and the reference's path, for the header. */
const char *program_plugin_name(void);
const char *program_plugin_description(void);
const char *program_device_name(void);
const char *program_reference_path(void);

/* Harness errors (an allocation or a copy that failed, a case the generator built wrong) reach
 * the harness's fail_msg and assert_true, which here jump back to the family being run
 * (harness_guard.c) instead of ending a cmocka test. Run `family` under the guard: returns 0
 * when it finished, 1 when a harness error ended it, with the message in `why`. */
int program_guarded_run(void (*family)(conf_tally_t *), conf_tally_t *tally, char *why,
                        size_t why_size);

#endif /* PAGODA_CONFORMANCE_PROGRAM_H */

/* The cmocka functions the harness and tests/common/test_util.c call, for pagoda-conformance,
 * which must not need cmocka when it is installed. The conformance harness reports the errors
 * of the harness itself (not a backend's mismatches, which it tallies) through cmocka's
 * fail_msg and assert_true; cmocka's macros expand to print_error, _fail and _assert_true,
 * declared in <cmocka.h> (compiled against, never linked). Here each error ends the family being
 * run with a longjmp back to program_guarded_run, which reports it as the family's failure. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "program.h"

static jmp_buf *g_guard;          /* the family being run, or NULL */
static char g_message[1024];      /* the last print_error text */

void print_error(const char *const format, ...) {
    va_list ap;
    va_start(ap, format);
    vsnprintf(g_message, sizeof g_message, format, ap);
    va_end(ap);
    /* fail_msg's text ends with a newline; the report puts the message on one line. */
    const size_t n = strlen(g_message);
    if (n > 0 && g_message[n - 1] == '\n') g_message[n - 1] = '\0';
}

void _fail(const char *const file, const int line) {
    if (g_message[0] == '\0') snprintf(g_message, sizeof g_message, "failure at %s:%d", file, line);
    if (g_guard != NULL) longjmp(*g_guard, 1);
    fprintf(stderr, "pagoda-conformance: %s\n", g_message);
    exit(2);
}

void _assert_true(const LargestIntegralType result, const char *const expression,
                  const char *const file, const int line) {
    if (result) return;
    snprintf(g_message, sizeof g_message, "harness check `%s` failed at %s:%d", expression, file,
             line);
    _fail(file, line);
}

int program_guarded_run(void (*family)(conf_tally_t *), conf_tally_t *tally, char *why,
                        size_t why_size) {
    jmp_buf here;
    g_message[0] = '\0';
    /* The volatile-free locals are not read after the jump: the result comes from g_message. */
    if (setjmp(here) != 0) {
        g_guard = NULL;
        snprintf(why, why_size, "%s", g_message);
        return 1;
    }
    g_guard = &here;
    family(tally);
    g_guard = NULL;
    return 0;
}

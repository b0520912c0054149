/* pagoda tokenize: text to token ids with a model's tokenizer or a tokenizer.json alone. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void tokenize_usage(FILE *out) {
    fputs("Usage: pagoda tokenize (--model PATH | --tokenizer PATH) --text TEXT [--add-special] [--json]\n"
          "\n"
          "Prints the token ids of TEXT, each with its piece (or {\"ids\": [...]} with --json).\n"
          "\n"
          "Options:\n"
          "  --model PATH      a GGUF file or Hugging Face folder (default: the bundled stories260K)\n"
          "  --tokenizer PATH  a tokenizer.json file, or a folder holding one (no weights needed)\n"
          "  --text TEXT       the text\n"
          "  --add-special     add BOS/EOS or the template's tokens as the tokenizer says\n"
          "  --json            print one JSON object\n"
          "  --help            show this help\n",
          out);
}

/* Prints a piece readably: printable ASCII as is, other bytes as \xNN, UTF-8 passed through. */
static void print_piece(const char *p, size_t n) {
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)p[i];
        if (ch == '\\') fputs("\\\\", stdout);
        else if (ch < 0x20 || ch == 0x7f) printf("\\x%02x", ch);
        else putchar(ch);
    }
}

int cli_tokenize(int argc, char **argv) {
    const char *model_path = NULL, *tokenizer_path = NULL, *text = NULL;
    int json = 0, add_special = 0;
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i];
        if (strcmp(f, "--help") == 0 || strcmp(f, "-h") == 0) {
            tokenize_usage(stdout);
            return CLI_EXIT_OK;
        }
        if (strcmp(f, "--json") == 0) json = 1;
        else if (strcmp(f, "--add-special") == 0) add_special = 1;
        else if (i + 1 < argc && strcmp(f, "--model") == 0) model_path = argv[++i];
        else if (i + 1 < argc && strcmp(f, "--tokenizer") == 0) tokenizer_path = argv[++i];
        else if (i + 1 < argc && strcmp(f, "--text") == 0) text = argv[++i];
        else {
            fprintf(stderr, "pagoda tokenize: unknown option or missing value: '%s'\n\n", f);
            tokenize_usage(stderr);
            return CLI_EXIT_USAGE;
        }
    }
    if (!text || (model_path && tokenizer_path)) {
        fputs(text ? "pagoda tokenize: give --model or --tokenizer, not both\n\n"
                   : "pagoda tokenize: --text is required\n\n",
              stderr);
        tokenize_usage(stderr);
        return CLI_EXIT_USAGE;
    }

    pagoda_tokenizer_t *tok = NULL;
    pagoda_status_t s;
    if (tokenizer_path) {
        s = pagoda_tokenizer_open(tokenizer_path, &tok);
        if (s != PAGODA_OK) return cli_fail("opening the tokenizer", s);
    } else {
        const char *path = model_path ? model_path : cli_default_model();
        if (!path) {
            fputs("pagoda tokenize: no --model given and the bundled model was not found\n", stderr);
            return CLI_EXIT_FAILED;
        }
        pagoda_model_t *model = NULL;
        if ((s = pagoda_model_open(path, NULL, &model)) != PAGODA_OK)
            return cli_fail("opening the model", s);
        s = pagoda_tokenizer_from_model(model, &tok);
        pagoda_model_destroy(model);
        if (s != PAGODA_OK) return cli_fail("reading the model's tokenizer", s);
    }

    int32_t *ids = NULL;
    size_t n = 0;
    uint32_t flags = PAGODA_TOKENIZE_PARSE_SPECIAL | (add_special ? PAGODA_TOKENIZE_ADD_SPECIAL : 0u);
    s = pagoda_tokenizer_encode(tok, text, strlen(text), flags, &ids, &n);
    if (s != PAGODA_OK) {
        pagoda_tokenizer_destroy(tok);
        return cli_fail("tokenizing", s);
    }
    if (json) {
        fputs("{\"ids\": [", stdout);
        for (size_t i = 0; i < n; i++) printf("%s%d", i ? ", " : "", ids[i]);
        fputs("]}\n", stdout);
    } else {
        char piece[256];
        for (size_t i = 0; i < n; i++) {
            size_t len = 0;
            printf("%6d  '", ids[i]);
            if (pagoda_tokenizer_token_to_piece(tok, ids[i], piece, sizeof piece, &len) == PAGODA_OK)
                print_piece(piece, len);
            fputs("'\n", stdout);
        }
    }
    pagoda_free(ids);
    pagoda_tokenizer_destroy(tok);
    return CLI_EXIT_OK;
}

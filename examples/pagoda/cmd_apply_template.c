/* pagoda apply-template: a conversation rendered into prompt text with a model's chat template. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void apply_template_usage(FILE *out) {
    fputs("Usage: pagoda apply-template (--model PATH | --tokenizer PATH) --messages FILE\n"
          "                             [--add-generation-prompt] [options]\n"
          "\n"
          "Prints the prompt text the model's chat template makes of an OpenAI-style messages\n"
          "array (a JSON file), exactly as Hugging Face transformers' apply_chat_template would,\n"
          "and nothing else.\n"
          "\n"
          "Options:\n"
          "  --model PATH             a GGUF file or Hugging Face folder (default: the bundled stories260K)\n"
          "  --tokenizer PATH         a folder holding tokenizer.json and tokenizer_config.json\n"
          "  --messages FILE          the messages, a JSON array ('-' reads standard input)\n"
          "  --add-generation-prompt  end with the header of the assistant's turn\n"
          "  --tools FILE             tool schemas, a JSON array (the template's `tools`)\n"
          "  --context JSON           more template variables, a JSON object ('{\"enable_thinking\": false}')\n"
          "  --template FILE          render this Jinja template instead of the model's\n"
          "  --template-name NAME     one of the model's named templates (tool_use, rag, ...)\n"
          "  --help                   show this help\n",
          out);
}

static char *read_input(const char *path) { return cli_read_file(strcmp(path, "-") == 0 ? "/dev/stdin" : path); }

int cli_apply_template(int argc, char **argv) {
    const char *model_path = NULL, *tokenizer_path = NULL, *messages_path = NULL, *tools_path = NULL;
    const char *template_path = NULL, *template_name = NULL, *context = NULL;
    int add_generation_prompt = 0;
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i];
        if (strcmp(f, "--help") == 0 || strcmp(f, "-h") == 0) {
            apply_template_usage(stdout);
            return CLI_EXIT_OK;
        }
        if (strcmp(f, "--add-generation-prompt") == 0) add_generation_prompt = 1;
        else if (i + 1 < argc && strcmp(f, "--model") == 0) model_path = argv[++i];
        else if (i + 1 < argc && strcmp(f, "--tokenizer") == 0) tokenizer_path = argv[++i];
        else if (i + 1 < argc && strcmp(f, "--messages") == 0) messages_path = argv[++i];
        else if (i + 1 < argc && strcmp(f, "--tools") == 0) tools_path = argv[++i];
        else if (i + 1 < argc && strcmp(f, "--context") == 0) context = argv[++i];
        else if (i + 1 < argc && strcmp(f, "--template") == 0) template_path = argv[++i];
        else if (i + 1 < argc && strcmp(f, "--template-name") == 0) template_name = argv[++i];
        else {
            fprintf(stderr, "pagoda apply-template: unknown option or missing value: '%s'\n\n", f);
            apply_template_usage(stderr);
            return CLI_EXIT_USAGE;
        }
    }
    if (!messages_path || (model_path && tokenizer_path)) {
        fputs(messages_path ? "pagoda apply-template: give --model or --tokenizer, not both\n\n"
                            : "pagoda apply-template: --messages is required\n\n",
              stderr);
        apply_template_usage(stderr);
        return CLI_EXIT_USAGE;
    }

    /* The files first: a typo fails before a model is opened. */
    int status = CLI_EXIT_FAILED;
    char *messages = NULL, *tools = NULL, *template_text = NULL, *text = NULL;
    pagoda_tokenizer_t *tok = NULL;
    pagoda_status_t s;
    if (!(messages = read_input(messages_path))) {
        fprintf(stderr, "pagoda apply-template: cannot read the messages file '%s'\n", messages_path);
        goto done;
    }
    if (tools_path && !(tools = read_input(tools_path))) {
        fprintf(stderr, "pagoda apply-template: cannot read the tools file '%s'\n", tools_path);
        goto done;
    }
    if (template_path && !(template_text = read_input(template_path))) {
        fprintf(stderr, "pagoda apply-template: cannot read the template file '%s'\n", template_path);
        goto done;
    }

    if (tokenizer_path) {
        if ((s = pagoda_tokenizer_open(tokenizer_path, &tok)) != PAGODA_OK) {
            status = cli_fail("opening the tokenizer", s);
            goto done;
        }
    } else {
        const char *path = model_path ? model_path : cli_default_model();
        if (!path) {
            fputs("pagoda apply-template: no --model given and the bundled model was not found\n", stderr);
            goto done;
        }
        pagoda_model_t *model = NULL;
        if ((s = pagoda_model_open(path, NULL, &model)) != PAGODA_OK) {
            status = cli_fail("opening the model", s);
            goto done;
        }
        s = pagoda_tokenizer_from_model(model, &tok);
        pagoda_model_destroy(model);
        if (s != PAGODA_OK) {
            status = cli_fail("reading the model's tokenizer", s);
            goto done;
        }
    }

    pagoda_chat_template_options_t options;
    pagoda_chat_template_options_default(&options);
    options.add_generation_prompt = add_generation_prompt;
    options.chat_template = template_text;
    options.template_name = template_name;
    options.tools_json = tools;
    options.context_json = context;
    size_t len = 0;
    if ((s = pagoda_tokenizer_apply_chat_template(tok, messages, &options, &text, &len)) != PAGODA_OK) {
        status = cli_fail("applying the chat template", s);
        goto done;
    }
    if (fwrite(text, 1, len, stdout) != len || fflush(stdout) != 0) {
        fputs("pagoda apply-template: writing the output failed\n", stderr);
        goto done;
    }
    status = CLI_EXIT_OK;

done:
    pagoda_free(text);
    pagoda_tokenizer_destroy(tok);
    free(messages);
    free(tools);
    free(template_text);
    return status;
}

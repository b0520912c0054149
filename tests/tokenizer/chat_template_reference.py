#!/usr/bin/env python3
"""Renders every chat template of tests/fixtures/chat_templates with every conversation, the way
Hugging Face transformers' apply_chat_template does, and writes the results as JSON.

    chat_template_reference.py FIXTURES_DIR OUT.json

The environment is transformers' (utils/chat_template_utils.py): jinja2's
ImmutableSandboxedEnvironment with trim_blocks, lstrip_blocks and the loopcontrols extension; the
tojson filter replaced by json.dumps(ensure_ascii=False, ...); globals raise_exception (raises
TemplateError) and strftime_now. strftime_now reads a fixed clock, 2024-07-26 10:30:00, so the
C++ side can match it. Render variables: messages, tools, documents=None, add_generation_prompt,
the tokenizer's special tokens, then the conversation's extra context.

Each result is {"template", "conversation", "add_generation_prompt"} plus "output" (the text), or
"error": "raised" with "message" (raise_exception's argument), or "error": "other" with "type"
and "message" (any other exception, from parsing or rendering).
"""
import datetime
import json
import os
import sys

import jinja2
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

FIXED_NOW = datetime.datetime(2024, 7, 26, 10, 30, 0)


class RaisedByTemplate(jinja2.exceptions.TemplateError):
    """What raise_exception raises (transformers raises TemplateError itself)."""


def raise_exception(message):
    raise RaisedByTemplate(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def strftime_now(format):
    return FIXED_NOW.strftime(format)


def make_environment():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def render_one(env, source, special_tokens, conversation, add_generation_prompt):
    try:
        template = env.from_string(source)
        context = {"messages": conversation["messages"], "tools": conversation.get("tools"),
                   "documents": None, "add_generation_prompt": add_generation_prompt}
        context.update(special_tokens)
        context.update(conversation.get("context", {}))
        return {"output": template.render(**context)}
    except RaisedByTemplate as e:
        return {"error": "raised", "message": str(e.message)}
    except Exception as e:  # the C++ renderer must fail too; messages are not compared
        return {"error": "other", "type": type(e).__name__, "message": str(e)}


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    fixtures, out_path = sys.argv[1], sys.argv[2]
    with open(os.path.join(fixtures, "templates.json"), encoding="utf-8") as f:
        templates = json.load(f)
    with open(os.path.join(fixtures, "conversations.json"), encoding="utf-8") as f:
        conversations = json.load(f)
    env = make_environment()
    results = []
    for t in templates:
        with open(os.path.join(fixtures, t["file"]), encoding="utf-8", newline="") as f:
            source = f.read()
        for conversation in conversations:
            for agp in (False, True):
                r = {"template": t["name"], "conversation": conversation["name"], "add_generation_prompt": agp}
                r.update(render_one(env, source, t["special_tokens"], conversation, agp))
                results.append(r)
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump({"jinja2_version": jinja2.__version__, "results": results}, f, ensure_ascii=False, indent=1)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The cases of test_chat_template.cpp: templates covering the Jinja subset, each with a context,
and templates that must fail. Run it to rewrite chat_template_cases.json, whose expected outputs
are what jinja2 renders in transformers' environment (chat_template_reference.py):

    python3 tests/tokenizer/chat_template_cases.py

Error kinds: "raised:<message>" (raise_exception), "unsupported:<words the message contains>",
"syntax" and "render" (a runtime error as Python would raise).
"""
import json
import os
import sys

CASES = [
 # text, whitespace control, comments
 ("Hello {{ name }}!", {"name": "World"}),
 ("a\n  {%- if true -%}\n  b\n  {%- endif -%}  \nc", {}),
 ("  {% if true %}\n  x\n  {% endif %}\n  y\n", {}),
 ("{# comment #}\nline\n{#- c2 -#}  end", {}),
 ("{% if true %}\nA{% endif %}\n{{ 'B' }}\n", {}),
 ("row\n    {%+ if true %}kept{% endif %}", {}),
 ("a {% raw %}{{ x }} {% if %}{% endraw %} b|\n  {% raw %}\n{{ y }}\n  {% endraw %}\nc|{%- raw -%}  {# z #}  {%- endraw -%}  d", {}),
 ("{{- ' x ' -}}  \n  {{ 'y' }}", {}),
 ("a\r\nb\rc\n", {}),
 # set, scoping, namespace
 ("{% set x = 1 %}{% for i in [1,2] %}{{ x }}{% set x = 5 %}{{ x }}{% endfor %}{{ x }}", {}),
 ("{% set ns = namespace(total=0, seen=[]) %}{% for i in [1,2,3] %}{% set ns.total = ns.total + i %}{% endfor %}{{ ns.total }}", {}),
 ("{% set a, b = 1, 'two' %}{{ b }}{{ a }}", {}),
 ("{% set block %}inside {{ 1 + 1 }}{% endset %}[{{ block }}]", {}),
 ("{% if true %}{% set y = 'set in if' %}{% endif %}{{ y }}", {}),
 # if / elif / else / inline if
 ("{% if x == 1 %}one{% elif x == 2 %}two{% else %}many{% endif %}", {"x": 2}),
 ("{{ 'yes' if c else 'no' }}|{{ 'only' if c }}|", {"c": False}),
 # for loops
 ("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", {"d": {"b": 1, "a": 2}}),
 ("{% for x in xs %}{{ loop.index0 }}{{ loop.index }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.revindex }} {% endfor %}", {"xs": ["a", "b", "c"]}),
 ("{% for x in xs if x > 1 %}{{ x }}{{ loop.length }}{% else %}empty{% endfor %}", {"xs": [1, 2, 3]}),
 ("{% for x in [] %}{{ x }}{% else %}empty{% endfor %}", {}),
 ("{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 5 %}{% break %}{% endif %}{{ x }}{% endfor %}", {}),
 ("{% for a, b in [[1, 2], (3, 4)] %}{{ a + b }},{% endfor %}", {}),
 ("{% for c in 'héllo' %}{{ c }}.{% endfor %}", {}),
 ("{% for x in xs %}{{ loop.previtem }}<{{ x }}>{{ loop.nextitem }}|{% endfor %}", {"xs": [1, 2, 3]}),
 ("{% for x in xs %}{{ loop.cycle('odd', 'even') }} {% endfor %}", {"xs": [1, 2, 3]}),
 ("{% for m in messages[::-1] %}{{ m }}{% endfor %}", {"messages": [1, 2, 3]}),
 # macros
 ("{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('A') }} {{ greet('B', '?') }} {{ greet(punct='.', name='C') }}", {}),
 ("{% set x = 5 %}{% macro m() %}{{ x }}{% endmacro %}{% set x = 6 %}{{ m() }}", {}),
 ("{% macro m(n) %}{% if n > 0 %}{{ n }}{{ m(n - 1) }}{% endif %}{% endmacro %}{{ m(3) }}", {}),
 # tests
 ("{{ x is defined }}{{ y is undefined }}{{ n is none }}{{ s is string }}{{ l is iterable }}{{ d is mapping }}{{ 1 is number }}{{ true is boolean }}{{ false is false }}{{ true is true }}{{ l is sequence }}", {"x": 1, "n": None, "s": "a", "l": [1], "d": {}}),
 ("{{ 1 is not none }}{{ 'a' is not string }}{{ 3 is odd }}{{ 4 is even }}{{ 9 is divisibleby 3 }}{{ 2 is divisibleby(4) }}{{ 1.5 is float }}{{ 1 is integer }}{{ true is integer }}", {}),
 ("{{ d is iterable }}{{ u is iterable }}{{ u is sequence }}{{ 5 is iterable }}{{ 'x' is sequence }}", {"d": {"a": 1}}),
 # operators
 ("{{ 1 + 2 }} {{ 7 - 10 }} {{ 3 * 4 }} {{ 7 / 2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 2 ** 10 }} {{ 2 ** -1 }}", {}),
 ("{{ 1.5 + 1 }} {{ 0.1 + 0.2 }} {{ 1e16 }} {{ 1e-5 }} {{ 1.0 }} {{ 100.0 / 3 }} {{ 2.5 * 2 }} {{ -0.0 }}", {}),
 ("{{ 'a' + 'b' }} {{ 'ab' * 3 }} {{ [1] + [2] }} {{ 1 ~ 'x' ~ none ~ true }} {{ true + 1 }}", {}),
 ("{{ 1 == 1.0 }} {{ 1 == true }} {{ 'a' != 'b' }} {{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }} {{ 2 >= 2 }}", {}),
 ("{{ 'b' in 'abc' }} {{ 2 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 3 not in [1] }} {{ 'x' in u }}", {}),
 ("{{ not true }} {{ true and 'x' }} {{ 0 or 'y' }} {{ none or [] }} {{ 1 and 0 }} {{ not not 'a' }}", {}),
 ("{{ -x }} {{ +x }} {{ -1 ** 2 }} {{ 2 ** 3 ** 2 }}", {"x": 3}),
 # printing values as Python does
 ("{{ none }} {{ true }} {{ false }} {{ [1, 'a', none, true, 1.5, [2]] }} {{ {'k': 'v', 'n': 1} }} {{ (1, 2) }} {{ (1,) }}", {}),
 ("{{ ['it\\'s', 'say \"hi\"', 'both \\' \"', 'tab\\t', 'é', '\\u200b'] }}", {}),
 ("{{ d }} {{ l }}", {"d": {"a": [1, {"b": None}]}, "l": [True, 2.0]}),
 # indexing and slicing
 ("{{ l[0] }} {{ l[-1] }} {{ l[1:] }} {{ l[:-1] }} {{ l[::2] }} {{ l[::-1] }} {{ l[5] }} {{ l[-2:] }} {{ l[1:2:-1] }}", {"l": [1, 2, 3, 4]}),
 ("{{ s[0] }} {{ s[-1] }} {{ s[1:3] }} {{ s[::-1] }} {{ s|length }}", {"s": "héllo😀"}),
 ("{{ d.a }} {{ d['a'] }} {{ d.missing }} {{ d['missing'] }} {{ none.x }} {{ d.get('a') }} {{ d.get('z', 'dflt') }} {{ d.get('z') }}", {"d": {"a": 1}}),
 ("{{ d['items'] }}|{{ d.keys()|list }} {{ d.values()|list }} {{ d.items()|list }}", {"d": {"items": 3, "b": 4}}),
 ("{{ x.y is defined }} {{ x.y.z is defined }}", {"x": {"y": {"z": 1}}}),
 # filters
 ("{{ '  a b  '|trim }}|{{ 'xxaxx'|trim('x') }}|{{ '\u3000é\u00a0'|trim }}|", {}),
 ("{{ [1, 2]|length }} {{ 'abc'|length }} {{ {'a': 1}|length }} {{ u|length }} {{ 'abc'|count }}", {}),
 ("{{ 1|string }} {{ none|string }} {{ [1, 'a']|string }} {{ 'abc'|list }} {{ {'a': 1}|list }} {{ u|list }}", {}),
 ("{{ xs|selectattr('role', 'equalto', 'user')|map(attribute='content')|join(',') }}|{{ xs|rejectattr('role', 'eq', 'user')|list|length }}", {"xs": [{"role": "user", "content": "a"}, {"role": "bot", "content": "b"}, {"role": "user", "content": "c"}]}),
 ("{{ xs|selectattr('flag')|list|length }} {{ xs|selectattr('missing', 'undefined')|list|length }} {{ xs|selectattr('flag', 'defined')|list|length }}", {"xs": [{"flag": True}, {"flag": False}, {}]}),
 ("{{ [[1, 2], [3]]|selectattr(1)|list }} {{ [1]|rejectattr(5)|list }}", {}),
 ("{{ [0, 1, 2, none, 'a', '']|select|list }} {{ [1, 2, 3, 4]|reject('odd')|list }} {{ [1, 2, 3]|select('gt', 1)|list }}", {}),
 ("{{ ['a', 'B']|map('upper')|join }} {{ xs|map(attribute='a.b')|list }} {{ xs|map(attribute='z', default='-')|join }}", {"xs": [{"a": {"b": 1}}, {"a": {"b": 2}}]}),
 ("{% for k, v in d|items %}{{ k }}{{ v }}{% endfor %} {{ d|dictsort }}", {"d": {"b": 2, "a": 1}}),
 ("{{ [1, 2, 3]|join }} {{ ['a', 'b']|join(', ') }} {{ xs|join('-', attribute='n') }}", {"xs": [{"n": 1}, {"n": 2}]}),
 ("{{ 'Hello World'|lower }} {{ 'hello'|upper }} {{ 'hello wORLD'|capitalize }} {{ \"they're bill's\"|title }} {{ 'ßtraße'|upper }}", {}),
 ("{{ [3, 1, 2]|first }} {{ [3, 1, 2]|last }} {{ 'abc'|first }} {{ []|first }} {{ {'a': 1, 'b': 2}|last }}", {}),
 ("{{ u|default('d') }} {{ none|default('d') }} {{ ''|default('d', true) }} {{ 0|d('z', boolean=true) }} {{ 'v'|default('d') }}", {}),
 ("{{ 'aaa'|replace('a', 'b') }} {{ 'aaa'|replace('a', 'b', 2) }} {{ 'ab'|replace('', '-') }}", {}),
 ("{{ '42'|int }} {{ '3.9'|int }} {{ 3.9|int }} {{ 'x'|int }} {{ 'x'|int(7) }} {{ '0x1A'|int(0, 16) }} {{ ' 12 '|int }} {{ true|int }} {{ '1_000'|int }}", {}),
 ("{{ 2.5|round }} {{ 3.5|round }} {{ 2.675|round(2) }} {{ 1.23456|round(3) }} {{ 7|round }} {{ 2.1|round(0, 'ceil') }} {{ 2.9|round(0, 'floor') }} {{ '1.5'|float }} {{ 'x'|float }}", {}),
 ("{{ '<b>'|safe }} {{ '<a href=\"x\">&'|e }} {{ [1, 2, 1, 3]|unique|list }} {{ ['A', 'a', 'b']|unique|list }} {{ -3|abs }} {{ [1, 2, 3]|sum }} {{ [3, 1, 2]|max }} {{ [3, 1, 2]|min }}", {}),
 ("{{ [3, 1, 2]|sort }} {{ ['b', 'A', 'c']|sort }} {{ [3, 1, 2]|sort(reverse=true) }} {{ xs|sort(attribute='n')|map(attribute='n')|list }} {{ [1, 2, 3]|reverse|list }} {{ 'abc'|reverse }}", {"xs": [{"n": 2}, {"n": 1}]}),
 ("{{ 'a\\nb\\n\\nc'|indent }}|{{ 'a\\nb'|indent(2, true) }}|{{ 'x\\n\\ny'|indent(1, blank=true) }}", {}),
 ("{{ x|tojson }}", {"x": {"b": [1, 2.5, None, True, "é\"\\\n\u2028😀\u0001"], "a": {}, "c": [], "d": "</script>"}}),
 ("{{ x|tojson(indent=2) }}|{{ x|tojson(indent=4) }}|{{ [x]|tojson(indent='\\t') }}", {"x": {"k": [1, {"z": None}], "e": {}, "l": []}}),
 ("{{ x|tojson(sort_keys=true) }} {{ x|tojson(separators=(',', ':')) }} {{ 'é'|tojson(ensure_ascii=true) }} {{ '😀'|tojson(true) }}", {"x": {"b": 1, "a": [1, 2]}}),
 ("{{ {1: 'int key', true: 'bool', none: 'n', 1.5: 'f'}|tojson }} {{ (1, 2)|tojson }} {{ 1e100|tojson }} {{ 3.0|tojson }}", {}),
 # string methods
 ("{{ '  a  '.strip() }}|{{ 'xxaxx'.strip('x') }}|{{ '\\n\\na\\n'.lstrip('\\n') }}|{{ 'a  \\u2003'.rstrip() }}|{{ '\\u0085a\\u00a0'.strip() }}|{{ '\\u200ba\\u200b'.strip() }}|", {}),
 ("{{ 'a b  c'.split() }} {{ 'a,b,,c'.split(',') }} {{ 'a,b,c'.split(',', 1) }} {{ '  a  b  '.split(None, 1) }} {{ 'a\\u3000b\\u00a0c'.split() }} {{ 'a,b,c'.rsplit(',', 1) }}", {}),
 ("{{ 'x</think>y</think>z'.split('</think>')[-1] }} {{ 'abc'.startswith('ab') }} {{ 'abc'.endswith('bc') }} {{ 'abc'.startswith(('x', 'a')) }} {{ 'abc'.endswith('abcd') }}", {}),
 ("{{ 'Hello'.upper() }} {{ 'Hello'.lower() }} {{ 'hello world'.title() }} {{ 'hELLO'.capitalize() }} {{ 'a-b'.replace('-', '+') }} {{ 'abcabc'.find('c') }} {{ 'héllo'.find('l') }} {{ 'abcabc'.count('bc') }}", {}),
 ("{{ ','.join(['a', 'b']) }} {{ 'a\\nb\\r\\nc'.splitlines() }} {{ '123'.isdigit() }} {{ ' \\t'.isspace() }} {{ 'abc'.islower() }} {{ 'ABC'.isupper() }} {{ 'prefix-x'.removeprefix('prefix-') }}", {}),
 # globals
 ("{{ range(3)|list }} {{ range(1, 7, 2)|list }} {{ range(3, 0, -1)|list }} {{ dict(a=1, b='x') }} {{ namespace(a=1).a }}", {}),
 ("{{ strftime_now('%Y-%m-%d %H:%M %b %A') }}", {}),
 # dict and list literals, string literal forms
 ("{{ {'a': 1, 'b': [1, 2], 'a': 3} }} {{ [] }} {{ {} }} {{ [1, 2,] }}", {}),
 ("{{ 'single' \"double\" }} {{ 'esc\\x41\\u00e9\\U0001F600\\101\\q' }} {{ \"it's\" }} {{ 'line\\\ncontinued' }}", {}),
 ("{{ 0x10 }} {{ 1_000 }} {{ 0b101 }} {{ 0o17 }} {{ 1_0.5 }} {{ 2e3 }} {{ 1E-2 }}", {}),
 # undefined behavior
 ("[{{ u }}][{{ u ~ 'x' }}][{% for x in u %}no{% endfor %}][{{ u|length }}][{{ u is defined }}][{% if u %}no{% else %}falsy{% endif %}][{{ u == u }}]", {}),
 # messages-like access
 ("{% for m in messages %}{{ m['role'] }}:{{ m.content }}{% if m.tool_calls %}+{{ m.tool_calls|length }}{% endif %};{% endfor %}", {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": None, "tool_calls": [{"function": {"name": "f"}}]}]}),
]

ERRORS = [
 # (template, context, kind): kind is "raised:<message>", "syntax", "unsupported:<construct>", "render"
 ("{{ raise_exception('Only user and assistant roles!') }}", {}, "raised:Only user and assistant roles!"),
 ("{% if x %}{{ raise_exception('bad ' ~ x) }}{% endif %}", {"x": 7}, "raised:bad 7"),
 ("{{ x|xmlattr }}", {}, "unsupported:filter 'xmlattr'"),
 ("{% include 'other.html' %}", {}, "unsupported:tag 'include'"),
 ("{% raw %}never closed", {}, "syntax"),
 ("{% extends 'base' %}", {}, "unsupported:tag 'extends'"),
 ("{{ x is fizzy }}", {}, "unsupported:test 'fizzy'"),
 ("{{ '%s' % 1 }}", {}, "unsupported:printf-style"),
 ("{{ 'a'.format(1) }}", {}, "unsupported:str.format()"),
 ("{% for x in y recursive %}{% endfor %}", {}, "unsupported:recursive"),
 ("{{ x", {}, "syntax"),
 ("{% if x %}no end", {}, "syntax"),
 ("{% endif %}", {}, "syntax"),
 ("{# unterminated", {}, "syntax"),
 ("{{ 'unterminated }}", {}, "syntax"),
 ("{{ (1 + 2 }}", {}, "syntax"),
 ("{% break %}", {}, "syntax"),
 ("{{ 1 + }}", {}, "syntax"),
 ("{{ u.x }}", {}, "render"),
 ("{{ u + 1 }}", {}, "render"),
 ("{{ 'a' + 1 }}", {}, "render"),
 ("{{ 1 / 0 }}", {}, "render"),
 ("{{ 'a' < 1 }}", {}, "render"),
 ("{{ none|tojson ~ u|tojson }}", {}, "render"),
 ("{{ [1]|selectattr('x')|length }}", {}, "render"),
 ("{{ [1]|selectattr|list }}", {}, "render"),
 ("{% for a, b in [1] %}{% endfor %}", {}, "render"),
 ("{{ 'ab'.split('') }}", {}, "render"),
 ("{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}", {}, "render"),
 ("{{ [].append(1) }}", {}, "render"),
 ("{{ range(200000)|length }}", {}, "render"),
 ("{% set x = 1 %}{% set x.y = 2 %}", {}, "render"),
 ("{{ 5() }}", {}, "render"),
]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here)
    import chat_template_reference as ref

    env = ref.make_environment()
    cases = [{"template": src, "context": ctx, "output": env.from_string(src).render(**ctx)} for src, ctx in CASES]
    errors = [{"template": src, "context": ctx, "error": kind} for src, ctx, kind in ERRORS]
    with open(os.path.join(here, "chat_template_cases.json"), "w", encoding="utf-8") as f:
        json.dump({"cases": cases, "errors": errors}, f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()

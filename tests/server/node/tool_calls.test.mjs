// Tool calling through the official openai package: tools → tool_calls → a `tool` message with
// the result → a final answer, streamed and not, on a random-weight model carrying one family's
// chat template. tool_choice "required" (and a named function) makes the server constrain the
// output with a grammar, so even random weights write calls whose arguments parse and hold the
// required parameters; the streamed calls equal the non-streamed ones under the same seed.
// With a second model whose template writes no tool calls, its 400 (and tool_choice "none").
//   node tool_calls.test.mjs <pagoda binary> <template name> <model folder> [<model folder>]
import OpenAI from 'openai';
import { startServe, check } from './serve.mjs';

const [pagoda, family, modelDir, noToolsDir] = process.argv.slice(2);
check(pagoda && family && modelDir, 'usage: tool_calls.test.mjs <pagoda> <template> <model>');

const tools = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'The current weather in a city',
      parameters: {
        type: 'object',
        properties: {
          city: { type: 'string', description: 'The city', maxLength: 10 },
          unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
        },
        required: ['city', 'unit'],
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'get_time',
      description: 'The time in a time zone',
      parameters: {
        type: 'object',
        properties: {
          zone: { type: 'string', enum: ['UTC', 'CET'] },
          seconds: { type: 'boolean' },
        },
        required: ['zone'],
      },
    },
  },
];
const required = Object.fromEntries(
  tools.map((t) => [t.function.name, t.function.parameters.required]));

// The calls of a streamed answer, gathered as the openai package's own helpers do: by index.
async function gather(stream) {
  const calls = [];
  let content = null;
  let finish = null;
  let role = null;
  for await (const chunk of stream) {
    const choice = chunk.choices[0];
    if (!choice) continue;
    role = role ?? choice.delta.role ?? null;
    if (choice.delta.content) content = (content ?? '') + choice.delta.content;
    for (const d of choice.delta.tool_calls ?? []) {
      const c = (calls[d.index] ??=
        { id: '', type: 'function', function: { name: '', arguments: '' } });
      if (d.id) c.id = d.id;
      if (d.function?.name) c.function.name += d.function.name;
      if (d.function?.arguments) c.function.arguments += d.function.arguments;
    }
    if (choice.finish_reason) finish = choice.finish_reason;
  }
  const tool_calls = calls.length ? calls : undefined;
  return { message: { role, content, tool_calls }, finish_reason: finish };
}

// One choice, asked plainly or streamed.
async function choiceOf(client, req, stream) {
  if (stream) return gather(await client.chat.completions.create({ ...req, stream: true }));
  return (await client.chat.completions.create(req)).choices[0];
}

// `one`: exactly one call and nothing else; otherwise one or more (random weights may go on
// calling until max_tokens cuts the last call short, which then comes back as content).
function checkCalls(label, choice, { one = true, only } = {}) {
  const { message, finish_reason } = choice;
  check(finish_reason === 'tool_calls', `${label}: finish_reason ${finish_reason}`);
  check(message.tool_calls?.length >= 1, `${label}: tool_calls`);
  if (one) {
    check(message.tool_calls.length === 1, `${label}: exactly one call`);
    check(message.content === null,
          `${label}: no content beside the call: ${JSON.stringify(message.content)}`);
  }
  for (const call of message.tool_calls) {
    check(call.type === 'function', `${label}: type function`);
    const idShape = family === 'mistral_nemo' ? /^[A-Za-z0-9]{9}$/ : /^call_[A-Za-z0-9]{24}$/;
    check(idShape.test(call.id), `${label}: id ${call.id}`);
    check(call.function.name in required, `${label}: a known tool: ${call.function.name}`);
    if (only) check(call.function.name === only, `${label}: the named tool ${only}`);
    const args = JSON.parse(call.function.arguments);  // throws if it is not JSON
    for (const p of required[call.function.name])
      check(p in args, `${label}: ${call.function.name} needs ${p}: ${call.function.arguments}`);
  }
  return message.tool_calls;
}

const server = await startServe(pagoda, ['--model', modelDir, '--served-model-name', family]);
try {
  const client = new OpenAI({ baseURL: `${server.base}/v1`, apiKey: 'none', maxRetries: 0 });
  const user = { role: 'user', content: 'What is the weather in Oslo, and the time?' };
  const ask = { model: family, tools, parallel_tool_calls: false, max_tokens: 200, seed: 11 };

  for (const stream of [false, true]) {
    const label = `${family} ${stream ? 'streamed' : 'plain'}`;
    // 1. The model must call a tool.
    const first = await choiceOf(client, { ...ask, messages: [user], tool_choice: 'required' },
                                 stream);
    const calls = checkCalls(`${label} required`, first);
    const shown = calls.map((c) => `${c.function.name}(${c.function.arguments})`);
    console.log(`${label}: ${shown.join(', ')}`);

    // 2. The results go back as tool messages; the model answers (in text: random weights
    // write no call of their own accord).
    const messages = [
      user,
      { role: 'assistant', content: first.message.content, tool_calls: calls },
      ...calls.map((c, i) => ({
        role: 'tool',
        tool_call_id: c.id,
        content: JSON.stringify({ result: `done-${i}`, tool: c.function.name }),
      })),
    ];
    // The template saw the tools, the call's arguments as JSON and the result (the prompt
    // /apply-template gives is the one the chat runs on).
    const { prompt } = await (await fetch(`${server.base}/apply-template`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ model: family, messages, tools }),
    })).json();
    const args = JSON.parse(calls[0].function.arguments);
    for (const part of ['The time in a time zone', calls[0].function.name, 'done-0',
      ...Object.values(args).map((v) => JSON.stringify(v))])
      check(prompt.includes(part), `${label}: the prompt shows ${part}: ${JSON.stringify(prompt)}`);
    const final = await choiceOf(client, { ...ask, messages, tool_choice: 'auto', max_tokens: 12 },
                                 stream);
    check(['stop', 'length'].includes(final.finish_reason),
          `${label} final: ${final.finish_reason}`);
    check(typeof final.message.content === 'string' && final.message.tool_calls === undefined,
          `${label} final answer in text: ${JSON.stringify(final.message)}`);
    console.log(`${label} final answer: ${JSON.stringify(final.message.content)}`);
  }

  // parallel_tool_calls: one call or more, each whole. (Llama 3.2's template renders one call
  // per assistant message; its family still parses "; "-separated calls.)
  for (const stream of [false, true]) {
    const label = `${family} parallel ${stream ? 'streamed' : 'plain'}`;
    const req = {
      ...ask, messages: [user], tool_choice: 'required', parallel_tool_calls: true, max_tokens: 120,
    };
    const choice = await choiceOf(client, req, stream);
    const calls = checkCalls(label, choice, { one: false });
    const cut = choice.message.content ? ', the last cut short' : '';
    console.log(`${label}: ${calls.length} call(s)${cut}`);
  }

  // The same seed streamed and not gives the same calls (the stream sends each call whole).
  const named = { type: 'function', function: { name: 'get_time' } };
  const plain = await choiceOf(client, { ...ask, messages: [user], tool_choice: named }, false);
  const streamed = await choiceOf(client, { ...ask, messages: [user], tool_choice: named }, true);
  const a = checkCalls(`${family} named`, plain, { only: 'get_time' });
  const b = checkCalls(`${family} named streamed`, streamed, { only: 'get_time' });
  const shown = (cs) => JSON.stringify(cs.map((c) => [c.function.name, c.function.arguments]));
  check(shown(a) === shown(b), `streamed calls equal plain ones: ${shown(a)} vs ${shown(b)}`);

  // 400s name the field at fault.
  for (const [body, param] of [
    [{ tool_choice: { type: 'function', function: { name: 'nope' } } },
      'tool_choice.function.name'],
    [{ tools: [tools[0], { type: 'function', function: { name: 'bad name' } }] },
      'tools[1].function.name'],
  ]) {
    try {
      await client.chat.completions.create({ ...ask, messages: [user], ...body });
      check(false, `refused: ${JSON.stringify(body)}`);
    } catch (e) {
      check(e instanceof OpenAI.BadRequestError && e.param === param, `400 naming ${param}: ${e}`);
    }
  }
} finally {
  await server.stop();
}

if (noToolsDir) {
  const plain = await startServe(pagoda, ['--model', noToolsDir, '--served-model-name', 'plain']);
  try {
    const client = new OpenAI({ baseURL: `${plain.base}/v1`, apiKey: 'none', maxRetries: 0 });
    const req = { model: 'plain', messages: [{ role: 'user', content: 'Hi' }], tools,
                  max_tokens: 4 };
    try {
      await client.chat.completions.create(req);
      check(false, 'tools refused on a model whose template writes no calls');
    } catch (e) {
      check(e instanceof OpenAI.BadRequestError && e.param === 'tool_choice' &&
            /writes no tool calls/.test(e.message), `400 naming tool_choice: ${e}`);
    }
    const none = await client.chat.completions.create({ ...req, tool_choice: 'none' });
    check(typeof none.choices[0].message.content === 'string', 'tool_choice none: a text answer');
  } finally {
    await plain.stop();
  }
}
console.log(`tool calls test passed (${family})`);

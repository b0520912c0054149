// `pagoda serve` driven by the official openai package: completions (plain and streamed),
// models, errors as the client classifies them, the API key. Chat runs against a model with a
// chat template when PAGODA_CHAT_MODEL names one (folder or GGUF): the server renders it.
//   node openai_client.test.mjs <pagoda binary>
import OpenAI from 'openai';
import { startServe, check } from './serve.mjs';

const pagoda = process.argv[2];
const key = 'test-key-123';
const server = await startServe(pagoda, ['--served-model-name', 'stories', '--api-key', key]);
try {
  const client = new OpenAI({ baseURL: `${server.base}/v1`, apiKey: key, maxRetries: 0 });

  const models = await client.models.list();
  check(models.data.some((m) => m.id === 'stories'), 'models.list names stories');

  const plain = await client.completions.create({
    model: 'stories', prompt: 'Once upon a time', max_tokens: 12, temperature: 0,
  });
  check(plain.object === 'text_completion', 'object');
  check(plain.choices[0].text.length > 0, 'text');
  check(plain.choices[0].finish_reason === 'length', 'finish_reason length');
  check(plain.usage.completion_tokens === 12, 'usage.completion_tokens');
  check(plain.usage.total_tokens === plain.usage.prompt_tokens + 12, 'usage.total_tokens');

  const stream = await client.completions.create({
    model: 'stories', prompt: 'Once upon a time', max_tokens: 12, temperature: 0, stream: true,
    stream_options: { include_usage: true },
  });
  let text = '';
  let usage = null;
  let finish = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      text += c.text;
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  check(text === plain.choices[0].text, `streamed text equals the plain one: ${JSON.stringify(text)}`);
  check(finish === 'length', 'streamed finish_reason');
  check(usage && usage.completion_tokens === 12, 'streamed usage');

  const lp = await client.completions.create({
    model: 'stories', prompt: [1, 403, 251], max_tokens: 3, logprobs: 2, n: 2, seed: 3,
  });
  check(lp.choices.length === 2, 'n = 2');
  check(lp.choices[0].logprobs.token_logprobs.length === 3, 'logprobs per token');

  try {
    await client.completions.create({ model: 'stories', prompt: 'x', temperature: 9 });
    check(false, 'temperature 9 refused');
  } catch (e) {
    check(e instanceof OpenAI.BadRequestError && e.param === 'temperature', `400 naming temperature: ${e}`);
  }
  try {
    await client.completions.create({ model: 'nope', prompt: 'x' });
    check(false, 'unknown model refused');
  } catch (e) {
    check(e instanceof OpenAI.NotFoundError, `404 for an unknown model: ${e}`);
  }
  try {
    const bad = new OpenAI({ baseURL: `${server.base}/v1`, apiKey: 'wrong', maxRetries: 0 });
    await bad.models.list();
    check(false, 'wrong key refused');
  } catch (e) {
    check(e instanceof OpenAI.AuthenticationError, `401 for a wrong key: ${e}`);
  }

  // Chat: stories260K has no chat template, which the server says with a 400.
  try {
    await client.chat.completions.create({ model: 'stories', messages: [{ role: 'user', content: 'Hi' }] });
    check(false, 'chat on a model without a chat template is refused');
  } catch (e) {
    check(e instanceof OpenAI.BadRequestError && /no chat template/.test(e.message),
          `400 naming the missing chat template: ${e}`);
  }
} finally {
  await server.stop();
}

if (process.env.PAGODA_CHAT_MODEL) {
  // A model whose chat template (Mistral-Nemo's) is rendered by the server.
  const chat = await startServe(pagoda, ['--model', process.env.PAGODA_CHAT_MODEL, '--served-model-name', 'chat']);
  try {
    const client = new OpenAI({ baseURL: `${chat.base}/v1`, apiKey: 'none', maxRetries: 0 });
    const messages = [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hi' }];
    const r = await client.chat.completions.create({ model: 'chat', messages, max_tokens: 8, temperature: 0 });
    check(r.object === 'chat.completion' && r.choices[0].message.role === 'assistant', 'chat answer');
    check(r.usage.completion_tokens > 0 && r.usage.prompt_tokens > 0, 'chat usage');
    const s = await client.chat.completions.create({
      model: 'chat', messages, max_tokens: 8, temperature: 0, stream: true,
      stream_options: { include_usage: true },
    });
    let text = '', usage = null;
    for await (const chunk of s) {
      text += chunk.choices[0]?.delta?.content ?? '';
      if (chunk.usage) usage = chunk.usage;
    }
    check(text === r.choices[0].message.content, 'streamed chat equals plain chat');
    check(usage && usage.completion_tokens === r.usage.completion_tokens, 'streamed chat usage');
    // POST /apply-template (llama-server's name): the prompt text alone, the one the chat ran on.
    const post = async (path, body) => (await fetch(`${chat.base}${path}`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body),
    })).json();
    const { prompt } = await post('/apply-template', { model: 'chat', messages });
    check(typeof prompt === 'string' && prompt.includes('[INST]') && prompt.includes('Be brief.'),
          `apply-template renders the conversation: ${JSON.stringify(prompt)}`);
    const counted = await post('/tokenize', { model: 'chat', prompt, add_special_tokens: false });
    check(counted.count === r.usage.prompt_tokens,
          `the chat ran on the rendered prompt: ${counted.count} vs ${r.usage.prompt_tokens} tokens`);
    // The template's own raise_exception comes back as a 400 carrying its message.
    try {
      await client.chat.completions.create({
        model: 'chat', messages: [{ role: 'user', content: 'a' }, { role: 'user', content: 'b' }], max_tokens: 4,
      });
      check(false, 'roles the template forbids are refused');
    } catch (e) {
      check(e instanceof OpenAI.BadRequestError && /must alternate user\/assistant/.test(e.message),
            `400 with the template's message: ${e}`);
    }
  } finally {
    await chat.stop();
  }
} else {
  check(!process.env.CI, 'PAGODA_CHAT_MODEL must name a model with a chat template (CTest sets it)');
  console.log('chat cases with a real template: skipped (set PAGODA_CHAT_MODEL to a model with a chat template)');
}
console.log('openai client test passed');

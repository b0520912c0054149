// `pagoda serve` driven by the official openai package: completions (plain and streamed),
// models, errors as the client classifies them, the API key. Chat runs against a model with a
// chat template when PAGODA_CHAT_MODEL names one (folder or GGUF) and the server renders chat
// templates; until then the chat cases check the server's clear 501 and say so.
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

  // Chat: stories260K has no chat template. Until the renderer is wired (branch chat-template),
  // the server answers 501; the full chat cases need PAGODA_CHAT_MODEL.
  try {
    await client.chat.completions.create({ model: 'stories', messages: [{ role: 'user', content: 'Hi' }] });
    console.log('chat on stories260K answered (a renderer is wired)');
  } catch (e) {
    check(e.status === 501 || e.status === 400, `chat without a template: 501/400, got ${e.status}`);
    console.log(`chat on stories260K: ${e.status} ${e.message}`);
  }
} finally {
  await server.stop();
}

if (process.env.PAGODA_CHAT_MODEL) {
  // For the lead once the renderer lands: a model folder with a chat template.
  const chat = await startServe(pagoda, ['--model', process.env.PAGODA_CHAT_MODEL, '--served-model-name', 'chat']);
  try {
    const client = new OpenAI({ baseURL: `${chat.base}/v1`, apiKey: 'none', maxRetries: 0 });
    const r = await client.chat.completions.create({
      model: 'chat', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 8, temperature: 0,
    });
    check(r.object === 'chat.completion' && r.choices[0].message.role === 'assistant', 'chat answer');
    check(r.usage.completion_tokens > 0, 'chat usage');
    const s = await client.chat.completions.create({
      model: 'chat', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 8, temperature: 0, stream: true,
    });
    let text = '';
    for await (const chunk of s) text += chunk.choices[0]?.delta?.content ?? '';
    check(text === r.choices[0].message.content, 'streamed chat equals plain chat');
  } finally {
    await chat.stop();
  }
} else {
  console.log('chat cases with a real template: skipped (set PAGODA_CHAT_MODEL to a model with a chat template)');
}
console.log('openai client test passed');

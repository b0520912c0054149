// The rest of /v1/completions' surface through the official openai client, on random-weight
// models: batched prompts, echo (text, logprobs, max_tokens 0), vLLM's prompt_logprobs checked
// against the engine's own next-token log-probabilities, chat's echo and prompt_logprobs, and
// fill-in-the-middle (suffix) on a vocabulary that defines its markers (Qwen's), refused by
// name on one that does not (Llama 2's).
//   node completions_extras.test.mjs <pagoda binary> <model without FIM> <model with FIM>
import OpenAI from 'openai';
import { startServe, check } from './serve.mjs';

const [pagoda, plainModel, fimModel] = process.argv.slice(2);
async function tokenize(base, prompt) {
  const r = await fetch(`${base}/tokenize`, { method: 'POST', body: JSON.stringify({ model: 'rand', prompt }) });
  check(r.status === 200, `/tokenize answered ${r.status}`);
  return r.json();
}
const close = (a, b) => Math.abs(a - b) <= 1e-3 * Math.max(1, Math.abs(a));

async function status400(promise, param) {
  try {
    await promise;
  } catch (e) {
    check(e.status === 400, `expected 400, got ${e.status}: ${e.message}`);
    check(e.param === param || e.error?.param === param, `400 names ${param}: ${JSON.stringify(e.error)}`);
    return e;
  }
  throw new Error(`expected a 400 naming ${param}`);
}

async function plain(client, base) {
  const prompts = ['The sky is', 'Once upon a time', 'Numbers: 1, 2,'];

  // A batch answers one choice per prompt and n, in order, each equal to the prompt alone.
  const batch = await client.completions.create({ model: 'rand', prompt: prompts, n: 2, max_tokens: 6, seed: 7 });
  check(batch.choices.length === 6, `6 choices, got ${batch.choices.length}`);
  batch.choices.forEach((c, i) => check(c.index === i, `choice ${i} has index ${c.index}`));
  let promptTokens = 0;
  for (let p = 0; p < prompts.length; p++) {
    const alone = await client.completions.create({ model: 'rand', prompt: prompts[p], n: 2, max_tokens: 6, seed: 7 });
    promptTokens += alone.usage.prompt_tokens;
    for (let j = 0; j < 2; j++)
      check(batch.choices[p * 2 + j].text === alone.choices[j].text,
            `prompt ${p} choice ${j}: batched ${JSON.stringify(batch.choices[p * 2 + j].text)} vs alone ${JSON.stringify(alone.choices[j].text)}`);
  }
  check(batch.usage.prompt_tokens === promptTokens, `batched prompt_tokens ${batch.usage.prompt_tokens} vs ${promptTokens}`);
  check(batch.usage.completion_tokens === 36, `completion_tokens ${batch.usage.completion_tokens}`);

  // Token-id prompts batch too; streamed, every choice ends once.
  const ids = [[1, 450, 14744], [1, 9038, 2501]];
  const ended = new Set();
  const texts = ['', '', '', ''];
  const stream = await client.completions.create({ model: 'rand', prompt: ids, n: 2, max_tokens: 5, seed: 3, stream: true });
  for await (const chunk of stream)
    for (const c of chunk.choices) {
      texts[c.index] += c.text;
      if (c.finish_reason) {
        check(!ended.has(c.index), `choice ${c.index} ended twice`);
        ended.add(c.index);
      }
    }
  check(ended.size === 4, `4 streamed choices ended, got ${[...ended]}`);
  const unstreamed = await client.completions.create({ model: 'rand', prompt: ids, n: 2, max_tokens: 5, seed: 3 });
  unstreamed.choices.forEach((c, i) => check(c.text === texts[i], `streamed choice ${i} equals the unstreamed`));

  // echo: the prompt before the completion; with logprobs, its tokens (the first with none).
  const echoed = await client.completions.create({ model: 'rand', prompt: prompts[0], echo: true, max_tokens: 4, seed: 5, logprobs: 2 });
  const same = await client.completions.create({ model: 'rand', prompt: prompts[0], max_tokens: 4, seed: 5, logprobs: 2 });
  const e = echoed.choices[0];
  check(e.text === prompts[0] + same.choices[0].text, `echo text ${JSON.stringify(e.text)}`);
  const np = echoed.usage.prompt_tokens;
  check(e.logprobs.tokens.length === np + 4, `echo logprobs cover prompt and completion: ${e.logprobs.tokens.length}`);
  check(e.logprobs.token_logprobs[0] === null && e.logprobs.top_logprobs[0] === null, 'the first prompt token has no logprob');
  for (let i = 1; i < e.logprobs.token_logprobs.length; i++) {
    check(Number.isFinite(e.logprobs.token_logprobs[i]) && e.logprobs.token_logprobs[i] <= 0, `logprob ${i}`);
    check(Object.keys(e.logprobs.top_logprobs[i]).length <= 2, `top_logprobs ${i} holds at most 2`);
  }
  for (let i = 0; i < 4; i++)
    check(close(e.logprobs.token_logprobs[np + i], same.choices[0].logprobs.token_logprobs[i]), `completion logprob ${i}`);

  // max_tokens 0 with echo scores the prompt alone (lm-eval's loglikelihood); without echo, 400.
  const scored = await client.completions.create({ model: 'rand', prompt: prompts, echo: true, max_tokens: 0, logprobs: 0 });
  scored.choices.forEach((c, i) => {
    check(c.text === prompts[i], `scored text ${JSON.stringify(c.text)}`);
    check(c.finish_reason === 'length', `scored finish ${c.finish_reason}`);
  });
  check(scored.usage.completion_tokens === 0, `scoring generates nothing: ${scored.usage.completion_tokens}`);
  for (let i = 1; i < e.logprobs.token_logprobs.length - 4; i++)
    check(close(scored.choices[0].logprobs.token_logprobs[i], e.logprobs.token_logprobs[i]), `scored logprob ${i}`);
  await status400(client.completions.create({ model: 'rand', prompt: 'x', max_tokens: 0 }), 'max_tokens');

  // prompt_logprobs (vLLM): per prompt token {id: {logprob, rank, decoded_token}}, the first
  // null; each equals the log-probability the engine gives that token when it is generated next
  // (allowed_token_ids forces it; reported logprobs are the model's raw row).
  const text = 'Hello world, this is a test';
  const pl = await client.completions.create({ model: 'rand', prompt: text, max_tokens: 1, prompt_logprobs: 3 });
  const rows = pl.choices[0].prompt_logprobs;
  check(Array.isArray(rows) && rows.length === pl.usage.prompt_tokens && rows[0] === null, 'prompt_logprobs shape');
  for (let i = 1; i < rows.length; i++) {
    const entries = Object.entries(rows[i]);
    check(entries.length >= 3 && entries.length <= 4, `row ${i}: the token and the top 3`);
    const ranked = entries.filter(([, v]) => v.rank !== null).sort((a, b) => a[1].rank - b[1].rank);
    for (let k = 1; k < ranked.length; k++) check(ranked[k - 1][1].logprob >= ranked[k][1].logprob, `row ${i} ranks by logprob`);
    for (const [, v] of entries) check(typeof v.decoded_token === 'string' && v.logprob <= 0, `row ${i} entry`);
  }
  // Each row holds the prompt token itself (the ids /tokenize gives, as the engine's).
  const promptIds = (await tokenize(base, text)).tokens;
  check(promptIds.length === rows.length, `/tokenize gives ${promptIds.length} ids`);
  for (let i = 1; i < rows.length; i++) check(rows[i][String(promptIds[i])], `row ${i} holds token ${promptIds[i]}`);
  for (const i of [1, 3, rows.length - 1]) {
    const forced = await client.completions.create({
      model: 'rand', prompt: promptIds.slice(0, i), max_tokens: 1, logprobs: 0, allowed_token_ids: [promptIds[i]],
    });
    const got = forced.choices[0].logprobs.token_logprobs[0];
    const want = rows[i][String(promptIds[i])].logprob;
    check(close(got, want), `prompt logprob ${i}: ${want} vs generated ${got}`);
  }
  await status400(client.completions.create({ model: 'rand', prompt: 'x', prompt_logprobs: 1, stream: true }), 'prompt_logprobs');
  await status400(client.completions.create({ model: 'rand', prompt: 'x', prompt_logprobs: 21 }), 'prompt_logprobs');

  // suffix on a vocabulary without fill-in-the-middle markers: 400 naming it.
  const noFim = await status400(client.completions.create({ model: 'rand', prompt: 'def f(', suffix: ')\n' }), 'suffix');
  check(/fill-in-the-middle/.test(noFim.message), noFim.message);

  // Chat: echo repeats a final assistant message before the reply; prompt_logprobs at the top.
  const messages = [{ role: 'user', content: 'Say hi' }, { role: 'assistant', content: 'Hi! I' }];
  const chatEcho = await client.chat.completions.create({ model: 'rand', messages, echo: true, max_tokens: 3, seed: 2 });
  const chatSame = await client.chat.completions.create({ model: 'rand', messages, max_tokens: 3, seed: 2 });
  check(chatEcho.choices[0].message.content === 'Hi! I' + chatSame.choices[0].message.content, 'chat echo');
  const chatPl = await client.chat.completions.create({ model: 'rand', messages: messages.slice(0, 1), max_tokens: 2, prompt_logprobs: 1 });
  check(Array.isArray(chatPl.prompt_logprobs) && chatPl.prompt_logprobs.length === chatPl.usage.prompt_tokens &&
        chatPl.prompt_logprobs[0] === null, 'chat prompt_logprobs');
}

async function fim(client, base) {
  // The prompt the model sees: <|fim_prefix|> prefix <|fim_suffix|> suffix <|fim_middle|>.
  const prefix = 'def add(a, b):\n    return';
  const suffix = '\n\nprint(add(1, 2))\n';
  const r = await client.completions.create({ model: 'rand', prompt: prefix, suffix, max_tokens: 5, seed: 4, prompt_logprobs: 0 });
  // With prompt_logprobs 0 each row holds the prompt token alone.
  const ids = r.choices[0].prompt_logprobs.slice(1).map((row) => Number(Object.keys(row)[0]));
  const pre = (await tokenize(base, '<|fim_prefix|>')).tokens;
  const want = [...(await tokenize(base, prefix)).tokens, ...(await tokenize(base, '<|fim_suffix|>')).tokens,
                ...(await tokenize(base, suffix)).tokens, ...(await tokenize(base, '<|fim_middle|>')).tokens];
  check(pre.length === 1 && r.usage.prompt_tokens === want.length + 1, `FIM prompt of ${r.usage.prompt_tokens} tokens`);
  check(JSON.stringify(ids) === JSON.stringify(want), `FIM prompt ids ${ids} vs ${want}`);
  check(r.usage.completion_tokens === 5, 'FIM completes');
  // Seeded, it is the completion of those ids sent as tokens.
  const same = await client.completions.create({ model: 'rand', prompt: [...pre, ...want], max_tokens: 5, seed: 4 });
  check(same.choices[0].text === r.choices[0].text, 'FIM equals its framed prompt');
  await status400(client.completions.create({ model: 'rand', prompt: prefix, suffix, echo: true }), 'echo');
}

for (const [model, run] of [[plainModel, plain], [fimModel, fim]]) {
  const server = await startServe(pagoda, ['--model', model, '--served-model-name', 'rand']);
  try {
    await run(new OpenAI({ baseURL: `${server.base}/v1`, apiKey: 'none', maxRetries: 0 }), server.base);
  } finally {
    await server.stop();
  }
}
console.log('completions extras: batched prompts, echo, prompt_logprobs, chat echo, suffix: OK');

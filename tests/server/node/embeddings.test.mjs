// POST /v1/embeddings on `pagoda serve` (the bundled stories260K), driven by the official openai
// package: float and base64 give the same vectors (the package asks for base64 by default and
// decodes it), a batch equals its inputs one by one, token ids equal their text, usage, vLLM's
// `normalize` and Pagoda's `pooling`, a client that leaves, and 400s naming the field.
//   node embeddings.test.mjs <pagoda binary>
import OpenAI from 'openai';
import { startServe, check } from './serve.mjs';

const pagoda = process.argv[2];
const server = await startServe(pagoda, ['--served-model-name', 'stories']);

const norm = (v) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));
const maxDiff = (a, b) => a.reduce((m, x, i) => Math.max(m, Math.abs(x - b[i])), 0);
const close = (a, b, tol, what) => {
  check(a.length === b.length, `${what}: lengths ${a.length} and ${b.length}`);
  const d = maxDiff(a, b);
  check(d <= tol * Math.max(1e-30, ...b.map(Math.abs)), `${what}: differ by ${d}`);
};

async function post(body) {
  const r = await fetch(`${server.base}/v1/embeddings`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body),
  });
  return { status: r.status, json: await r.json() };
}

async function expect400(body, param, what) {
  const { status, json } = await post(body);
  check(status === 400, `${what}: status ${status} ${JSON.stringify(json)}`);
  check(json.error && json.error.param === param,
        `${what}: 400 names ${param}: ${JSON.stringify(json)}`);
}

try {
  const client = new OpenAI({ baseURL: `${server.base}/v1`, apiKey: 'none', maxRetries: 0 });
  const text = 'Once upon a time, there was a little girl named Lily.';

  // Float: the envelope as OpenAI's.
  const asFloat = await client.embeddings.create({
    model: 'stories', input: text, encoding_format: 'float', user: 'tester',
  });
  check(asFloat.object === 'list', 'object list');
  check(asFloat.model === 'stories', 'model');
  check(asFloat.data.length === 1 && asFloat.data[0].object === 'embedding', 'one embedding');
  check(asFloat.data[0].index === 0, 'index 0');
  const v = asFloat.data[0].embedding;
  const dim = v.length;
  check(dim === 64, `stories260K's hidden size: ${dim}`);
  check(Math.abs(norm(v) - 1) < 1e-5, `L2-normalized by default: ${norm(v)}`);
  check(asFloat.usage.prompt_tokens > 5, 'usage.prompt_tokens');
  check(asFloat.usage.total_tokens === asFloat.usage.prompt_tokens, 'usage.total_tokens');

  // The package's default: base64, decoded by it. The same f32 values exactly.
  const viaClient = await client.embeddings.create({ model: 'stories', input: text });
  const decoded = viaClient.data[0].embedding;
  check(decoded.length === dim, 'base64 length');
  check(decoded.every((x, i) => x === Math.fround(v[i])), 'base64 equals float exactly');
  // And decoded here: little-endian f32 bytes.
  const raw = await post({ model: 'stories', input: text, encoding_format: 'base64' });
  check(raw.status === 200 && typeof raw.json.data[0].embedding === 'string', 'base64 string');
  const bytes = Buffer.from(raw.json.data[0].embedding, 'base64');
  check(bytes.length === 4 * dim, `4 bytes a value: ${bytes.length}`);
  for (let i = 0; i < dim; i++)
    check(bytes.readFloatLE(4 * i) === Math.fround(v[i]), `base64 value ${i}`);

  // A batch: each vector as its input alone, in input order; usage sums the prompts.
  const inputs = ['The dog ran fast.', text, 'Tom had a red ball and a big blue kite.'];
  const batch = await client.embeddings.create({
    model: 'stories', input: inputs, encoding_format: 'float',
  });
  check(batch.data.length === 3, 'three embeddings');
  let prompt = 0;
  for (let i = 0; i < 3; i++) {
    check(batch.data[i].index === i, `index ${i}`);
    const one = await client.embeddings.create({
      model: 'stories', input: inputs[i], encoding_format: 'float',
    });
    close(batch.data[i].embedding, one.data[0].embedding, 1e-5, `batch[${i}] equals alone`);
    prompt += one.usage.prompt_tokens;
  }
  check(batch.usage.prompt_tokens === prompt, 'batch usage sums its inputs');

  // Token ids: the text's own ids give its vector; an array of arrays gives one per array.
  const tok = await (await fetch(`${server.base}/tokenize`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ model: 'stories', prompt: text }),
  })).json();
  const ids = tok.tokens;
  check(Array.isArray(ids) && ids.length === asFloat.usage.prompt_tokens, 'tokenize');
  const byIds = await client.embeddings.create({
    model: 'stories', input: ids, encoding_format: 'float',
  });
  close(byIds.data[0].embedding, v, 1e-5, 'ids equal their text');
  const nested = await client.embeddings.create({
    model: 'stories', input: [ids.slice(0, 4), ids], encoding_format: 'float',
  });
  check(nested.data.length === 2, 'array of arrays');
  close(nested.data[1].embedding, v, 1e-5, 'nested ids equal their text');
  check(nested.usage.prompt_tokens === 4 + ids.length, 'nested usage');

  // dimensions: the model's own size is served.
  const same = await client.embeddings.create({ model: 'stories', input: text, dimensions: dim });
  check(same.data[0].embedding.length === dim, 'dimensions = the model size');

  // vLLM's normalize and Pagoda's pooling.
  const rawVec = (await post({ input: text, normalize: false })).json.data[0].embedding;
  check(Math.abs(norm(rawVec) - 1) > 1e-3, `normalize false leaves the norm: ${norm(rawVec)}`);
  close(rawVec.map((x) => x / norm(rawVec)), v, 1e-5, 'normalized = raw / |raw|');
  const mean = (await post({ input: text, pooling: 'mean' })).json.data[0].embedding;
  check(Math.abs(norm(mean) - 1) < 1e-5 && maxDiff(mean, v) > 1e-2, 'mean pooling differs');

  // 400s naming the field.
  await expect400({ input: text, dimensions: 32 }, 'dimensions', 'dimensions other than the size');
  await expect400({ input: text, encoding_format: 'int8' }, 'encoding_format', 'encoding_format');
  await expect400({ input: '' }, 'input', 'empty string');
  await expect400({ input: [] }, 'input', 'empty array');
  await expect400({}, 'input', 'no input');
  await expect400({ input: [text, 5] }, 'input', 'mixed strings and numbers');
  await expect400({ input: [1, 100000] }, 'input', 'an id outside the vocabulary');
  // An input may fill the context (nothing is generated after it), not pass it.
  const context = tok.max_model_len;
  const full = await post({ input: Array(context).fill(1) });
  check(full.status === 200 && full.json.usage.prompt_tokens === context, 'ids fill the context');

  // A client that leaves mid-request: its inputs are aborted (the engine counts them), and the
  // server goes on.
  const aborted = async () => {
    const text = await (await fetch(`${server.base}/metrics`)).text();
    const m = /request_success_total\{[^}]*finished_reason="abort"\} (\d+)/.exec(text);
    return m ? Number(m[1]) : 0;
  };
  const before = await aborted();
  const controller = new AbortController();
  const long = 'once upon a time '.repeat(Math.floor(context / 8));
  const gone = fetch(`${server.base}/v1/embeddings`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ input: Array.from({ length: 256 }, (_, i) => `${i} ${long}`) }),
    signal: controller.signal,
  }).catch((e) => e);
  setTimeout(() => controller.abort(), 50);
  check((await gone) instanceof Error, 'the request was cut off');
  for (let i = 0; (await aborted()) === before; i++) {
    check(i < 400, 'the inputs of a client that left are aborted');
    await new Promise((res) => setTimeout(res, 25));
  }
  const after = await client.embeddings.create({
    model: 'stories', input: text, encoding_format: 'float',
  });
  close(after.data[0].embedding, v, 1e-5, 'served after a client left');

  await expect400({ input: Array(context + 1).fill(1) }, 'input', 'ids over the context');
  await expect400({ input: 'once upon a time '.repeat(context) }, 'input', 'text over the context');
  await expect400({ input: text, normalize: 'yes' }, 'normalize', 'normalize');
  await expect400({ input: text, pooling: 'cls' }, 'pooling', 'pooling');
  await expect400({ input: text, truncate_prompt_tokens: 4 }, 'truncate_prompt_tokens',
                  'an unknown field');
  try {
    await client.embeddings.create({ model: 'stories', input: text, dimensions: 8 });
    check(false, 'dimensions 8 refused');
  } catch (e) {
    check(e instanceof OpenAI.BadRequestError && e.param === 'dimensions', `client sees 400: ${e}`);
  }
  try {
    await client.embeddings.create({ model: 'nope', input: text });
    check(false, 'unknown model refused');
  } catch (e) {
    check(e instanceof OpenAI.NotFoundError, `404 for an unknown model: ${e}`);
  }
  console.log('embeddings: ok');
} finally {
  await server.stop();
}

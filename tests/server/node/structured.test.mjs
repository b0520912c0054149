// Structured output through `pagoda serve` and the official openai client, on a random-weight
// model (Llama 2's 32k vocabulary), so nothing but the constraint makes an output valid:
//   - the 50 JSON Schemas of tests/fixtures/structured x 4 seeds as response_format json_schema
//     (strict): every reply parses and validates under ajv, an independent validator;
//   - the 20 regular expressions x 4 seeds as vLLM's structured_outputs.regex: full matches;
//   - the C API's outputs for the same schemas (written by test_engine_constraint), validated
//     the same way;
//   - json_object, guided_choice, and schemas or grammars that do not compile answered by a 400
//     naming the field and the construct.
//   node structured.test.mjs <pagoda binary> <model folder> <fixtures dir> [C API outputs]
import fs from 'node:fs';
import OpenAI from 'openai';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { startServe, check } from './serve.mjs';

const [pagoda, modelDir, fixtures, capiOutputs] = process.argv.slice(2);
const schemas = fs.readFileSync(`${fixtures}/schemas.jsonl`, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
const regexes = fs.readFileSync(`${fixtures}/regexes.txt`, 'utf8').trim().split('\n');
const SEEDS = 4;

// draft 2020-12 (prefixItems, $defs); `definitions` and formats are known to the validator.
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
const validators = schemas.map((s) => ajv.compile(s));

function validate(index, text, where) {
  let value;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new Error(`${where}: not JSON (${e.message}): ${JSON.stringify(text)}`);
  }
  if (!validators[index](value))
    throw new Error(`${where}: ${ajv.errorsText(validators[index].errors)}: ${text}`);
}

// Runs the jobs `width` at a time (the engine batches what arrives together).
async function inBatches(jobs, width) {
  const out = [];
  for (let i = 0; i < jobs.length; i += width) out.push(...(await Promise.all(jobs.slice(i, i + width).map((j) => j()))));
  return out;
}

const server = await startServe(pagoda, ['--model', modelDir, '--served-model-name', 'rand']);
try {
  const client = new OpenAI({ baseURL: `${server.base}/v1`, apiKey: 'none', maxRetries: 0 });
  const messages = [{ role: 'user', content: 'Answer in JSON.' }];

  const schemaJobs = [];
  schemas.forEach((schema, i) => {
    for (let seed = 0; seed < SEEDS; seed++)
      schemaJobs.push(async () => {
        const r = await client.chat.completions.create({
          model: 'rand', messages, seed: 1000 * i + seed, max_tokens: 1024, temperature: 1,
          response_format: { type: 'json_schema', json_schema: { name: `schema_${i}`, schema, strict: true } },
        });
        const c = r.choices[0];
        check(c.finish_reason === 'stop', `schema ${i} seed ${seed}: finish_reason ${c.finish_reason}`);
        validate(i, c.message.content, `schema ${i} seed ${seed}`);
        return 1;
      });
  });
  const valid = (await inBatches(schemaJobs, 40)).length;
  console.log(`json_schema: ${valid}/${schemas.length * SEEDS} replies parse and validate (ajv)`);

  const regexJobs = [];
  regexes.forEach((pattern, i) => {
    const whole = new RegExp(`^(?:${pattern})$`);
    for (let seed = 0; seed < SEEDS; seed++)
      regexJobs.push(async () => {
        const r = await client.chat.completions.create({
          model: 'rand', messages, seed: 100 * i + seed, max_tokens: 512, temperature: 1,
          structured_outputs: { regex: pattern },
        });
        const text = r.choices[0].message.content;
        check(whole.test(text), `regex ${pattern} seed ${seed}: ${JSON.stringify(text)}`);
        return 1;
      });
  });
  const matched = (await inBatches(regexJobs, 40)).length;
  console.log(`regex: ${matched}/${regexes.length * SEEDS} replies match in full`);

  if (capiOutputs) {
    const lines = fs.readFileSync(capiOutputs, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    check(lines.length === schemas.length * SEEDS, `C API outputs: ${lines.length} lines`);
    for (const l of lines) validate(l.schema, l.text, `C API schema ${l.schema} seed ${l.seed}`);
    console.log(`C API json_schema: ${lines.length}/${lines.length} outputs validate (ajv)`);
  }

  // json_object: any object, whose free strings a random model may not close within max_tokens;
  // every reply that ends by the constraint is an object, and most do.
  const objects = await Promise.all([5, 6, 7, 8, 9, 10, 11, 12].map((seed) => client.chat.completions.create({
    model: 'rand', messages, seed, max_tokens: 1024, response_format: { type: 'json_object' },
  })));
  let closed = 0;
  for (const r of objects) {
    const text = r.choices[0].message.content;
    check(text.startsWith('{'), `json_object starts an object: ${text.slice(0, 40)}`);
    if (r.choices[0].finish_reason !== 'stop') continue;
    const parsed = JSON.parse(text);
    check(parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed), 'json_object gives an object');
    closed++;
  }
  check(closed >= 4, `json_object: ${closed} of 8 replies ended by the constraint`);
  const choice = await client.completions.create({
    model: 'rand', prompt: 'Pick one:', seed: 6, max_tokens: 16, guided_choice: ['alpha', 'beta', 'gamma delta'],
  });
  check(['alpha', 'beta', 'gamma delta'].includes(choice.choices[0].text), `guided_choice: ${choice.choices[0].text}`);

  // Refusals name the field and the construct.
  const refused = [
    [{ response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object', properties: { a: { not: {} } } } } } },
      'response_format', "'not' at /properties/a"],
    [{ response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'integer', multipleOf: 3 } } } },
      'response_format', 'multipleOf'],
    [{ structured_outputs: { grammar: 'root ::= "a" b' } }, 'structured_outputs', "rule 'b' is not defined"],
    [{ guided_regex: '(?=a)b' }, 'guided_regex', 'lookahead'],
    [{ guided_regex: 'a', guided_json: { type: 'string' } }, 'guided_regex', 'both constrain the output'],
    [{ response_format: { type: 'json_schema' } }, 'response_format', 'json_schema must be an object'],
  ];
  for (const [extra, param, needle] of refused) {
    try {
      await client.chat.completions.create({ model: 'rand', messages, max_tokens: 8, ...extra });
      check(false, `refused: ${JSON.stringify(extra)}`);
    } catch (e) {
      check(e instanceof OpenAI.BadRequestError && e.param === param && e.message.includes(needle),
        `400 naming ${param} and '${needle}': ${e}`);
    }
  }
  console.log('structured output: all checks passed');
} finally {
  await server.stop();
}

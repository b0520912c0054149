// Load on `pagoda serve`: N requests (default 10000) with C in flight (default 256), half
// streamed, some streamed clients leaving after their first event. Every other request must get
// a whole answer, none a 5xx, and the KV cache must lend no block at the end (/metrics).
//   node load.mjs <pagoda binary> [requests] [concurrency]
import { startServe, check } from './serve.mjs';

const pagoda = process.argv[2];
const total = Number(process.argv[3] ?? 10000);
const concurrency = Number(process.argv[4] ?? 256);
const server = await startServe(pagoda, ['--served-model-name', 'stories', '--max-num-seqs', '256']);

let seed = 12345;
const rand = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
const stats = { ok: 0, streamed: 0, left: 0, errors: [] };

async function one(i) {
  const stream = i % 2 === 0;
  const leave = stream && i % 20 === 0;  // 5 % of all requests
  const body = {
    model: 'stories', prompt: 'Once upon a time', max_tokens: 4 + Math.floor(rand() * 13),
    temperature: 0.8, seed: i, stream,
  };
  const ac = new AbortController();
  const r = await fetch(`${server.base}/v1/completions`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body), signal: ac.signal,
  });
  if (r.status !== 200) throw new Error(`request ${i}: status ${r.status}: ${await r.text()}`);
  if (!stream) {
    const j = await r.json();
    check(j.choices.length === 1 && j.choices[0].finish_reason && j.usage.completion_tokens >= 1, `answer ${i}`);
    stats.ok++;
    return;
  }
  const reader = r.body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
    if (leave) {
      ac.abort();
      stats.left++;
      return;
    }
  }
  check(text.endsWith('data: [DONE]\n\n'), `stream ${i} ends with [DONE]`);
  check(/"finish_reason":"(length|stop)"/.test(text), `stream ${i} has a finish_reason`);
  stats.streamed++;
}

const started = performance.now();
let next = 0;
// Progress every 5 s. It also keeps node's loop referenced: undici leaves some waits without a
// referenced handle, and node 20 then exits (code 13) with the workers' promises unsettled.
const progress = setInterval(() => {
  console.log(`load: ${next} started, ${stats.ok + stats.streamed + stats.left} done, ${stats.errors.length} errors`);
}, 5000);
async function worker() {
  while (next < total) {
    const i = next++;
    try {
      await one(i);
    } catch (e) {
      if (e.name === 'AbortError') continue;
      stats.errors.push(String(e));
    }
  }
}
try {
  await Promise.all(Array.from({ length: concurrency }, worker));
  const seconds = (performance.now() - started) / 1000;
  // Aborts land within a step or two; then nothing may be lent.
  let metrics = '';
  for (let i = 0; i < 200; i++) {
    metrics = await (await fetch(`${server.base}/metrics`)).text();
    if (/pagoda_kv_cache_blocks_used\{[^}]*\} 0\n/.test(metrics) &&
        /pagoda_num_requests_running\{[^}]*\} 0\n/.test(metrics)) break;
    await new Promise((res) => setTimeout(res, 50));
  }
  console.log(`load: ${total} requests, ${concurrency} concurrent, ${seconds.toFixed(1)} s ` +
              `(${(total / seconds).toFixed(0)} req/s): ${stats.ok} plain, ${stats.streamed} streamed, ` +
              `${stats.left} left mid-stream, ${stats.errors.length} errors`);
  check(stats.errors.length === 0, `no errors: ${stats.errors.slice(0, 5).join('; ')}`);
  check(stats.ok + stats.streamed + stats.left === total, 'every request accounted for');
  check(/pagoda_kv_cache_blocks_used\{[^}]*\} 0\n/.test(metrics), `no KV block lent at the end:\n${metrics}`);
  check(/pagoda_num_requests_running\{[^}]*\} 0\n/.test(metrics), 'no request running at the end');
} finally {
  clearInterval(progress);
  await server.stop();
}

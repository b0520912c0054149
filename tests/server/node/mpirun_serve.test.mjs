// `pagoda serve` on a mesh over two processes (mpirun -np 2, --axes tp=2): rank 0 listens and
// serves, rank 1 follows its steps. The official openai client gets the same greedy text as
// from one process; then rank 1 is killed and the launch ends (an error naming the rank, never
// a hang).
//   node mpirun_serve.test.mjs <mpirun> <pagoda binary>
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import OpenAI from 'openai';
import { startServe, check } from './serve.mjs';

const [mpirun, pagoda] = process.argv.slice(2);
const request = { model: 'stories', prompt: 'Once upon a time', max_tokens: 12, temperature: 0 };

// The reference: one process.
const single = await startServe(pagoda, ['--served-model-name', 'stories']);
let want;
try {
  const client = new OpenAI({ baseURL: `${single.base}/v1`, apiKey: 'none', maxRetries: 0 });
  want = (await client.completions.create(request)).choices[0].text;
} finally {
  await single.stop();
}

const launch = spawn(mpirun, ['--oversubscribe', '-np', '2', pagoda, 'serve', '--host', '127.0.0.1', '--port', '0',
  '--served-model-name', 'stories', '--axes', 'tp=2'], { stdio: ['ignore', 'pipe', 'pipe'] });
let out = '';
launch.stdout.on('data', (d) => { out += d; });
launch.stderr.on('data', (d) => { out += d; });
const ended = new Promise((resolve) => launch.on('exit', (code, signal) => resolve({ code, signal })));
try {
  const port = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no 'listening' line: ${out}`)), 60000);
    const look = setInterval(() => {
      const m = /listening on http:\/\/[^\s]*:(\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        clearInterval(look);
        resolve(Number(m[1]));
      }
    }, 50);
  });
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    const r = await fetch(`${base}/health`).catch(() => null);
    if (r && r.status === 200) break;
    check(i < 1200, `never healthy: ${out}`);
    await new Promise((res) => setTimeout(res, 50));
  }
  const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'none', maxRetries: 0 });
  for (let i = 0; i < 3; i++) {
    const got = (await client.completions.create(request)).choices[0].text;
    check(got === want, `tp=2 over two processes wrote ${JSON.stringify(got)}, one process ${JSON.stringify(want)}`);
  }
  // stories260K has no chat template: rank 0 says so, as one process does.
  const chat = await client.chat.completions.create({
    model: 'stories', messages: [{ role: 'user', content: 'Hello' }], max_tokens: 4, temperature: 0,
  }).catch((e) => e);
  check(chat.status === 400 && chat.code === 'chat_template_missing',
        `chat answered ${chat.status} (${chat.code}): ${chat.message}`);

  // Rank 1 dies: the launch must end, within the mesh's timeout at most, saying which rank.
  const rank1 = fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p)).find((p) => {
    try {
      const env = fs.readFileSync(`/proc/${p}/environ`, 'utf8');
      const cmd = fs.readFileSync(`/proc/${p}/cmdline`, 'utf8');
      return cmd.includes('serve') && env.split('\0').includes('OMPI_COMM_WORLD_RANK=1') &&
             env.split('\0').includes(`OMPI_COMM_WORLD_SIZE=2`) && cmd.startsWith(pagoda);
    } catch {
      return false;
    }
  });
  check(rank1, 'rank 1 found among the processes');
  process.kill(Number(rank1), 'SIGKILL');
  let timer;
  const timeout = new Promise((res) => { timer = setTimeout(() => res(null), 60000); });
  const how = await Promise.race([ended, timeout]);
  clearTimeout(timer);
  check(how !== null, `the launch did not end within 60 s after rank 1 was killed: ${out}`);
  check(how.code !== 0, `the launch ended with ${how.code}, not an error`);
  check(/rank 1/.test(out), `the launch's output names rank 1: ${out}`);
} finally {
  launch.kill('SIGTERM');  // mpirun passes it on to the ranks
}
console.log('pagoda serve under mpirun -np 2 (tp=2): same text as one process; a killed rank ends it');

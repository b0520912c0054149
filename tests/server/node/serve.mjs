// Starts `pagoda serve` on 127.0.0.1 (a free port), waits until /health answers 200, and stops
// it with SIGTERM. Shared by the openai client test and the load test.
import { spawn } from 'node:child_process';
import { once } from 'node:events';

export async function startServe(pagoda, args = []) {
  const child = spawn(pagoda, ['serve', '--host', '127.0.0.1', '--port', '0', ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  const port = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no 'listening' line from pagoda serve: ${out}`)), 30000);
    child.stdout.on('data', (d) => {
      out += d;
      const m = /listening on http:\/\/[^\s]*:(\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    child.on('exit', (code) => reject(new Error(`pagoda serve exited (${code}): ${out}`)));
  });
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    const r = await fetch(`${base}/health`).catch(() => null);
    if (r && r.status === 200) break;
    if (i > 600) throw new Error('pagoda serve never became healthy');
    await new Promise((res) => setTimeout(res, 50));
  }
  return {
    child,
    port,
    base,
    async stop() {
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      const [code, signal] = await exited;
      if (code !== 0) throw new Error(`pagoda serve exited with ${code ?? signal} after SIGTERM`);
    },
  };
}

export function check(cond, message) {
  if (!cond) throw new Error(`check failed: ${message}`);
}

/**
 * A2A SendMessage under load: the gateway's durable A2A server against the SDK's in-memory reference
 * server, each in a process of its own, driven by the same load tool (autocannon) from this process,
 * one after the other in one run. Each request is a new task (its own messageId); the agent answers at once.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import autocannon from 'autocannon';

export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
}

/** Spawns a server process and waits until what it printed is one JSON object with its URL. */
async function startServer(args: string[], cwd: string): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, SWITCHBOARD_LOG_LEVEL: 'error' } });
  let out = '';
  let err = '';
  child.stderr!.on('data', (chunk) => (err += chunk));
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', (chunk) => {
      out += chunk;
      try {
        resolve((JSON.parse(out) as { url: string }).url);
      } catch {
        // Not all of it yet.
      }
    });
    child.once('exit', (code) => reject(new Error(`server exited with ${code}: ${err}`)));
  });
  return { child, url };
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  await exited;
}

function load(url: string, seconds: number, connections: number): Promise<LoadResult> {
  let counter = 0;
  return new Promise((resolve, reject) => {
    autocannon(
      {
        url,
        method: 'POST',
        connections,
        duration: seconds,
        headers: { 'content-type': 'application/json', 'a2a-version': '1.0' },
        requests: [
          {
            setupRequest: (request) => ({
              ...request,
              body: JSON.stringify({ jsonrpc: '2.0', id: ++counter, method: 'SendMessage', params: { message: { messageId: `load-${process.pid}-${counter}`, role: 'ROLE_USER', parts: [{ text: `quick ${counter}` }] } } }),
            }),
          },
        ],
      },
      (error, result) => {
        if (error) return reject(error);
        resolve({ rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, errors: result.errors, non2xx: result.non2xx });
      },
    );
  });
}

export async function a2aLoad(root: string, dir: string, seconds: number): Promise<{ ours: LoadResult; reference: LoadResult; ratio: number }> {
  const configPath = join(dir, 'a2a-load.json5');
  writeFileSync(
    configPath,
    `{ agents: { list: [{ id: "echo", model: "scripted/echo" }] }, a2a: { server: { enabled: true, requireAuth: false } },
       models: { providers: { scripted: { type: "scripted", models: { echo: { rules: [{ reply: "echo: {{input}}" }] } } } } } }`,
  );
  const connections = 50;
  const reference = await startServer(['--import', 'tsx', join(root, 'bench/a2a-reference-server.ts')], root);
  const gateway = await startServer([join(root, 'bin/switchboard.js'), '--json', '--config', configPath, 'gateway', '--port', '0'], root);
  try {
    // A short warm-up of each, then the measured runs.
    await load(`${reference.url}/rpc`, 1, connections);
    await load(`${gateway.url}/a2a/echo/jsonrpc`, 1, connections);
    const referenceResult = await load(`${reference.url}/rpc`, seconds, connections);
    const ours = await load(`${gateway.url}/a2a/echo/jsonrpc`, seconds, connections);
    return { ours, reference: referenceResult, ratio: ours.rps / referenceResult.rps };
  } finally {
    await stop(gateway.child);
    await stop(reference.child);
  }
}

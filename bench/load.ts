/**
 * Load through the gateway's fronts, driven by autocannon from the benchmark process against servers in
 * processes of their own: A2A SendMessage against the SDK's in-memory reference server (one after the other
 * in one run; each request a new task), and waited sends through the control API from 1,000 sessions.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync, writeFileSync } from 'node:fs';
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
export async function startServer(args: string[], cwd: string): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, args, {
    cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, SWITCHBOARD_LOG_LEVEL: 'error' },
  });
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

export async function stop(child: ChildProcess): Promise<void> {
  // Gone already, by its own exit or a signal (a SIGKILLed child has no exit code, only its signal).
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  await exited;
}

/** An A2A SendMessage with a new messageId (so a new task) each time. */
const sendMessage = (n: number) => ({
  jsonrpc: '2.0',
  id: n,
  method: 'SendMessage',
  params: { message: { messageId: `load-${process.pid}-${n}`, role: 'ROLE_USER', parts: [{ text: `quick ${n}` }] } },
});

export function load(
  url: string,
  seconds: number,
  connections: number,
  body: (n: number) => unknown = sendMessage,
  headers: Record<string, string> = { 'a2a-version': '1.0' },
): Promise<LoadResult> {
  let counter = 0;
  return new Promise((resolve, reject) => {
    autocannon(
      {
        url,
        method: 'POST',
        connections,
        duration: seconds,
        timeout: 60,
        headers: { 'content-type': 'application/json', ...headers },
        requests: [{ setupRequest: (request) => ({ ...request, body: JSON.stringify(body(++counter)) }) }],
      },
      (error, result) => {
        if (error) return reject(error);
        resolve({
          // Answers that succeeded, a second: a refusal (a 429, a 5xx) is not throughput.
          rps: result['2xx'] / result.duration,
          p50: result.latency.p50,
          p99: result.latency.p99,
          errors: result.errors,
          non2xx: result.non2xx,
        });
      },
    );
  });
}

/**
 * The main lane's default of 4 runs at once is a policy for real models, whose calls take seconds; with a
 * model that answers at once it would measure that cap, not the gateway.
 */
export const LANES = 'lanes: { main: { maxConcurrent: 64 } },';
const PEER_TOKEN = 'bench-peer-token-0123456789';

/** CPU time a process has used so far, in milliseconds (Linux /proc; 0 where there is none). */
function cpuMsOf(pid: number | undefined): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    // utime and stime, fields 14 and 15 of the line (11 and 12 after the command), in clock ticks of 10 ms.
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return 0;
  }
}

export interface A2AServerRound extends LoadResult {
  /** CPU of the server process per answered request, in ms. */
  cpuMsPerRequest: number;
}

/**
 * Issue 30's comparison: the SDK's in-memory reference server, the durable peer built from the SDK's own parts
 * (a2a-durable-peer.ts), and this gateway, each in a process of its own, in `rounds` alternating rounds of `seconds`
 * with 50 connections, a new task per request; requests per second and the server's CPU per request, each round.
 */
export async function a2aLoad(
  root: string,
  dir: string,
  seconds: number,
  rounds = 3,
): Promise<{ reference: A2AServerRound[]; durablePeer: A2AServerRound[]; ours: A2AServerRound[] }> {
  const configPath = join(dir, 'a2a-load.json5');
  writeFileSync(
    configPath,
    // A configured peer: callers without credentials are held to a2a.server.anonymousMaxRequestsPerMinute (120).
    `{ ${LANES} agents: { list: [{ id: "echo", model: "scripted/echo" }] }, a2a: { server: { enabled: true, peers: [{ id: "load", token: "${PEER_TOKEN}", maxRequestsPerMinute: 1000000 }] } },
       models: { providers: { scripted: { type: "scripted", models: { echo: { rules: [{ reply: "echo: {{input}}" }] } } } } } }`,
  );
  const connections = 50;
  const peer = { 'a2a-version': '1.0', authorization: `Bearer ${PEER_TOKEN}` };
  const servers = {
    reference: await startServer(['--import', 'tsx', join(root, 'bench/a2a-reference-server.ts')], root),
    durablePeer: await startServer(['--import', 'tsx', join(root, 'bench/a2a-durable-peer.ts')], root),
    ours: await startServer([join(root, 'bin/switchboard.js'), '--json', '--config', configPath, 'gateway', '--port', '0'], root),
  };
  const target = (name: keyof typeof servers) =>
    name === 'ours' ? ([`${servers.ours.url}/a2a/echo/jsonrpc`, peer] as const) : ([`${servers[name].url}/rpc`, undefined] as const);
  const results = { reference: [] as A2AServerRound[], durablePeer: [] as A2AServerRound[], ours: [] as A2AServerRound[] };
  try {
    // A warm-up of each (the JIT, the first pages of each store), then the measured rounds, alternating.
    for (const name of ['reference', 'durablePeer', 'ours'] as const)
      await load(target(name)[0], Math.min(5, seconds), connections, sendMessage, target(name)[1]);
    for (let round = 0; round < rounds; round += 1) {
      for (const name of ['reference', 'durablePeer', 'ours'] as const) {
        const before = cpuMsOf(servers[name].child.pid);
        const result = await load(target(name)[0], seconds, connections, sendMessage, target(name)[1]);
        const answered = result.rps * seconds;
        results[name].push({ ...result, cpuMsPerRequest: answered > 0 ? (cpuMsOf(servers[name].child.pid) - before) / answered : 0 });
      }
    }
    return results;
  } finally {
    for (const server of Object.values(servers)) await stop(server.child);
  }
}

/**
 * Waited sends through the control API from 1,000 sessions (a user on channel "load", peers 0-999), 200 at a time,
 * against the gateway process: what `POST /v1/send` with `wait: true` sustains.
 */
export async function controlApiLoad(root: string, dir: string, seconds: number): Promise<LoadResult> {
  const configPath = join(dir, 'api-load.json5');
  writeFileSync(
    configPath,
    `{ ${LANES} agents: { list: [{ id: "echo", model: "scripted/echo" }] }, models: { providers: { scripted: { type: "scripted", models: { echo: { rules: [{ reply: "echo: {{input}}" }] } } } } } }`,
  );
  const gateway = await startServer([join(root, 'bin/switchboard.js'), '--json', '--config', configPath, 'gateway', '--port', '0'], root);
  try {
    const token = readFileSync(join(dir, '.switchboard', 'token'), 'utf8').trim();
    const body = (n: number) => ({
      target: 'echo',
      message: `load ${n}`,
      channel: 'load',
      peer: `p${n % 1000}`,
      wait: true,
      timeoutSeconds: 60,
    });
    const auth = { authorization: `Bearer ${token}` };
    await load(`${gateway.url}/v1/send`, 1, 200, body, auth);
    return await load(`${gateway.url}/v1/send`, seconds, 200, body, auth);
  } finally {
    await stop(gateway.child);
  }
}

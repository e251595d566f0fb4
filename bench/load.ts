/**
 * Load through the gateway's fronts, driven by autocannon from the benchmark process against servers in
 * processes of their own: A2A SendMessage against the SDK's in-memory reference server (one after the other
 * in one run; each request a new task), and waited sends through the control API from 1,000 sessions.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import autocannon from 'autocannon';
import BetterSqlite3 from 'better-sqlite3';
import { prefillTasks } from './prefill.js';

export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
}

/** Spawns a server process (with `env` added to this one's) and waits until what it printed is one JSON object with its URL. */
export async function startServer(
  args: string[],
  cwd: string,
  env: Record<string, string> = {},
): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, args, {
    cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, SWITCHBOARD_LOG_LEVEL: 'error', ...env },
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

/**
 * Requests sent by this process so far: each request's number is new across calls, so a round never repeats an
 * earlier round's messageId (the gateway answers a repeated first message with the task it made, without a run).
 */
let sent = 0;

export function load(
  url: string,
  seconds: number,
  connections: number,
  body: (n: number) => unknown = sendMessage,
  headers: Record<string, string> = { 'a2a-version': '1.0' },
  /** Send this many requests in all instead of loading for `seconds`. */
  amount?: number,
): Promise<LoadResult> {
  return new Promise((resolve, reject) => {
    autocannon(
      {
        url,
        method: 'POST',
        connections,
        ...(amount === undefined ? { duration: seconds } : { amount }),
        timeout: 60,
        headers: { 'content-type': 'application/json', ...headers },
        requests: [{ setupRequest: (request) => ({ ...request, body: JSON.stringify(body(++sent)) }) }],
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

/**
 * The gateway of the A2A load: one scripted agent, exposed over A2A to one configured peer (callers without
 * credentials are held to a2a.server.anonymousMaxRequestsPerMinute, 120).
 */
export const A2A_LOAD_CONFIG = `{ ${LANES} agents: { list: [{ id: "echo", model: "scripted/echo" }] }, a2a: { server: { enabled: true, peers: [{ id: "load", token: "${PEER_TOKEN}", maxRequestsPerMinute: 1000000 }] } },
       models: { providers: { scripted: { type: "scripted", models: { echo: { rules: [{ reply: "echo: {{input}}" }] } } } } } }`;
/** The headers of that peer's requests. */
export const A2A_LOAD_PEER = { 'a2a-version': '1.0', authorization: `Bearer ${PEER_TOKEN}` };

/** CPU time a process has used so far, in milliseconds (Linux /proc; 0 where there is none). */
export function cpuMsOf(pid: number | undefined): number {
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

/** How docs/deploy.md says to run a gateway under load (and `npm start` does): a larger young generation. */
const GATEWAY_NODE_FLAGS = ['--max-semi-space-size=64'];

/** A gateway process serving `configPath` (a new data directory beside it), as the loads start one. */
export const gatewayArgs = (root: string, configPath: string) => [
  ...GATEWAY_NODE_FLAGS,
  join(root, 'bin/switchboard.js'),
  '--json',
  '--config',
  configPath,
  'gateway',
  '--port',
  '0',
];

/**
 * A gateway whose store already holds `tasks` finished A2A tasks: started once for one real request (whose rows are
 * the template), stopped, filled with copies of those rows (prefill.ts), and started again. Before the copies, the
 * store of that one request is also copied to `templatePath`, for the durable peer that writes the same rows.
 */
async function prefilledGateway(root: string, configPath: string, tasks: number, headers: Record<string, string>, templatePath: string) {
  const first = await startServer(gatewayArgs(root, configPath), root);
  await load(`${first.url}/a2a/echo/jsonrpc`, 0, 1, sendMessage, headers, 1);
  await stop(first.child);
  const dbPath = join(dirname(configPath), '.switchboard', 'switchboard.db');
  const db = new BetterSqlite3(dbPath);
  db.prepare('VACUUM INTO ?').run(templatePath);
  db.close();
  prefillTasks(dbPath, tasks - 1);
  return startServer(gatewayArgs(root, configPath), root);
}

export type A2AServerName = 'reference' | 'durablePeer' | 'peerSameRows' | 'ours' | 'prefilled';

/**
 * Issue 30's comparison: the SDK's in-memory reference server, the durable peer built from the SDK's own parts
 * (a2a-durable-peer.ts), that peer also writing the rows a gateway's request leaves, this gateway, and this gateway
 * over a store that holds `prefill` tasks before it starts, each in a process of its own, in `rounds` alternating
 * rounds of `seconds` with 50 connections, a new task per request; requests per second and the server's CPU per
 * request, each round.
 */
export async function a2aLoad(
  root: string,
  dir: string,
  seconds: number,
  rounds = 3,
  prefill = 100_000,
): Promise<Record<A2AServerName, A2AServerRound[]>> {
  const config = A2A_LOAD_CONFIG;
  const configPaths = { ours: join(dir, 'ours', 'a2a-load.json5'), prefilled: join(dir, 'prefilled', 'a2a-load.json5') };
  for (const path of Object.values(configPaths)) {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, config);
  }
  const connections = 50;
  const peer = A2A_LOAD_PEER;
  const durablePeer = ['--import', 'tsx', join(root, 'bench/a2a-durable-peer.ts')];
  const oneRequest = join(dir, 'one-request.db');
  const prefilled = await prefilledGateway(root, configPaths.prefilled, prefill, peer, oneRequest);
  const servers: Record<A2AServerName, { child: ChildProcess; url: string }> = {
    reference: await startServer(['--import', 'tsx', join(root, 'bench/a2a-reference-server.ts')], root),
    durablePeer: await startServer(durablePeer, root),
    peerSameRows: await startServer(durablePeer, root, { SAME_ROWS_DB: oneRequest }),
    ours: await startServer(gatewayArgs(root, configPaths.ours), root),
    prefilled,
  };
  const names = Object.keys(servers) as A2AServerName[];
  const target = (name: A2AServerName) =>
    name === 'ours' || name === 'prefilled'
      ? ([`${servers[name].url}/a2a/echo/jsonrpc`, peer] as const)
      : ([`${servers[name].url}/rpc`, undefined] as const);
  const results = Object.fromEntries(names.map((name) => [name, [] as A2AServerRound[]])) as Record<A2AServerName, A2AServerRound[]>;
  try {
    // A warm-up of each (the JIT, the first pages of each store), then the measured rounds, alternating.
    for (const name of names) await load(target(name)[0], Math.min(5, seconds), connections, sendMessage, target(name)[1]);
    for (let round = 0; round < rounds; round += 1) {
      for (const name of names) {
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

/** The gateway of the waited sends: one scripted agent that answers at once. */
export const WAITED_SEND_CONFIG = `{ ${LANES} agents: { list: [{ id: "echo", model: "scripted/echo" }] }, models: { providers: { scripted: { type: "scripted", models: { echo: { rules: [{ reply: "echo: {{input}}" }] } } } } } }`;

/** A gateway process and the requests of one load against it. */
export interface LoadTarget {
  child: ChildProcess;
  /** Where the load's requests go. */
  url: string;
  body: (n: number) => unknown;
  headers: Record<string, string>;
}

/**
 * A gateway process serving `config` from `dir` (its data directory inside), with the waited sends of 1,000 sessions
 * (a user on channel "load", peers 0-999) aimed at its control API: `POST /v1/send` with `wait: true`.
 */
export async function waitedSendTarget(root: string, dir: string, config = WAITED_SEND_CONFIG): Promise<LoadTarget> {
  const configPath = join(dir, 'api-load.json5');
  writeFileSync(configPath, config);
  const gateway = await startServer(gatewayArgs(root, configPath), root);
  const token = readFileSync(join(dir, '.switchboard', 'token'), 'utf8').trim();
  return {
    ...gateway,
    url: `${gateway.url}/v1/send`,
    body: (n) => ({ target: 'echo', message: `load ${n}`, channel: 'load', peer: `p${n % 1000}`, wait: true, timeoutSeconds: 60 }),
    headers: { authorization: `Bearer ${token}` },
  };
}

/** A gateway process serving `config` (A2A_LOAD_CONFIG's agent and peer) from `dir`, with the A2A load aimed at it. */
export async function a2aTarget(root: string, dir: string, config = A2A_LOAD_CONFIG): Promise<LoadTarget> {
  const configPath = join(dir, 'a2a-load.json5');
  writeFileSync(configPath, config);
  const gateway = await startServer(gatewayArgs(root, configPath), root);
  return { ...gateway, url: `${gateway.url}/a2a/echo/jsonrpc`, body: sendMessage, headers: A2A_LOAD_PEER };
}

/** Waited sends through the control API from 1,000 sessions, 200 at a time, against the gateway process: what it sustains. */
export async function controlApiLoad(root: string, dir: string, seconds: number): Promise<LoadResult> {
  const target = await waitedSendTarget(root, dir);
  try {
    await load(target.url, 1, 200, target.body, target.headers);
    return await load(target.url, seconds, 200, target.body, target.headers);
  } finally {
    await stop(target.child);
  }
}

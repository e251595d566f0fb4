/**
 * Several gateways on one PostgreSQL database (docs/deploy.md): waited sends through the control API from 1,000
 * sessions with 1, 2 and 3 gateway processes on PostgreSQL and with one on SQLite, the same load in one run, the
 * connections spread evenly over the gateways; and the time from a SIGKILL to another gateway taking the run over.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { LANES, load, startServer, stop, type LoadResult } from './load.js';

const CONNECTIONS = 120;

/** The machine's busy and total CPU time so far, in jiffies (Linux /proc/stat; zeros where there is none). */
function cpuTimes(): { busy: number; total: number } {
  try {
    const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    const total = fields.reduce((sum, value) => sum + value, 0);
    // idle and iowait
    return { busy: total - fields[3]! - (fields[4] ?? 0), total };
  } catch {
    return { busy: 0, total: 0 };
  }
}

/** A load's result with what the whole machine spent on it: the share of its CPU that was busy, and CPU ms per message. */
export interface MeasuredLoad extends LoadResult {
  busyShare: number;
  cpuMsPerMessage: number;
}

function gatewayDir(configText: string): { dir: string; configPath: string } {
  const dir = mkdtempSync(join(tmpdir(), 'sb-bench-cluster-'));
  const configPath = join(dir, 'switchboard.json5');
  writeFileSync(configPath, configText);
  return { dir, configPath };
}

const echo = `agents: { list: [{ id: "echo", model: "scripted/echo" }] }, models: { providers: { scripted: { type: "scripted", models: { echo: { rules: [{ reply: "echo: {{input}}" }] } } } } }`;

export async function dropSchema(url: string, schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await client.end();
}

/**
 * `gateways` processes on one store (`store` is the config's store section), loaded together for `seconds` after
 * `warmUpSeconds` of the same load.
 */
async function loadGateways(root: string, store: string, gateways: number, seconds: number, warmUpSeconds: number): Promise<MeasuredLoad> {
  const started: { child: import('node:child_process').ChildProcess; url: string; dir: string }[] = [];
  try {
    for (let i = 0; i < gateways; i += 1) {
      const { dir, configPath } = gatewayDir(`{ ${LANES} ${store} ${echo} }`);
      const server = await startServer(
        [join(root, 'bin/switchboard.js'), '--json', '--config', configPath, 'gateway', '--port', '0'],
        root,
      );
      started.push({ ...server, dir });
    }
    // Every gateway of a store answers to its one token.
    const token = readFileSync(join(started[0]!.dir, '.switchboard', 'token'), 'utf8').trim();
    const auth = { authorization: `Bearer ${token}` };
    const run = (duration: number) =>
      Promise.all(
        started.map((gateway, index) =>
          load(
            `${gateway.url}/v1/send`,
            duration,
            Math.floor(CONNECTIONS / gateways),
            // Each gateway's share of the 1,000 sessions, so that no session's lease is fought over.
            (n) => ({
              target: 'echo',
              message: `load ${n}`,
              channel: 'load',
              peer: `g${index}-p${n % Math.ceil(1000 / gateways)}`,
              wait: true,
              timeoutSeconds: 60,
            }),
            auth,
          ),
        ),
      );
    await run(warmUpSeconds);
    const before = cpuTimes();
    const results = await run(seconds);
    const after = cpuTimes();
    const rps = results.reduce((sum, result) => sum + result.rps, 0);
    // Jiffies are 1/100 s on Linux: busy jiffies over the messages carried, in ms of one core.
    const busyShare = (after.busy - before.busy) / Math.max(1, after.total - before.total);
    return {
      busyShare,
      cpuMsPerMessage: ((after.busy - before.busy) * 10) / Math.max(1, rps * seconds),
      rps: results.reduce((sum, result) => sum + result.rps, 0),
      p50: Math.max(...results.map((result) => result.p50)),
      p99: Math.max(...results.map((result) => result.p99)),
      errors: results.reduce((sum, result) => sum + result.errors, 0),
      non2xx: results.reduce((sum, result) => sum + result.non2xx, 0),
    };
  } finally {
    for (const gateway of started) await stop(gateway.child);
  }
}

export interface ClusterLoad {
  sqlite: MeasuredLoad;
  postgres: MeasuredLoad[];
}

/**
 * Each configuration measured after `warmUpSeconds` of its load. From a cold start a gateway's throughput climbs for
 * about 6 s on SQLite and 10 s or more on PostgreSQL (its code is compiled as it runs, the 1,000 sessions are created
 * by their first messages, the tables' first statistics are taken), so a short warm-up measures the start more than
 * the load.
 */
export async function clusterLoad(root: string, url: string, seconds: number, warmUpSeconds: number): Promise<ClusterLoad> {
  const sqlite = await loadGateways(root, '', 1, seconds, warmUpSeconds);
  const postgres: MeasuredLoad[] = [];
  for (const gateways of [1, 2, 3]) {
    const schema = `sb_bench_cluster_${process.pid}_${gateways}`;
    try {
      postgres.push(
        await loadGateways(root, `store: { driver: "postgres", url: "${url}", schema: "${schema}" },`, gateways, seconds, warmUpSeconds),
      );
    } finally {
      await dropSchema(url, schema);
    }
  }
  return { sqlite, postgres };
}

/**
 * Two gateways on PostgreSQL with `lanes.leaseTtlSeconds: ttl`: a run that takes a minute starts on one, which is
 * SIGKILLed; the time until the other records the run interrupted (its takeover). `kills` times, each on a new pair.
 */
export async function takeoverTimes(root: string, url: string, kills: number, ttlSeconds: number): Promise<number[]> {
  const times: number[] = [];
  for (let kill = 0; kill < kills; kill += 1)
    times.push(await oneTakeover(root, url, ttlSeconds, `sb_bench_takeover_${process.pid}_${kill}`));
  return times;
}

async function oneTakeover(root: string, url: string, ttlSeconds: number, schema: string): Promise<number> {
  const store = `store: { driver: "postgres", url: "${url}", schema: "${schema}" }, lanes: { leaseTtlSeconds: ${ttlSeconds} },`;
  const models = `agents: { list: [{ id: "slow", model: "scripted/slow" }] }, models: { providers: { scripted: { type: "scripted", models: { slow: { rules: [{ delayMs: 60000, reply: "late" }] } } } } }`;
  const start = (dir: { configPath: string }) =>
    startServer([join(root, 'bin/switchboard.js'), '--json', '--config', dir.configPath, 'gateway', '--port', '0'], root);
  const first = gatewayDir(`{ ${store} ${models} }`);
  const victim = await start(first);
  const survivor = await start(gatewayDir(`{ ${store} ${models} }`));
  const db = new pg.Client({ connectionString: url, options: `-c search_path=${schema}` });
  await db.connect();
  try {
    const token = readFileSync(join(first.dir, '.switchboard', 'token'), 'utf8').trim();
    const sent = await fetch(`${victim.url}/v1/send`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ target: 'slow', message: 'a minute of work' }),
    });
    const { inputId } = (await sent.json()) as { inputId: string };
    let runId: string | undefined;
    while (!runId) {
      runId = (await db.query(`SELECT run_id FROM inputs WHERE id = $1 AND status = 'claimed'`, [inputId])).rows[0]?.run_id;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    // A moment into the run, as a crash would come.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const killedAt = Date.now();
    victim.child.kill('SIGKILL');
    for (;;) {
      const { rows } = await db.query(`SELECT created_at FROM events WHERE type = 'run.interrupted' AND run_id = $1`, [runId]);
      if (rows[0]) return Number(rows[0].created_at) - killedAt;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  } finally {
    await stop(survivor.child).catch(() => {});
    await stop(victim.child).catch(() => {});
    await db.end();
    await dropSchema(url, schema);
  }
}

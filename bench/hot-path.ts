/**
 * Issue 58's loads in one run, alternating rounds: the A2A SendMessage load (50 connections, a new task per request)
 * and the control API's waited sends from 1,000 sessions (200 connections), each against a gateway with the store on
 * its event loop (the default), the same gateway with the store on its worker thread (`store.sqlite.thread: "worker"`),
 * a gateway on PostgreSQL, and the A2A SDK's durable peer (bench/a2a-durable-peer.ts), which is loaded with A2A
 * requests at each load's number of connections: "what the same load gets from the durable peer".
 */
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dropSchema } from './cluster.js';
import { fmt, judged, percentile } from './judged.js';
import { A2A_LOAD_CONFIG, A2A_LOAD_PEER, cpuMsOf, gatewayArgs, load, startServer, stop, type LoadResult } from './load.js';
import type { SectionOptions } from './sections.js';

type Server = 'worker' | 'main' | 'postgres' | 'peer';
type Load = 'a2a' | 'waited';
interface Round extends LoadResult {
  cpuMsPerRequest: number;
}

const CONNECTIONS: Record<Load, number> = { a2a: 50, waited: 200 };

export async function hotPathSection(lines: string[], { root, quick }: SectionOptions): Promise<void> {
  const postgres = process.env.SWITCHBOARD_TEST_POSTGRES ?? 'postgres://postgres@127.0.0.1:5432/test';
  const schema = `sb_bench_hot_${process.pid}`;
  const stores: Record<Exclude<Server, 'peer'>, string> = {
    worker: 'store: { sqlite: { thread: "worker" } },',
    main: '',
    postgres: `store: { driver: "postgres", url: "${postgres}", schema: "${schema}" },`,
  };
  const servers = {} as Record<Server, { child: import('node:child_process').ChildProcess; url: string; token?: string }>;
  try {
    for (const [name, store] of Object.entries(stores)) {
      const dir = mkdtempSync(join(tmpdir(), `sb-bench-hot-${name}-`));
      mkdirSync(dir, { recursive: true });
      const configPath = join(dir, 'hot-path.json5');
      writeFileSync(configPath, A2A_LOAD_CONFIG.replace(/^\{/, `{ ${store}`));
      const server = await startServer(gatewayArgs(root, configPath), root);
      servers[name as Server] = { ...server, token: readFileSync(join(dir, '.switchboard', 'token'), 'utf8').trim() };
    }
    servers.peer = await startServer(['--import', 'tsx', join(root, 'bench/a2a-durable-peer.ts')], root);
    const aim = (name: Server, kind: Load) => {
      const server = servers[name];
      if (name === 'peer') return { url: `${server.url}/rpc`, body: undefined, headers: undefined };
      if (kind === 'a2a') return { url: `${server.url}/a2a/echo/jsonrpc`, body: undefined, headers: A2A_LOAD_PEER };
      return {
        url: `${server.url}/v1/send`,
        body: (n: number) => ({
          target: 'echo',
          message: `load ${n}`,
          channel: 'load',
          peer: `p${n % 1000}`,
          wait: true,
          timeoutSeconds: 60,
        }),
        headers: { authorization: `Bearer ${server.token}` },
      };
    };
    const seconds = quick ? 2 : 5;
    const rounds = quick ? 2 : 5;
    const results = {} as Record<Load, Record<Server, Round[]>>;
    for (const kind of ['a2a', 'waited'] as const) {
      results[kind] = { worker: [], main: [], postgres: [], peer: [] };
      const names = Object.keys(servers) as Server[];
      for (const name of names) {
        const { url, body, headers } = aim(name, kind);
        await load(url, quick ? 1 : 3, CONNECTIONS[kind], body, headers);
      }
      for (let round = 0; round < rounds; round += 1) {
        for (const name of names) {
          const { url, body, headers } = aim(name, kind);
          const before = cpuMsOf(servers[name].child.pid);
          const result = await load(url, seconds, CONNECTIONS[kind], body, headers);
          const answered = result.rps * seconds;
          results[kind][name].push({
            ...result,
            cpuMsPerRequest: answered > 0 ? (cpuMsOf(servers[name].child.pid) - before) / answered : 0,
          });
        }
      }
    }
    const rps = (kind: Load, name: Server) =>
      percentile(
        results[kind][name].map((round) => round.rps),
        50,
      );
    const cpu = (kind: Load, name: Server) =>
      fmt(
        percentile(
          results[kind][name].map((round) => round.cpuMsPerRequest),
          50,
        ),
      );
    const p99 = (kind: Load, name: Server) => Math.max(...results[kind][name].map((round) => round.p99));
    const failed = (kind: Load, name: Server) => results[kind][name].reduce((sum, round) => sum + round.errors + round.non2xx, 0);
    const each = (kind: Load) =>
      (['worker', 'main', 'postgres', 'peer'] as const)
        .map(
          (name) =>
            `${name} ${fmt(rps(kind, name), 0)}/s (CPU ${cpu(kind, name)} ms a request, p99 ${p99(kind, name)} ms, ${failed(kind, name)} failed)`,
        )
        .join('; ');
    lines.push(
      `A2A SendMessage, 50 connections, ${rounds} alternating rounds of ${seconds} s (median requests/s): ${each('a2a')}`,
      `  against the durable peer: the store on the event loop (the default) ${judged(rps('a2a', 'main') / rps('a2a', 'peer'), '>=', 1)}, ` +
        `on its worker thread ${judged(rps('a2a', 'worker') / rps('a2a', 'peer'), '>=', 1)} (aim 1.5); worker thread against event loop ${fmt(rps('a2a', 'worker') / rps('a2a', 'main'), 3)}`,
      `waited sends through the control API, 1,000 sessions, 200 connections (the durable peer: A2A SendMessage, 200 connections): ${each('waited')}`,
      `  against the durable peer's rate: the store on the event loop ${judged(rps('waited', 'main') / rps('waited', 'peer'), '>=', 1)}, p99 ${judged(p99('waited', 'main'), '<', 1000, 'ms')}; ` +
        `on its worker thread ${judged(rps('waited', 'worker') / rps('waited', 'peer'), '>=', 1)}, p99 ${judged(p99('waited', 'worker'), '<', 1000, 'ms')}; ` +
        `worker thread against event loop ${fmt(rps('waited', 'worker') / rps('waited', 'main'), 3)}`,
      `  one gateway on PostgreSQL against one on SQLite: ${judged(rps('waited', 'postgres') / rps('waited', 'main'), '>=', 0.5)} (SQLite on the event loop), ` +
        `${judged(rps('waited', 'postgres') / rps('waited', 'worker'), '>=', 0.5)} (on its worker thread)`,
    );
  } finally {
    for (const server of Object.values(servers)) await stop(server.child);
    await dropSchema(postgres, schema).catch(() => {});
  }
}

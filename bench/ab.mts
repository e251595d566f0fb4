/**
 * A paired A/B of two gateway trees (or one tree with two settings) on the A2A load of `--only a2a`: blocking
 * SendMessage, a new task per request, 50 connections. Each variant is a gateway process of its own; after a 5 s
 * warm-up each, they alternate short rounds, and each round of B is compared with the round of A just before it.
 * Short rounds keep the machine's drift (which on a shared 2-core machine moves by a quarter over a minute) out of the
 * pairs; the median of the paired ratios (of 12, the upper of the two middle ones, as `percentile` takes it) is the
 * figure to quote.
 *
 *   npx tsx bench/ab.mts <root>[|NAME=value,...] <root>[|NAME=value,...]
 *   ROUNDS=12 SECS=4 npx tsx bench/ab.mts /tmp/old "/work/main|NODE_OPTIONS=--max-semi-space-size=64"
 *
 * A root is a checkout with a built dist/ (for an older commit: `git worktree add /tmp/old <rev>`, link its
 * node_modules, `npx tsc -p tsconfig.build.json` there). After the `|`, environment variables for that gateway, and
 * `PREFILL=<n>`, which starts that gateway on a store already holding n finished tasks (prefill.ts): whether a
 * request costs more as tasks pile up, paired within one run:
 *
 *   npx tsx bench/ab.mts . ".|PREFILL=100000"
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { percentile } from './judged.js';
import { A2A_LOAD_CONFIG, A2A_LOAD_PEER, cpuMsOf, load, startServer, stop } from './load.js';
import { prefillTasks } from './prefill.js';

const rounds = Number(process.env.ROUNDS ?? 12);
const seconds = Number(process.env.SECS ?? 4);

interface Round {
  rps: number;
  cpuMsPerRequest: number;
  p99: number;
  failed: number;
}

function parseVariant(spec: string): { root: string; env: Record<string, string> } {
  const [root, settings = ''] = spec.split('|');
  const env = Object.fromEntries(
    settings
      .split(',')
      .filter(Boolean)
      .map((setting) => [setting.slice(0, setting.indexOf('=')), setting.slice(setting.indexOf('=') + 1)]),
  );
  return { root: root!, env };
}

async function startGateway(spec: string, index: number) {
  const { root, env } = parseVariant(spec);
  const { PREFILL: prefill, ...gatewayEnv } = env;
  const dir = join(tmpdir(), `switchboard-ab-${process.pid}-${index}`);
  mkdirSync(dir, { recursive: true });
  const config = join(dir, 'a2a-load.json5');
  writeFileSync(config, A2A_LOAD_CONFIG);
  const args = [join(root, 'bin/switchboard.js'), '--json', '--config', config, 'gateway', '--port', '0'];
  if (prefill) {
    // One real request's rows are the template of the copies (as `--only a2a` fills its fourth server).
    const first = await startServer(args, root, gatewayEnv);
    await load(`${first.url}/a2a/echo/jsonrpc`, 0, 1, undefined, A2A_LOAD_PEER, 1);
    await stop(first.child);
    prefillTasks(join(dir, '.switchboard', 'switchboard.db'), Number(prefill) - 1);
  }
  const server = await startServer(args, root, gatewayEnv);
  return { ...server, url: `${server.url}/a2a/echo/jsonrpc` };
}

/** The median as the rest of the benchmarks take it (of an even count, the upper of the two middle values). */
const median = (values: number[]) => percentile(values, 50);

const specs = process.argv.slice(2);
if (specs.length !== 2) throw new Error('give two variants: <root>[|NAME=value,...] <root>[|NAME=value,...]');
const gateways = [await startGateway(specs[0]!, 0), await startGateway(specs[1]!, 1)];
try {
  for (const gateway of gateways) await load(gateway.url, 5, 50, undefined, A2A_LOAD_PEER);
  const results: Round[][] = [[], []];
  for (let round = 0; round < rounds; round += 1) {
    for (const [i, gateway] of gateways.entries()) {
      const before = cpuMsOf(gateway.child.pid);
      const result = await load(gateway.url, seconds, 50, undefined, A2A_LOAD_PEER);
      const answered = result.rps * seconds;
      results[i]!.push({
        rps: result.rps,
        cpuMsPerRequest: (cpuMsOf(gateway.child.pid) - before) / answered,
        p99: result.p99,
        failed: result.errors + result.non2xx,
      });
    }
  }
  for (const [i, spec] of specs.entries()) {
    console.log(`${i === 0 ? 'A' : 'B'}: ${spec}`);
    for (const round of results[i]!)
      console.log(
        `  ${round.rps.toFixed(0)}/s, ${round.cpuMsPerRequest.toFixed(2)} ms CPU per request, p99 ${round.p99} ms, ${round.failed} failed`,
      );
  }
  const [a, b] = results as [Round[], Round[]];
  const paired = (pick: (round: Round) => number) => a.map((round, i) => pick(b[i]!) / pick(round));
  console.log(
    `B against A, median of the ${rounds} paired rounds: requests/s ${median(paired((round) => round.rps)).toFixed(3)}, CPU per request ${median(paired((round) => round.cpuMsPerRequest)).toFixed(3)}`,
  );
} finally {
  for (const gateway of gateways) await stop(gateway.child);
}

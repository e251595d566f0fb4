/**
 * `npm run bench`: the numbers in BENCHMARKS.md. Each comparison is a ratio measured in the same run,
 * because the machines are noisy. Pass --quick for a short smoke run.
 */
import { fmt, judged, OPENCLAW_BYTES, percentile } from './judged.js';
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { parseConfigText } from '../src/config/load.js';
import { startGateway } from '../src/app.js';
import { SqliteStore, type SqliteSynchronous } from '../src/store/sqlite/sqlite-store.js';
import { toolJsonSchema } from '../src/tools/tool-contract.js';
import { controlApiLoad } from './load.js';
import { postgresClaims, sqliteClaims } from './board.js';
import { clusterLoad, takeoverTimes, type MeasuredLoad } from './cluster.js';
import { a2aComparison, consoleSection, mailboxSection, runtimesSection, workTools } from './sections.js';
import { wireBytes } from './tools.js';
import { stepsSection } from './steps.js';
import { hotPathSection } from './hot-path.js';
import { telemetrySection } from './telemetry.js';

const quick = process.argv.includes('--quick');
/** `--only <section>` (cluster, tools, a2a, mailbox, runtimes, console, steps, telemetry, hot-path): only that section (the rest takes minutes). */
const only = process.argv.includes('--only') ? process.argv[process.argv.indexOf('--only') + 1] : undefined;
const ROOT = resolve(import.meta.dirname, '..');
const tmp = () => mkdtempSync(join(tmpdir(), 'sb-bench-'));

/** Accepts per second: raw single-row inserts vs the store's enqueue, alternating, best of `rounds` each. */
async function acceptThroughput(synchronous: SqliteSynchronous, count: number, rounds = 3) {
  let rawPerSec = 0;
  let storePerSec = 0;
  for (let round = 0; round < rounds; round += 1) {
    rawPerSec = Math.max(rawPerSec, rawInserts(synchronous, count));
    storePerSec = Math.max(storePerSec, await storeAccepts(synchronous, count));
  }
  return { rawPerSec, storePerSec, ratio: storePerSec / rawPerSec };
}

/** One prepared INSERT per row, autocommit, into the same table shape with the same pragmas. */
function rawInserts(synchronous: SqliteSynchronous, count: number): number {
  const rawDb = new BetterSqlite3(join(tmp(), 'raw.db'));
  rawDb.pragma('journal_mode = WAL');
  rawDb.pragma(`synchronous = ${synchronous}`);
  rawDb.exec(`CREATE TABLE inputs (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, session_key TEXT NOT NULL,
    idempotency_key TEXT NOT NULL UNIQUE, mode TEXT NOT NULL, status TEXT NOT NULL, attempts INTEGER NOT NULL, text TEXT NOT NULL,
    provenance TEXT NOT NULL, run_id TEXT, note TEXT, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL)`);
  rawDb.exec('CREATE INDEX i1 ON inputs(session_key, status, seq)');
  rawDb.exec('CREATE INDEX i2 ON inputs(status, created_at)');
  rawDb.exec('CREATE INDEX i3 ON inputs(run_id)');
  const insert = rawDb.prepare(
    `INSERT INTO inputs (id, session_key, idempotency_key, mode, status, attempts, text, provenance, created_at, updated_at) VALUES (?, ?, ?, 'followup', 'queued', 0, ?, ?, ?, ?)`,
  );
  const start = performance.now();
  for (let i = 0; i < count; i += 1) insert.run(`raw-${i}`, 'agent:a:main', `k-${i}`, 'hello', '{"kind":"user"}', Date.now(), Date.now());
  const perSec = count / ((performance.now() - start) / 1000);
  rawDb.close();
  return perSec;
}

async function storeAccepts(synchronous: SqliteSynchronous, count: number): Promise<number> {
  const store = await SqliteStore.open({ path: join(tmp(), 'store.db'), synchronous });
  await store.sessions.ensure({ key: 'agent:a:main', agentId: 'a' }, Date.now());
  const start = performance.now();
  for (let i = 0; i < count; i += 1) {
    await store.inputs.enqueue(
      {
        id: `in-${i}`,
        sessionKey: 'agent:a:main',
        idempotencyKey: `k-${i}`,
        mode: 'followup',
        text: 'hello',
        provenance: { kind: 'user' },
      },
      Date.now(),
    );
  }
  const perSec = count / ((performance.now() - start) / 1000);
  await store.close();
  return perSec;
}

const benchConfig = `{
  agents: { list: [{ id: "echo", model: "scripted/echo" }] },
  models: { providers: { scripted: { type: "scripted", models: { echo: { rules: [{ reply: "ok: {{input}}" }] } } } } },
}`;

async function roundTrips(count: number, parallelSessions: number, synchronous: SqliteSynchronous = 'FULL') {
  const { config } = parseConfigText(
    benchConfig.replace('agents:', `lanes: { main: { maxConcurrent: ${Math.max(4, parallelSessions)} } }, agents:`),
    '/bench.json5',
    {},
  );
  const store = await SqliteStore.open({ path: join(tmp(), 'rt.db'), synchronous, exclusive: true });
  const gateway = await startGateway({ config, store, gatewayId: 'bench' });
  // Warm up the code paths: the first few hundred sends run before the JIT has compiled them, and this is the
  // first gateway of the run, so without it the first setting measured (FULL) paid for that and the next did not.
  for (let i = 0; i < Math.min(500, count); i += 1) {
    await gateway.waitForInput(
      (await gateway.send({ target: `agent:echo:bench:direct:warm-${i}`, message: 'warm', waiting: true })).input.id,
      10_000,
    );
  }

  // Each message to a session of its own: the cost per message, not the cost of a growing history. Sent as a
  // waited send is (`send --wait`, `wait: true`): acknowledged by the reply, whose commit's sync covers the input.
  const latencies: number[] = [];
  for (let i = 0; i < count; i += 1) {
    const start = performance.now();
    const sent = await gateway.send({ target: `agent:echo:bench:direct:fresh-${i}`, message: `m${i}`, waiting: true });
    await gateway.waitForInput(sent.input.id, 10_000);
    latencies.push(performance.now() - start);
  }
  const lastRun = (await gateway.listRuns({ limit: 1 }))[0];
  // The same, in one session whose history grows to the 200 entries a run reads.
  const historyLatencies: number[] = [];
  for (let i = 0; i < Math.max(count, 150); i += 1) {
    const start = performance.now();
    const sent = await gateway.send({ target: 'echo', message: `h${i}`, waiting: true });
    await gateway.waitForInput(sent.input.id, 10_000);
    if (i >= 100) historyLatencies.push(performance.now() - start);
  }

  const perSession = Math.max(1, Math.floor((count * 2) / parallelSessions));
  const start = performance.now();
  await Promise.all(
    Array.from({ length: parallelSessions }, async (_, s) => {
      for (let i = 0; i < perSession; i += 1) {
        const sent = await gateway.send({ target: `agent:echo:bench:direct:peer-${s}`, message: `p${i}`, waiting: true });
        await gateway.waitForInput(sent.input.id, 60_000);
      }
    }),
  );
  const parallelPerSec = (parallelSessions * perSession) / ((performance.now() - start) / 1000);
  await gateway.stop();
  await store.close();
  return {
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    historyP50: percentile(historyLatencies, 50),
    parallelPerSec,
    preambleChars: lastRun.preambleChars,
    promptChars: lastRun.promptChars,
  };
}

/**
 * The AI SDK's own cost for one call of the same scripted model, made as the gateway makes it when nobody
 * watches the deltas (generateText): the floor under any run.
 */
async function sdkFloor(count: number): Promise<number> {
  const { generateText } = await import('ai');
  const { ScriptedLanguageModel } = await import('../src/models/scripted-model.js');
  const model = new ScriptedLanguageModel('echo', { rules: [{ match: '.*', reply: 'ok' }] });
  const times: number[] = [];
  for (let i = 0; i < count; i += 1) {
    const start = performance.now();
    await generateText({ model, prompt: 'hi' });
    times.push(performance.now() - start);
  }
  return percentile(times, 50);
}

/**
 * "A sends to B and waits for the reply", each send between fresh sessions, with ping-pong 0 and 5:
 * model calls and prompt characters summed over every run the send caused, and the wall time until
 * the exchange is done (its last turn and any announce committed).
 */
async function agentToAgent(count: number, pingPong: number, sdkCallMs: number, ledger = true, announce = false) {
  const { config } = parseConfigText(
    `{
      tools: { agentToAgent: { enabled: true }, sessions: { visibility: "all" } },
      session: { agentToAgent: { maxPingPongTurns: ${pingPong}, maxSendsPerMinute: 1000000 } },
      agents: { list: [{ id: "a", model: "scripted/a" }, { id: "b", model: "scripted/b" }] },
      models: { providers: { scripted: { type: "scripted", models: {
        a: { rules: [
          { match: "agent-to-agent turn", reply: "a follows up" },
          { match: "ask (\\\\S+)", steps: [
            { toolCalls: [{ tool: "sessions_send", args: { sessionKey: "agent:b:bench:direct:{{match.1}}", message: "question {{match.1}}", timeoutSeconds: 30 } }] },
            { text: "b said: {{tool.sessions_send.reply}}" },
          ] },
        ] },
        b: { rules: [{ match: "agent-to-agent turn", reply: "b follows up" }, { match: "announce step", reply: "b announces the outcome" }, { reply: "answer to {{input}}" }] },
      } } } },
    }`,
    '/bench-a2a.json5',
    {},
  );
  const store = await SqliteStore.open({ path: join(tmp(), 'a2a.db'), synchronous: 'FULL', exclusive: true });
  const gateway = await startGateway({ config, store, gatewayId: 'bench', withoutToolLedger: !ledger });
  const exchangeDone = async (requester: string) => {
    for (;;) {
      const [exchange] = await gateway.listExchanges({ sessionKey: requester });
      if (exchange?.phase === 'done') return;
      await new Promise((r) => setTimeout(r, 0));
    }
  };
  const latencies: number[] = [];
  const calls: number[] = [];
  const prompt: number[] = [];
  const bytesSent: number[] = [];
  const toolBytes: number[] = [];
  let maxPreamble = 0;
  for (let i = -5; i < count; i += 1) {
    const peer = `p${i + 5}`;
    const requester = `agent:a:bench:direct:${peer}`;
    // With announce: b's session has a channel (a user wrote to it before), so the announce step runs too.
    if (announce)
      await gateway.waitForInput(
        (await gateway.send({ target: `agent:b:bench:direct:${peer}`, message: 'hello', inbound: { channel: 'bench', peer } })).input.id,
        30_000,
      );
    const since = Date.now();
    const start = performance.now();
    const sent = await gateway.send({ target: requester, message: `ask ${peer}` });
    await gateway.waitForInput(sent.input.id, 30_000);
    await exchangeDone(requester);
    const elapsed = performance.now() - start;
    if (i < 0) continue; // warm-up
    latencies.push(elapsed);
    const runs = [
      ...(await gateway.listRuns({ sessionKey: requester })),
      ...(await gateway.listRuns({ sessionKey: `agent:b:bench:direct:${peer}` })),
    ].filter((run) => run.startedAt >= since);
    calls.push(runs.reduce((sum, run) => sum + run.usage.modelCalls, 0));
    prompt.push(runs.reduce((sum, run) => sum + run.promptChars, 0));
    bytesSent.push(runs.reduce((sum, run) => sum + run.request.bytes, 0));
    toolBytes.push(runs.reduce((sum, run) => sum + run.request.toolBytes, 0));
    maxPreamble = Math.max(maxPreamble, ...runs.map((run) => run.preambleChars));
  }
  await gateway.stop();
  await store.close();
  const p50 = percentile(latencies, 50);
  const callsP50 = percentile(calls, 50);
  return {
    p50,
    p99: percentile(latencies, 99),
    overheadP50: p50 - callsP50 * sdkCallMs,
    overheadP99: percentile(latencies, 99) - callsP50 * sdkCallMs,
    calls: callsP50,
    maxCalls: Math.max(...calls),
    promptChars: percentile(prompt, 50),
    requestBytes: percentile(bytesSent, 50),
    toolBytes: percentile(toolBytes, 50),
    maxPreamble,
  };
}

/**
 * The tool-call ledger's cost on the waited agent-to-agent send (one sessions_send per exchange): the
 * same benchmark with and without the ledger, alternated in rounds so that drift in the machine's speed
 * hits both alike.
 */
async function ledgerCost(count: number, sdkCallMs: number) {
  const withLedger: number[] = [];
  const without: number[] = [];
  for (let round = 0; round < 3; round += 1) {
    withLedger.push((await agentToAgent(count, 0, sdkCallMs, true)).p50);
    without.push((await agentToAgent(count, 0, sdkCallMs, false)).p50);
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[1];
  return { withMs: median(withLedger), withoutMs: median(without), ratio: median(withLedger) / median(without) };
}

/**
 * Sub-agents: (1) spawn-to-completion per child, one at a time: from sessions_spawn until the completion
 * event is an input of the parent session, with a zero-latency scripted child; (2) `fanOut` children
 * spawned at once through the subagent lane (maxConcurrent 8): the time until the parent has consumed
 * every completion, the process's peak RSS, and a check that no child was lost or completed twice.
 */
async function subagents(count: number, fanOut: number, sdkCallMs: number) {
  const { config } = parseConfigText(
    `{
      agents: { defaults: { subagents: { maxChildrenPerAgent: ${fanOut + 10}, maxConcurrent: 8 } }, list: [{ id: "boss", model: "scripted/boss" }] },
      models: { providers: { scripted: { type: "scripted", models: { boss: { rules: [{ match: "sub-agent", reply: "ack" }, { reply: "done {{input}}" }] } } } } },
    }`,
    '/bench-subagents.json5',
    {},
  );
  const open = async (name: string) => {
    const store = await SqliteStore.open({ path: join(tmp(), name), synchronous: 'FULL', exclusive: true });
    const gateway = await startGateway({ config, store, gatewayId: 'bench' });
    return { store, gateway };
  };
  const spawner = (sessionKey: string, i: number) => ({ sessionKey, agentId: 'boss', idempotencyKey: `bench:${i}` });

  const one = await open('spawn.db');
  const parent = 'agent:boss:bench:direct:spawner';
  await one.gateway.openSession(parent, 'boss');
  const latencies: number[] = [];
  for (let i = -5; i < count; i += 1) {
    const start = performance.now();
    const { childSessionKey } = await one.gateway.subagents.spawn(spawner(parent, i), { task: `t${i}` });
    for (;;) {
      const record = await one.store.subagents.getBySession(childSessionKey);
      if (record?.completion === 'delivered') break;
      await new Promise((r) => setTimeout(r, 0));
    }
    if (i >= 0) latencies.push(performance.now() - start);
  }
  await one.gateway.stop();
  await one.store.close();

  const many = await open('fanout.db');
  const boss = 'agent:boss:bench:direct:fanout';
  await many.gateway.openSession(boss, 'boss');
  let peakRss = process.memoryUsage().rss;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 20);
  const start = performance.now();
  for (let i = 0; i < fanOut; i += 1) await many.gateway.subagents.spawn(spawner(boss, i), { task: `part ${i}` });
  const spawnedMs = performance.now() - start;
  for (;;) {
    const queued = (await many.store.inputs.listQueued(boss)).length;
    const live = await many.store.subagents.count({ parentSession: boss, states: ['pending', 'running'] });
    const undelivered = await many.store.subagents.countUndelivered(boss);
    if (queued === 0 && live === 0 && undelivered === 0 && !many.gateway.status().activeRuns.some((run) => run.sessionKey === boss)) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  const totalMs = performance.now() - start;
  clearInterval(sampler);
  const children = await many.store.subagents.list({ parentSession: boss, limit: fanOut + 10 });
  const completions = (await many.store.inputs.list({ sessionKey: boss })).filter(
    (input) => input.provenance.kind === 'subagent_completion',
  );
  const perChild = new Map<string, number>();
  for (const input of completions) perChild.set(input.provenance.subagent!.id, (perChild.get(input.provenance.subagent!.id) ?? 0) + 1);
  const transcript = await many.store.transcript.list(boss);
  const inTranscript = new Set(
    transcript.filter((entry) => entry.provenance?.kind === 'subagent_completion').map((entry) => entry.inputId),
  );
  await many.gateway.stop();
  await many.store.close();
  const p50 = percentile(latencies, 50);
  return {
    p50,
    p99: percentile(latencies, 99),
    overheadP50: p50 - sdkCallMs,
    overheadP99: percentile(latencies, 99) - sdkCallMs,
    fanOut,
    spawnedMs,
    totalMs,
    peakRssMb: peakRss / 1024 / 1024,
    succeeded: children.filter((child) => child.state === 'succeeded').length,
    lost: fanOut - children.length + children.filter((child) => child.state !== 'succeeded' || !perChild.has(child.id)).length,
    twice: [...perChild.values()].filter((n) => n > 1).length,
    consumedOnce: completions.filter((input) => input.status === 'consumed' && inTranscript.has(input.id)).length,
  };
}

/** Characters of tool definitions sent with every model call: names, descriptions and JSON schemas. */
async function toolDefinitionChars(): Promise<{ chars: number; tools: number }> {
  const { BUILTIN_TOOLS } = await import('../src/tools/builtin.js');
  const { createSessionTools } = await import('../src/gateway/messaging/session-tools.js');
  const { createSubagentTools } = await import('../src/gateway/subagents/subagent-tools.js');
  const tools = [...BUILTIN_TOOLS, ...createSessionTools({} as never), ...createSubagentTools({} as never, {} as never)];
  return {
    chars: JSON.stringify(tools.map((t) => ({ name: t.name, description: t.description, parameters: toolJsonSchema(t.parameters) })))
      .length,
    tools: tools.length,
  };
}

async function coldStart(): Promise<{ processMs: number; gatewayMs: number }> {
  const dir = tmp();
  const configPath = join(dir, 'switchboard.json5');
  const { writeFileSync } = await import('node:fs');
  writeFileSync(configPath, benchConfig);
  const start = performance.now();
  const child = spawn(process.execPath, [join(ROOT, 'bin/switchboard.js'), '--json', '--config', configPath, 'gateway', '--port', '0'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  const ready = await new Promise<{ readyMs: number }>((resolvePromise) => {
    child.stdout!.on('data', (chunk) => {
      out += chunk;
      try {
        resolvePromise(JSON.parse(out));
      } catch {
        // wait for the rest
      }
    });
  });
  const processMs = performance.now() - start;
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
  return { processMs, gatewayMs: ready.readyMs };
}

/** Several gateways on one PostgreSQL database: messages per second with 1, 2 and 3 of them and with SQLite, and takeover. */
async function severalGateways(lines: string[]): Promise<void> {
  const postgres = process.env.SWITCHBOARD_TEST_POSTGRES ?? 'postgres://postgres@127.0.0.1:5432/test';
  const cluster = await clusterLoad(ROOT, postgres, quick ? 3 : 10, quick ? 1 : 10);
  const [one, two, three] = cluster.postgres;
  const line = (name: string, result: MeasuredLoad) =>
    `${name} ${fmt(result.rps, 0)}/s (p50 ${result.p50} ms, p99 ${result.p99} ms, ${result.errors + result.non2xx} failed; machine ${fmt(result.busyShare * 100, 0)}% busy, ${fmt(result.cpuMsPerMessage)} CPU ms per message)`;
  lines.push(
    `waited sends through the control API, 1,000 sessions, 120 connections spread over the gateways: ${line('SQLite, 1 gateway:', cluster.sqlite)}; ` +
      `PostgreSQL ${line('1 gateway:', one!)}, ${line('2 gateways:', two!)}, ${line('3 gateways:', three!)}`,
  );
  lines.push(
    `  2 gateways on PostgreSQL against 1: ${judged(two!.rps / one!.rps, '>=', 1.5)}; 3 against 1: ${fmt(three!.rps / one!.rps)}; 1 gateway on PostgreSQL against 1 on SQLite: ${judged(one!.rps / cluster.sqlite.rps, '>=', 0.5)}`,
  );
  lines.push(
    `  CPU per message, the whole machine (gateways, PostgreSQL, load): 2 gateways against 1 ${fmt(two!.cpuMsPerMessage / one!.cpuMsPerMessage)}, 3 against 1 ${fmt(three!.cpuMsPerMessage / one!.cpuMsPerMessage)}`,
  );
  const ttl = 3;
  const times = await takeoverTimes(ROOT, postgres, quick ? 3 : 10, ttl);
  lines.push(
    `takeover after SIGKILL (2 gateways, lanes.leaseTtlSeconds ${ttl}, ${times.length} kills): p50 ${fmt(percentile(times, 50), 0)} ms, ` +
      `max ${judged(Math.max(...times), '<=', ttl * 1000 + 2000, 'ms')} (the lease's lifetime and 2 s)`,
  );
}

/** What `--only <name>` runs alone. */
const SECTIONS: Record<string, { title: string; run: (lines: string[]) => Promise<void> }> = {
  cluster: { title: 'several gateways', run: (lines) => severalGateways(lines) },
  tools: { title: 'tools', run: (lines) => workTools(lines, { root: ROOT, quick }) },
  a2a: { title: 'A2A', run: (lines) => a2aComparison(lines, { root: ROOT, quick }) },
  mailbox: { title: 'file mailbox', run: (lines) => mailboxSection(lines, { root: ROOT, quick }) },
  runtimes: { title: 'external runtimes', run: (lines) => runtimesSection(lines, { root: ROOT, quick }) },
  console: { title: 'web console', run: (lines) => consoleSection(lines, { root: ROOT, quick }) },
  steps: { title: 'durable steps', run: (lines) => stepsSection(lines, { root: ROOT, quick }) },
  telemetry: { title: 'traces on against off', run: (lines) => telemetrySection(lines, { root: ROOT, quick }) },
  'hot-path': { title: 'the hot path (issue 58)', run: (lines) => hotPathSection(lines, { root: ROOT, quick }) },
};

async function main() {
  const section = only ? SECTIONS[only] : undefined;
  if (only && !section) throw new Error(`unknown section "${only}" for --only (sections: ${Object.keys(SECTIONS).join(', ')})`);
  if (section) {
    const lines = [
      `Switchboard benchmarks, ${section.title} (${new Date().toISOString()}, node ${process.version}${quick ? ', --quick' : ''})`,
      '',
    ];
    await section.run(lines);
    process.stdout.write(`${lines.join('\n')}\n`);
    return;
  }
  const accepts = quick ? 500 : 5000;
  const trips = quick ? 100 : 1000;
  const lines: string[] = [`Switchboard benchmarks (${new Date().toISOString()}, node ${process.version}${quick ? ', --quick' : ''})`, ''];

  for (const sync of ['NORMAL', 'FULL'] as const) {
    const n = sync === 'FULL' ? Math.floor(accepts / 5) : accepts;
    const r = await acceptThroughput(sync, n);
    lines.push(
      `durable accepts, synchronous=${sync}: ${fmt(r.storePerSec, 0)}/s via the store, ${fmt(r.rawPerSec, 0)}/s raw single-row inserts; ratio ${judged(r.ratio, '>=', 0.5)}`,
    );
  }
  const rt = await roundTrips(trips, 100);
  const floor = await sdkFloor(trips);
  lines.push(`send-and-wait in process (scripted zero-latency model, synchronous=FULL): p50 ${fmt(rt.p50)} ms, p99 ${fmt(rt.p99)} ms`);
  lines.push(
    `  of which the AI SDK's generateText alone (p50 of a bare call): ${fmt(floor)} ms; the gateway's own share at p50 with FULL: ${judged(rt.p50 - floor, '<=', 2, 'ms')}`,
  );
  lines.push(`  the same in one session with 200 entries of history: p50 ${fmt(rt.historyP50)} ms`);
  lines.push(`send-and-wait with 100 sessions in parallel: ${judged(rt.parallelPerSec, '>=', 1000, 'messages/s')}`);
  const normal = await roundTrips(trips, 100, 'NORMAL');
  lines.push(
    `the same with synchronous=NORMAL: p50 ${fmt(normal.p50)} ms, the gateway's own share ${judged(normal.p50 - floor, '<=', 1, 'ms')}; 100 sessions in parallel ${fmt(normal.parallelPerSec, 0)} messages/s`,
  );
  const a2aCount = quick ? 30 : 300;
  for (const [pingPong, announce] of [
    [0, false],
    [5, true],
  ] as const) {
    const a2a = await agentToAgent(a2aCount, pingPong, floor, true, announce);
    lines.push(
      `sessions_send and wait, ping-pong ${pingPong}${announce ? ' and announce' : ''}: ${pingPong === 0 ? judged(a2a.calls, '<=', 3, 'model calls per send') : `${a2a.calls} model calls per send`} (max ${a2a.maxCalls}), ${fmt(a2a.promptChars, 0)} prompt characters per send; ` +
        `${fmt(a2a.requestBytes, 0)} request bytes sent per send (tool definitions ${fmt(a2a.toolBytes, 0)})${announce ? `, ${judged(OPENCLAW_BYTES / a2a.requestBytes, '>=', 25, 'times less')} than OpenClaw's measured ${OPENCLAW_BYTES} bytes` : ''}; ` +
        `until the exchange is done p50 ${fmt(a2a.p50)} ms, p99 ${fmt(a2a.p99)} ms; gateway overhead (minus ${a2a.calls} bare SDK calls) p50 ${fmt(a2a.overheadP50)} ms, p99 ${fmt(a2a.overheadP99)} ms; ` +
        `largest framework text in one run ${judged(a2a.maxPreamble, '<=', 2000, 'characters')}`,
    );
  }
  const wire = await wireBytes(ROOT, false);
  lines.push(
    `the same on the wire (a fake OpenAI-compatible server, all five turns and the announce): ${wire.calls} model calls, ${fmt(wire.bytes, 0)} request bytes received by the server ` +
      `(${fmt(wire.recorded, 0)} recorded on the runs), ${judged(OPENCLAW_BYTES / wire.bytes, '>=', 25, 'times less')} than OpenClaw's ${OPENCLAW_BYTES} bytes`,
  );
  await workTools(lines, { root: ROOT, quick });
  const ledger = await ledgerCost(quick ? 30 : 200, floor);
  lines.push(
    `tool-call ledger on the waited sessions_send (ping-pong 0, until the exchange is done): p50 ${fmt(ledger.withMs)} ms with it, ${fmt(ledger.withoutMs)} ms without it; ratio ${judged(ledger.ratio, '<=', 1.1)}`,
  );
  await stepsSection(lines, { root: ROOT, quick });
  const sub = await subagents(quick ? 30 : 300, quick ? 100 : 1000, floor);
  lines.push(
    `sub-agent spawn to completion in the parent (one at a time, zero-latency child): p50 ${fmt(sub.p50)} ms, p99 ${fmt(sub.p99)} ms; gateway overhead (minus one bare SDK call) p50 ${fmt(sub.overheadP50)} ms, p99 ${fmt(sub.overheadP99)} ms`,
  );
  lines.push(
    `${sub.fanOut} sub-agents through the subagent lane (maxConcurrent 8): spawned in ${fmt(sub.spawnedMs, 0)} ms, all completions consumed by the parent after ${fmt(sub.totalMs, 0)} ms; ` +
      `peak RSS ${judged(sub.peakRssMb, '<=', 512, 'MB')}; ${sub.succeeded} succeeded, ${sub.lost} lost, ${sub.twice} completed twice, ${sub.consumedOnce} completions in the parent's transcript once`,
  );
  await a2aComparison(lines, { root: ROOT, quick });
  await mailboxSection(lines, { root: ROOT, quick });
  await runtimesSection(lines, { root: ROOT, quick });
  await consoleSection(lines, { root: ROOT, quick });
  await telemetrySection(lines, { root: ROOT, quick });
  await hotPathSection(lines, { root: ROOT, quick });
  const api = await controlApiLoad(ROOT, tmp(), quick ? 2 : 10);
  lines.push(
    `waited sends through the control API, 1,000 sessions, 200 connections (synchronous=FULL): ${judged(api.rps, '>=', 1000, 'messages/s')}, p50 ${api.p50} ms, p99 ${judged(api.p99, '<', 1000, 'ms')}, ${api.errors + api.non2xx} failed`,
  );
  const tasks = quick ? 500 : 5000;
  const claims = await sqliteClaims(tasks);
  lines.push(
    `board claims on SQLite (synchronous=FULL, ${tasks} ready tasks): one claimer ${fmt(claims.board1, 0)}/s through the board, 16 concurrent claimers ${fmt(claims.board16, 0)}/s; ` +
      `a raw UPDATE ... RETURNING ${fmt(claims.raw, 0)}/s; ratio ${judged(claims.board1 / claims.raw, '>=', 0.5)} with one claimer, ${judged(claims.board16 / claims.raw, '>=', 0.5)} with 16`,
  );
  const postgres = process.env.SWITCHBOARD_TEST_POSTGRES ?? 'postgres://postgres@127.0.0.1:5432/test';
  for (const connections of [1, 4, 16]) {
    try {
      const pgClaims = await postgresClaims(postgres, quick ? 500 : 3000, connections);
      lines.push(
        `board claims on PostgreSQL, ${connections} connection${connections > 1 ? 's' : ''}: ${fmt(pgClaims.board, 0)}/s through the board, ${fmt(pgClaims.raw, 0)}/s raw FOR UPDATE SKIP LOCKED; ratio ${judged(pgClaims.board / pgClaims.raw, '>=', 0.8)}`,
      );
    } catch (error) {
      lines.push(`board claims on PostgreSQL: skipped, no server at ${postgres} (${(error as Error).message})`);
      break;
    }
  }
  await severalGateways(lines);
  const defs = await toolDefinitionChars();
  lines.push(`tool definitions sent with each call: ${judged(defs.chars, '<=', 1500, 'characters')} for ${defs.tools} tools`);
  const cold = await coldStart();
  lines.push(
    `cold start to ready: ${fmt(cold.gatewayMs, 0)} ms inside the gateway (store open, migrations, recovery, API listening); ${judged(cold.processMs, '<=', 1000, 'ms')} from spawning the process`,
  );
  lines.push(
    `framework prompt per run: ${judged(rt.preambleChars, '<=', 2000, 'characters')}; whole prompt of a one-message run: ${rt.promptChars} characters`,
  );
  process.stdout.write(`${lines.join('\n')}\n`);
}

await main();

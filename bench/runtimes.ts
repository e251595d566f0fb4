/**
 * Issue 32's benchmark: an ACP sub-agent from spawn to its settled result, against driving the same fake agent
 * (test/runtimes/fake-acp-agent.mjs) directly with the SDK's client in the same run, alternating; then 50 ACP children
 * at once through the ACP lane (acp.maxConcurrentSessions 8): how many ran at once at most, the time until all
 * settled, and the gateway's peak RSS.
 */
import { client, ndJsonStream, PROTOCOL_VERSION } from '@agentclientprotocol/sdk';
import { spawn } from 'node:child_process';
import { mkdtempSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { startGateway } from '../src/app.js';
import { parseConfigText } from '../src/config/load.js';
import type { Gateway } from '../src/gateway/gateway.js';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { percentile } from './judged.js';

const FAKE = join(import.meta.dirname, '../test/runtimes/fake-acp-agent.mjs');
const MAIN = 'agent:main:main';

/** The same work without the gateway: start the agent, initialize, session/new, prompt, read its text, end it. */
async function direct(workdir: string, task: string): Promise<number> {
  const started = performance.now();
  const child = spawn(process.execPath, [FAKE], { cwd: workdir, stdio: ['pipe', 'pipe', 'pipe'] });
  let text = '';
  const connection = client({ name: 'bench' })
    .onNotification('session/update', ({ params }) => {
      if (params.update.sessionUpdate === 'agent_message_chunk' && params.update.content.type === 'text')
        text += params.update.content.text;
    })
    .connect(
      ndJsonStream(Writable.toWeb(child.stdin) as WritableStream<Uint8Array>, Readable.toWeb(child.stdout) as ReadableStream<Uint8Array>),
    );
  await connection.agent.request('initialize', {
    protocolVersion: PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: true, writeTextFile: true } },
  });
  const { sessionId } = await connection.agent.request('session/new', { cwd: workdir, mcpServers: [] });
  await connection.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: task }] });
  connection.close();
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill();
  await exited;
  if (!text.includes('Done')) throw new Error(`the fake agent did not finish: ${text}`);
  return performance.now() - started;
}

async function benchGateway(workdir: string, children: number): Promise<Gateway> {
  const { config } = parseConfigText(
    `{
      agents: {
        defaults: { subagents: { allowRuntimes: ["acp:fake"], maxChildrenPerAgent: ${children} } },
        list: [{ id: "main", model: "scripted/main", workspace: ${JSON.stringify(workdir)} }],
      },
      acp: { maxConcurrentSessions: 8, agents: { fake: { command: ${JSON.stringify(process.execPath)}, args: [${JSON.stringify(FAKE)}] } } },
      models: { providers: { scripted: { type: "scripted", models: { main: { rules: [{ match: ".*", reply: "ok" }] } } } } },
    }`,
    '/bench/switchboard.json5',
    {},
  );
  const store = await SqliteStore.open({ path: join(workdir, 'bench.db'), synchronous: 'FULL' });
  const gateway = await startGateway({ config, store, gatewayId: 'gw-bench' });
  const sent = await gateway.send({ target: 'main', message: 'hello' });
  await gateway.waitForInput(sent.input.id, 10_000);
  return gateway;
}

/** Resolves each sub-agent id with the time its settled state was journaled. */
function settledTimes(gateway: Gateway): { settled: (id: string) => Promise<number>; stop: () => void } {
  const waiting = new Map<string, (at: number) => void>();
  const done = new Map<string, number>();
  const stop = gateway.subscribe((live) => {
    if (live.type !== 'journal' || live.event.type !== 'subagent.updated') return;
    const payload = live.event.payload as { subagentId: string; state?: string };
    if (!payload.state || ['pending', 'running'].includes(payload.state)) return;
    const at = performance.now();
    done.set(payload.subagentId, at);
    waiting.get(payload.subagentId)?.(at);
  });
  return {
    settled: (id) => (done.has(id) ? Promise.resolve(done.get(id)!) : new Promise((resolve) => waiting.set(id, resolve))),
    stop,
  };
}

export async function runtimesBench(rounds: number, fanOut: number) {
  const workdir = realpathSync(mkdtempSync(join(tmpdir(), 'sb-bench-acp-')));
  const gateway = await benchGateway(workdir, fanOut);
  const watch = settledTimes(gateway);
  const spawnOne = async (task: string, key: string) => {
    const spawned = await gateway.subagents.spawn(
      { sessionKey: MAIN, agentId: 'main', idempotencyKey: key },
      { task, runtime: 'acp', agent: 'fake' },
    );
    return spawned.handle.subagentId;
  };
  const viaGateway: number[] = [];
  const directly: number[] = [];
  try {
    await direct(workdir, 'warm up');
    for (let i = 0; i < rounds; i++) {
      directly.push(await direct(workdir, `task ${i}`));
      const started = performance.now();
      const id = await spawnOne(`task ${i}`, `one-${i}`);
      viaGateway.push((await watch.settled(id)) - started);
    }
    // 50 at once, each taking 200 ms, through a lane of 8.
    let peakRss = process.memoryUsage().rss;
    let peakActive = 0;
    const sampler = setInterval(() => {
      peakRss = Math.max(peakRss, process.memoryUsage().rss);
      peakActive = Math.max(peakActive, gateway.status().lanes.acp.active);
    }, 10);
    const started = performance.now();
    const ids = await Promise.all(Array.from({ length: fanOut }, (_, i) => spawnOne(`wait 200ms then finish ${i}`, `fan-${i}`)));
    const ends = await Promise.all(ids.map((id) => watch.settled(id)));
    clearInterval(sampler);
    const records = await Promise.all(ids.map(async (id) => (await gateway.getSubagent(id)).view.state));
    return {
      direct: { p50: percentile(directly, 50), p99: percentile(directly, 99) },
      gateway: { p50: percentile(viaGateway, 50), p99: percentile(viaGateway, 99) },
      fan: {
        children: fanOut,
        totalMs: Math.max(...ends) - started,
        peakActive,
        peakRssMb: peakRss / 1024 / 1024,
        succeeded: records.filter((state) => state === 'succeeded').length,
      },
    };
  } finally {
    watch.stop();
    await gateway.stop();
    await gateway.store.close();
  }
}

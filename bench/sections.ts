/**
 * The benchmark sections of the work on tools (issue 29) and on the A2A front's speed (issue 30), each a list of
 * judged lines: `npm run bench` prints them in the full run, and `--only tools` or `--only a2a` alone.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fmt, judged, OPENCLAW_BYTES, percentile } from './judged.js';
import { a2aLoad } from './load.js';
import { consoleBench } from './console.js';
import { mailboxBench } from './mailbox.js';
import { runtimesBench } from './runtimes.js';
import { mcpCallOverhead, mcpDefinitionBytes, memorySearch, wireBytes } from './tools.js';

export interface SectionOptions {
  root: string;
  quick: boolean;
}

const tmp = () => mkdtempSync(join(tmpdir(), 'sb-bench-'));

/**
 * Issue 30's side-by-side: the gateway against the SDK's in-memory server and the durable peer built from the SDK's
 * own parts, alternating rounds in one run; requests per second (medians), the ratios unrounded, and CPU per request
 * per round (flat cost: the third round against the first).
 */
export async function a2aComparison(lines: string[], { root, quick }: SectionOptions): Promise<void> {
  const rounds = await a2aLoad(root, tmp(), quick ? 2 : 10, 3);
  const median = (values: number[]) => percentile(values, 50);
  const rps = (name: keyof typeof rounds) => median(rounds[name].map((round) => round.rps));
  const cpu = (name: keyof typeof rounds) => rounds[name].map((round) => fmt(round.cpuMsPerRequest)).join(' -> ');
  const p99 = (name: keyof typeof rounds) => Math.max(...rounds[name].map((round) => round.p99));
  const failed = (name: keyof typeof rounds) => rounds[name].reduce((sum, round) => sum + round.errors + round.non2xx, 0);
  lines.push(
    `A2A SendMessage, blocking, 50 connections, a new task per request (no messageId repeats across rounds), three alternating rounds (median requests/s; CPU ms per request by round): ` +
      `SDK in-memory ${fmt(rps('reference'), 0)}/s (${cpu('reference')}); SDK durable peer ${fmt(rps('durablePeer'), 0)}/s (${cpu('durablePeer')}); ` +
      `the durable peer also writing a copy of the rows one Switchboard request leaves ${fmt(rps('peerSameRows'), 0)}/s (${cpu('peerSameRows')}); ` +
      `Switchboard ${fmt(rps('ours'), 0)}/s (${cpu('ours')}), p99 ${judged(p99('ours'), '<', 250, 'ms')}, ${failed('ours')} failed`,
  );
  const [first, , third] = rounds.ours.map((round) => round.cpuMsPerRequest);
  lines.push(
    `  Switchboard against the durable peer: ${judged(rps('ours') / rps('durablePeer'), '>=', 1)} (aim 1.5); against the in-memory server ${fmt(rps('ours') / rps('reference'), 3)}; ` +
      // "Within 10% of the first" either way: a third round far cheaper than the first means the first was not steady.
      // The like-for-like figure proposed for issue 30's 1.0x (BENCHMARKS.md), judged as a target is.
      `against the durable peer writing the same rows ${judged(rps('ours') / rps('peerSameRows'), '>=', 1)} (proposed); the durable peer with those rows against without ${fmt(rps('peerSameRows') / rps('durablePeer'), 3)}; ` +
      `CPU per request, third round against the first ${fmt(third! / first!, 3)}, off by ${judged(Math.abs(third! / first! - 1), '<=', 0.1)}`,
  );
  const cpuMedian = (name: keyof typeof rounds) => median(rounds[name].map((round) => round.cpuMsPerRequest));
  lines.push(
    `  Switchboard over a store prefilled with 100,000 tasks (each with its session, input, run, transcript and events): ${fmt(rps('prefilled'), 0)}/s (${cpu('prefilled')}), ` +
      `p99 ${fmt(p99('prefilled'), 0)} ms, ${failed('prefilled')} failed; CPU per request (median of the rounds) against the empty store's ${fmt(cpuMedian('prefilled') / cpuMedian('ours'), 3)}, ` +
      `off by ${judged(Math.abs(cpuMedian('prefilled') / cpuMedian('ours') - 1), '<=', 0.1)}`,
  );
}

/** The tools for real work: bytes with all of them enabled, memory_search, MCP definitions and calls. */
export async function workTools(lines: string[], { root, quick }: SectionOptions): Promise<void> {
  const wire = await wireBytes(root, true);
  lines.push(
    `the same with every tool enabled for both agents (workspaces with prompt files, the workspace tools, exec, memory, an MCP server with 6 tools): ${wire.calls} model calls, ` +
      `${fmt(wire.bytes, 0)} request bytes (tool definitions ${fmt(wire.toolBytes, 0)}), ${judged(OPENCLAW_BYTES / wire.bytes, '>=', 20, 'times less')} than OpenClaw's ${OPENCLAW_BYTES} bytes (aim: 25)`,
  );
  const memory = await memorySearch(quick ? 1000 : 10_000, quick ? 50 : 300);
  lines.push(
    `memory_search over ${quick ? '1,000' : '10,000'} indexed files (${memory.chunks} chunks, SQLite): p50 ${fmt(memory.p50)} ms, p99 ${fmt(memory.p99)} ms; a raw FTS5 query on the same data p50 ${fmt(memory.rawP50)} ms, p99 ${fmt(memory.rawP99)} ms; ` +
      `p50 ratio ${judged(memory.p50 / memory.rawP50, '<=', 2)}, p99 ratio ${judged(memory.p99 / memory.rawP99, '<=', 2)}`,
  );
  const defs = await mcpDefinitionBytes(root);
  lines.push(
    `tool definition bytes in one model call: ${defs.none} with no MCP server; ${defs.threeOneAllowed} with three attached (6 tools each) and one allowed (its tools named in tools_load); ${defs.loaded} once two of its tools are loaded`,
  );
  const mcp = await mcpCallOverhead(root, quick ? 50 : 300);
  lines.push(
    `an MCP tool call, p50: ${fmt(mcp.direct, 3)} ms with the SDK's client directly; through the gateway's tool path ${fmt(mcp.readOnly, 3)} ms for a read-only tool, ratio ${judged(mcp.readOnly / mcp.direct, '<=', 1.5)}; ` +
      `${fmt(mcp.withLedger, 3)} ms for a tool with effects (its ledger record is a durable write before the call), ratio ${judged(mcp.withLedger / mcp.direct, '<=', 1.5)}`,
  );
}

/**
 * Issue 31: a mailbox hop against a raw tmp+rename+fs.watch hop (the target), and against the same raw hop with one
 * durable insert (what a hop that survives a crash cannot do without); a 10,000-message burst.
 */
export async function mailboxSection(lines: string[], { quick }: SectionOptions): Promise<void> {
  for (const mode of ['followup', 'notify'] as const) {
    const { hop, hopSynced, raw, rawDurable, stream, burst } = await mailboxBench(quick ? 100 : 500, quick ? 2000 : 10_000, mode);
    const what =
      mode === 'followup'
        ? 'the agent answering each message (a run each, in the same process)'
        : 'the messages only stored (notify: the ingest alone)';
    lines.push(
      `mailbox hop, one message at a time, ${what} (an outside tmp+rename until the input is committed, synchronous=FULL): p50 ${fmt(hop.p50)} ms, p99 ${fmt(hop.p99)} ms; ` +
        `until a sync covers it and its file is deleted p50 ${fmt(hopSynced.p50)} ms, p99 ${fmt(hopSynced.p99)} ms; ` +
        `raw tmp+rename+fs.watch+read p50 ${fmt(raw.p50, 3)} ms, p99 ${fmt(raw.p99, 3)} ms; the same raw hop with one durable SQLite insert p50 ${fmt(rawDurable.p50, 3)} ms, p99 ${fmt(rawDurable.p99, 3)} ms`,
    );
    lines.push(
      `  p50 against the raw hop ${judged(hop.p50 / raw.p50, '<=', 2)}; synced, against the raw hop with a durable insert ${fmt(hopSynced.p50 / rawDurable.p50, 3)}`,
    );
    lines.push(
      `  in a steady stream of one message every 2 ms, until the input is committed: p50 ${fmt(stream.p50)} ms, p99 ${fmt(stream.p99)} ms`,
    );
    lines.push(
      `  burst of ${burst.messages} messages written at once: ${fmt(burst.perSec, 0)} messages/s until the last is an input; ${judged(burst.lost, '<=', 0, 'lost')}, ${burst.twice} taken twice, ${burst.leftOver} left in the inbox`,
    );
  }
}

/** Issue 32: an ACP sub-agent against the same fake agent driven directly with the SDK, and 50 children at once. */
export async function runtimesSection(lines: string[], { quick }: SectionOptions): Promise<void> {
  const { direct, gateway, fan } = await runtimesBench(quick ? 10 : 50, 50);
  lines.push(
    `ACP sub-agent from spawn to its settled result (the fake ACP agent, a new process each; SQLite synchronous=FULL): p50 ${fmt(gateway.p50)} ms, p99 ${fmt(gateway.p99)} ms; ` +
      `the same agent driven directly with the SDK's client p50 ${fmt(direct.p50)} ms, p99 ${fmt(direct.p99)} ms; p50 ratio ${judged(gateway.p50 / direct.p50, '<=', 1.3)}`,
  );
  lines.push(
    `${fan.children} ACP children at once (200 ms each) through the ACP lane (acp.maxConcurrentSessions 8): at most ${judged(fan.peakActive, '<=', 8, 'running at once')}, ` +
      `all settled after ${fmt(fan.totalMs, 0)} ms, ${fan.succeeded} succeeded; the gateway's peak RSS ${fmt(fan.peakRssMb, 0)} MB`,
  );
}

/** The web console in headless Chromium over 1,000 sessions and 100,000 journal events (issue 33). */
export async function consoleSection(lines: string[], { root }: SectionOptions): Promise<void> {
  const { treeMs, sessionMs } = await consoleBench(root, 5);
  const list = (values: number[]) => values.map((value) => fmt(value, 0)).join(', ');
  lines.push(
    `web console, 1,000 sessions and 100,000 journal events in the store, headless Chromium, median of 5 loads: ` +
      `the sessions tree's first screen ${judged(percentile(treeMs, 50), '<', 1000, 'ms')} (${list(treeMs)}); ` +
      `a session page with 2,000 entries ${judged(percentile(sessionMs, 50), '<', 1000, 'ms')} (${list(sessionMs)})`,
  );
}

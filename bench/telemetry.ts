/**
 * Issue 56's benchmark: what traces cost a gateway. The A2A load and the waited sends through the control API (load.ts)
 * each run against two gateway processes of the same tree, one with `telemetry.traces` on (sampling 1.0, the exporter's
 * default interval, to a collector in a process of its own, otlp-counter.ts) and one without, in alternating rounds of
 * the same number of requests. The figure is the gateway's CPU per answered request (from /proc, so neither the load
 * generator's nor the collector's CPU counts), on against off. The spans the collector received in each round are
 * counted: a round with traces on that exported nothing would compare nothing.
 *
 * A gateway's round is its load and the other gateway's load after it, so that it takes in what its load leaves
 * behind (the spans the exporter sends up to exportIntervalMs later, the garbage collected later) with no pause between
 * loads: pauses would put the two halves of a pair further apart on a machine whose speed drifts.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fmt, judged, percentile } from './judged.js';
import {
  A2A_LOAD_CONFIG,
  a2aTarget,
  cpuMsOf,
  load,
  type LoadTarget,
  startServer,
  stop,
  WAITED_SEND_CONFIG,
  waitedSendTarget,
} from './load.js';
import type { SectionOptions } from './sections.js';

/** How long a gateway's last load is followed, at the end: past telemetry.traces.exportIntervalMs's default (5 s). */
const FLUSH_WAIT_MS = 6000;

interface Round {
  rps: number;
  p99: number;
  failed: number;
  answered: number;
  cpuMsPerRequest: number;
  /** Spans the collector received in this round (the gateway with traces on; the other's rounds take in its last spans). */
  spans: SpanCount;
}

interface LoadShape {
  /** What the load is, for the line. */
  title: string;
  start: (root: string, dir: string, config?: string) => Promise<LoadTarget>;
  config: string;
  connections: number;
  requests: number;
}

const tmp = () => mkdtempSync(join(tmpdir(), 'sb-bench-'));

/** The config with traces on, to `collector`, at sampling 1.0 and every other setting at its default. */
const withTraces = (config: string, collector: string) =>
  config.replace(/^\{/, `{ telemetry: { traces: { endpoint: "${collector}/v1/traces", sampling: 1 } },`);

/** The spans the collector has received so far, in all and by the first word of their name (invoke_agent, chat, ...). */
interface SpanCount {
  spans: number;
  names: Record<string, number>;
}

async function spansReceived(collector: string): Promise<SpanCount> {
  const response = await fetch(`${collector}/count`);
  return (await response.json()) as SpanCount;
}

/** The spans received between two counts, in all and by name. */
function spansBetween(before: SpanCount, after: SpanCount): SpanCount {
  const names: Record<string, number> = {};
  for (const [name, count] of Object.entries(after.names))
    if (count > (before.names[name] ?? 0)) names[name] = count - (before.names[name] ?? 0);
  return { spans: after.spans - before.spans, names };
}

/** Spans per request, by name: "chat 1.00, invoke_agent 1.00". */
const perRequest = (count: SpanCount, requests: number) =>
  Object.entries(count.names)
    .map(([name, spans]) => `${name} ${fmt(spans / requests)}`)
    .join(', ');

/** Where the run stands at a boundary between loads: each gateway's CPU so far, and the spans received. */
interface Mark {
  cpu: [number, number];
  spans: SpanCount;
}

/**
 * One load, traces off against on: `rounds` loads of the gateway with traces on, each between two of the gateway
 * without (off, on, off, ..., off). Each round with traces on is paired with the mean of the two rounds around it, so
 * that a machine getting steadily faster or slower favours neither.
 */
async function offAgainstOn(shape: LoadShape, root: string, collector: string, rounds: number, quick: boolean) {
  const gateways = [
    await shape.start(root, tmp(), shape.config),
    await shape.start(root, tmp(), withTraces(shape.config, collector)),
  ] as const;
  try {
    // Warm-up (the JIT, the stores' first pages, the exporter's first batches), then the spans of one request at a
    // time: what every request should deliver when nothing is dropped.
    for (const target of gateways) await load(target.url, quick ? 2 : 5, shape.connections, target.body, target.headers);
    await sleep(FLUSH_WAIT_MS);
    const alone = 20;
    const before = await spansReceived(collector);
    const on = gateways[1];
    await load(on.url, 0, 1, on.body, on.headers, alone);
    await sleep(FLUSH_WAIT_MS);
    const spansAlone = spansBetween(before, await spansReceived(collector));

    const mark = async (): Promise<Mark> => ({
      cpu: [cpuMsOf(gateways[0].child.pid), cpuMsOf(gateways[1].child.pid)],
      spans: await spansReceived(collector),
    });
    const marks: Mark[] = [];
    const loads: { gateway: 0 | 1; result: Awaited<ReturnType<typeof load>> }[] = [];
    for (let k = 0; k <= 2 * rounds; k += 1) {
      const gateway = (k % 2) as 0 | 1;
      const target = gateways[gateway];
      marks.push(await mark());
      loads.push({ gateway, result: await load(target.url, 0, shape.connections, target.body, target.headers, shape.requests) });
    }
    // The last load's round goes on after it for as long as a load takes, or past the export interval (more of the two).
    const lastSeconds = shape.requests / Math.max(1, loads.at(-1)!.result.rps);
    marks.push(await mark());
    await sleep(Math.max(FLUSH_WAIT_MS, lastSeconds * 1000));
    marks.push(await mark());

    const results = { off: [] as Round[], on: [] as Round[] };
    for (const [k, { gateway, result }] of loads.entries()) {
      const answered = shape.requests - result.errors - result.non2xx;
      results[gateway === 0 ? 'off' : 'on'].push({
        rps: result.rps,
        p99: result.p99,
        failed: result.errors + result.non2xx,
        answered,
        cpuMsPerRequest: (marks[k + 2]!.cpu[gateway] - marks[k]!.cpu[gateway]) / Math.max(1, answered),
        spans: spansBetween(marks[k]!.spans, marks[k + 2]!.spans),
      });
    }
    // Every span from the first load with traces on to the end, the last one's included: as many as the requests
    // made, when none was dropped.
    const spansInAll = spansBetween(marks[1]!.spans, marks.at(-1)!.spans);
    return { ...results, spansAlone, alone, spansInAll };
  } finally {
    for (const target of gateways) await stop(target.child);
  }
}

const LOADS: LoadShape[] = [
  {
    title: 'A2A SendMessage (blocking, 50 connections, a new task per request)',
    start: a2aTarget,
    config: A2A_LOAD_CONFIG,
    connections: 50,
    requests: 2500,
  },
  {
    title: 'waited sends through the control API (1,000 sessions, 200 connections)',
    start: waitedSendTarget,
    config: WAITED_SEND_CONFIG,
    connections: 200,
    requests: 3000,
  },
];

/** Issue 56: traces on against off, for each load, judged on the CPU per request (at most 1.10x). */
export async function telemetrySection(lines: string[], { root, quick }: SectionOptions): Promise<void> {
  const collector = await startServer(['--import', 'tsx', join(root, 'bench/otlp-counter.ts')], root);
  // Nine rounds with traces on: on this shared machine one round's ratio moves by about 15% either way, their median by
  // a few percent between runs.
  const rounds = quick ? 3 : 9;
  try {
    for (const shape of LOADS) {
      const requests = quick ? Math.floor(shape.requests / 10) : shape.requests;
      const { off, on, spansAlone, alone, spansInAll } = await offAgainstOn({ ...shape, requests }, root, collector.url, rounds, quick);
      const cpu = (list: Round[]) => list.map((round) => fmt(round.cpuMsPerRequest)).join(', ');
      const median = (list: Round[], pick: (round: Round) => number) => fmt(percentile(list.map(pick), 50), 0);
      const paired = on.map((round, i) => round.cpuMsPerRequest / ((off[i]!.cpuMsPerRequest + off[i + 1]!.cpuMsPerRequest) / 2));
      const failed = [...off, ...on].reduce((sum, round) => sum + round.failed, 0);
      const spans = on.map((round) => round.spans.spans);
      const silent = spans.filter((count) => count === 0).length;
      const answeredOn = on.reduce((sum, round) => sum + round.answered, 0);
      lines.push(
        `${shape.title}, traces on (sampling 1.0, OTLP/HTTP to a collector in another process, exportIntervalMs at its default) against off, ` +
          `${requests} requests a round, alternating (off, on, ..., off): the gateway's CPU ms per request by round off ${cpu(off)}; on ${cpu(on)}; ` +
          `requests/s (median) off ${median(off, (round) => round.rps)}, on ${median(on, (round) => round.rps)}; ` +
          `p99 (median) off ${median(off, (round) => round.p99)} ms, on ${median(on, (round) => round.p99)} ms; ${failed} failed`,
      );
      lines.push(
        `  spans received in each round with traces on: ${spans.join(', ')}; in all ${spansInAll.spans}, ${fmt(spansInAll.spans / answeredOn)} per request ` +
          `(${perRequest(spansInAll, answeredOn)}); with one request at a time ${fmt(spansAlone.spans / alone)} per request (${perRequest(spansAlone, alone)}); ` +
          (silent === 0
            ? 'every round with traces on received spans'
            : `${silent} round(s) with traces on received NO spans (a round shorter than the export interval, or the exporter failed): the ratio may compare nothing`),
      );
      lines.push(
        `  CPU per request, traces on against off (median of the ${rounds} rounds, each against the mean of the two around it; ` +
          `by round ${paired.map((ratio) => fmt(ratio, 3)).join(', ')}): ${judged(percentile(paired, 50), '<=', 1.1)}`,
      );
    }
  } finally {
    await stop(collector.child);
  }
}

/**
 * The path one message took, as seed 000's "universal flow" steps it: accepted into a session, waited in its lane,
 * ran, called tools, reached another session (a sessions_send exchange or a spawned sub-agent), whose run answered,
 * and the reply. Read from what the store already keeps (inputs, runs, the tool-call ledger, exchanges, sub-agents);
 * nothing is recorded for it.
 */
import { SwitchboardError } from '../../core/errors.js';
import type { InputRecord, RunRecord, Store } from '../../ports/index.js';
import type { RunToolCall, PathStep, MessagePath } from '../../ports/gateway.js';

/** How many sessions deep a path is followed (a chain of exchanges or spawns). */
const MAX_DEPTH = 4;

export async function messagePath(
  store: Store,
  inputId: string,
  toolCallsOf: (run: RunRecord) => Promise<RunToolCall[]>,
): Promise<MessagePath> {
  const input = await store.inputs.get(inputId);
  if (!input) throw new SwitchboardError('NOT_FOUND', `no input "${inputId}" (a transcript entry's inputId names one)`);
  const steps = await inputSteps(store, input, 0, toolCallsOf);
  const { id, sessionKey, text, provenance, status, createdAt } = input;
  return { input: { id, sessionKey, text: clip(text), provenance, status, createdAt }, steps };
}

async function inputSteps(
  store: Store,
  input: InputRecord,
  depth: number,
  toolCallsOf: (run: RunRecord) => Promise<RunToolCall[]>,
): Promise<PathStep[]> {
  const at = { sessionKey: input.sessionKey, depth, inputId: input.id };
  const steps: PathStep[] = [
    { kind: 'accepted', at: input.createdAt, ...at, summary: `${input.provenance.kind} message accepted (${input.mode})` },
  ];
  const run = input.runId ? await store.runs.get(input.runId) : undefined;
  if (!run) {
    steps.push({
      kind: 'run.started',
      at: null,
      ...at,
      summary: input.status === 'dropped' ? `dropped: ${input.note}` : `not run yet (${input.status})`,
    });
    return steps;
  }
  const waited = run.startedAt - input.createdAt;
  steps.push({
    kind: 'run.started',
    at: run.startedAt,
    ...at,
    runId: run.id,
    summary: `run started on ${run.model} after ${Math.max(0, waited)} ms in the lane`,
  });
  const [calls, ledger, exchanges, spawned] = await Promise.all([
    toolCallsOf(run),
    store.toolCalls.list({ runId: run.id, limit: 1000 }),
    store.exchanges.list({ requesterSession: run.sessionKey, newest: true, limit: 1000 }),
    store.subagents.list({ parentSession: run.sessionKey, createdSince: run.startedAt, limit: 1000 }),
  ]);
  const during = (time: number) => time >= run.startedAt && (run.endedAt === null || time <= run.endedAt);
  // The run's calls of one tool, in the order it made them (by step, then position in the step), matched to its
  // transcript's calls of that tool in the same order.
  const recordedOf = new Map<string, typeof ledger>();
  for (const row of [...ledger].sort((a, b) => a.step - b.step || a.index - b.index))
    recordedOf.set(row.tool, [...(recordedOf.get(row.tool) ?? []), row]);
  for (const call of calls) {
    const recorded = recordedOf.get(call.toolName)?.shift();
    steps.push({
      kind: 'tool.call',
      at: recorded?.createdAt ?? null,
      ...at,
      runId: run.id,
      summary: `${call.toolName}(${clip(JSON.stringify(call.input) ?? '', 120)})`,
    });
  }
  for (const exchange of exchanges.filter((row) => during(row.createdAt)).reverse()) {
    const request = await store.inputs.get(exchange.requestInputId);
    steps.push({
      kind: 'exchange',
      at: exchange.createdAt,
      ...at,
      runId: run.id,
      summary: `asked ${exchange.targetAgent} (${exchange.targetSession}): ${exchange.phase}, reply ${exchange.replyState}`,
      ref: { kind: 'exchange', id: exchange.id },
      children: request && depth < MAX_DEPTH ? await inputSteps(store, request, depth + 1, toolCallsOf) : undefined,
    });
  }
  for (const child of spawned.filter((row) => during(row.createdAt))) {
    const task = (await store.inputs.list({ sessionKey: child.sessionKey, limit: 1 }))[0];
    steps.push({
      kind: 'spawn',
      at: child.createdAt,
      ...at,
      runId: run.id,
      summary: `spawned ${child.agentId} sub-agent${child.label ? ` "${child.label}"` : ''} (${child.state})`,
      ref: { kind: 'subagent', id: child.id },
      children: task && depth < MAX_DEPTH ? await inputSteps(store, task, depth + 1, toolCallsOf) : undefined,
    });
  }
  steps.push({
    kind: 'run.ended',
    at: run.endedAt,
    ...at,
    runId: run.id,
    summary:
      run.endedAt === null
        ? `running (${run.status})`
        : `run ${run.status} in ${run.endedAt - run.startedAt} ms, ${run.usage.inputTokens}+${run.usage.outputTokens} tokens`,
  });
  if (run.finalText) steps.push({ kind: 'reply', at: run.endedAt, ...at, runId: run.id, summary: clip(run.finalText) });
  // Time order (a stable sort): a tool call the ledger kept no time for stays just after the run's start, and a run
  // still going ends the list.
  const timeOf = (step: PathStep) => step.at ?? (step.kind === 'tool.call' ? run.startedAt : Number.MAX_SAFE_INTEGER);
  return steps.sort((a, b) => timeOf(a) - timeOf(b));
}

function clip(text: string, max = 400): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

/** `switchboard subagents list|show|kill|tree` and the completion lines of `runs show`, against a real gateway process. */
import { describe, expect, it } from 'vitest';
import { cliWith, tempConfig, gatewayForSuite } from '../helpers/process.js';
import { waitUntil } from '../helpers/wait.js';

const { configPath } = tempConfig(`{
  agents: { defaults: { subagents: { maxSpawnDepth: 2 } }, list: [{ id: "main", model: "scripted/main" }] },
  models: { providers: { scripted: { type: "scripted", models: { main: { rules: [
    { match: "All your sub-agents have finished", reply: "lead: all booked" },
    { match: "sub-agent", reply: "noted" },
    { match: "plan", steps: [{ toolCalls: [{ tool: "sessions_spawn", args: { task: "lead the trip", role: "orchestrator", label: "lead" } }] }, { text: "started" }] },
    { match: "lead the trip", steps: [{ toolCalls: [
        { tool: "sessions_spawn", args: { task: "book the train", label: "train" } },
        { tool: "sessions_spawn", args: { task: "book the hotel", label: "hotel" } } ] }, { text: "waiting" }] },
    { match: "book the (\\\\w+)", reply: "{{match.1}} booked" },
    { match: "sleepy", steps: [{ toolCalls: [{ tool: "sessions_spawn", args: { task: "nap for long", label: "napper" } }] }, { text: "started" }] },
    { match: "nap", delayMs: 30000, reply: "woke" },
  ] } } } } },
}`);

const cli = cliWith(configPath);
const MAIN = 'agent:main:main';
gatewayForSuite(configPath);

interface Row {
  subagentId: string;
  childSessionKey: string;
  label: string;
  state: string;
  runId: string;
}

describe('switchboard subagents', () => {
  it('tree draws the spawn tree with states; list, show and runs show tell the rest', async () => {
    expect((await cli('send', 'main', 'plan', '--wait')).code).toBe(0);
    const rows = await waitUntil(
      'the lead and its workers succeeded',
      async () => {
        const out = await cli('--json', 'subagents', 'list', MAIN, '--recursive');
        const { subagents } = JSON.parse(out.stdout) as { subagents: Row[] };
        return subagents.length === 3 && subagents.every((row) => row.state === 'succeeded') && subagents;
      },
      10_000,
    );
    const lead = rows.find((row) => row.label === 'lead')!;

    const tree = await cli('subagents', 'tree', MAIN);
    expect(tree.code).toBe(0);
    const lines = tree.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe(MAIN);
    expect(lines[1]).toMatch(new RegExp(`^└─ "lead" \\[orchestrator\\] succeeded, \\d+\\.\\ds, \\d+ tokens  ${lead.childSessionKey}$`));
    const workers = lines.slice(2).map((line) => line.replace(/, \d+\.\ds, \d+ tokens {2}agent:main:subagent:\S+:subagent:\S+$/, ''));
    expect(workers).toHaveLength(2);
    expect(workers[0]).toMatch(/^ {3}├─ "(train|hotel)" \[leaf\] succeeded$/);
    expect(workers[1]).toMatch(/^ {3}└─ "(train|hotel)" \[leaf\] succeeded$/);

    const list = await cli('subagents', 'list', MAIN);
    expect(list.stdout).toContain(lead.childSessionKey);
    expect(list.stdout).toMatch(/lead\s+orchestrator\s+succeeded/);

    const show = await cli('subagents', 'show', lead.childSessionKey);
    expect(show.stdout).toContain(`sub-agent ${lead.subagentId} "lead" (orchestrator, depth 1)`);
    expect(show.stdout).toContain('  result:   lead: all booked');
    expect(show.stdout).toMatch(/ pending\n.* running\n.* waiting\n.* succeeded\n/);

    // What is shown is what the sub-agent is offered: a leaf has no session tools (docs/subagents.md), exec is off.
    const train = rows.find((row) => row.label === 'train')!;
    const shownTools = (await cli('subagents', 'show', train.childSessionKey)).stdout.match(/^ {2}tools: {4}(.*)$/m)?.[1].split(', ');
    expect(shownTools).toContain('time_now');
    for (const absent of ['exec', 'sessions_send', 'sessions_spawn', 'subagents', 'sessions_list', 'tools_load'])
      expect(shownTools).not.toContain(absent);
    const leadTools = (await cli('subagents', 'show', lead.childSessionKey)).stdout.match(/^ {2}tools: {4}(.*)$/m)?.[1].split(', ');
    expect(leadTools).toEqual(expect.arrayContaining(['sessions_spawn', 'subagents', 'time_now']));
    expect(leadTools).not.toContain('sessions_send');

    const run = await cli('runs', 'show', lead.runId);
    expect(run.stdout).toMatch(
      new RegExp(`completion to ${MAIN}: outbox delivered after 1 attempt\\(s\\); input \\S+ consumed by run \\S+`),
    );
    const leadRuns = JSON.parse((await cli('--json', 'runs', 'list', '--session', lead.childSessionKey)).stdout).runs as { id: string }[];
    const wakeRun = await cli('runs', 'show', leadRuns[0].id);
    expect(wakeRun.stdout).toMatch(/completion from agent:main:subagent:\S+:subagent:\S+ \(input \S+\)/);
  }, 90_000);

  it('kill cancels a running sub-agent; its parent is told; a second kill has nothing to do; unknown targets fail in one line', async () => {
    // The reply comes at once; the napper's result would not come within the timeout, and the send says so.
    const sent = await cli('send', 'main', 'sleepy', '--wait', '--timeout', '1');
    expect(sent.code).toBe(0);
    expect(sent.stdout).toMatch(
      /\nsub-agents are still working; their results will arrive in agent:main:main \(follow with "switchboard sessions tail agent:main:main"\)\n$/,
    );
    const napper = await waitUntil(
      'the napper runs',
      async () => {
        const { subagents } = JSON.parse((await cli('--json', 'subagents', 'list', MAIN)).stdout) as { subagents: Row[] };
        return subagents.find((row) => row.label === 'napper' && row.state === 'running');
      },
      10_000,
    );
    const killed = await cli('subagents', 'kill', napper.childSessionKey);
    expect(killed).toEqual({ code: 0, stdout: `cancelled 1:\n${napper.childSessionKey}\n`, stderr: '' });
    expect((await cli('subagents', 'kill', napper.childSessionKey)).stdout).toBe(
      `${napper.childSessionKey} had already ended; nothing to cancel\n`,
    );
    const show = await cli('subagents', 'show', napper.subagentId);
    expect(show.stdout).toContain('  state:    cancelled - killed by the operator');
    const told = await waitUntil(
      'the parent was told',
      async () => {
        const { entries } = JSON.parse((await cli('--json', 'sessions', 'history', MAIN)).stdout) as {
          entries: { content: unknown; provenance: { kind: string } | null }[];
        };
        return entries.find(
          (entry) => entry.provenance?.kind === 'subagent_completion' && String(entry.content).includes('"napper" was cancelled'),
        );
      },
      10_000,
    );
    expect(String(told.content)).toContain('Diagnostic: killed by the operator');
    expect(await cli('subagents', 'show', 'nope')).toEqual({
      code: 1,
      stdout: '',
      stderr: 'switchboard: no sub-agent "nope" (subagents list shows them)\n',
    });
  });
});

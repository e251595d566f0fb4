/**
 * `switchboard team list|status|shutdown|resume` against a real gateway process, with an outside member that works
 * through the board CLI: each member's state, current task and last work; shutdown and resume.
 */
import { describe, expect, it } from 'vitest';
import { cliWith, gatewayForSuite, tempConfig } from '../helpers/process.js';
import { waitUntil } from '../helpers/wait.js';

const { configPath } = tempConfig(`{
  board: { sweepIntervalMs: 50 },
  teams: [{ id: "crew", lead: "lead", members: ["ann", "Outsider"] }],
  agents: { list: [{ id: "lead", model: "scripted/lead" }, { id: "ann", model: "scripted/worker" }] },
  models: { providers: { scripted: { type: "scripted", models: {
    lead: { rules: [{ reply: "noted" }] },
    worker: { rules: [{ steps: [{ toolCalls: [{ tool: "board_complete", args: { result: "built it" } }] }, { text: "done" }] }] },
  } } } },
}`);
const cli = cliWith(configPath);
const suite = gatewayForSuite(configPath);

describe('switchboard team', () => {
  it("status shows each member's state, task and last work; shutdown stops new work; resume starts it again", async () => {
    expect(suite.gw.url).toMatch(/^http/);
    await cli('board', 'create', 'build the thing', '--board', 'crew');
    const idle = await waitUntil('ann finished', async () => {
      const out = (await cli('team', 'status', 'crew')).stdout;
      return /\nann +agent +idle +- +completed build the thing .*: built it\n/.test(out) ? out : undefined;
    });
    expect(idle).toMatch(/^team crew {2}lead lead {2}board crew {2}active {2}tasks: 1 done\n/);
    expect(idle).toMatch(/\nOutsider +outside +idle +- +-\n/);
    // The outside member claims through the board CLI and is busy with it; the shutdown waits for it.
    await cli('board', 'create', 'write the notes', '--board', 'crew', '--assignee', 'Outsider');
    const { claim } = JSON.parse((await cli('board', 'claim', '--worker', 'Outsider', '--board', 'crew', '--json')).stdout);
    await cli('team', 'shutdown', 'crew');
    const busy = (await cli('team', 'status', 'crew')).stdout;
    expect(busy).toMatch(new RegExp(`\\nOutsider +outside +busy +${claim.taskId.slice(0, 8)} write the notes +-\\n`));
    expect(busy).toMatch(/ stopping {2}tasks: 1 done, 1 running\n/);
    await cli('board', 'complete', claim.taskId, '--token', String(claim.token), '--result', 'notes written');
    await waitUntil('stopped', async () => (await cli('team', 'status', 'crew')).stdout.includes(' stopped '));
    const resumed = await cli('team', 'resume', 'crew', '--json');
    expect(JSON.parse(resumed.stdout)).toMatchObject({ id: 'crew', state: 'active' });
    const listed = JSON.parse((await cli('team', 'list', '--json')).stdout);
    expect(listed.teams.map((team: { id: string }) => team.id)).toEqual(['crew']);
    expect((await cli('team', 'status', 'nope')).stderr).toBe('switchboard: no team "nope" (teams: crew)\n');
  });
});

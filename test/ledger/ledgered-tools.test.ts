/**
 * Every tool with an effect on shared state goes through the tool-call ledger (ARCHITECTURE.md 4.6). The list
 * below classes every tool a gateway offers; a new tool fails this test until it is classed, and one classed as
 * having effects fails unless it is ledgered (`effects: true`).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../../src/gateway/gateway.js';
import type { GatewayTool } from '../../src/ports/tools.js';
import { startTestGateway, stopTestGateway } from '../helpers/gateway.js';

/** Tools whose calls change shared state: each must be ledgered. */
const WITH_EFFECTS = [
  'sessions_send',
  'sessions_spawn',
  'subagents',
  'a2a_send',
  'a2a_cancel',
  'board_create',
  'board_comment',
  'board_link',
  'board_review',
  'board_complete',
  'board_request_review',
  'board_block',
  'write_file',
  'edit_file',
  'exec',
  'memory_write',
  'mailbox_send',
  'mailbox_reserve',
  'mailbox_release',
  'team_shutdown',
];

/** Tools that only read, each with why it needs no ledger. */
const READ_ONLY: Record<string, string> = {
  time_now: 'reads the clock',
  read_file: 'reads a file in the workspace',
  list_files: 'reads a folder in the workspace',
  search_files: 'reads files in the workspace',
  memory_search: 'reads the memory index',
  memory_get: 'reads the memory index',
  agents_list: 'reads the address book',
  sessions_list: 'reads sessions',
  sessions_history: 'reads a transcript',
  session_status: 'reads a session',
  sessions_wait:
    "takes only replies held for the calling run; a run cut short lets them go at recovery, so a retry's wait finds them again",
  board_list: 'reads the board',
  board_show: 'reads a task',
  a2a_discover: "reads a remote agent's card",
  a2a_get_task: 'reads a remote task',
  a2a_request_input: "its question is the run's answer, written with the run's commit",
  mailbox_list: 'reads the mailbox folder',
  team_status: "reads the team's board and state",
};

let gateway: Gateway;
beforeAll(async () => {
  gateway = await startTestGateway(`{
    board: { agents: ["*"] },
    mailbox: { enabled: true, dir: "${mkdtempSync(join(tmpdir(), 'sb-ledger-mailbox-'))}" },
    teams: [{ id: "t", lead: "a", members: ["Outside"] }],
    tools: { agentToAgent: { enabled: true }, sessions: { visibility: "all" } },
    a2a: { remoteAgents: [{ id: "far", url: "http://127.0.0.1:9/" }] },
    agents: { list: [{ id: "a", model: "scripted/a" }] },
    models: { providers: { scripted: { type: "scripted", models: { a: { rules: [{ reply: "ok" }] } } } } },
  }`);
});
afterAll(async () => {
  await stopTestGateway(gateway);
});

describe('the tool-call ledger covers every tool with effects', () => {
  // MCP tools are classed by the server's readOnlyHint (test/tools/mcp.test.ts); tools_load changes what a run is sent.
  it('every tool is classed, and each one with effects is ledgered', async () => {
    // Every agent's tools and the ones given per agent (sessions_spawn, in its variant for this agent).
    const extensions = (gateway as unknown as { extensions: { toolsFor(agentId: string): Promise<readonly GatewayTool[]> } }).extensions;
    const tools = await extensions.toolsFor('a');
    const names = tools.map((tool) => tool.name).sort();
    expect(names).toEqual([...WITH_EFFECTS, ...Object.keys(READ_ONLY)].sort());
    expect(tools.filter((tool) => WITH_EFFECTS.includes(tool.name) && !tool.effects).map((tool) => tool.name)).toEqual([]);
    expect(tools.filter((tool) => tool.name in READ_ONLY && tool.effects).map((tool) => tool.name)).toEqual([]);
  });
});

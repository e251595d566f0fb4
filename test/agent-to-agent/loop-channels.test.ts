/**
 * The hop budget on every carrier, not only sessions_send: two of the gateway's own agents that answer each other
 * through the file mailbox (or a Claude Code team's inboxes) stop at session.agentToAgent.maxHops, and the journal
 * says why (`loop.stopped`).
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Gateway } from '../../src/gateway/gateway.js';
import { startTestGateway, stopTestGateway } from '../helpers/gateway.js';
import { waitUntil } from '../helpers/wait.js';

let gateway: Gateway | undefined;
afterEach(async () => {
  if (gateway) await stopTestGateway(gateway);
  gateway = undefined;
});

const MAX_HOPS = 3;

/** Two agents whose scripted model answers every message, so that each reply becomes the other's next input. */
function config(root: string, extra: string): string {
  return `{
    agents: { list: [
      { id: "ops", model: "scripted/m", workspace: "${root}" },
      { id: "dev", model: "scripted/m", workspace: "${root}" },
    ] },
    tools: { agentToAgent: { enabled: true } },
    session: { agentToAgent: { maxHops: ${MAX_HOPS} } },
    ${extra}
    models: { providers: { scripted: { type: "scripted", models: { m: { rules: [{ reply: "re: {{input}}" }] } } } } },
  }`;
}

async function loopStopped(gw: Gateway) {
  const event = await waitUntil(
    'a loop.stopped event',
    async () => (await gw.store.events.list({ limit: 1000 })).find((candidate) => candidate.type === 'loop.stopped'),
    20_000,
  );
  return event.payload as { channel: string; from: string; hop: number; maxHops: number; reason: string };
}

describe('hop budget on the file and team channels', () => {
  it('mailbox: two agents replying to each other stop at maxHops, with the reason journalled and the file set aside', async () => {
    const root = realpathSync(mkdtempSync(join(tmpdir(), 'sb-loop-')));
    const dir = join(root, 'mailbox');
    gateway = await startTestGateway(config(root, `mailbox: { enabled: true, dir: "${dir}", scanIntervalMs: 50, partialGraceMs: 200 },`));
    // The first message comes from outside as "dev" (no conversation yet); every answer after it is an agent's output.
    mkdirSync(join(dir, 'inbox', 'ops'), { recursive: true });
    writeFileSync(
      join(dir, 'inbox', 'ops', `${Date.now()}-aaaaaa.json`),
      JSON.stringify({ id: 'first', from: 'dev', to: 'ops', text: 'hello', timestamp: new Date().toISOString(), replyTo: null }),
    );
    const stopped = await loopStopped(gateway);
    expect(stopped).toMatchObject({ channel: 'mailbox', hop: MAX_HOPS + 1, maxHops: MAX_HOPS });
    expect(stopped.reason).toContain(`past session.agentToAgent.maxHops (${MAX_HOPS})`);

    // The refused file is the last word: it is set aside with its reason, and no run answers it.
    const rejectedDir = await waitUntil('the refused file set aside', () => {
      for (const name of ['ops', 'dev']) {
        const folder = join(dir, 'inbox', name, '.rejected');
        if (existsSync(folder) && readdirSync(folder).some((file) => file.endsWith('.error'))) return folder;
      }
      return undefined;
    });
    const reason = readdirSync(rejectedDir).find((file) => file.endsWith('.error'))!;
    expect(readFileSync(join(rejectedDir, reason), 'utf8')).toContain('maxHops');
    const runs = await gateway.store.runs.list({ limit: 100 });
    // hop 0 (the outside message), then hops 1 to maxHops: one run each, and none for the refused hop.
    expect(runs).toHaveLength(MAX_HOPS + 1);
  });

  it('Claude Code team: two of our agents in one team answering each other stop at maxHops', async () => {
    const root = realpathSync(mkdtempSync(join(tmpdir(), 'sb-loop-team-')));
    const claudeDir = join(root, 'claude');
    gateway = await startTestGateway(config(root, `teams: [{ id: "crew", lead: "ops", members: ["dev"], claudeDir: "${claudeDir}" }],`));
    const inbox = await waitUntil('the team published', () => {
      const folder = join(claudeDir, 'teams', 'crew', 'inboxes');
      return existsSync(folder) ? folder : undefined;
    });
    writeFileSync(
      join(inbox, 'ops.json'),
      JSON.stringify([{ from: 'dev', text: 'hello', timestamp: new Date().toISOString(), read: false }]),
    );
    const stopped = await loopStopped(gateway);
    expect(stopped).toMatchObject({ channel: 'claude', hop: MAX_HOPS + 1, maxHops: MAX_HOPS });
    // The refused entry is marked read, so it holds up nothing after it.
    await waitUntil('every entry read', () =>
      ['ops', 'dev'].every((name) => {
        const path = join(inbox, `${name}.json`);
        return !existsSync(path) || (JSON.parse(readFileSync(path, 'utf8')) as { read: boolean }[]).every((entry) => entry.read);
      }),
    );
    const runs = await gateway.store.runs.list({ limit: 100 });
    expect(runs).toHaveLength(MAX_HOPS + 1);
  });
});

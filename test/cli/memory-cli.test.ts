/**
 * `switchboard memory status|search|reindex` against a real gateway process: counts and warnings per agent, a search
 * as an agent (its grants applied), a reindex; and a transcript indexed when an agent asks for it.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliWith, gatewayForSuite, tempConfig } from '../helpers/process.js';
import { waitUntil } from '../helpers/wait.js';

const { dir, configPath } = tempConfig('');
mkdirSync(join(dir, 'ops', 'memory'), { recursive: true });
writeFileSync(join(dir, 'ops', 'memory', 'deploy.md'), '# Deploy\nThe deploy runs on Fridays.\n');
mkdirSync(join(dir, 'dev'));
writeFileSync(
  configPath,
  `{
    memory: { scanIntervalSeconds: 1 },
    agents: { list: [
      { id: "ops", model: "scripted/m", workspace: "./ops", memory: { shareWith: ["dev"] } },
      { id: "dev", model: "scripted/m", workspace: "./dev", memory: { readFrom: [{ agent: "ops" }], transcripts: true } },
    ] },
    models: { providers: { scripted: { type: "scripted", models: { m: { rules: [{ reply: "noted: {{input}}" }] } } } } },
  }`,
);
const cli = cliWith(configPath);
const suite = gatewayForSuite(configPath);

describe('switchboard memory', () => {
  it('status counts each source and warns of an empty one with the reason; search applies grants; transcripts are indexed', async () => {
    expect(suite.gw.url).toMatch(/^http/);
    const status = await cli('memory', 'status');
    expect(status.stdout).toContain(`ops  1 files, 0 entries, 0 transcripts, 1 chunks  ${dir}/ops/memory\n`);
    expect(status.stdout).toContain(
      `  warning: no memory files: ${dir}/dev/memory does not exist; create it and put Markdown (.md) files in it`,
    );
    expect((await cli('memory', 'search', 'dev', 'deploy', 'Fridays')).stdout).toBe('ops:deploy.md:1-2  # Deploy\n');
    expect((await cli('memory', 'search', 'nobody', 'x')).stderr).toBe('switchboard: unknown agent "nobody" (agents: ops, dev)\n');
    // dev indexes its own transcripts: a message to it is searchable once the next scan has run.
    await cli('send', 'dev', 'the staging database is called pluto', '--wait');
    const hit = await waitUntil('the transcript is indexed', async () => {
      const found = await cli('--json', 'memory', 'search', 'dev', 'pluto');
      const hits = (JSON.parse(found.stdout) as { hits: { agentId: string; path: string; source: string }[] }).hits;
      return hits[0];
    });
    expect(hit).toMatchObject({ agentId: 'dev', path: 'sessions/agent:dev:main', source: 'transcript' });
    const reindexed = await cli('--json', 'memory', 'reindex', 'ops');
    expect(JSON.parse(reindexed.stdout).agents.find((agent: { agentId: string }) => agent.agentId === 'ops')).toMatchObject({
      files: 1,
      chunks: 1,
    });
  }, 30_000);
});

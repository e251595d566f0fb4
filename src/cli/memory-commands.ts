/** `switchboard memory status|search|reindex` (docs/memory.md): what each agent's memory index holds and why not more. */
import type { MemoryHit } from '../ports/index.js';
import type { AgentMemoryStatus } from '../memory/memory-index.js';
import { client, print, program } from './shared.js';

const memory = program.command('memory').description("agents' memory: what is indexed, a search as an agent, a reindex");

function describe(agents: AgentMemoryStatus[]): string {
  return agents
    .map((agent) => {
      const counts = `${agent.files} files, ${agent.entries} entries, ${agent.transcripts} transcripts, ${agent.chunks} chunks`;
      const warnings = agent.warnings.map((warning) => `\n  warning: ${warning}`).join('');
      return `${agent.agentId}  ${counts}  ${agent.folder ?? '(no workspace)'}${warnings}`;
    })
    .join('\n');
}

memory
  .command('status')
  .description('per agent: files, entries and transcripts indexed, and a warning for each source that holds nothing')
  .action(async () => {
    const answer = await client().request<{ agents: AgentMemoryStatus[] }>('GET', '/v1/memory');
    print(answer, () => describe(answer.agents));
  });

memory
  .command('search <agent> <query...>')
  .description('search as <agent> would: its own memory and what other agents share with it')
  .option('--limit <n>', 'hits at most', (value) => Number(value))
  .action(async (agent: string, words: string[], options: { limit?: number }) => {
    const answer = await client().request<{ hits: MemoryHit[] }>('POST', '/v1/memory/search', {
      agent,
      query: words.join(' '),
      limit: options.limit,
    });
    print(answer, () =>
      answer.hits.length
        ? answer.hits
            .map((hit) => `${hit.agentId}:${hit.path}:${hit.startLine}-${hit.endLine}  ${hit.text.split('\n')[0].slice(0, 100)}`)
            .join('\n')
        : 'no hits',
    );
  });

memory
  .command('reindex [agent]')
  .description("index every agent's memory files again from nothing (entries are kept)")
  .action(async (agent?: string) => {
    const answer = await client().request<{ agents: AgentMemoryStatus[] }>('POST', '/v1/memory/reindex', agent ? { agent } : {});
    print(answer, () => describe(answer.agents));
  });

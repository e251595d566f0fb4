/** `switchboard a2a tasks`: the tasks A2A peers gave this gateway, and their replay logs. */
import type { A2ATaskEventRecord, A2ATaskRecord } from '../ports/index.js';
import { ago, stateName, table } from './format.js';
import { program, client, parseLimit, withQuery, print } from './shared.js';

const a2a = program.command('a2a').description('the A2A server: tasks peers gave this gateway');
const a2aTasks = a2a.command('tasks').description('A2A tasks and their replay logs');
a2aTasks
  .command('list')
  .description('A2A tasks, newest first')
  .option('--agent <id>', 'only tasks of this agent')
  .option('--limit <n>', 'at most n', parseLimit)
  .action(async (options: { agent?: string; limit?: number }) => {
    const { tasks } = await client().request<{ tasks: A2ATaskRecord[] }>(
      'GET',
      withQuery('/v1/a2a/tasks', { agentId: options.agent, limit: options.limit }),
    );
    print({ tasks }, () =>
      table(
        tasks.map((task) => ({
          id: task.id,
          agent: task.agentId,
          peer: task.owner,
          state: stateName(task.state),
          active: ago(task.lastActivityAt),
          session: task.sessionKey,
        })),
        ['id', 'agent', 'peer', 'state', 'active', 'session'],
      ),
    );
  });
a2aTasks
  .command('show <taskId>')
  .description('one A2A task (by id or a unique prefix of it)')
  .option('--events', 'print the replay log: every message, state change and push delivery attempt')
  .action(async (taskId: string, options: { events?: boolean }) => {
    const shown = await client().request<{ task: A2ATaskRecord; events: A2ATaskEventRecord[] }>(
      'GET',
      `/v1/a2a/tasks/${encodeURIComponent(taskId)}`,
    );
    print(options.events ? shown : { task: shown.task }, () => {
      const task = shown.task;
      const lines = [
        `task ${task.id}`,
        `  agent:   ${task.agentId} (session ${task.sessionKey ?? '-'})`,
        `  peer:    ${task.owner}`,
        `  context: ${task.contextId}`,
        `  state:   ${stateName(task.state)}`,
        `  created ${ago(task.createdAt)}, last activity ${ago(task.lastActivityAt)}`,
      ];
      if (options.events) {
        lines.push('events:');
        for (const event of shown.events)
          lines.push(`  ${new Date(event.createdAt).toISOString()} ${event.type} ${JSON.stringify(event.detail)}`);
      }
      return lines.join('\n');
    });
  });

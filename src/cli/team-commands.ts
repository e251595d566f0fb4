/** `switchboard team list|status|shutdown|resume` (docs/teams.md): each member's state, current task and last word. */
import type { TeamStatus } from '../mailbox/teams.js';
import { ago, table } from './format.js';
import { client, print, program } from './shared.js';

const team = program.command('team').description('teams of a lead and members on a shared board: status, shutdown, resume');

function describe(status: TeamStatus): string {
  const counts = Object.entries(status.tasks)
    .map(([state, count]) => `${count} ${state}`)
    .join(', ');
  const head = `team ${status.id}  lead ${status.lead}  board ${status.board}  ${status.state}${status.release ? ' (releasing)' : ''}  tasks: ${counts || 'none'}`;
  const rows = status.members.map((member) => ({
    member: member.name,
    kind: member.kind,
    state: member.state,
    task: member.task ? `${member.task.id.slice(0, 8)} ${member.task.title}` : '-',
    last: member.last
      ? `${member.last.outcome} ${member.last.title} ${ago(member.last.at)}${member.last.text ? `: ${member.last.text.split('\n')[0].slice(0, 60)}` : ''}`
      : '-',
  }));
  return `${head}\n${table(rows, ['member', 'kind', 'state', 'task', 'last'])}`;
}

team
  .command('list')
  .description('every team with its state and its members')
  .action(async () => {
    const answer = await client().request<{ teams: TeamStatus[] }>('GET', '/v1/teams');
    print(answer, () => (answer.teams.length ? answer.teams.map(describe).join('\n\n') : 'no teams (configure teams: [...])'));
  });

team
  .command('status <id>')
  .description("each member's state (busy, idle, gone), its current task and what it last finished")
  .action(async (id: string) => {
    const answer = await client().request<TeamStatus>('GET', `/v1/teams/${encodeURIComponent(id)}`);
    print(answer, () => describe(answer));
  });

team
  .command('shutdown <id>')
  .description('members take no new tasks and finish what they hold; the team stops once all are idle')
  .option('--release', 'give back what members hold now (their runs stopped, not counted as failures)')
  .action(async (id: string, options: { release?: boolean }) => {
    const answer = await client().request<TeamStatus>('POST', `/v1/teams/${encodeURIComponent(id)}/shutdown`, {
      release: options.release === true,
    });
    print(answer, () => describe(answer));
  });

team
  .command('resume <id>')
  .description('a team shut down works again')
  .action(async (id: string) => {
    const answer = await client().request<TeamStatus>('POST', `/v1/teams/${encodeURIComponent(id)}/resume`, {});
    print(answer, () => describe(answer));
  });

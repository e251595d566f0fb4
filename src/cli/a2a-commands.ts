/**
 * `switchboard a2a tasks`: the tasks A2A peers gave this gateway, and their replay logs; `a2a discover`: peers on the
 * LAN; `a2a add`: a remote agent configured from its URL.
 */
import { cardUrlOf, discoverPeers, readCard } from '../a2a/discovery.js';
import { loadConfigFile } from '../config/load.js';
import { SwitchboardError } from '../core/errors.js';
import { guardedFetch } from '../net/outbound-guard.js';
import type { A2ATaskEventRecord, A2ATaskRecord } from '../ports/index.js';
import { addRemoteAgent } from './config-edits.js';
import { ago, stateName, table } from './format.js';
import { program, client, configPath, parseLimit, parseSeconds, withQuery, print } from './shared.js';

const a2a = program.command('a2a').description('the A2A server: tasks peers gave this gateway; peers on the LAN; remote agents');
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

a2a
  .command('discover')
  .description(
    'A2A peers on the LAN (DNS-SD _a2a._tcp and _pi-a2a._tcp; needs a2a.discovery.mdns), each with its card; none is trusted until added',
  )
  .option('--seconds <n>', 'how long to listen (default: a2a.discovery.seconds, 3)', parseSeconds)
  .action(async (options: { seconds?: number }) => {
    const { config } = loadConfigFile(configPath(), process.env, { unsetEnv: 'allow' });
    if (options.seconds !== undefined) config.a2a.discovery.seconds = options.seconds;
    const peers = await discoverPeers(config);
    print({ peers }, () =>
      peers.length === 0
        ? `no A2A peer answered on the LAN within ${config.a2a.discovery.seconds}s`
        : `${table(
            peers.map((peer) => ({
              name: peer.name,
              service: peer.service,
              card: peer.cardUrl,
              agent: peer.card
                ? `${peer.card.name}${peer.card.skills.length ? ` (${peer.card.skills.join(', ')})` : ''}`
                : `unread: ${peer.error}`,
            })),
            ['name', 'service', 'card', 'agent'],
          )}\nadd one with "switchboard a2a add <card url>"`,
    );
  });

a2a
  .command('add <url>')
  .description(
    "configure the A2A agent at <url> (its base URL or its card's) as a remote agent under a2a.remoteAgents, after reading its card",
  )
  .option('--id <id>', "its id in this gateway (default: from the card's name)")
  .action(async (url: string, options: { id?: string }) => {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new SwitchboardError('INVALID_REQUEST', `"${url}" is not a URL; give the agent's http(s) URL or its card's`);
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
      throw new SwitchboardError('INVALID_REQUEST', `"${url}" is not an http(s) URL`);
    // The operator names this peer, as a configured remote agent: a private address is allowed.
    const card = await readCard(cardUrlOf(url), guardedFetch({ setting: 'a2a.client.allowPrivateTargets', allowPrivate: true }));
    const id = options.id ?? idFromName(card.name);
    addRemoteAgent(configPath(), { id, url });
    print({ id, url, card }, () =>
      [
        `added remote agent "${id}" (${card.name}) at ${url} to ${configPath()}`,
        'if it needs credentials, add its token or apiKey to that entry; restart the gateway to use it (a2a is read at start)',
      ].join('\n'),
    );
  });

/** An agent id (1-64 of [a-z0-9_-]) from a card's name. */
function idFromName(name: string): string {
  const id = name
    .toLowerCase()
    .replace(/[^a-z0-9_-]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 64);
  if (!id) throw new SwitchboardError('INVALID_REQUEST', `no id can be made from the card's name "${name}"; pass --id`);
  return id;
}

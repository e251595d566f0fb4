/**
 * The mailbox front as the composition root plugs it in (src/app.ts): the file mailbox, the teams on the board and
 * their Claude Code mirrors, with the tools, deliveries and lives of each as gateway extensions.
 */
import type { BoardService } from '../board/board.js';
import type { Clock, MailboxStore } from '../ports/index.js';
import type { ExtensionParts } from '../ports/extensions.js';
import type { GatewayExtension } from '../ports/extensions.js';
import { CLAUDE_REPLY_KIND, ClaudeTeams } from './claude-team.js';
import { MailboxService, REPLY_KIND, SEND_KIND } from './mailbox.js';
import { createMailboxTools } from './mailbox-tools.js';
import { createTeamTools } from './team-tools.js';
import { Teams } from './teams.js';

export interface MailboxFront {
  mailbox: MailboxService;
  teams: Teams;
  claude: ClaudeTeams;
  extensions: GatewayExtension[];
}

/**
 * `kick` has the board's dispatcher look at the teams' seats again (it is built after this, from `teams`). `fileClock`
 * is the local machine's clock, which files are stamped by (locks, partly written files, registrations); `parts.clock`
 * is the store's, the database's on PostgreSQL.
 */
export function mailboxFront(
  parts: ExtensionParts,
  store: MailboxStore,
  board: BoardService,
  kick: () => void,
  fileClock: Clock,
): MailboxFront {
  const { config } = parts;
  const mailbox = new MailboxService({
    config,
    dataDir: parts.dataDir,
    store,
    clock: parts.clock,
    fileClock,
    gatewayId: parts.gatewayId,
    api: parts.api,
    enqueue: (row) => parts.enqueueDelivery(row),
    log: parts.log,
  });
  const teams = new Teams({
    config,
    board,
    store,
    clock: parts.clock,
    api: parts.api,
    kick,
    tellOutside: async (lead, member, text, key) => {
      const from = config.mailbox.enabled ? mailbox.nameOf(lead) : undefined;
      if (from) await mailbox.send({ from, to: member, text, replyTo: null }, key);
    },
    alive: (name) => (config.mailbox.enabled ? mailbox.list().find((participant) => participant.name === name)?.alive : undefined),
    log: parts.log,
  });
  const claude = new ClaudeTeams({ config, board, api: parts.api, clock: fileClock, log: parts.log });
  const deliver = (row: Parameters<MailboxService['deliver']>[0]) => mailbox.deliver(row);
  const extensions: GatewayExtension[] = [
    {
      tools: [...(config.mailbox.enabled ? createMailboxTools(mailbox) : []), ...(config.teams.length > 0 ? createTeamTools(teams) : [])],
      deliveries: config.mailbox.enabled ? { [REPLY_KIND]: deliver, [SEND_KIND]: deliver } : {},
      writeGuard: (agentId, path) => mailbox.writeRefusal(agentId, path),
      start: () => mailbox.start(),
      stop: () => mailbox.stop(),
    },
    {
      deliveries: claude.mirrors.size > 0 ? { [CLAUDE_REPLY_KIND]: (row) => claude.deliver(row) } : {},
      start: () => claude.start(),
      stop: () => claude.stop(),
    },
  ];
  return { mailbox, teams, claude, extensions };
}

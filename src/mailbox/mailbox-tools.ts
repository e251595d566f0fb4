/**
 * The mailbox tools (docs/mailbox.md): `mailbox_send` (through the outbox, once per call even when a crashed run is
 * retried), `mailbox_list` (who is in the directory, alive or gone, with their reservations), and `mailbox_reserve` /
 * `mailbox_release` (paths others should not write while you work on them; the workspace tools respect them).
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { hopRefusal, onwardHop } from '../core/hops.js';
import { agentToAgentAllowed } from '../core/session-access.js';
import { defineTool, toolFailure, unlisted } from '../tools/tool-contract.js';
import type { AvailabilityContext, GatewayTool } from '../ports/tools.js';
import { number, text, textList } from '../tools/schema.js';
import type { MailboxService } from './mailbox.js';

const MAX_TEXT = 64_000;

export function createMailboxTools(mailbox: MailboxService): GatewayTool[] {
  const available = async (session: AvailabilityContext) => mailbox.enabled && mailbox.nameOf(session.agentId) !== undefined;
  const send = defineTool({
    name: 'mailbox_send',
    description: 'Send a message to a name in the shared file mailbox (another agent or process on this machine).',
    effects: true,
    deferred: true,
    available,
    parameters: z.object({ to: text(), text: text(), replyTo: unlisted(text().optional()) }),
    async execute(args, context) {
      const from = mailbox.nameOf(context.agentId);
      if (!from) return { status: 'error', error: `agent "${context.agentId}" is not in the mailbox (agents.list[].mailbox.enabled)` };
      if (args.text.trim() === '' || args.text.length > MAX_TEXT)
        return { status: 'error', error: `text must be 1 to ${MAX_TEXT} characters` };
      const targetAgent = mailbox.names().get(args.to);
      if (targetAgent && !agentToAgentAllowed(mailbox.policy, context.agentId, targetAgent))
        return {
          status: 'forbidden',
          layer: 'agentToAgent',
          error: `agent "${context.agentId}" may not message agent "${targetAgent}" (tools.agentToAgent)`,
        };
      // The hop budget: refused here, where the model can answer instead, as well as by a receiving gateway.
      const conversation = onwardHop(context.conversation, () => context.runId || randomUUID());
      const loop = hopRefusal(conversation, mailbox.maxHops, 'mailbox message');
      if (loop) return { status: 'error', code: 'HOP_LIMIT_EXCEEDED', error: loop };
      try {
        const sent = await mailbox.send(
          { from, to: args.to, text: args.text, replyTo: args.replyTo ?? null, conversation },
          context.idempotencyKey,
        );
        return { status: 'queued', id: sent.id, from, to: sent.to };
      } catch (error) {
        return toolFailure(error);
      }
    },
  });
  const list = defineTool({
    name: 'mailbox_list',
    description: 'Who is in the shared file mailbox: names, alive or gone, activity and reserved paths.',
    deferred: true,
    available,
    parameters: z.object({}),
    async execute(_args, context) {
      const own = mailbox.nameOf(context.agentId);
      return {
        you: own,
        participants: mailbox.list().map((participant) => ({
          name: participant.name,
          status: participant.alive ? 'alive' : participant.registration ? 'gone' : 'inbox only',
          ...(participant.registration?.statusMessage ? { status_message: participant.registration.statusMessage } : {}),
          ...(participant.registration ? { last_activity: participant.registration.activity?.lastActivityAt } : {}),
          reservations: (participant.registration?.reservations ?? []).map((reservation) =>
            reservation.reason ? `${reservation.pattern} (${reservation.reason})` : reservation.pattern,
          ),
          waiting: participant.waiting,
        })),
      };
    },
  });
  const reserve = defineTool({
    name: 'mailbox_reserve',
    description: 'Reserve paths (a pattern ending in / covers a folder) so that others do not write them while you work.',
    effects: true,
    deferred: true,
    available,
    parameters: z.object({
      paths: textList(1, 50, 'paths'),
      reason: unlisted(text().optional()),
      ttlSeconds: unlisted(number(1, 86_400).optional()),
    }),
    async execute(args, context) {
      try {
        const outcome = await mailbox.reserve(context.agentId, args.paths, args.reason, args.ttlSeconds);
        if ('conflict' in outcome)
          return {
            status: 'conflict',
            error: `"${outcome.conflict.pattern}" overlaps "${outcome.conflict.heldPattern}", reserved by ${outcome.conflict.holder}${outcome.conflict.reason ? ` (${outcome.conflict.reason})` : ''}; nothing was reserved`,
            holder: outcome.conflict.holder,
            reason: outcome.conflict.reason,
          };
        return {
          status: 'reserved',
          paths: outcome.reserved.map((reservation) => reservation.pattern),
          until: new Date(outcome.reserved[0].expiresAt).toISOString(),
        };
      } catch (error) {
        return toolFailure(error);
      }
    },
  });
  const release = defineTool({
    name: 'mailbox_release',
    description: 'Release paths you reserved (all of them without paths).',
    effects: true,
    deferred: true,
    available,
    parameters: z.object({ paths: unlisted(textList(1, 50, 'paths').optional()) }),
    async execute(args, context) {
      try {
        return { status: 'released', paths: await mailbox.release(context.agentId, args.paths) };
      } catch (error) {
        return toolFailure(error);
      }
    },
  });
  return [send, list, reserve, release];
}

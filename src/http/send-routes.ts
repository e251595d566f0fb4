/**
 * `POST /v1/send`: a message into a session, answered once it is stored, or with its reply when the caller waits;
 * with `from`, a message sent as an agent session through the checks its sessions_send meets.
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { SwitchboardError } from '../core/errors.js';
import { QUEUE_MODES } from '../core/queue-mode.js';
import type { Intake, Presence, Waits } from '../ports/gateway.js';

/** What the send routes ask of the door. */
type SendGateway = Pick<Presence, 'config'> & Pick<Intake, 'send' | 'sendAs'> & Pick<Waits, 'waitForInput' | 'durable'>;
import type { SendAccepted, SendAnswer, SendAsAnswer } from './answers.js';
import { parseBody, readJson } from './json-body.js';
import type { RouteAdder } from './route.js';

const sendBody = z.strictObject({
  target: z.string().min(1).optional(),
  message: z.string(),
  mode: z.enum(QUEUE_MODES).optional(),
  idempotencyKey: z.string().min(1).max(512).optional(),
  wait: z.boolean().optional(),
  timeoutSeconds: z.number().positive().max(3600).optional(),
  channel: z.string().min(1).max(64).optional(),
  peer: z.string().min(1).max(256).optional(),
  account: z.string().min(1).max(256).optional(),
  /** Send as this agent session (sessions_send's checks apply); the reply belongs to that session. */
  from: z.string().min(1).max(512).optional(),
  /** With `from`: the target session's label (`target`, if given, is then the agent id). */
  label: z.string().min(1).max(512).optional(),
});

export function sendRoutes(gw: SendGateway, route: RouteAdder): void {
  route('POST', /^\/v1\/send$/, async (request): Promise<SendAnswer | SendAsAnswer> => {
    const body = parseBody(sendBody, await readJson(request));
    if (body.from) return sendAs(gw, body);
    if (body.label)
      throw new SwitchboardError(
        'INVALID_REQUEST',
        'label is only used with from (a send as an agent session); address your own sends with target',
      );
    const sent = await gw.send({
      target: body.target,
      message: body.message,
      mode: body.mode,
      idempotencyKey: body.idempotencyKey,
      waiting: body.wait === true,
      inbound: {
        channel: body.channel ?? 'api',
        ...(body.peer ? { peer: body.peer } : {}),
        ...(body.account ? { account: body.account } : {}),
      },
    });
    const accepted: SendAccepted = {
      status: 'accepted',
      inputId: sent.input.id,
      sessionKey: sent.sessionKey,
      created: sent.created,
      mode: sent.input.mode,
    };
    if (!body.wait) return accepted;
    const timeoutMs = (body.timeoutSeconds ?? gw.config.gateway.waitTimeoutSeconds) * 1000;
    const result = await gw.waitForInput(sent.input.id, timeoutMs, sent.created);
    // The input was accepted unsynced: a reply comes after its run's commit is synced, which covers it; any other answer
    // (stored, dropped, delivered) is an acknowledgement too, and is given only once what it tells of is durable.
    if (result.status !== 'completed') await gw.durable();
    switch (result.status) {
      case 'completed':
        return {
          ...accepted,
          status: 'ok',
          reply: result.reply,
          runId: result.run.id,
          runStatus: result.run.status,
          error: result.run.errorMessage,
        };
      case 'stored':
        return { ...accepted, status: 'stored' };
      case 'dropped':
        return { ...accepted, status: 'dropped', error: result.input.note };
      case 'timeout':
        return { ...accepted, status: 'timeout', delivered: true };
    }
  });
}

async function sendAs(gateway: SendGateway, body: z.infer<typeof sendBody>): Promise<SendAsAnswer> {
  if (body.channel || body.peer || body.account) {
    throw new SwitchboardError(
      'INVALID_REQUEST',
      "channel, peer and account describe a user's channel; a send with from comes from an agent session and takes none of them",
    );
  }
  const target = body.target;
  const ref = body.label
    ? { label: body.label, agentId: target }
    : target?.startsWith('agent:')
      ? { sessionKey: target }
      : { agentId: target };
  if (!ref.label && !ref.sessionKey && !ref.agentId)
    throw new SwitchboardError('INVALID_REQUEST', 'a send with from needs a target (an agent id or a session key) or a label');
  const timeoutSeconds = body.wait ? (body.timeoutSeconds ?? gateway.config.gateway.waitTimeoutSeconds) : 0;
  return gateway.sendAs(body.from!, {
    ...ref,
    message: body.message,
    mode: body.mode,
    timeoutSeconds,
    idempotencyKey: body.idempotencyKey ?? `api:${randomUUID()}`,
  });
}

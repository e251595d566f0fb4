/**
 * The control API's gate routes (docs/gates.md, docs/control-api.md "Approvals and budgets"): approval requests listed,
 * shown and answered, and the budgets' spend. Watch requests come and go with `/v1/events?type=approval.`.
 */
import type { IncomingMessage } from 'node:http';
import { z } from 'zod';
import { APPROVAL_STATUSES } from '../core/gates.js';
import type { GatewayApi } from '../ports/gateway.js';
import type { ApprovalStatus } from '../ports/index.js';
import { SwitchboardError } from '../core/errors.js';
import { parseBody, readJson } from './json-body.js';
import type { RouteAdder } from './route.js';

const decideBody = z.strictObject({
  /** Who answers (recorded with the decision): defaults to `console` from the console, else `api`. */
  by: z.string().min(1).max(200).optional(),
  note: z.string().max(4000).optional(),
  /** Approve with these arguments instead of the model's (where the request is editable). */
  args: z.record(z.string(), z.unknown()).optional(),
});

const approver = (request: IncomingMessage, by: string | undefined) =>
  by ?? (request.headers['x-switchboard-console'] === '1' ? 'console' : 'api');

export function gateRoutes(gateway: GatewayApi, route: RouteAdder, limitOf: (url: URL) => number | undefined): void {
  route('GET', /^\/v1\/approvals$/, async (_request, url) => {
    const status = url.searchParams.get('status') ?? 'pending';
    if (status !== 'all' && !(APPROVAL_STATUSES as readonly string[]).includes(status))
      throw new SwitchboardError('INVALID_REQUEST', `status must be one of ${[...APPROVAL_STATUSES, 'all'].join(', ')} (default pending)`);
    const approvals = await gateway.listApprovals({
      status: status === 'all' ? undefined : (status as ApprovalStatus),
      sessionKey: url.searchParams.get('session') ?? undefined,
      limit: limitOf(url),
    });
    return { approvals, pending: await gateway.pendingApprovals() };
  });
  route('GET', /^\/v1\/approvals\/([^/]+)$/, async (_request, _url, [id]) => ({
    approval: await gateway.getApproval(await gateway.resolveId('approval', id!)),
  }));
  for (const verb of ['approve', 'deny'] as const) {
    route('POST', new RegExp(`^/v1/approvals/([^/]+)/${verb}$`), async (request, _url, [id]) => {
      const body = parseBody(decideBody, await readJson(request));
      const approval = await gateway.decideApproval(await gateway.resolveId('approval', id!), {
        approve: verb === 'approve',
        by: approver(request, body.by),
        ...(body.note === undefined ? {} : { note: body.note }),
        ...(body.args === undefined ? {} : { editedArgs: body.args }),
      });
      return { approval };
    });
  }
  route('GET', /^\/v1\/budgets$/, async () => ({ budgets: await gateway.budgetStatus(), currency: 'USD' }));
}

/** `switchboard approvals` and `switchboard budgets` (docs/gates.md): the calls waiting for a person, and what budgets spent. */
import { userInfo } from 'node:os';
import type { ApprovalRecord } from '../ports/index.js';
import type { BudgetView } from '../ports/gateway.js';
import { ago, shorten, table } from './format.js';
import { program, client, parseLimit, withQuery, print } from './shared.js';

const approvals = program
  .command('approvals')
  .description('tool calls and budget raises waiting for a person: list, show, approve or deny them (docs/gates.md)');

function approvalRow(approval: ApprovalRecord) {
  return {
    id: approval.id,
    kind: approval.kind,
    subject: approval.subject,
    agent: approval.agentId,
    status: approval.status,
    asked: ago(approval.requestedAt),
    expires: approval.status === 'pending' ? new Date(approval.expiresAt).toISOString() : '',
    what: shorten(JSON.stringify(approval.details.subject ?? approval.args), 60),
  };
}

approvals
  .command('list')
  .description('approval requests, newest first')
  .option('--status <status>', 'pending, approved, denied, expired, closed (the run ended unanswered) or all', 'pending')
  .option('--session <key>', 'only requests of this session')
  .option('--limit <n>', 'at most n', parseLimit)
  .action(async (options: { status: string; session?: string; limit?: number }) => {
    const answer = await client().request<{ approvals: ApprovalRecord[]; pending: number }>(
      'GET',
      withQuery('/v1/approvals', { status: options.status, session: options.session, limit: options.limit }),
    );
    print(answer, () =>
      answer.approvals.length === 0
        ? `(no ${options.status === 'all' ? '' : `${options.status} `}approval requests)`
        : table(answer.approvals.map(approvalRow), ['id', 'kind', 'subject', 'agent', 'status', 'asked', 'expires', 'what']),
    );
  });

approvals
  .command('show <id>')
  .description('one request whole: who asked, exactly what (the command, the diff), and its answer')
  .action(async (id: string) => {
    const { approval } = await client().request<{ approval: ApprovalRecord }>('GET', `/v1/approvals/${encodeURIComponent(id)}`);
    print({ approval }, () => describeApproval(approval));
  });

for (const [verb, description] of [
  ['approve', 'let the call run (with --args, run it with these arguments instead), or raise the budget'],
  ['deny', 'refuse the call: the model is told who refused it and why'],
] as const) {
  const command = approvals
    .command(`${verb} <id>`)
    .description(description)
    .option('--reason <text>', 'why (the model reads it on a deny)')
    .option('--by <name>', 'who answers (recorded with the decision)', `cli:${safeUser()}`);
  if (verb === 'approve') command.option('--args <json>', 'the arguments to run the call with instead (a JSON object)');
  command.action(async (id: string, options: { reason?: string; by: string; args?: string }) => {
    const body: Record<string, unknown> = { by: options.by };
    if (options.reason) body.note = options.reason;
    if (options.args !== undefined) body.args = parseArgs(options.args);
    const { approval } = await client().request<{ approval: ApprovalRecord }>(
      'POST',
      `/v1/approvals/${encodeURIComponent(id)}/${verb}`,
      body,
    );
    print({ approval }, () => `${approval.status} ${approval.id} (${approval.subject}) by ${approval.decidedBy}`);
  });
}

program
  .command('budgets')
  .description('every budget cap with what it spent and holds reserved (docs/gates.md)')
  .action(async () => {
    const answer = await client().request<{ budgets: BudgetView[] }>('GET', '/v1/budgets');
    print(answer, () =>
      answer.budgets.length === 0
        ? '(no budgets configured: see budgets in docs/configuration.md)'
        : table(
            answer.budgets.map((budget) => ({
              key: budget.key,
              source: budget.source,
              tokens: against(budget.spent.tokens, budget.reserved.tokens, budget.limit.tokens, (n) => String(n)),
              cost: against(budget.spent.costMicros, budget.reserved.costMicros, budget.limit.costMicros, dollars),
            })),
            ['key', 'source', 'tokens', 'cost'],
          ),
    );
  });

const dollars = (micros: number) => `$${(micros / 1e6).toFixed(4)}`;

function against(spent: number, reserved: number, limit: number | undefined, show: (n: number) => string): string {
  if (limit === undefined) return spent ? `${show(spent)} (no cap)` : '';
  const share = Math.floor((spent / limit) * 100);
  return `${show(spent)} / ${show(limit)} (${share}%)${reserved ? ` +${show(reserved)} reserved` : ''}`;
}

function describeApproval(approval: ApprovalRecord): string {
  const lines = [
    `${approval.id}  ${approval.kind} ${approval.subject}  ${approval.status}`,
    `asked by   agent ${approval.agentId}, session ${approval.sessionKey}, run ${approval.runId}${approval.step >= 0 ? `, step ${approval.step}` : ''}`,
    `because    ${approval.reason}`,
    `asked      ${new Date(approval.requestedAt).toISOString()}; expires ${new Date(approval.expiresAt).toISOString()} (then ${approval.onExpiry})`,
  ];
  const { diff, ...details } = approval.details as { diff?: string } & Record<string, unknown>;
  lines.push(`arguments  ${JSON.stringify(approval.args)}`);
  if (Object.keys(details).length) lines.push(`details    ${JSON.stringify(details)}`);
  if (approval.decidedAt !== null)
    lines.push(
      `answered   ${approval.status} by ${approval.decidedBy} ${new Date(approval.decidedAt).toISOString()}${approval.note ? `: ${approval.note}` : ''}`,
    );
  if (approval.editedArgs !== null) lines.push(`ran with   ${JSON.stringify(approval.editedArgs)}`);
  if (approval.editable && approval.status === 'pending') lines.push('(approve --args <json> runs it with other arguments)');
  if (diff) lines.push('', diff);
  return lines.join('\n');
}

function parseArgs(text: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new Error(`--args is not JSON: ${(error as Error).message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new Error('--args must be a JSON object, e.g. {"command":"ls"}');
  return value as Record<string, unknown>;
}

function safeUser(): string {
  try {
    return userInfo().username;
  } catch {
    return 'unknown';
  }
}

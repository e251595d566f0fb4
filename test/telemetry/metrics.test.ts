/**
 * The metrics' gauges (docs/observability.md): what the process knows is always served; a store read that fails or
 * hangs leaves out only its own gauges, says so once, and is back at the next scrape that works; budgets are one series
 * per configured cap, however many keys (sessions, days) it has.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { OtelMetrics, type MetricSources } from '../../src/telemetry/otel-metrics.js';

let server: Server | undefined;
let metrics: OtelMetrics | undefined;
afterEach(async () => {
  server?.close();
  await metrics?.shutdown();
  server = metrics = undefined;
});

const status = {
  lanes: { main: { active: 2, waiting: 1, max: 4 } },
  waitingRuns: 3,
  takenOver: { runs: 1, lastAt: null },
} as unknown as ReturnType<MetricSources['status']>;

async function serve(sources: MetricSources, warn: (message: string) => void): Promise<() => Promise<string>> {
  metrics = new OtelMetrics({ serviceName: 'test', gatewayId: 'gw', warn });
  metrics.attach(sources);
  const made = metrics;
  server = createServer((request, response) => made.handle(request, response));
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`;
  return async () => (await fetch(url)).text();
}

const line = (text: string, name: string) => text.split('\n').filter((row) => row.startsWith(name));

describe('the gauges', () => {
  it('a failing store read costs only its own gauges, once logged, and they are back when it answers', async () => {
    let outboxDown = true;
    const warnings: string[] = [];
    const scrape = await serve(
      {
        status: () => status,
        outboxBacklog: async () => {
          if (outboxDown) throw new Error('connection refused');
          return { pending: 5, dead: 1 };
        },
        pendingApprovals: async () => 2,
        budgetStatus: async () => [],
        queuedSessions: async () => [{ key: 'agent:a:main', oldestQueuedAt: 1000 }],
        now: () => 31_000,
      },
      (message) => warnings.push(message),
    );
    for (let i = 0; i < 2; i += 1) {
      const text = await scrape();
      expect(line(text, 'switchboard_lane_active{')).toEqual([expect.stringMatching(/lane="main".* 2$/)]);
      expect(line(text, 'switchboard_runs_suspended{')[0]).toMatch(/ 3$/);
      expect(line(text, 'switchboard_approvals_waiting{')[0]).toMatch(/ 2$/);
      expect(line(text, 'switchboard_input_queue_age{')[0]).toMatch(/ 30$/);
      expect(line(text, 'switchboard_outbox_backlog{')).toEqual([]);
    }
    expect(warnings).toEqual([
      'metrics: could not read outbox backlog from the store for a scrape: connection refused; its gauges are left out until it answers',
    ]);
    outboxDown = false;
    const text = await scrape();
    expect(line(text, 'switchboard_outbox_backlog{')[0]).toMatch(/ 5$/);
    expect(line(text, 'switchboard_outbox_dead{')[0]).toMatch(/ 1$/);
  });

  it('budgets: one series per configured cap, summed over its keys', async () => {
    const amount = (tokens: number, costMicros = 0) => ({ tokens, costMicros });
    const scrape = await serve(
      {
        status: () => status,
        outboxBacklog: async () => ({ pending: 0, dead: 0 }),
        pendingApprovals: async () => 0,
        budgetStatus: async () =>
          Array.from({ length: 50 }, (_, i) => ({
            key: `session:agent:a:s${i}`,
            source: 'budgets.session',
            limit: { tokens: 1000 },
            spent: amount(10, 2000),
            reserved: amount(0),
          })),
        queuedSessions: async () => [],
        now: () => 0,
      },
      () => {},
    );
    const text = await scrape();
    expect(line(text, 'switchboard_budget_spent{')).toEqual([
      expect.stringMatching(/source="budgets.session",unit="tokens".* 500$/),
      expect.stringMatching(/source="budgets.session",unit="usd".* 0.1$/),
    ]);
    expect(line(text, 'switchboard_budget_keys{')[0]).toMatch(/ 50$/);
    expect(line(text, 'switchboard_budget_limit{')).toEqual([expect.stringMatching(/unit="tokens".* 1000$/)]);
  });
});

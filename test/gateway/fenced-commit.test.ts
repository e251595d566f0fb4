/**
 * A gateway fenced off from a session (another took its lease over while it ran, as after a pause past the lease)
 * has its run's commit refused, and says so in its log once, with the session, the run and the epoch it held.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startGateway } from '../../src/app.js';
import { parseConfigText } from '../../src/config/load.js';
import type { Gateway } from '../../src/gateway/gateway.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { waitUntil } from '../helpers/wait.js';

let gateway: Gateway | undefined;
afterEach(async () => {
  await gateway?.stop();
  await gateway?.store.close();
  gateway = undefined;
});

describe('a fenced commit', () => {
  it('a run whose lease another gateway took over while it ran is not committed, and the refusal is logged once with its epoch', async () => {
    const { config } = parseConfigText(
      // The reply takes 4 s: the lease is taken over long before it ends, and its renewal (every 10 s) never comes.
      `{ agents: { list: [{ id: "slow", model: "scripted/slow" }] },
         models: { providers: { scripted: { type: "scripted", models: { slow: { rules: [{ delayMs: 4000, reply: "late" }] } } } } } }`,
      '/test/switchboard.json5',
      {},
    );
    const store = await SqliteStore.open({ path: ':memory:' });
    const logged: { level: string; message: string; fields?: Record<string, unknown> }[] = [];
    gateway = await startGateway({
      config,
      store,
      gatewayId: 'gw-paused',
      log: (level, message, fields) => void logged.push({ level, message, fields }),
    });
    const sent = await gateway.send({ target: 'slow', message: 'hello' });
    const key = sent.sessionKey;
    const held = await waitUntil('the run holds the session lease', () =>
      store.raw.prepare(`SELECT epoch FROM session_lease WHERE session_key = ? AND owner = 'gw-paused'`).get(key),
    );
    const epoch = (held as { epoch: number }).epoch;
    // Another gateway takes the session over (its lease expired from that gateway's point of view).
    store.raw.prepare(`UPDATE session_lease SET owner = 'gw-other', epoch = epoch + 1 WHERE session_key = ?`).run(key);
    const refusals = () => logged.filter((line) => line.message.startsWith('commit refused'));
    await waitUntil('the commit is refused', () => refusals().length > 0, 10_000);
    expect(refusals()).toEqual([
      {
        level: 'warn',
        message: expect.stringMatching(
          new RegExp(
            `^commit refused: run \\S+ lost its lease on ${key} \\(epoch ${epoch}, now ${epoch + 1}\\); its results were not committed; the gateway that holds the session now runs its inputs$`,
          ),
        ),
        fields: { sessionKey: key, runId: expect.any(String), epoch },
      },
    ]);
    // Nothing of the run was kept: its input is still there for the gateway that holds the session.
    expect(store.raw.prepare(`SELECT status FROM inputs WHERE id = ?`).get(sent.input.id)).not.toEqual({ status: 'consumed' });
  });

  it('a run whose lease renewal is refused is stopped uncommitted, and that is logged once with its epoch', async () => {
    const { config } = parseConfigText(
      // The lease is renewed every second; the reply would take a minute, so only the refused renewal ends the run.
      `{ lanes: { leaseTtlSeconds: 3 }, agents: { list: [{ id: "slow", model: "scripted/slow" }] },
         models: { providers: { scripted: { type: "scripted", models: { slow: { rules: [{ delayMs: 60000, reply: "late" }] } } } } } }`,
      '/test/switchboard.json5',
      {},
    );
    const store = await SqliteStore.open({ path: ':memory:' });
    const logged: { level: string; message: string; fields?: Record<string, unknown> }[] = [];
    gateway = await startGateway({
      config,
      store,
      gatewayId: 'gw-paused',
      log: (level, message, fields) => void logged.push({ level, message, fields }),
    });
    const sent = await gateway.send({ target: 'slow', message: 'hello' });
    const key = sent.sessionKey;
    const held = await waitUntil('the run holds the session lease', () =>
      store.raw.prepare(`SELECT epoch FROM session_lease WHERE session_key = ? AND owner = 'gw-paused'`).get(key),
    );
    const epoch = (held as { epoch: number }).epoch;
    store.raw.prepare(`UPDATE session_lease SET owner = 'gw-other', epoch = epoch + 1 WHERE session_key = ?`).run(key);
    const lost = () => logged.filter((line) => line.message.includes('lost its lease'));
    await waitUntil('the lost lease is logged', () => lost().length > 0, 30_000);
    expect(lost()).toEqual([
      {
        level: 'warn',
        message: expect.stringMatching(
          new RegExp(
            `^run \\S+ on ${key} lost its lease \\(epoch ${epoch}: a renewal was refused, another gateway took the session over\\); its results were not committed`,
          ),
        ),
        // The run's span, so that a log search finds its trace (docs/observability.md).
        fields: {
          sessionKey: key,
          runId: expect.any(String),
          epoch,
          trace_id: expect.stringMatching(/^[0-9a-f]{32}$/),
          span_id: expect.stringMatching(/^[0-9a-f]{16}$/),
        },
      },
    ]);
  });
});

import { describe, expect, it } from 'vitest';
import { EventBus } from '../../src/gateway/event-bus.js';
import { journalPause } from '../../src/gateway/wait-until.js';
import type { RunRecord } from '../../src/ports.js';

const run = { id: 'r' } as RunRecord;

describe('the wait primitive', () => {
  it('a pause ends on a settled event for its input, published straight from a commit, before the journal is read back', async () => {
    const bus = new EventBus();
    const pause = journalPause(bus, new Set(), () => false);
    const wakeOn = (payload: Record<string, unknown>) => (payload.inputIds as string[] | undefined)?.includes('in-1') === true;
    const started = Date.now();
    const waiting = pause(10_000, wakeOn);
    bus.publish({ type: 'settled', sessionKey: 'agent:a:main', inputIds: ['in-0'], run });
    bus.publish({ type: 'delta', sessionKey: 'agent:a:main', runId: 'r', text: 'x' });
    let woken = false;
    void waiting.then(() => (woken = true));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(woken).toBe(false);
    bus.publish({ type: 'settled', sessionKey: 'agent:a:main', inputIds: ['in-1', 'in-2'], run });
    await waiting;
    expect(Date.now() - started).toBeLessThan(1000);
  });
});

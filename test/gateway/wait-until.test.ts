import { describe, expect, it } from 'vitest';
import { EventBus, eventKeys } from '../../src/gateway/events/event-bus.js';
import type { LiveEvent } from '../../src/ports/gateway.js';
import { journalPause } from '../../src/gateway/events/event-bus.js';
import type { EventRecord, RunRecord } from '../../src/ports/index.js';

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

describe('keyed wakeups', () => {
  const journal = (type: EventRecord['type'], sessionKey: string | null, payload: Record<string, unknown>): LiveEvent => ({
    type: 'journal',
    event: { seq: 1, type, sessionKey, runId: null, payload, createdAt: 0 },
  });

  it('an event is about its session and the inputs, exchange, sub-agent and target session its payload names', () => {
    expect(
      eventKeys(
        journal('exchange.updated', 'agent:a:main', {
          exchangeId: 'x1',
          targetSession: 'agent:b:main',
          inputIds: ['i1', 'i2'],
          inputId: 'i3',
          subagentId: 's1',
        }),
      ),
    ).toEqual(['session:agent:a:main', 'input:i3', 'input:i1', 'input:i2', 'exchange:x1', 'subagent:s1', 'session:agent:b:main']);
    expect(eventKeys(journal('lane.stalled', null, {}))).toEqual([]);
    expect(eventKeys({ type: 'settled', sessionKey: 'agent:a:main', inputIds: ['i1'], run })).toEqual(['session:agent:a:main', 'input:i1']);
    expect(eventKeys({ type: 'delta', sessionKey: 'agent:a:main', runId: 'r', text: 'x' })).toEqual([]);
  });

  it('a keyed listener hears only the events about its keys, once per event, and nothing after it unsubscribes', () => {
    const bus = new EventBus();
    const heard: string[] = [];
    const stop = bus.subscribeKeys(['input:i1', 'session:agent:a:main'], (event) =>
      heard.push(event.type === 'journal' ? event.event.type : event.type),
    );
    bus.publish(journal('input.dropped', 'agent:b:main', { inputId: 'i2' }));
    bus.publish(journal('run.completed', 'agent:a:main', { inputIds: ['i1'] }));
    bus.publish({ type: 'settled', sessionKey: 'agent:b:main', inputIds: ['i1'], run });
    stop();
    bus.publish(journal('input.dropped', 'agent:a:main', { inputId: 'i1' }));
    expect(heard).toEqual(['run.completed', 'settled']);
  });

  it('a keyed pause ends on an event about its key that its test accepts; events about other keys never reach its test', async () => {
    const bus = new EventBus();
    const pause = journalPause(bus, new Set(), () => false);
    const tested: unknown[] = [];
    const waiting = pause(10_000, {
      keys: ['input:in-1'],
      test: (payload, _sessionKey, type) => (tested.push(payload), type !== 'run.started'),
    });
    let woken = false;
    void waiting.then(() => (woken = true));
    bus.publish(journal('input.dropped', 'agent:a:main', { inputId: 'in-2' }));
    bus.publish(journal('run.started', 'agent:a:main', { inputIds: ['in-1'] }));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(woken).toBe(false);
    expect(tested).toEqual([{ inputIds: ['in-1'] }]);
    bus.publish(journal('input.dropped', 'agent:a:main', { inputId: 'in-1', note: 'gone' }));
    await waiting;
    expect(tested).toHaveLength(2);
  });
});

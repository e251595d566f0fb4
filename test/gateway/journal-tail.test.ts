/** The journal's tail: events handed over by the commit that wrote them are published without a read, in order, once each. */
import { describe, expect, it } from 'vitest';
import { EventBus } from '../../src/gateway/events/event-bus.js';
import { JournalTail } from '../../src/gateway/events/journal-tail.js';
import type { EventRecord, JournalEventType } from '../../src/ports/index.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';

async function setup() {
  const store = await SqliteStore.open({ path: ':memory:' });
  const bus = new EventBus();
  const published: number[] = [];
  bus.subscribe((live) => {
    if (live.type === 'journal') published.push(live.event.seq);
  });
  let reads = 0;
  const list = store.events.list.bind(store.events);
  store.events.list = (filter) => {
    reads += 1;
    return list(filter);
  };
  const tail = new JournalTail(store, bus);
  await tail.init();
  const append = (type: JournalEventType) => store.events.append({ type, payload: {} }, 1000);
  return { store, tail, published, append, reads: () => reads };
}

describe('JournalTail', () => {
  it('publishes events handed over by their commit at once, without reading them back', async () => {
    const { tail, published, append, reads } = await setup();
    const [a, b] = [await append('run.started'), await append('run.completed')];
    tail.committed([a, b]);
    expect(published).toEqual([a.seq, b.seq]);
    tail.committed([await append('input.stored')]);
    expect(published).toEqual([1, 2, 3]);
    expect(reads()).toBe(0);
  });

  it('reads the journal when events come before the handed-over ones unpublished, and publishes each once, in order', async () => {
    const { tail, published, append, reads } = await setup();
    const first = await append('input.stored');
    const second = await append('run.started');
    tail.committed([second]);
    await tail.kick();
    expect(published).toEqual([first.seq, second.seq]);
    expect(reads()).toBeGreaterThan(0);
    // The other writer's own hand-over, late: already published.
    tail.committed([first]);
    await tail.kick();
    expect(published).toEqual([first.seq, second.seq]);
  });

  it('events handed over while a read is under way are not published twice', async () => {
    const { store, tail, published, append } = await setup();
    const events: EventRecord[] = [await append('run.started'), await append('run.completed')];
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const list = store.events.list;
    store.events.list = async (filter) => {
      const rows = await list(filter);
      await gate;
      return rows;
    };
    const read = tail.kick();
    await new Promise((resolve) => setTimeout(resolve, 5));
    tail.committed([events[0]]);
    release();
    await read;
    expect(published).toEqual([events[0].seq, events[1].seq]);
  });
});

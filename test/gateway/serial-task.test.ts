import { describe, expect, it } from 'vitest';
import { PeriodicTask, SerialTask } from '../../src/kit/serial-task.js';

function gate() {
  let open: () => void = () => {};
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

describe('SerialTask', () => {
  it('serial task: calls during a run queue exactly one more run, never a parallel one', async () => {
    let running = 0;
    let maxRunning = 0;
    let runs = 0;
    const gates = [gate(), gate()];
    const task = new SerialTask(
      async () => {
        running += 1;
        maxRunning = Math.max(maxRunning, running);
        await gates[runs++]?.opened;
        running -= 1;
      },
      () => {},
    );
    const first = task.kick();
    const second = task.kick();
    const third = task.kick();
    expect(second).toBe(third);
    gates[0].open();
    await first;
    expect(runs).toBe(2);
    gates[1].open();
    await third;
    await task.idle();
    expect({ runs, maxRunning }).toEqual({ runs: 2, maxRunning: 1 });
  });

  it('serial task: a kick during a run settles only after a run that started after it', async () => {
    const seen: number[] = [];
    let value = 0;
    const first = gate();
    let calls = 0;
    const task = new SerialTask(
      async () => {
        const snapshot = value;
        if (calls++ === 0) await first.opened;
        seen.push(snapshot);
      },
      () => {},
    );
    void task.kick();
    value = 1; // written while the first run is past its read
    const settled = task.kick();
    first.open();
    await settled;
    expect(seen).toEqual([0, 1]);
  });

  it('serial task: a failing run is reported and does not stop the next one', async () => {
    const errors: unknown[] = [];
    let calls = 0;
    const task = new SerialTask(
      async () => {
        if (calls++ === 0) throw new Error('store unreachable');
      },
      (error) => errors.push(error),
    );
    await task.kick();
    await task.kick();
    expect(calls).toBe(2);
    expect(errors.map(String)).toEqual(['Error: store unreachable']);
  });
});

describe('PeriodicTask', () => {
  it('kickAt runs once at the earliest time asked for, before the next interval, and not after stop', async () => {
    const runs: number[] = [];
    const started = Date.now();
    const task = new PeriodicTask(
      async () => void runs.push(Date.now() - started),
      () => {},
      60_000,
    );
    task.kickAt(started + 200);
    task.kickAt(started + 40); // sooner: it wins
    task.kickAt(started + 100); // later than one due already: ignored
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(runs).toHaveLength(1);
    expect(runs[0]).toBeGreaterThanOrEqual(40);
    task.kickAt(Date.now() + 50);
    await task.stop();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(runs).toHaveLength(1);
  });
});

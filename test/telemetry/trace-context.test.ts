/** W3C trace context as the gateway reads and derives it (kit/trace-context.ts). */
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logging.js';
import { parseConfigText } from '../../src/config/load.js';
import { startGateway } from '../../src/app.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { waitUntil } from '../helpers/wait.js';
import { SerialTask } from '../../src/kit/serial-task.js';
import { EventBus } from '../../src/gateway/events/event-bus.js';
import {
  currentTraceparent,
  formatTraceparent,
  NO_TRACING,
  parseTraceparent,
  runTrace,
  spanIdOf,
  toolSpanContext,
  traceIdOf,
  traceScope,
  withSender,
} from '../../src/kit/trace-context.js';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN = '00f067aa0ba902b7';

describe('traceparent', () => {
  it('reads a valid header, sampled or not, in any case and with a future version suffix', () => {
    expect(parseTraceparent(`00-${TRACE}-${SPAN}-01`)).toEqual({ traceId: TRACE, spanId: SPAN, sampled: true });
    expect(parseTraceparent(`00-${TRACE}-${SPAN}-00`)).toEqual({ traceId: TRACE, spanId: SPAN, sampled: false });
    expect(parseTraceparent(`00-${TRACE.toUpperCase()}-${SPAN}-01`)?.traceId).toBe(TRACE);
    expect(parseTraceparent(`01-${TRACE}-${SPAN}-01-extra`)).toEqual({ traceId: TRACE, spanId: SPAN, sampled: true });
  });

  it('ignores what the spec says to ignore: a new trace is started instead', () => {
    for (const bad of [
      undefined,
      42,
      '',
      'garbage',
      `00-${'0'.repeat(32)}-${SPAN}-01`,
      `00-${TRACE}-${'0'.repeat(16)}-01`,
      `ff-${TRACE}-${SPAN}-01`,
      `00-${TRACE}-${SPAN}-01-extra`,
      `00-${TRACE.slice(1)}-${SPAN}-01`,
      `00-${TRACE}-${SPAN}`,
    ])
      expect(parseTraceparent(bad)).toBeUndefined();
  });

  it('writes what it reads', () => {
    const context = { traceId: TRACE, spanId: SPAN, sampled: true };
    expect(parseTraceparent(formatTraceparent(context))).toEqual(context);
  });
});

describe('derived ids', () => {
  it('are the same for the same work and differ between pieces of work', () => {
    expect(spanIdOf('run', 'r1')).toBe(spanIdOf('run', 'r1'));
    expect(spanIdOf('run', 'r1')).not.toBe(spanIdOf('run', 'r2'));
    expect(spanIdOf('run', 'r1')).toMatch(/^[0-9a-f]{16}$/);
    expect(traceIdOf('i1')).toMatch(/^[0-9a-f]{32}$/);
  });

  it("a run hangs from its first traced input's sender; others' senders are links; none makes a trace of its own", () => {
    const sender = `00-${TRACE}-${SPAN}-01`;
    const other = `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01`;
    // Telemetry on, every root sampled: a parent's decision is followed.
    const follow = (_traceId: string, parent?: { sampled: boolean }) => parent?.sampled ?? true;
    const traced = runTrace(
      'r1',
      [
        { id: 'i1', provenance: {} },
        { id: 'i2', provenance: { trace: sender } },
        { id: 'i3', provenance: { trace: other } },
      ],
      follow,
    );
    expect(traced).toEqual({
      context: { traceId: TRACE, spanId: spanIdOf('run', 'r1'), sampled: true },
      parent: { traceId: TRACE, spanId: SPAN, sampled: true },
      links: [{ traceId: 'a'.repeat(32), spanId: 'b'.repeat(16), sampled: true }],
    });
    expect(runTrace('r1', [{ id: 'i1', provenance: {} }], follow)).toEqual({
      context: { traceId: traceIdOf('i1'), spanId: spanIdOf('run', 'r1'), sampled: true },
      links: [],
    });
    // An upstream caller that chose not to record: the run and its calls follow it.
    const unsampled = runTrace('r1', [{ id: 'i1', provenance: { trace: `00-${TRACE}-${SPAN}-00` } }], follow);
    expect(toolSpanContext(unsampled.context, 'r1', 0, 1).sampled).toBe(false);
    // Telemetry off: nothing is recorded, and what the run sends on says so.
    expect(runTrace('r1', [{ id: 'i1', provenance: { trace: sender } }], NO_TRACING.sample).context.sampled).toBe(false);
  });
});

describe('an input written in a trace scope', () => {
  it('names the scope as its sender, unless it names one already', () => {
    const scope = { traceId: TRACE, spanId: SPAN, sampled: true };
    const user: { kind: string; trace?: string } = { kind: 'user' };
    expect(withSender(user)).toEqual({ kind: 'user' });
    traceScope.run(scope, () => {
      expect(withSender(user)).toEqual({ kind: 'user', trace: `00-${TRACE}-${SPAN}-01` });
      expect(withSender({ ...user, trace: 'kept' })).toEqual({ kind: 'user', trace: 'kept' });
    });
  });
});

describe('the gateway log', () => {
  it('names the trace and span of the work in hand', () => {
    const lines: string[] = [];
    const destination = new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const logger = createLogger({ level: 'info', format: 'json' }, destination);
    logger.info('outside');
    traceScope.run({ traceId: TRACE, spanId: SPAN, sampled: true }, () => logger.info('inside'));
    const [outside, inside] = lines.map((line) => JSON.parse(line));
    expect(outside).not.toHaveProperty('trace_id');
    expect(inside).toMatchObject({ msg: 'inside', trace_id: TRACE, span_id: SPAN });
  });
});

describe('work that outlives the span that started it', () => {
  const scope = { traceId: TRACE, spanId: SPAN, sampled: true };

  it('a background pass kicked inside a trace scope runs outside it, and so does every pass it chains', async () => {
    const seen: (string | undefined)[] = [];
    let again = 2;
    const task: SerialTask = new SerialTask(
      async () => {
        seen.push(currentTraceparent());
        if (again-- > 0) void task.kick();
      },
      () => {},
    );
    await traceScope.run(scope, () => task.kick());
    await task.idle();
    expect(seen).toEqual([undefined, undefined, undefined]);
  });

  it("an event's listeners run outside the publisher's scope", () => {
    const bus = new EventBus();
    const seen: (string | undefined)[] = [];
    bus.subscribe(() => seen.push(currentTraceparent()));
    traceScope.run(scope, () => bus.publish({ type: 'delta', sessionKey: 'agent:a:main', runId: 'r', text: 'x' }));
    expect(seen).toEqual([undefined]);
  });
});

describe("a run's failure line", () => {
  it('names the run span and its trace, with telemetry off', async () => {
    const { config } = parseConfigText(
      `{ agents: { list: [{ id: "down", model: "scripted/down" }] },
         models: { providers: { scripted: { type: "scripted", models: { down: { rules: [{ error: "the model is down" }] } } } } } }`,
      '/test/switchboard.json5',
      {},
    );
    const lines: { message: string; fields?: Record<string, unknown> }[] = [];
    const gateway = await startGateway({
      config,
      store: await SqliteStore.open({ path: ':memory:' }),
      gatewayId: 'gw-test',
      log: (_level, message, fields) => lines.push({ message, fields }),
    });
    try {
      const sent = await gateway.send({ target: 'down', message: 'hello' });
      expect(await gateway.waitForInput(sent.input.id, 5000)).toMatchObject({ status: 'completed', run: { status: 'failed' } });
      const runId = (await gateway.inputRunId(sent.input.id))!;
      const failed = await waitUntil('the failure line', () => lines.find((line) => line.message.startsWith('run failed')), 5000, 10);
      expect(failed.fields).toMatchObject({ runId, trace_id: traceIdOf(sent.input.id), span_id: spanIdOf('run', runId) });
    } finally {
      await gateway.stop();
      await gateway.store.close();
    }
  });
});

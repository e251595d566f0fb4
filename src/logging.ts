/**
 * The gateway's own log: one readable line per event on a terminal, one JSON object per line when the
 * output is not a terminal (a file, a pipe, a log collector) or when asked. Always on stderr, so the
 * banner and `--json` output on stdout stay clean.
 */
import pino, { type Logger } from 'pino';
import pretty from 'pino-pretty';
import { SwitchboardError } from './core/errors.js';
import { traceScope } from './kit/trace-context.js';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export const LOG_FORMATS = ['pretty', 'json'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

export interface LogOptions {
  /** Default: $SWITCHBOARD_LOG_LEVEL, else info. */
  level?: string;
  /** Default: $SWITCHBOARD_LOG_FORMAT, else pretty on a terminal and json otherwise. */
  format?: string;
}

export function createLogger(options: LogOptions = {}, destination: NodeJS.WritableStream & { isTTY?: boolean } = process.stderr): Logger {
  const level = options.level ?? process.env.SWITCHBOARD_LOG_LEVEL ?? 'info';
  if (!(LOG_LEVELS as readonly string[]).includes(level)) {
    throw new SwitchboardError(
      'INVALID_REQUEST',
      `log level "${level}" is not one of ${LOG_LEVELS.join(', ')} (--log-level or SWITCHBOARD_LOG_LEVEL)`,
    );
  }
  const format = options.format ?? process.env.SWITCHBOARD_LOG_FORMAT ?? (destination.isTTY ? 'pretty' : 'json');
  if (!(LOG_FORMATS as readonly string[]).includes(format)) {
    throw new SwitchboardError(
      'INVALID_REQUEST',
      `log format "${format}" is not one of ${LOG_FORMATS.join(', ')} (--log-format or SWITCHBOARD_LOG_FORMAT)`,
    );
  }
  // A line logged while a run, a tool call or a delivery works names its trace (docs/observability.md).
  const mixin = () => {
    const context = traceScope.getStore();
    return context ? { trace_id: context.traceId, span_id: context.spanId } : {};
  };
  if (format === 'json')
    return pino({ level, base: undefined, mixin }, destination === process.stderr ? pino.destination({ fd: 2, sync: true }) : destination);
  // Synchronous, in this thread: a line written before a crash is on the terminal. A failed run's fields
  // are in its message already, so a person sees them once (JSON keeps them for machines).
  const stream = pretty({
    destination,
    sync: true,
    colorize: destination.isTTY === true,
    translateTime: 'HH:MM:ss.l',
    ignore: 'pid,hostname,runId,sessionKey,agentId,status,trace_id,span_id',
    singleLine: true,
  });
  return pino({ level, base: undefined, mixin }, stream);
}

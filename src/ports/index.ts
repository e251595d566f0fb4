/**
 * Interfaces the core and the gateway depend on, one file per concern; adapters (src/store/*, src/models/*)
 * implement them. Times are milliseconds since the Unix epoch.
 */
export type * from './a2a.js';
export type * from './board.js';
export type * from './common.js';
export type * from './exchanges.js';
export type * from './gateways.js';
export type * from './journal.js';
export type * from './runs.js';
export type * from './sessions.js';
export type * from './signals.js';
export type * from './steps.js';
export type * from './store.js';
export type * from './subagents.js';
export type * from './tool-calls.js';
export type * from './memory.js';
export type * from './mailbox.js';
export type * from './channels.js';
export type * from './gates.js';
export type * from './schedules.js';
export type * from './telemetry.js';

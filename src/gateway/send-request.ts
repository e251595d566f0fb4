/** A send into a session, as the fronts and the gateway's own flows make it, and what accepting it returns. */
import type { QueueMode } from '../core/queue-mode.js';
import type { InputRecord, Provenance } from '../ports/index.js';
import type { Inbound } from './registry.js';

export interface SendRequest {
  /** An agent id, or a session key. Without one, the bindings route the inbound channel to an agent. */
  target?: string;
  message: string;
  mode?: QueueMode;
  idempotencyKey?: string;
  /** The channel it arrived on; decides the default queue mode and the reply route. */
  inbound?: Inbound;
  /**
   * The caller waits for the reply and acknowledges nothing before it: the input is not made durable on its own
   * (the run's commit, made durable before the reply is handed out, covers it), which saves a sync on SQLite FULL.
   */
  waiting?: boolean;
  provenance?: Provenance;
}

export interface SendResult {
  input: InputRecord;
  sessionKey: string;
  /** False when the idempotency key matched an input accepted before. */
  created: boolean;
}

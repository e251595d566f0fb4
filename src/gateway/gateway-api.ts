/**
 * The one door into the gateway for fronts (control API, A2A server, and later the board, the mailbox and
 * the console): accept an input, wait for it, query, cancel, subscribe to events, and hand deliveries to
 * the outbox. Fronts are typed against this, never against the gateway's store; a front with state of its
 * own (A2A tasks) gets its own store port from the composition root.
 */
import type { Gateway } from './gateway.js';

export type GatewayApi = Pick<
  Gateway,
  // configuration and the address book
  | 'config'
  | 'agents'
  | 'stopping'
  | 'status'
  | 'ready'
  // accept
  | 'send'
  | 'sendAs'
  | 'acceptA2AMessage'
  | 'acceptBoardTask'
  // wait
  | 'waitForInput'
  | 'durable'
  | 'inputOutcome'
  | 'inputRunId'
  // query
  | 'resolveId'
  | 'getExchange'
  | 'listSessions'
  | 'describeSession'
  | 'history'
  | 'journalAfter'
  | 'listRuns'
  | 'getRun'
  | 'runCompletions'
  | 'listExchanges'
  | 'listSubagents'
  | 'getSubagent'
  | 'listA2ATasks'
  | 'getA2ATask'
  | 'listOutbox'
  // cancel
  | 'cancelInput'
  | 'cancelRun'
  | 'killSubagent'
  | 'settleDeadOutbox'
  // events and deliveries
  | 'subscribe'
  | 'publishJournal'
  | 'watchDeltas'
  | 'registerDelivery'
  | 'enqueueDelivery'
>;

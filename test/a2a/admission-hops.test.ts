/**
 * A message past the hop budget that reaches the A2A front by the task watch (a task saved before its message became
 * an input) or as a follow-up to a task waiting for input is refused as the executor refuses a new one: the task is
 * rejected with the reason, not failed as a message the gateway could not take, and the SDK's save is not failed.
 */
import { Role, Task, TaskState, taskStateToJSON, type Message } from '@a2a-js/sdk';
import { ServerCallContext } from '@a2a-js/sdk/server';
import { describe, expect, it } from 'vitest';
import { A2AAdmission } from '../../src/a2a/admission.js';
import { SwitchboardError } from '../../src/core/errors.js';
import type { GatewayApi } from '../../src/ports/gateway.js';
import type { A2ATaskRecord, A2ATaskStore } from '../../src/ports/index.js';

const REFUSAL = 'this a2a message would be hop 9 of conversation c-1, past session.agentToAgent.maxHops (8)';

/** A door that refuses every message past the budget, as the gateway's intake does. */
const gateway = {
  gatewayId: 'gw',
  accept: async () => {
    throw new SwitchboardError('HOP_LIMIT_EXCEEDED', REFUSAL, { hop: 9, maxHops: 8 });
  },
} as unknown as GatewayApi;
const tasks = { otherContextOwner: async () => undefined } as unknown as A2ATaskStore;
const admission = new A2AAdmission(gateway, 'ping', tasks, { now: () => 1 });

const message: Message = {
  messageId: 'm-1',
  contextId: 'ctx',
  taskId: 't-1',
  role: Role.ROLE_USER,
  parts: [{ content: { $case: 'text', value: 'ball' }, metadata: undefined, filename: '', mediaType: '' }],
  metadata: { switchboard: { conversation: 'c-1', hop: 9 } },
  extensions: [],
  referenceTaskIds: [],
} as unknown as Message;

function task(state: TaskState): Task {
  return {
    id: 't-1',
    contextId: 'ctx',
    status: { state, message: undefined, timestamp: '' },
    artifacts: [],
    history: [message],
    metadata: {},
  };
}

describe('A2A admission past the hop budget', () => {
  it('a task taken up by the task watch is refused with the reason (rejected), not failed', async () => {
    const record = {
      id: 't-1',
      agentId: 'ping',
      contextId: 'ctx',
      owner: 'anonymous',
      state: taskStateToJSON(TaskState.TASK_STATE_SUBMITTED),
      task: Task.toJSON(task(TaskState.TASK_STATE_SUBMITTED)),
    } as unknown as A2ATaskRecord;
    expect(await admission.adopt(record, undefined)).toEqual({ refused: REFUSAL });
  });

  it('a follow-up to a task waiting for input does not fail the SDK save: the executor rejects it', async () => {
    await expect(admission.acceptFollowUp(task(TaskState.TASK_STATE_INPUT_REQUIRED), new ServerCallContext())).resolves.toBeUndefined();
  });

  it('any other failure to take the message still fails the save', async () => {
    const failing = new A2AAdmission(
      { accept: async () => Promise.reject(new SwitchboardError('STORE_FAILED', 'down')) } as unknown as GatewayApi,
      'ping',
      tasks,
      { now: () => 1 },
    );
    await expect(failing.acceptFollowUp(task(TaskState.TASK_STATE_INPUT_REQUIRED), new ServerCallContext())).rejects.toThrow('down');
  });
});

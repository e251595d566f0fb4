/**
 * The SDK's TaskStore over the gateway's store: tasks survive restarts, and each authenticated peer sees
 * only the tasks it created (the owner is the peer id the auth layer put on the call).
 */
import { Task, taskStateToJSON } from '@a2a-js/sdk';
import type { ListTasksRequest, ListTasksResponse } from '@a2a-js/sdk';
import type { ServerCallContext, TaskStore } from '@a2a-js/sdk/server';
import { RequestMalformedError } from '@a2a-js/sdk/errors';
import { ANONYMOUS_PEER } from '../config/schema.js';
import { type SwitchboardError, toSwitchboardError } from '../core/errors.js';
import type { A2ATaskStore, Clock } from '../ports/index.js';

export function ownerOf(context: ServerCallContext): string {
  return context.user?.isAuthenticated ? context.user.userName : ANONYMOUS_PEER;
}

/** Hears a request the store did not take (STORE_FAILED), with the error that said so: the A2A server logs it. */
export type StoreFailureListener = (failure: SwitchboardError, error: unknown) => void;

/**
 * A store call as the SDK answers its failure: a value the store cannot keep as invalid parameters, any other failure
 * as an internal error in the gateway's words, never the database's. A store failure is also told to `onStoreFailure`.
 */
export async function storeCall<T>(call: () => Promise<T>, onStoreFailure: StoreFailureListener = () => {}): Promise<T> {
  try {
    return await call();
  } catch (error) {
    const known = toSwitchboardError(error);
    if (known.code === 'INVALID_REQUEST') throw new RequestMalformedError(known.message);
    if (known.code === 'STORE_FAILED') {
      onStoreFailure(known, error);
      throw new Error(known.message);
    }
    throw error;
  }
}

export class GatewayTaskStore implements TaskStore {
  constructor(
    private readonly tasks: A2ATaskStore,
    private readonly agentId: string,
    private readonly clock: Clock,
    /** This gateway: a snapshot it saves names it as the task's executor (the task watch's test of who works on it). */
    private readonly gatewayId: string,
    /** Runs before each save (the executor's `acceptFollowUp`); its failure fails the save. */
    private readonly beforeSave: (task: Task, context: ServerCallContext) => Promise<void> = async () => {},
    private readonly onStoreFailure: StoreFailureListener = () => {},
  ) {}

  async save(task: Task, context: ServerCallContext): Promise<void> {
    await this.beforeSave(task, context);
    const state = taskStateToJSON(task.status?.state ?? 0);
    const statusAt = task.status?.timestamp ? Date.parse(task.status.timestamp) : NaN;
    await storeCall(
      () =>
        this.tasks.save(
          {
            id: task.id,
            agentId: this.agentId,
            contextId: task.contextId,
            owner: ownerOf(context),
            state,
            task: Task.toJSON(task),
            firstMessageId: task.history[0]?.messageId || null,
            statusAt: Number.isNaN(statusAt) ? null : statusAt,
            executor: this.gatewayId,
          },
          this.clock.now(),
        ),
      this.onStoreFailure,
    );
  }

  async load(taskId: string, context: ServerCallContext): Promise<Task | undefined> {
    const record = await storeCall(() => this.tasks.get(taskId), this.onStoreFailure);
    if (!record || record.agentId !== this.agentId || record.owner !== ownerOf(context)) return undefined;
    return Task.fromJSON(record.task);
  }

  async list(params: ListTasksRequest, context: ServerCallContext): Promise<ListTasksResponse> {
    const pageSize = params.pageSize || 50;
    if (params.pageToken && !/^\d{1,9}$/.test(params.pageToken))
      throw new RequestMalformedError('pageToken is not a page token this server gave');
    const offset = Number(params.pageToken || 0);
    const after = params.statusTimestampAfter ? Date.parse(params.statusTimestampAfter) : undefined;
    if (after !== undefined && Number.isNaN(after)) throw new RequestMalformedError('statusTimestampAfter must be an ISO 8601 timestamp');
    // Every filter, the status time included ("greater than or equal"), applies before paging.
    const filter = {
      agentId: this.agentId,
      owner: ownerOf(context),
      ...(params.contextId ? { contextId: params.contextId } : {}),
      ...(params.status ? { states: [taskStateToJSON(params.status)] } : {}),
      ...(after !== undefined ? { statusSince: after } : {}),
    };
    const page = await this.tasks.list({ ...filter, limit: pageSize + 1, offset });
    const tasks = page
      .slice(0, pageSize)
      .map((record) => Task.fromJSON(record.task))
      .map((task) => (params.includeArtifacts ? task : { ...task, artifacts: [] }));
    const totalSize = page.length > pageSize || offset > 0 ? await this.tasks.count(filter) : page.length;
    return { tasks, nextPageToken: page.length > pageSize ? String(offset + pageSize) : '', pageSize, totalSize };
  }
}

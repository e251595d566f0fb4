/**
 * The remote A2A agents a gateway's agents may call: configured `a2a.remoteAgents[]` entries (with their
 * credentials) or, with `a2a.client.allowUrls`, URLs the model gives (reached only at public addresses
 * unless `a2a.client.allowPrivateTargets`), each under the agent-to-agent policy like a local agent.
 * One SDK client per remote, and the plain calls (card, get, cancel); sending and following tasks is
 * A2AClientService's.
 */
import { carried, type Conversation } from '../core/hops.js';
import type { Client } from '@a2a-js/sdk/client';
import type { SwitchboardConfig } from '../config/schema.js';
import { SwitchboardError } from '../core/errors.js';
import { agentToAgentAllowed } from '../core/session-access.js';
import { guardedFetch } from '../net/outbound-guard.js';
import type { Message, Task } from '@a2a-js/sdk';
import { partsText, summarizeTask, textMessage, type RemoteRef, type RemoteResult } from './remote-task.js';
import { traceHeader } from '../kit/trace-context.js';

/** A remote agent as the client reaches it; `guarded`: only at public addresses (a URL the model gave). */
export interface RemoteTarget {
  remote: string;
  url: string;
  headers: Record<string, string>;
  guarded?: boolean;
}

const CLIENT_SETTING = 'a2a.client.allowPrivateTargets';

export class RemoteAgents {
  private readonly clients = new Map<string, Promise<Client>>();
  // Configured remotes may be private (the operator named them); a URL from the model only with the key set.
  private readonly guarded = guardedFetch({ setting: CLIENT_SETTING });
  private readonly configuredFetch = guardedFetch({ setting: CLIENT_SETTING, allowPrivate: true });

  constructor(private readonly config: SwitchboardConfig) {}

  /** The remote a call names, after the agent-to-agent policy (requester and remote must both be allowed). */
  resolve(requesterAgent: string, ref: RemoteRef): RemoteTarget {
    const { config } = this;
    let found: RemoteTarget;
    if (ref.agentId) {
      const entry = config.a2a.remoteAgents.find((candidate) => candidate.id === ref.agentId);
      if (!entry) {
        const known = config.a2a.remoteAgents.map((candidate) => candidate.id);
        throw new SwitchboardError(
          'AGENT_NOT_FOUND',
          `no remote A2A agent "${ref.agentId}" (configured under a2a.remoteAgents: ${known.join(', ') || 'none'})`,
        );
      }
      found = { remote: entry.id, ...this.resolveEntry(entry) };
    } else if (ref.url) {
      if (!config.a2a.client.allowUrls) {
        throw new SwitchboardError(
          'A2A_POLICY_DENIED',
          'calling a remote agent by URL is off (set a2a.client.allowUrls: true, or configure it under a2a.remoteAgents)',
          { layer: 'agentToAgent' },
        );
      }
      // A URL from the model is reached only at public addresses (checked at connect time), unless allowed.
      found = { remote: ref.url, url: ref.url, headers: {}, guarded: !config.a2a.client.allowPrivateTargets };
    } else {
      throw new SwitchboardError('INVALID_REQUEST', 'name the remote agent: agentId (from a2a.remoteAgents) or url');
    }
    const policy = config.tools.agentToAgent;
    if (!policy.enabled) {
      throw new SwitchboardError(
        'A2A_POLICY_DENIED',
        `cannot call remote agent "${found.remote}": agent-to-agent messaging is disabled (set tools.agentToAgent.enabled: true)`,
        { layer: 'agentToAgent' },
      );
    }
    if (!agentToAgentAllowed(policy, requesterAgent, found.remote)) {
      throw new SwitchboardError(
        'A2A_POLICY_DENIED',
        `cannot call remote agent "${found.remote}": tools.agentToAgent.allow (${JSON.stringify(policy.allow)}) must match both "${requesterAgent}" and "${found.remote}"`,
        { layer: 'agentToAgent' },
      );
    }
    return found;
  }

  private fetchWith(headers: Record<string, string>, guarded: boolean): typeof fetch {
    const base = guarded ? this.guarded : this.configuredFetch;
    // The call's trace goes with it (W3C Trace Context): a Switchboard, or any traced server, on the far side joins it.
    return (input, init) => {
      return base(input, { ...init, headers: { ...(init?.headers as Record<string, string>), ...headers, ...traceHeader() } });
    };
  }

  client(target: Pick<RemoteTarget, 'url' | 'headers' | 'guarded'>): Promise<Client> {
    let client = this.clients.get(target.url);
    if (!client) {
      const fetchImpl = this.fetchWith(target.headers, target.guarded ?? false);
      // The SDK's client is loaded with the first remote call, not at startup.
      client = import('@a2a-js/sdk/client').then(
        ({ ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory, RestTransportFactory }) => {
          const factory = new ClientFactory({
            transports: [
              new JsonRpcTransportFactory({ fetchImpl, legacyCompat: { enabled: true } }),
              new RestTransportFactory({ fetchImpl, legacyCompat: { enabled: true } }),
            ],
            cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
          });
          return target.url.endsWith('.json')
            ? factory.createFromUrl(target.url, '')
            : factory.createFromUrl(target.url.endsWith('/') ? target.url : `${target.url}/`);
        },
      );
      client.catch(() => this.clients.delete(target.url));
      this.clients.set(target.url, client);
    }
    return client;
  }

  /** How a remote recorded on a task (a configured id, or the URL it was reached at) is reached again. */
  targetOf(remote: string): Pick<RemoteTarget, 'url' | 'headers' | 'guarded'> {
    const entry = this.config.a2a.remoteAgents.find((candidate) => candidate.id === remote);
    return entry ? this.resolveEntry(entry) : { url: remote, headers: {}, guarded: !this.config.a2a.client.allowPrivateTargets };
  }

  private resolveEntry(entry: SwitchboardConfig['a2a']['remoteAgents'][number]) {
    const headers: Record<string, string> = { ...(entry.headers ?? {}) };
    if (entry.token) headers.Authorization = `Bearer ${entry.token}`;
    if (entry.apiKey) headers['X-API-Key'] = entry.apiKey;
    return { url: entry.url, headers };
  }

  /** a2a_discover: what the remote agent says it is and can do. */
  async discover(requesterAgent: string, ref: RemoteRef) {
    const target = this.resolve(requesterAgent, ref);
    const card = await (await this.client(target)).getAgentCard();
    return {
      remote: target.remote,
      name: card.name,
      description: card.description,
      skills: card.skills.map((skill) => ({ id: skill.id, name: skill.name, description: skill.description, tags: skill.tags })),
      inputModes: card.defaultInputModes,
      outputModes: card.defaultOutputModes,
      streaming: card.capabilities?.streaming ?? false,
      pushNotifications: card.capabilities?.pushNotifications ?? false,
      auth: Object.entries(card.securitySchemes).map(([name, scheme]) => `${name}: ${scheme.scheme?.$case ?? 'unknown'}`),
    };
  }

  /** a2a_get_task and a2a_cancel. */
  async getTask(requesterAgent: string, ref: RemoteRef, taskId: string): Promise<RemoteResult> {
    const client = await this.client(this.resolve(requesterAgent, ref));
    return summarizeTask(await client.getTask({ tenant: '', id: taskId, historyLength: 0 }));
  }

  /**
   * The board's remote workers (docs/board.md): a task assigned to a configured remote agent is sent by the
   * board, not by an agent, so the agent-to-agent policy (checked when an agent creates the task) is not
   * asked again. The send returns at once; the board polls the task.
   */
  async submit(remote: string, text: string, messageId: string, conversation?: Conversation | null): Promise<RemoteResult> {
    const client = await this.client(this.configured(remote));
    const message = textMessage(text, messageId);
    // The hop budget: a Switchboard on the far side counts the task's hop (core/hops.ts).
    if (conversation) message.metadata = { ...message.metadata, switchboard: carried(conversation) };
    const sent = await client.sendMessage({
      tenant: '',
      message,
      configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: true },
      metadata: {},
    });
    if ('id' in sent && 'status' in sent) return summarizeTask(sent as Task);
    return { state: 'completed', taskId: '', contextId: (sent as Message).contextId, text: partsText((sent as Message).parts).text };
  }

  async poll(remote: string, taskId: string): Promise<RemoteResult> {
    const client = await this.client(this.configured(remote));
    return summarizeTask(await client.getTask({ tenant: '', id: taskId, historyLength: 0 }));
  }

  private configured(remote: string): Pick<RemoteTarget, 'url' | 'headers' | 'guarded'> {
    const entry = this.config.a2a.remoteAgents.find((candidate) => candidate.id === remote);
    if (!entry) throw new SwitchboardError('AGENT_NOT_FOUND', `no remote A2A agent "${remote}" under a2a.remoteAgents`);
    return this.resolveEntry(entry);
  }

  async cancel(requesterAgent: string, ref: RemoteRef, taskId: string): Promise<RemoteResult> {
    const client = await this.client(this.resolve(requesterAgent, ref));
    return summarizeTask(await client.cancelTask({ tenant: '', id: taskId, metadata: {} }));
  }
}

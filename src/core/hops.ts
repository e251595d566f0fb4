/**
 * The hop budget (ARCHITECTURE.md section 7): every path by which one agent's output becomes another agent's input
 * (sessions_send, the file mailbox, team inboxes, the board, A2A between gateways) carries the conversation it belongs
 * to and how many times it was passed on. The receiving side refuses a message past `session.agentToAgent.maxHops`,
 * so no pair of agents can answer each other forever on any channel.
 */

/** A conversation between agents and the hop a message is in it (the first message an agent sends is hop 1). */
export interface Conversation {
  id: string;
  hop: number;
}

/** The conversation (and its deepest hop) that a run's inputs belong to, from their provenance. */
export function conversationOf(provenances: readonly { conversationId?: string; hop?: number }[]): Conversation | undefined {
  let found: Conversation | undefined;
  for (const provenance of provenances) {
    if (provenance.conversationId && (!found || (provenance.hop ?? 0) > found.hop))
      found = { id: provenance.conversationId, hop: provenance.hop ?? 0 };
  }
  return found;
}

/** The conversation an agent's output carries on: the one its inputs belong to, one hop further, or a new one at hop 1. */
export function onwardHop(current: Conversation | undefined, newId: () => string): Conversation {
  return current ? { id: current.id, hop: current.hop + 1 } : { id: newId(), hop: 1 };
}

/** Why a message at `hop` is refused, or undefined when the budget allows it. */
export function hopRefusal(conversation: Conversation, maxHops: number, what = 'message'): string | undefined {
  if (conversation.hop <= maxHops) return undefined;
  return (
    `this ${what} would be hop ${conversation.hop} of conversation ${conversation.id}, past ` +
    `session.agentToAgent.maxHops (${maxHops}): the agents are passing it around in a chain or a cycle; answer instead of forwarding it again`
  );
}

/** What a message carries for the budget, as it is written into a file, an inbox entry or A2A metadata. */
export interface CarriedHop {
  conversation: string;
  hop: number;
}

export function carried(conversation: Conversation): CarriedHop {
  return { conversation: conversation.id, hop: conversation.hop };
}

/** The conversation a message carries, when it is well formed; anything else is read as absent (a message from outside). */
export function carriedConversation(value: unknown): Conversation | undefined {
  const found = value as Partial<Record<keyof CarriedHop, unknown>> | null | undefined;
  if (!found || typeof found !== 'object') return undefined;
  const { conversation, hop } = found;
  if (typeof conversation !== 'string' || conversation.length === 0 || conversation.length > 200) return undefined;
  if (typeof hop !== 'number' || !Number.isInteger(hop) || hop < 1) return undefined;
  return { id: conversation, hop };
}

/**
 * `switchboard a2a discover` and `a2a add`: peers found on the LAN (mdns.ts), each with its Agent Card read through
 * the guarded client, and the card of a URL an operator adds as a remote agent.
 */
import type { SwitchboardConfig } from '../config/schema.js';
import { SwitchboardError, errorMessage } from '../core/errors.js';
import { guardedFetch } from '../net/outbound-guard.js';
import { browsePeers, type DiscoveredPeer, type MdnsTransport } from './mdns.js';

const CARD_PATH = '.well-known/agent-card.json';
const CARD_TIMEOUT_MS = 5000;
/** Larger cards are refused: a card is a few kilobytes. */
const MAX_CARD_BYTES = 1_000_000;

export interface CardSummary {
  name: string;
  description: string;
  skills: string[];
  version?: string;
}

/** A peer found on the LAN, with its card or why it could not be read. */
export type FoundPeer = DiscoveredPeer & { card?: CardSummary; error?: string };

/** Where a URL's card is: the URL itself when it names the card, else the well-known path under it. */
export function cardUrlOf(url: string): string {
  return url.endsWith(CARD_PATH) ? url : `${url.replace(/\/$/, '')}/${CARD_PATH}`;
}

/** The card at `cardUrl`: its name, description and skills; an error says what was wrong with it. */
export async function readCard(cardUrl: string, fetchImpl: typeof fetch): Promise<CardSummary> {
  const response = await fetchImpl(cardUrl, { headers: { accept: 'application/json' }, signal: AbortSignal.timeout(CARD_TIMEOUT_MS) });
  if (!response.ok) throw new SwitchboardError('A2A_CARD_INVALID', `${cardUrl} answered ${response.status}, not an Agent Card`);
  const text = await boundedText(response, MAX_CARD_BYTES, () => `the card at ${cardUrl} is over ${MAX_CARD_BYTES} bytes`);
  let card: { name?: unknown; description?: unknown; skills?: unknown; version?: unknown };
  try {
    card = JSON.parse(text) as typeof card;
  } catch {
    throw new SwitchboardError('A2A_CARD_INVALID', `the card at ${cardUrl} is not JSON`);
  }
  if (typeof card?.name !== 'string' || card.name === '')
    throw new SwitchboardError('A2A_CARD_INVALID', `the document at ${cardUrl} is not an Agent Card (it has no name)`);
  const skills = Array.isArray(card.skills) ? card.skills : [];
  return {
    name: card.name,
    description: typeof card.description === 'string' ? card.description : '',
    skills: skills.flatMap((skill: { id?: unknown }) => (typeof skill?.id === 'string' ? [skill.id] : [])),
    ...(typeof card.version === 'string' ? { version: card.version } : {}),
  };
}

/** The body as text, read no further than `max` bytes: a peer that sends more is refused with `tooLarge()`. */
async function boundedText(response: Response, max: number, tooLarge: () => string): Promise<string> {
  const reader = response.body?.getReader();
  if (!reader) return '';
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  for (let read = await reader.read(); !read.done; read = await reader.read()) {
    bytes += read.value.byteLength;
    if (bytes > max) {
      await reader.cancel();
      throw new SwitchboardError('A2A_CARD_INVALID', tooLarge());
    }
    chunks.push(read.value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Browses the LAN (a2a.discovery) and reads each peer's card through the guarded client: a peer on a private address
 * is read only with a2a.client.allowPrivateTargets, as a URL a model gives would be. Nothing found is trusted.
 */
export async function discoverPeers(config: SwitchboardConfig, transport?: MdnsTransport): Promise<FoundPeer[]> {
  const discovery = config.a2a.discovery;
  if (!discovery.mdns)
    throw new SwitchboardError(
      'INVALID_REQUEST',
      'LAN discovery is off: set a2a.discovery.mdns: true in the config to browse for A2A peers',
    );
  const peers = await browsePeers({
    seconds: discovery.seconds,
    transport: transport ?? (discovery.interface ? { interface: discovery.interface } : {}),
  });
  const fetchImpl = guardedFetch({ setting: 'a2a.client.allowPrivateTargets', allowPrivate: config.a2a.client.allowPrivateTargets });
  return Promise.all(
    peers.map(async (peer): Promise<FoundPeer> => {
      try {
        return { ...peer, card: await readCard(peer.cardUrl, fetchImpl) };
      } catch (error) {
        return { ...peer, error: errorMessage(error) };
      }
    }),
  );
}

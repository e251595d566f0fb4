/**
 * A2A on the LAN over DNS-SD (multicast DNS, with bonjour-service): each exposed agent is advertised as `_a2a._tcp`
 * (the proposal in A2A #378), and as `_pi-a2a._tcp` for Pi's peers when asked, with its card's URL and the protocol
 * version in TXT records; a browse collects what answers in a few seconds. What is found is only a lead: a peer
 * becomes a remote agent when it is configured (`switchboard a2a add <url>`), under the agent-to-agent policy.
 */
import { hostname } from 'node:os';
import type { Service } from 'bonjour-service';

export const A2A_SERVICE = 'a2a';
export const PI_SERVICE = 'pi-a2a';
const PROTOCOL_VERSION = '1.0';
/** A DNS label is at most 63 bytes. */
const MAX_NAME = 63;

/**
 * How multicast DNS is sent and heard (multicast-dns options): `interface` picks one interface; tests give a
 * `socket` of their own with `multicast: false`, since loopback carries no multicast on many hosts.
 */
export interface MdnsTransport {
  interface?: string;
  socket?: unknown;
  multicast?: boolean;
}

export interface AdvertisedAgent {
  agentId: string;
  /** The Agent Card's URL. */
  cardUrl: string;
}

export interface Advertisement {
  /** The services on the air: `<name>._a2a._tcp.local` and so on. */
  readonly names: string[];
  /** Says goodbye on the network (so browsers drop the services at once) and closes the socket. */
  stop(): Promise<void>;
}

async function bonjour(transport: MdnsTransport, onError: (error: unknown) => void) {
  const { Bonjour } = await import('bonjour-service');
  // bonjour-service hands its options to multicast-dns, which takes the transport's keys.
  return new Bonjour(transport as never, onError);
}

/** Advertises each agent (on `port`, where its card is served) until `stop`. */
export async function advertiseAgents(
  agents: readonly AdvertisedAgent[],
  options: { port: number; pi: boolean; transport?: MdnsTransport; onError?: (error: unknown) => void },
): Promise<Advertisement> {
  const mdns = await bonjour(options.transport ?? {}, options.onError ?? (() => {}));
  const host = hostname();
  const services = agents.flatMap((agent) =>
    [A2A_SERVICE, ...(options.pi ? [PI_SERVICE] : [])].map((type) =>
      mdns.publish({
        name: `${agent.agentId} on ${host}:${options.port}`.slice(0, MAX_NAME),
        type,
        port: options.port,
        txt: { url: agent.cardUrl, version: PROTOCOL_VERSION, agent: agent.agentId },
      }),
    ),
  );
  return {
    names: services.map((service) => service.fqdn),
    stop: () => new Promise<void>((resolve) => mdns.unpublishAll(() => mdns.destroy(() => resolve()))),
  };
}

export interface DiscoveredPeer {
  /** The service instance's name. */
  name: string;
  /** `_a2a._tcp` or `_pi-a2a._tcp`. */
  service: string;
  host: string;
  port: number;
  addresses: string[];
  /** From the TXT record `url`, or else the well-known card path at the first address and the port. */
  cardUrl: string;
  version?: string;
}

/** What answers a browse for `_a2a._tcp` and `_pi-a2a._tcp` within `seconds` and is still up at its end, each service once. */
export async function browsePeers(options: { seconds: number; transport?: MdnsTransport }): Promise<DiscoveredPeer[]> {
  const mdns = await bonjour(options.transport ?? {}, () => {});
  const browsers = [A2A_SERVICE, PI_SERVICE].map((type) => mdns.find({ type }));
  await new Promise((resolve) => setTimeout(resolve, options.seconds * 1000));
  // What is up at the end: a service that said goodbye meanwhile is gone from its browser's list.
  const peers = browsers.flatMap((browser) => browser.services.flatMap((service) => toPeer(service) ?? []));
  for (const browser of browsers) browser.stop();
  await new Promise<void>((resolve) => mdns.destroy(() => resolve()));
  return peers.sort((a, b) => a.name.localeCompare(b.name) || a.service.localeCompare(b.service));
}

function toPeer(service: Service): DiscoveredPeer | undefined {
  const txt = (service.txt ?? {}) as Record<string, unknown>;
  const addresses = service.addresses ?? [];
  const given = typeof txt.url === 'string' ? txt.url : undefined;
  const address = addresses.find((candidate) => !candidate.includes(':')) ?? addresses[0] ?? service.referer?.address;
  const cardUrl =
    given ??
    (address ? `http://${address.includes(':') ? `[${address}]` : address}:${service.port}/.well-known/agent-card.json` : undefined);
  if (!cardUrl) return undefined;
  return {
    name: service.name,
    service: `_${service.type}._${service.protocol}`,
    host: service.host,
    port: service.port,
    addresses,
    cardUrl,
    ...(typeof txt.version === 'string' ? { version: txt.version } : {}),
  };
}

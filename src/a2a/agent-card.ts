/**
 * Agent Cards: every exposed agent is an A2A agent with a v1.0 card listing its JSON-RPC and HTTP+JSON
 * endpoints, once for protocol 1.0 and once for 0.3 (the SDK's compatibility layer answers 0.3 callers,
 * and a request without an A2A-Version header is one), its skills and its security schemes.
 */
import type { AgentCard, SecurityRequirement, SecurityScheme } from '@a2a-js/sdk';
import type { SwitchboardConfig } from '../config/schema.js';
import type { ResolvedAgent } from '../ports/gateway.js';

export const API_KEY_HEADER = 'X-API-Key';

/** Where an agent's endpoints live under the gateway's base URL. */
export function agentBasePath(agentId: string): string {
  return `/a2a/${agentId}`;
}

/** `basePath`: where the card's endpoints are; `/a2a` for the gateway's own, routed by the bindings. */
export function buildAgentCard(
  agent: ResolvedAgent,
  config: SwitchboardConfig,
  baseUrl: string,
  basePath = agentBasePath(agent.config.id),
): AgentCard {
  const base = `${baseUrl.replace(/\/$/, '')}${basePath}`;
  const server = config.a2a.server;
  const interfaces = ['1.0', '0.3'].flatMap((protocolVersion) => [
    { url: `${base}/jsonrpc`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion },
    { url: `${base}/rest`, protocolBinding: 'HTTP+JSON', tenant: '', protocolVersion },
  ]);
  const securitySchemes: Record<string, SecurityScheme> = {};
  const securityRequirements: SecurityRequirement[] = [];
  if (server.requireAuth) {
    securitySchemes.bearer = {
      scheme: {
        $case: 'httpAuthSecurityScheme',
        value: { description: 'a token issued to the peer by the operator', scheme: 'bearer', bearerFormat: '' },
      },
    };
    securitySchemes.apiKey = {
      scheme: {
        $case: 'apiKeySecurityScheme',
        value: { description: 'an API key issued to the peer by the operator', location: 'header', name: API_KEY_HEADER },
      },
    };
    securityRequirements.push({ schemes: { bearer: { list: [] } } }, { schemes: { apiKey: { list: [] } } });
  }
  const name = agent.config.identity?.name ?? agent.config.name ?? agent.config.id;
  return {
    name,
    description: agent.config.a2a?.description ?? `${name}, an agent of a Switchboard gateway`,
    supportedInterfaces: interfaces,
    provider: undefined,
    version: '1.0.0',
    capabilities: { streaming: true, pushNotifications: true, extensions: [] },
    securitySchemes,
    securityRequirements,
    defaultInputModes: ['text/plain', 'application/json'],
    defaultOutputModes: ['text/plain', 'application/json'],
    skills: (agent.config.a2a?.skills ?? []).map((skill) => ({ ...skill, securityRequirements: [] })),
    signatures: [],
  };
}

/**
 * The card in the protocol's JSON form. (The SDK's v1.0 card route writes its in-memory form, in which
 * a security scheme is `{scheme: {$case, value}}` where the wire wants `{httpAuthSecurityScheme: {...}}`,
 * so clients would read the schemes as empty; the v0.3 route converts correctly and is used as is.)
 */
export function agentCardToJson(card: AgentCard): Record<string, unknown> {
  const securitySchemes = Object.fromEntries(
    Object.entries(card.securitySchemes).map(([name, scheme]) => [
      name,
      scheme.scheme ? { [scheme.scheme.$case]: scheme.scheme.value } : {},
    ]),
  );
  return { ...card, securitySchemes };
}

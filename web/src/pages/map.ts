/**
 * The collaboration map: who sent to whom in a time window (exchanges, spawns, A2A calls, board hand-offs) as a
 * graph. Clicking an edge lists its hand-offs; clicking one opens the conversation.
 */
import { useEffect, useState } from 'preact/hooks';
import { api, clip, enc, time } from '../api.js';
import { html } from '../html.js';
import type { CollaborationEdgeAnswer, CollaborationLinkAnswer, ExchangeAnswer, GraphAnswer } from '../../../src/http/answers.js';

const WINDOWS = [
  ['1 hour', 3_600_000],
  ['24 hours', 86_400_000],
  ['7 days', 7 * 86_400_000],
] as const;
const NODE_RADIUS = 28;
const COLORS: Record<string, string> = { exchange: '#2563eb', spawn: '#16a34a', a2a: '#c026d3', board: '#ea580c' };

/** `from` moved towards `to` by a node's radius, so that an edge starts and ends at the circles, its arrow showing. */
function trim([x, y]: [number, number], [tx, ty]: [number, number]): [number, number] {
  const length = Math.hypot(tx - x, ty - y) || 1;
  return [x + ((tx - x) * NODE_RADIUS) / length, y + ((ty - y) * NODE_RADIUS) / length];
}

function Conversation({ link }: { link: CollaborationLinkAnswer }) {
  const [detail, setDetail] = useState<ExchangeAnswer | null>(null);
  useEffect(() => {
    if (link.kind === 'exchange') api<ExchangeAnswer>(`/v1/exchanges/${enc(link.id)}`).then(setDetail);
  }, [link.id]);
  const sessions = [link.fromSession, link.toSession].filter((key): key is string => Boolean(key));
  return html`
    <div class="card" data-testid="conversation">
      <h3>${link.kind} ${link.id.slice(0, 8)} · ${link.status}</h3>
      <p>${sessions.map((key) => html`<a href=${`#/session/${enc(key)}`}>${key}</a> `)}</p>
      ${link.kind === 'board' && html`<a href=${`#/board/${enc(link.id)}`}>open the task</a>`}
      ${link.kind === 'a2a' && link.toSession && html`<a href=${`#/a2a/${enc(link.id)}`}>open the A2A task</a>`}
      ${
        detail &&
        html`<ol class="steps">
          ${detail.inputs.map((input) => html`<li><b>${input.provenance.exchange?.step ?? input.provenance.kind}</b> into ${input.sessionKey}: ${clip(input.text, 400)} <a href=${`#/path/${enc(input.id)}`}>path</a></li>`)}
          ${detail.exchange.replyText && html`<li><b>reply</b>: ${clip(detail.exchange.replyText, 400)}</li>`}
        </ol>`
      }
    </div>
  `;
}

export function MapPage() {
  const [windowMs, setWindowMs] = useState<number>(86_400_000);
  const [graph, setGraph] = useState<GraphAnswer | null>(null);
  const [edge, setEdge] = useState<CollaborationEdgeAnswer | null>(null);
  const [link, setLink] = useState<CollaborationLinkAnswer | null>(null);
  useEffect(() => {
    api<GraphAnswer>(`/v1/graph?since=${Date.now() - windowMs}`).then(setGraph);
  }, [windowMs]);
  if (!graph) return html`<p>Loading…</p>`;
  const open = (item: CollaborationEdgeAnswer) => {
    setEdge(item);
    setLink(null);
  };
  const size = 520;
  // Room outside the circle of nodes for the loops of an agent's work with itself (a sub-agent of its own kind).
  const radius = 180;
  const center = size / 2;
  const angleOf = new Map<string, number>(
    graph.nodes.map((node: string, i: number) => [node, (2 * Math.PI * i) / Math.max(1, graph.nodes.length) - Math.PI / 2]),
  );
  const at = new Map<string, [number, number]>(
    graph.nodes.map((node: string) => [
      node,
      [center + radius * Math.cos(angleOf.get(node)!), center + radius * Math.sin(angleOf.get(node)!)],
    ]),
  );
  // Edges between the same two agents (a spawn and an exchange, or both directions) are spread apart, each with its count.
  const pairs = new Map<string, CollaborationEdgeAnswer[]>();
  for (const item of graph.edges) {
    const pair = [item.from, item.to].sort().join('\u0000');
    pairs.set(pair, [...(pairs.get(pair) ?? []), item]);
  }
  const shape = (item: CollaborationEdgeAnswer) => {
    const pair = [item.from, item.to].sort();
    const siblings = pairs.get(pair.join('\u0000'))!;
    const k = siblings.indexOf(item);
    if (item.from === item.to) {
      // A loop outside the node, away from the middle of the map.
      const angle = angleOf.get(item.from)!;
      const reach = NODE_RADIUS + 60 + 30 * k;
      const [x, y] = at.get(item.from)!;
      const point = (da: number, r: number): [number, number] => [x + r * Math.cos(angle + da), y + r * Math.sin(angle + da)];
      const [x1, y1] = point(-0.45, NODE_RADIUS);
      const [x2, y2] = point(0.45, NODE_RADIUS);
      const [c1x, c1y] = point(-0.55, reach);
      const [c2x, c2y] = point(0.55, reach);
      // The label sits on the loop, halfway: a cubic Bézier's point at t = 0.5.
      const lx = (x1 + 3 * c1x + 3 * c2x + x2) / 8;
      const ly = (y1 + 3 * c1y + 3 * c2y + y2) / 8;
      return { d: `M ${x1} ${y1} C ${c1x} ${c1y} ${c2x} ${c2y} ${x2} ${y2}`, lx, ly };
    }
    const [x1, y1] = trim(at.get(item.from)!, at.get(item.to)!);
    const [x2, y2] = trim(at.get(item.to)!, at.get(item.from)!);
    // Offsets across the line, measured from the pair's own order, so that A->B and B->A do not meet.
    const [ax, ay] = at.get(pair[0])!;
    const [bx, by] = at.get(pair[1])!;
    const length = Math.hypot(bx - ax, by - ay) || 1;
    const offset = 40 * (k - (siblings.length - 1) / 2);
    const cx = (x1 + x2) / 2 + (-(by - ay) / length) * offset * 2;
    const cy = (y1 + y2) / 2 + ((bx - ax) / length) * offset * 2;
    // The label sits on the curve, halfway: a quadratic Bézier's point at t = 0.5.
    return { d: `M ${x1} ${y1} Q ${cx} ${cy} ${x2} ${y2}`, lx: 0.25 * x1 + 0.5 * cx + 0.25 * x2, ly: 0.25 * y1 + 0.5 * cy + 0.25 * y2 };
  };
  return html`
    <h1>Collaboration map</h1>
    <div class="toolbar">
      ${WINDOWS.map(([label, ms]) => html`<button class=${ms === windowMs ? 'active' : ''} onClick=${() => setWindowMs(ms)}>${label}</button>`)}
      ${Object.entries(COLORS).map(([kind, color]) => html`<span class="legend"><span class="swatch" style=${{ background: color }}></span>${kind}</span>`)}
      ${graph.partial && html`<span class="warn">only the newest rows of each kind are shown</span>`}
    </div>
    <div class="split">
      <svg viewBox=${`0 0 ${size} ${size}`} class="map" data-testid="map">
        <defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" markerHeight="6" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" /></marker></defs>
        ${graph.edges.map((item) => {
          const { d, lx, ly } = shape(item);
          return html`<g class="edge" data-testid=${`edge-${item.kind}-${item.from}-${item.to}`} onClick=${() => open(item)}>
            <path d=${d} stroke=${COLORS[item.kind]} marker-end="url(#arrow)" />
            <circle cx=${lx} cy=${ly} r="11" stroke=${COLORS[item.kind]} />
            <text x=${lx} y=${ly + 4}>${item.count}</text>
          </g>`;
        })}
        ${graph.nodes.map((node: string) => {
          const [x, y] = at.get(node)!;
          return html`<g class="node"><circle cx=${x} cy=${y} r=${NODE_RADIUS - 2} /><text x=${x} y=${y + 4}>${clip(node, 14)}</text></g>`;
        })}
      </svg>
      <div class="panel">
        ${graph.edges.length === 0 && html`<p>Nobody worked with anybody in this window.</p>`}
        ${
          edge &&
          html`<h2>${edge.from} → ${edge.to} (${edge.kind}, ${edge.count})</h2>
            <ul class="links">${edge.links.map((item) => html`<li><button class="link" onClick=${() => setLink(item)}>${time(item.at)} · ${item.status}</button></li>`)}</ul>`
        }
        ${link && html`<${Conversation} key=${link.id} link=${link} />`}
      </div>
    </div>
  `;
}

/**
 * An OTLP/HTTP trace receiver for tests (the JSON encoding the OpenTelemetry JS exporter sends): it keeps every span
 * posted to /v1/traces, with its attributes read into plain values. `status` makes it answer with an error instead.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  startMs: number;
  endMs: number;
  attributes: Record<string, string | number | boolean>;
  links: { traceId: string; spanId: string }[];
  status: { code?: number; message?: string };
  service: string;
}

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
}

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes?: { key: string; value: OtlpValue }[];
  links?: { traceId: string; spanId: string }[];
  status?: { code?: number; message?: string };
}

function plainValue(value: OtlpValue): string | number | boolean {
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  return value.boolValue ?? '';
}

export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  /** Requests received, failed ones too. */
  posts = 0;
  /** An HTTP status to answer with instead of 200 (a collector that is failing). */
  status = 200;
  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(): Promise<OtlpReceiver> {
    let receiver!: OtlpReceiver;
    const server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        receiver.posts += 1;
        if (request.url !== '/v1/traces' || receiver.status !== 200) {
          response.writeHead(receiver.status === 200 ? 404 : receiver.status).end();
          return;
        }
        receiver.take(JSON.parse(Buffer.concat(chunks).toString('utf8')));
        response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    receiver = new OtlpReceiver(server, `http://127.0.0.1:${port}/v1/traces`);
    return receiver;
  }

  private take(body: {
    resourceSpans?: { resource?: { attributes?: { key: string; value: OtlpValue }[] }; scopeSpans?: { spans?: OtlpSpan[] }[] }[];
  }): void {
    for (const resource of body.resourceSpans ?? []) {
      const service = String(plainValue(resource.resource?.attributes?.find((a) => a.key === 'service.name')?.value ?? {}));
      for (const scope of resource.scopeSpans ?? [])
        for (const span of scope.spans ?? [])
          this.spans.push({
            traceId: span.traceId,
            spanId: span.spanId,
            parentSpanId: span.parentSpanId ?? '',
            name: span.name,
            kind: span.kind,
            startMs: Number(BigInt(span.startTimeUnixNano) / 1_000_000n),
            endMs: Number(BigInt(span.endTimeUnixNano) / 1_000_000n),
            attributes: Object.fromEntries((span.attributes ?? []).map((a) => [a.key, plainValue(a.value)])),
            links: (span.links ?? []).map((link) => ({ traceId: link.traceId, spanId: link.spanId })),
            status: span.status ?? {},
            service,
          });
    }
  }

  /** The spans whose ancestry reaches `spanId` (itself included). */
  descendants(spanId: string): ReceivedSpan[] {
    const below = new Set([spanId]);
    let grew = true;
    while (grew) {
      grew = false;
      for (const span of this.spans)
        if (!below.has(span.spanId) && below.has(span.parentSpanId)) {
          below.add(span.spanId);
          grew = true;
        }
    }
    return this.spans.filter((span) => below.has(span.spanId));
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

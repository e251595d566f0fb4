/**
 * The configuration of telemetry (docs/observability.md): OpenTelemetry traces sent over OTLP/HTTP, and metrics for a
 * Prometheus scrape. Both are off by default; off, no exporter is loaded. Part of the config schema (schema.ts); every
 * key and its default is in docs/configuration.md.
 */
import { z } from 'zod';
import { positiveInt } from './schema-common.js';
import { namedSecretMap } from './secret-schema.js';

const httpUrl = z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' });

export const telemetrySection = z
  .strictObject({
    /** Traces over OTLP/HTTP (JSON). Absent: no spans are exported and no exporter is loaded. */
    traces: z
      .strictObject({
        /** The collector's OTLP/HTTP traces URL, such as http://127.0.0.1:4318/v1/traces. */
        endpoint: httpUrl,
        /** Headers sent with every export (an API key): secrets, never shown in errors and taken out of logs. */
        headers: namedSecretMap().default({}),
        /** The share of traces recorded, 0 to 1, decided by trace id, so every gateway records the same traces. */
        sampling: z.number().min(0).max(1).default(1),
        /** How often finished spans are sent. */
        exportIntervalMs: positiveInt.default(5000),
        /** Finished spans held while the collector is slow or down; past it, spans are dropped (and counted). */
        maxQueueSize: positiveInt.default(2048),
        /** How long one export may take before it is given up. */
        timeoutMs: positiveInt.default(10_000),
      })
      .optional(),
    /** Metrics for Prometheus at GET /metrics. */
    metrics: z
      .strictObject({
        enabled: z.boolean().default(false),
        /**
         * host:port of a listener that serves only /metrics, without a token (for a scraper that cannot send one).
         * Absent: /metrics is on the control port, behind the control token.
         */
        listen: z
          .string()
          .regex(/^[^\s:]+:\d{1,5}$/, 'must be host:port, such as 127.0.0.1:9464')
          .optional(),
      })
      .prefault({}),
    /** Message contents (prompts, answers, tool arguments and results) on spans. Off: only sizes, ids and usage. */
    captureContent: z.boolean().default(false),
    /** The `service.name` resource attribute. */
    serviceName: z.string().min(1).default('switchboard'),
  })
  .prefault({});

/** The model port: what the gateway asks of the model providers (src/models builds them on the AI SDK). */
import type { LanguageModelV3 } from '@ai-sdk/provider';
import type { ProviderConfig } from '../config/schema.js';
import type { RunRequestSize } from '../core/request-size.js';

export interface Models {
  /** The model a `"<provider>/<model>"` reference names; throws MODEL_NOT_FOUND (or the provider's own refusal) naming the fix. */
  resolve(ref: string): LanguageModelV3;
  /** After a config reload: models are made again from the new providers. */
  reload(providers: Record<string, ProviderConfig>): void;
  /** What one model call sent, from the request body the provider wrote (the AI SDK reports it per step). */
  measureRequest(body: unknown): RunRequestSize;
}

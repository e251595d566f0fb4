/** Resolves `"<provider>/<model>"` references from the config to AI SDK language models. */
import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import type { LanguageModelV3 } from '@ai-sdk/provider';
import { SwitchboardError } from '../core/errors.js';
import type { ProviderConfig } from '../config/schema.js';
import type { RunRequestSize } from '../core/request-size.js';
import type { Models } from '../ports/models.js';
import { measureRequest } from './request-size.js';
import { ScriptedLanguageModel } from './scripted-model.js';
import { splitModelRef } from './model-ref.js';

export class ModelRegistry implements Models {
  private readonly cache = new Map<string, LanguageModelV3>();

  constructor(private providers: Record<string, ProviderConfig>) {}

  /** After a config reload: models are made again from the new providers. */
  reload(providers: Record<string, ProviderConfig>): void {
    this.providers = providers;
    this.cache.clear();
  }

  resolve(ref: string): LanguageModelV3 {
    const cached = this.cache.get(ref);
    if (cached) return cached;
    const { provider: providerName, model: modelId } = splitModelRef(ref);
    const provider = ref.includes('/') ? this.providers[providerName] : undefined;
    if (!provider) {
      throw new SwitchboardError('MODEL_PROVIDER_NOT_FOUND', `model "${ref}": no provider "${providerName}" under models.providers`);
    }
    const model = createModel(providerName, provider, modelId);
    this.cache.set(ref, model);
    return model;
  }

  measureRequest(body: unknown): RunRequestSize {
    return measureRequest(body);
  }
}

function createModel(name: string, provider: ProviderConfig, modelId: string): LanguageModelV3 {
  switch (provider.type) {
    case 'scripted': {
      const script = provider.models[modelId];
      if (!script)
        throw new SwitchboardError(
          'MODEL_PROVIDER_NOT_FOUND',
          `scripted model "${modelId}" is not defined under models.providers.${name}.models`,
        );
      return new ScriptedLanguageModel(modelId, script, name);
    }
    // The Chat Completions API: the one OpenAI and every OpenAI-compatible server speak.
    case 'openai':
      return createOpenAI({ apiKey: provider.apiKey, baseURL: provider.baseURL, headers: provider.headers }).chat(modelId);
    case 'anthropic':
      return createAnthropic({ apiKey: provider.apiKey, baseURL: provider.baseURL, headers: provider.headers })(modelId);
    case 'openai-compatible':
      return createOpenAICompatible({ name, baseURL: provider.baseURL, apiKey: provider.apiKey, headers: provider.headers }).chatModel(
        modelId,
      );
  }
}

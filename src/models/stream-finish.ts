/** A model's stream as it comes, with one call at its end: the finish part it reported, or undefined when it was cut. */
import type { LanguageModelV3StreamPart } from '@ai-sdk/provider';

export type FinishPart = Extract<LanguageModelV3StreamPart, { type: 'finish' }>;

/**
 * `done` is called once: at the finish part (before it is passed on), or with undefined when the stream ends without
 * one, fails, or is cancelled. It must not throw.
 */
export function onStreamFinish(
  stream: ReadableStream<LanguageModelV3StreamPart>,
  done: (finish: FinishPart | undefined) => Promise<void> | void,
): ReadableStream<LanguageModelV3StreamPart> {
  let called = false;
  const finish = async (part: FinishPart | undefined) => {
    if (called) return;
    called = true;
    await done(part);
  };
  const reader = stream.getReader();
  return new ReadableStream<LanguageModelV3StreamPart>({
    pull: async (controller) => {
      try {
        const { done: ended, value } = await reader.read();
        if (ended) {
          await finish(undefined);
          controller.close();
          return;
        }
        if (value.type === 'finish') await finish(value);
        controller.enqueue(value);
      } catch (error) {
        await finish(undefined);
        controller.error(error);
      }
    },
    cancel: async (reason) => {
      await finish(undefined);
      await reader.cancel(reason);
    },
  });
}

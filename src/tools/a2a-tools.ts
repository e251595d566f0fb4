/** Tools for agents serving A2A callers. */
import type { GatewayTool } from './types.js';

export const REQUEST_INPUT_TOOL = 'a2a_request_input';

/**
 * How an agent asks its A2A caller a question: the task becomes `input-required` with the question as
 * its status message when the run ends, and the caller's answer arrives as the next message.
 */
export const requestInputTool: GatewayTool = {
  name: REQUEST_INPUT_TOOL,
  description: 'Ask the A2A caller a question you need answered to go on; end your turn after calling it. The answer comes as the next message.',
  parameters: { type: 'object', properties: { question: { type: 'string' } }, required: ['question'] },
  sessionKinds: ['a2a'],
  async execute(args) {
    if (typeof args.question !== 'string' || args.question.trim() === '') return { status: 'error', code: 'INVALID_REQUEST', error: 'question is required' };
    return { status: 'ok', note: 'the question goes to the caller when this run ends; end your turn now' };
  },
};

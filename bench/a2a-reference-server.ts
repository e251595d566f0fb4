/** The SDK's reference A2A server (DefaultRequestHandler with InMemoryTaskStore), in a process of its own for the A2A load benchmark. */
import { ReferenceExecutor, referenceServer } from '../test/helpers/a2a-reference.js';

const { url } = await referenceServer(false, new ReferenceExecutor());
process.stdout.write(`${JSON.stringify({ url })}\n`);

/**
 * Writes two contents in turn to one file with atomicWrite, forever: a crash test kills it mid-write. It says it is
 * ready once the first content is in place, so that every kill finds a file that was written whole at least once (a
 * kill before the first rename, on a slow disk, would find no file, which says nothing about atomicity).
 */
import { atomicWrite } from '../../src/tools/workspace-fs.js';

const [target, size] = [process.argv[2], Number(process.argv[3])];
const contents = ['a', 'b'].map((letter) => letter.repeat(size));
await atomicWrite(target, contents[0]);
process.stdout.write('ready\n');
for (let round = 1; ; round += 1) await atomicWrite(target, contents[round % 2]);

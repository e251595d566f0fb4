/** Writes two contents in turn to one file with atomicWrite, forever: a crash test kills it mid-write. */
import { atomicWrite } from '../../src/tools/workspace-fs.js';

const [target, size] = [process.argv[2], Number(process.argv[3])];
const contents = ['a', 'b'].map((letter) => letter.repeat(size));
process.stdout.write('ready\n');
for (let round = 0; ; round += 1) await atomicWrite(target, contents[round % 2]);

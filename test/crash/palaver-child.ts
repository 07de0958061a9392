// A Palaver process for the crash tests, configured entirely by argv[2] (a JSON config for createPalaver, with a
// scripted model and, say, the Telegram channel on a fake Bot API server). Prints `ready` once serving.
// With `--standby` as argv[3] it loads its modules, prints `loaded` and starts Palaver only when a line arrives on
// stdin: a test can load the next process while the current one runs, and still have one Palaver at a time.
import { once } from 'node:events';
import { createLogger, createPalaver } from './built-palaver.js';

if (process.argv[3] === '--standby') {
  console.log('loaded');
  await once(process.stdin, 'data');
  process.stdin.pause();
}
await createPalaver(JSON.parse(process.argv[2]!) as Parameters<typeof createPalaver>[0], {
  logger: createLogger({ level: 'warn', destination: process.stderr }),
});
console.log('ready');

// A Palaver process that serves HTTP (the admin API among it), configured entirely by argv[2] (a JSON config for
// createPalaver). Prints `ready <url>` once serving.
import { createLogger, createPalaver } from './built-palaver.js';

const palaver = await createPalaver(JSON.parse(process.argv[2]!) as Parameters<typeof createPalaver>[0], {
  logger: createLogger({ level: 'warn', destination: process.stderr }),
});
const server = await palaver.serve({ host: '127.0.0.1', port: 0 });
console.log(`ready ${server.url}`);

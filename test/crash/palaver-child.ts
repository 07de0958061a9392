// A Palaver process for the crash tests, configured entirely by argv[2] (a JSON config for createPalaver, with a
// scripted model and, say, the Telegram channel on a fake Bot API server). Prints `ready` once serving.
import { createPalaver } from '../../src/app.js';
import { createLogger } from '../../src/observability/logger.js';

await createPalaver(JSON.parse(process.argv[2]!) as Parameters<typeof createPalaver>[0], { logger: createLogger({ level: 'warn', destination: process.stderr }) });
console.log('ready');

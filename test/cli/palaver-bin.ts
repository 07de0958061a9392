// The `palaver` bin for tests: bin/palaver.js runs the compiled dist/, which may be stale; this runs src/ through
// tsx with the same argv handling and exit code.
import { main } from '../../src/cli/main.js';

main(process.argv).catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
});

#!/usr/bin/env node
// The published CLI runs the compiled output; `npm ci` builds it through the `prepare` script.
import { main } from '../dist/cli/main.js';

main(process.argv).catch((error) => {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
});

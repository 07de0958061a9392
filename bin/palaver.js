#!/usr/bin/env node
// The published CLI runs the compiled output; `npm ci` builds it through the `prepare` script.
import module from 'node:module';

// Node 22.1+ keeps V8's compiled code of the modules it loads on disk (in the OS temp folder, or NODE_COMPILE_CACHE),
// so every later start skips most of the compiling; NODE_DISABLE_COMPILE_CACHE=1 turns it off. Node 20 has no such
// cache. It must be on before the CLI's modules load, hence the dynamic import below.
module.enableCompileCache?.();

const { main } = await import('../dist/cli/main.js');
main(process.argv).catch((error) => {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
});

import { fileURLToPath } from 'node:url';

/** The package's root folder, from `src/` (tsx, tests) and from `dist/` alike. */
export const PACKAGE_ROOT = fileURLToPath(new URL('..', import.meta.url));

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PalaverError } from '../domain/errors.js';
import { PACKAGE_ROOT } from './package-root.js';

/**
 * The browser libraries Palaver's pages load, each its package's own prebuilt file, unmodified: Chart.js for the
 * dashboard, markdown-it for the web chat. They are served by this server, never from a CDN (the pages' policies
 * would refuse one). Only browsers run them, so the packages are devDependencies and `npm run build`
 * (scripts/build.mjs) copies these files, with their licenses and versions, into `dist/browser/`.
 */
export type BrowserAsset = 'chart.umd.min.js' | 'markdown-it.min.js';

/** `dist/browser/` of the package, where the build puts the browser libraries. */
export const BROWSER_ASSETS_DIR = join(PACKAGE_ROOT, 'dist', 'browser');

/**
 * The library's file as text, read from `dir` (`dist/browser/` of the package).
 * @throws PalaverError `web_assets_missing` when the file is not there (the package was not built).
 */
export function readBrowserAsset(file: BrowserAsset, dir: string = BROWSER_ASSETS_DIR): string {
  try {
    return readFileSync(join(dir, file), 'utf8');
  } catch (error) {
    throw new PalaverError('web_assets_missing', `Cannot read ${file} from ${dir}; run \`npm run build\` to put the browser libraries there.`, {
      cause: error,
    });
  }
}

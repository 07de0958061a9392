import { type FSWatcher, watch } from 'node:fs';

/** A folder to watch and which of its files count (`name` is relative to the folder, with `/` under a recursive watch). */
export interface WatchTarget {
  readonly dir: string;
  readonly recursive: boolean;
  readonly accepts: (name: string) => boolean;
}

/** Stops watching. */
export type StopWatching = () => void;

/**
 * Calls `onChange` once after a burst of changes to the accepted files has been quiet for `debounceMs` (an editor's
 * save is often a write, a rename and a second write). Folders are watched, not files: an editor that saves by
 * replacing the file would leave a watch on the old file blind. A folder that cannot be watched is reported through
 * `onError` and left out.
 */
export function watchFiles(
  targets: readonly WatchTarget[],
  onChange: (files: readonly string[]) => void,
  options: { readonly debounceMs: number; readonly onError: (error: Error, dir: string) => void },
): StopWatching {
  const watchers: FSWatcher[] = [];
  let changed = new Set<string>();
  let timer: NodeJS.Timeout | undefined;
  for (const target of targets) {
    try {
      const watcher = watch(target.dir, { recursive: target.recursive }, (_event, name) => {
        const file = name?.toString().replaceAll('\\', '/');
        if (file === undefined || !target.accepts(file)) return;
        changed.add(`${target.dir}/${file}`);
        clearTimeout(timer);
        timer = setTimeout(() => {
          const files = [...changed];
          changed = new Set();
          onChange(files);
        }, options.debounceMs);
      });
      watcher.on('error', (error) => options.onError(error, target.dir));
      watchers.push(watcher);
    } catch (error) {
      options.onError(error as Error, target.dir);
    }
  }
  return () => {
    clearTimeout(timer);
    for (const watcher of watchers) watcher.close();
  };
}

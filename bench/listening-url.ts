import type { ChildProcessWithoutNullStreams } from 'node:child_process';

/**
 * Resolves with the URL a server child prints ("… listening on <url>"), or rejects with the end of its output when it
 * exits first or is silent for 60 s. Afterwards its output keeps being drained, so a chatty child never blocks on a
 * full pipe.
 */
export async function listeningUrl(child: ChildProcessWithoutNullStreams, label: string): Promise<string> {
  let output = '';
  const url = await new Promise<string>((resolveUrl, reject) => {
    const timer = setTimeout(() => reject(new Error(`${label} did not listen within 60 s:\n${output.slice(-2000)}`)), 60_000);
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      output += chunk;
      const match = /listening on (\S+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolveUrl(match[1]!);
      }
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${label} exited (${signal ?? code}) before listening:\n${output.slice(-2000)}`));
    });
  });
  child.stdout.resume();
  child.stderr.resume();
  return url;
}

/**
 * One of the two Palaver processes of the history scenario's `two-processes` variant: the Palaver of
 * bench/history-palaver.ts on the shared PostgreSQL database, doing what bench/history-turns.ts asks over IPC (one
 * request at a time) and answering with what it measured itself. Says `ready` once started; closes on `close`.
 */
import { startHistoryPalaver, type HistoryPalaverArgs } from './history-palaver.js';
import { scenarioArgs } from './stats.js';

export type HistoryPeerRequest =
  | { readonly type: 'chat'; readonly userId: string }
  | { readonly type: 'seed'; readonly sessionId: string; readonly count: number }
  | { readonly type: 'historySent'; readonly sessionId: string }
  | { readonly type: 'close' };

export type HistoryPeerReply =
  | { readonly type: 'ready' }
  | { readonly type: 'done'; readonly value?: unknown }
  | { readonly type: 'failed'; readonly message: string };

const palaver = await startHistoryPalaver(scenarioArgs<HistoryPalaverArgs>());
const send = (reply: HistoryPeerReply): void => void process.send?.(reply);
process.on('message', (request: HistoryPeerRequest) => {
  const answer = async (): Promise<unknown> => {
    switch (request.type) {
      case 'chat':
        return palaver.chat(request.userId);
      case 'seed':
        return palaver.seed(request.sessionId, request.count);
      case 'historySent':
        return palaver.historySent(request.sessionId);
      case 'close':
        await palaver.close();
        // Exit once the parent has the answer.
        process.send?.({ type: 'done' } satisfies HistoryPeerReply, () => process.exit(0));
        return new Promise<never>(() => undefined);
    }
  };
  void answer().then(
    (value) => send({ type: 'done', value }),
    (error: unknown) => send({ type: 'failed', message: error instanceof Error ? (error.stack ?? error.message) : String(error) }),
  );
});
// A scenario that died leaves no peer behind holding the database (the bench drops it with `force`).
process.once('disconnect', () => process.exit(1));
send({ type: 'ready' });

// The `palaver` bin with Telegram's data centres out of reach: every MTProto connection goes to `<host>:<port>` instead
// (a closed port: refused; a server that accepts and never answers: a blackhole). Real TCP, mtcute's own transport.
// Usage: palaver-on-unreachable-telegram.ts <host:port> <palaver arguments…>
import { TcpTransport } from '@mtcute/node';
import type { TelegramNetworkOverride } from '../../src/channels/telegram-user/client-factory.js';

// The built CLI, as bin/palaver.js runs it (see palaver-on-fake-telegram.ts).
const { main } = (await import(new URL('../../dist/cli/main.js', import.meta.url).href)) as typeof import('../../src/cli/main.js');

const [node = process.execPath, script = '', target, ...args] = process.argv;
const [host, port] = (target ?? '').split(':');
if (!host || !port) throw new Error('palaver-on-unreachable-telegram.ts needs <host:port> first');
const tcp = new TcpTransport();
const network: TelegramNetworkOverride = {
  middleware: (ctx, next) => next(ctx),
  transport: {
    connect: (dc) => tcp.connect({ ...dc, ipAddress: host, port: Number(port) }),
    packetCodec: () => tcp.packetCodec(),
  },
  wrapStorage: (storage) => storage,
  attach: () => () => {},
};
main([node, script, ...args], { telegramUserNetwork: network }).catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
});

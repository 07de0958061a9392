// The `palaver` bin for tests of the Telegram user account: palaver-bin.ts with the way to Telegram replaced by the
// test's fake MTProto server, reached over loopback. Production code never names the fake; it is injected here.
// Usage: palaver-on-fake-telegram.ts <fake server URL> <palaver arguments…>
import { main } from '../../src/cli/main.js';
import { remoteFakeMtprotoLink } from '../../src/testing/fake-mtproto/remote-link.js';

const [node = process.execPath, script = '', url, ...args] = process.argv;
if (url === undefined || !url.startsWith('http://')) throw new Error('palaver-on-fake-telegram.ts needs the fake MTProto server URL first');
main([node, script, ...args], { telegramUserNetwork: remoteFakeMtprotoLink(url) }).catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
});

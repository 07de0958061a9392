// The `palaver` bin for tests of the Telegram user account: bin/palaver.js with the way to Telegram replaced by the
// test's fake MTProto server, reached over loopback. Production code never names the fake; it is injected here.
// Usage: palaver-on-fake-telegram.ts <fake server URL> <palaver arguments…>
import { remoteFakeMtprotoLink } from '../../src/testing/fake-mtproto/remote-link.js';

// The built CLI, as bin/palaver.js runs it (only the fake's link comes from src/): loading the whole of src/ through
// tsx took three times the CPU of a start. Typed by the source it is built from.
const { main } = (await import(new URL('../../dist/cli/main.js', import.meta.url).href)) as typeof import('../../src/cli/main.js');

const [node = process.execPath, script = '', url, ...args] = process.argv;
if (url === undefined || !url.startsWith('http://')) throw new Error('palaver-on-fake-telegram.ts needs the fake MTProto server URL first');
main([node, script, ...args], { telegramUserNetwork: remoteFakeMtprotoLink(url) }).catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
});

import { tl, type TelegramClient, type User } from '@mtcute/node';
import { ChannelError } from '../../domain/errors.js';
import { TELEGRAM_USER_CHANNEL } from './channel-name.js';

/** Wrong codes or passwords accepted before the login gives up (Telegram itself limits attempts too). */
const MAX_ATTEMPTS = 3;

/** What the login asks the person, and where it tells them things. The CLI answers from the terminal. */
export interface LoginPrompts {
  phone(): Promise<string>;
  /** The login code Telegram sent (`via`: app, sms, call…); `retry` after a wrong one. */
  code(via: string, retry: boolean): Promise<string>;
  /** The two-step verification password (`hint` as set in Telegram); `retry` after a wrong one. */
  password(hint: string | null, retry: boolean): Promise<string>;
  /** QR login: show `url` (tg://login?token=…) as a QR code, to scan in Telegram → Settings → Devices → Link Desktop Device. */
  qr(url: string, expires: Date): void;
  notice(text: string): void;
}

/**
 * Signs the session in: by phone number, login code and, when set, the two-step verification password; or by a QR
 * code scanned on a phone already signed in (`qr: true`). A wrong code or password is asked again, up to three
 * tries; an expired code ends the login with a message saying to start again.
 * @returns the signed-in user (mtcute has stored it, and the auth key, in the session).
 * @throws ChannelError `login_failed` with what went wrong and what to do.
 */
export async function loginInteractively(client: TelegramClient, prompts: LoginPrompts, options: { readonly qr?: boolean } = {}): Promise<User> {
  try {
    return options.qr ? await loginByQr(client, prompts) : await loginByPhone(client, prompts);
  } catch (error) {
    if (error instanceof ChannelError) throw error;
    if (tl.RpcError.is(error)) throw loginFailed(explainRpcError(error), error);
    throw error;
  }
}

async function loginByPhone(client: TelegramClient, prompts: LoginPrompts): Promise<User> {
  const phone = normalisePhone(await prompts.phone());
  const sent = await client.sendCode({ phone });
  if (!('phoneCodeHash' in sent)) return sent;
  prompts.notice(`Telegram sent a login code (${describeDelivery(sent.type)}).`);
  for (let attempt = 1; ; attempt += 1) {
    const code = (await prompts.code(sent.type, attempt > 1)).replace(/\s+/g, '');
    try {
      return await client.signIn({ phone, phoneCodeHash: sent.phoneCodeHash, phoneCode: code });
    } catch (error) {
      if (tl.RpcError.is(error, 'SESSION_PASSWORD_NEEDED')) return checkPassword(client, prompts);
      if (tl.RpcError.is(error, 'PHONE_CODE_INVALID') || tl.RpcError.is(error, 'PHONE_CODE_EMPTY')) {
        if (attempt >= MAX_ATTEMPTS)
          throw loginFailed(`the login code was wrong ${MAX_ATTEMPTS} times. Run palaver telegram login again for a new code.`, error);
        prompts.notice('That code is not right. Check the code in Telegram and type it again.');
        continue;
      }
      throw error;
    }
  }
}

async function checkPassword(client: TelegramClient, prompts: LoginPrompts): Promise<User> {
  const hint = await passwordHint(client);
  for (let attempt = 1; ; attempt += 1) {
    const password = await prompts.password(hint, attempt > 1);
    try {
      return await client.checkPassword(password);
    } catch (error) {
      if (tl.RpcError.is(error, 'PASSWORD_HASH_INVALID')) {
        if (attempt >= MAX_ATTEMPTS) throw loginFailed(`the two-step verification password was wrong ${MAX_ATTEMPTS} times.`, error);
        prompts.notice('That password is not right. Type it again.');
        continue;
      }
      throw error;
    }
  }
}

async function loginByQr(client: TelegramClient, prompts: LoginPrompts): Promise<User> {
  let tries = 0;
  let hint: string | null | undefined;
  return client.signInQr({
    onUrlUpdated: (url, expires) => prompts.qr(url, expires),
    onQrScanned: () => prompts.notice('Code scanned; finishing the sign-in…'),
    password: async () => {
      hint ??= await passwordHint(client);
      tries += 1;
      if (tries > MAX_ATTEMPTS) throw loginFailed(`the two-step verification password was wrong ${MAX_ATTEMPTS} times.`);
      return prompts.password(hint, tries > 1);
    },
    invalidPasswordCallback: () => prompts.notice('That password is not right. Type it again.'),
  });
}

async function passwordHint(client: TelegramClient): Promise<string | null> {
  const password = await client.call({ _: 'account.getPassword' }).catch(() => undefined);
  return password?.hint ?? null;
}

/** `+1 555 010-0100` → `15550100100`: Telegram wants the digits in international form. */
function normalisePhone(input: string): string {
  const digits = input
    .replace(/[\s().-]/g, '')
    .replace(/^\+/, '')
    .replace(/^00/, '');
  if (!/^\d{6,15}$/.test(digits)) throw loginFailed(`"${input.trim()}" is not a phone number in international form, such as +44 20 7946 0958.`);
  return digits;
}

function describeDelivery(type: string): string {
  switch (type) {
    case 'app':
      return 'in the Telegram app on your other devices, from the chat "Telegram"';
    case 'sms':
      return 'by SMS';
    case 'call':
    case 'flash_call':
    case 'missed_call':
      return 'by a phone call';
    case 'email':
    case 'email_required':
      return 'by email';
    default:
      return `by ${type}`;
  }
}

function explainRpcError(error: tl.RpcError): string {
  if (error.is('PHONE_NUMBER_INVALID')) return 'Telegram does not know that phone number. Type it in international form, such as +44 20 7946 0958.';
  if (error.is('PHONE_NUMBER_BANNED')) return 'Telegram has banned this phone number.';
  if (error.is('PHONE_CODE_EXPIRED')) return 'the login code expired. Run palaver telegram login again for a new one.';
  if (error.is('API_ID_INVALID') || error.is('API_ID_PUBLISHED_FLOOD'))
    return 'Telegram refused the api_id/api_hash: check TELEGRAM_API_ID and TELEGRAM_API_HASH against my.telegram.org.';
  if (error.is('FLOOD_WAIT_%d')) return `Telegram asks to wait ${(error as tl.RpcError & { seconds: number }).seconds} s before the next login attempt.`;
  return `Telegram answered ${error.text}.`;
}

function loginFailed(reason: string, cause?: unknown): ChannelError {
  return new ChannelError('login_failed', TELEGRAM_USER_CHANNEL, `Login failed: ${reason}`, cause === undefined ? undefined : { cause });
}

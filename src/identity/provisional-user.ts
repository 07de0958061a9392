/**
 * Provisional identities: who a person is taken to be while the team's directory cannot be reached
 * (`identity.onUnreachable: "provisional"`). The user id is the channel account itself under a reserved prefix, so it
 * can never be a user the directory names (a directory answer with the prefix is refused), nor another account's:
 * namespace and account id are encoded, so `a` + `b:c` and `a:b` + `c` stay apart.
 */
const PREFIX = 'provisional:';

/** The provisional user id of an account, e.g. `provisional:telegram:4242`. */
export function provisionalUserId(namespace: string, accountId: string): string {
  return `${PREFIX}${encodeURIComponent(namespace)}:${encodeURIComponent(accountId)}`;
}

/** Whether `userId` is a provisional one (see {@link provisionalUserId}). */
export function isProvisionalUserId(userId: string): boolean {
  return userId.startsWith(PREFIX);
}

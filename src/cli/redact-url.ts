/** Hides the password of a database URL before printing it (`postgres://app:***@db/palaver`). */
export function redactUrl(url: string): string {
  return url.replace(/\/\/([^:/@]+):([^@]+)@/, '//$1:***@');
}

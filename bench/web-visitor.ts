/** A new web-chat visitor: the cookie the chat page sets, which the bench's runs then send as that person. */
export async function visitor(base: string): Promise<string> {
  const page = await fetch(`${base}/`);
  await page.body?.cancel();
  const cookie = page.headers.getSetCookie()[0]?.split(';')[0];
  if (page.status !== 200 || cookie === undefined) throw new Error(`the chat page gave no cookie (${page.status})`);
  return cookie;
}

// A dashboard or admin console session over plain HTTP, as a browser makes it.
import assert from 'node:assert/strict';

/** Logs in through a dashboard form (CSRF token from the page) and returns the session cookie. */
export async function dashboardSession(
  base: string,
  path: string,
  fields: Record<string, string>,
): Promise<string> {
  const jar = new Map<string, string>();
  const take = (response: Response) => {
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      jar.set(pair!.slice(0, eq), pair!.slice(eq + 1));
    }
  };
  const cookie = () => [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
  const form = await fetch(`${base}${path}`, { redirect: 'manual' });
  take(form);
  const csrf = /name="_csrf" value="([^"]+)"/.exec(await form.text())?.[1];
  assert.ok(csrf, `a CSRF token on ${path}`);
  const posted = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { cookie: cookie(), 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ ...fields, _csrf: csrf }),
    redirect: 'manual',
  });
  take(posted);
  assert.equal(posted.status, 303, `log in at ${path}`);
  return cookie();
}

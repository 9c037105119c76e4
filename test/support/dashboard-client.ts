// A browser's part in the dashboard, over plain fetch: a cookie jar, each form's page fetched
// first for its CSRF token, the form posted as a browser posts it (urlencoded, same origin,
// redirects not followed). For HTTP tests of the dashboard's forms against a real gateway.

export interface FormReply {
  status: number;
  location: string | null;
  text: string;
  headers: Headers;
}

export class DashboardClient {
  readonly cookies = new Map<string, string>();

  constructor(readonly base_url: string) {}

  private take(response: Response): void {
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      this.cookies.set(pair!.slice(0, eq), pair!.slice(eq + 1));
    }
  }

  cookieHeader(): string {
    return [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
  }

  /** GET a page with the jar's cookies. */
  async get(path: string): Promise<FormReply> {
    const response = await fetch(`${this.base_url}${path}`, {
      headers: { cookie: this.cookieHeader() },
      redirect: 'manual',
    });
    this.take(response);
    return {
      status: response.status,
      location: response.headers.get('location'),
      text: await response.text(),
      headers: response.headers,
    };
  }

  /** The CSRF token of the form on `page`. */
  async csrf(page: string): Promise<string> {
    const reply = await this.get(page);
    const token = /name="_csrf" value="([^"]+)"/.exec(reply.text)?.[1];
    if (!token) throw new Error(`no CSRF token on ${page} (status ${reply.status})`);
    return token;
  }

  /** POSTs a form to `path` with the token of `page` (default: `path` itself). */
  async post(
    path: string,
    fields: Record<string, string>,
    options: { page?: string; csrf?: string; headers?: Record<string, string> } = {},
  ): Promise<FormReply> {
    const csrf = options.csrf ?? (await this.csrf(options.page ?? path));
    const response = await fetch(`${this.base_url}${path}`, {
      method: 'POST',
      redirect: 'manual',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        cookie: this.cookieHeader(),
        origin: this.base_url,
        ...options.headers,
      },
      body: new URLSearchParams({ ...fields, _csrf: csrf }),
    });
    this.take(response);
    return {
      status: response.status,
      location: response.headers.get('location'),
      text: await response.text(),
      headers: response.headers,
    };
  }

  /** Signs up a new dashboard user (and is logged in as it). */
  async signup(email: string, password: string, name = 'Test User'): Promise<FormReply> {
    return this.post('/signup', { name, email, password, password_confirm: password });
  }
}

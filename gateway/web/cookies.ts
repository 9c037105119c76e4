// Just enough cookie handling for the dashboard's three cookies.
import type { Request, Response } from 'express';

export function readCookies(req: Request): Map<string, string> {
  const cookies = new Map<string, string>();
  const header = req.headers.cookie;
  if (!header || header.length > 8192) return cookies;
  for (const part of header.split(';')) {
    const index = part.indexOf('=');
    if (index < 1) continue;
    const name = part.slice(0, index).trim();
    let value = part.slice(index + 1).trim();
    if (value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1);
    if (!cookies.has(name) && /^[A-Za-z0-9_-]{1,200}$/.test(value)) cookies.set(name, value);
  }
  return cookies;
}

export interface CookieOptions {
  path: string;
  max_age_s?: number;
  secure: boolean;
  same_site: 'Strict' | 'Lax';
}

/** HttpOnly always: no script on the page ever needs these values. */
export function setCookie(
  res: Response,
  name: string,
  value: string,
  options: CookieOptions,
): void {
  const parts = [
    `${name}=${value}`,
    `Path=${options.path}`,
    'HttpOnly',
    `SameSite=${options.same_site}`,
  ];
  if (options.max_age_s !== undefined) parts.push(`Max-Age=${options.max_age_s}`);
  if (options.secure) parts.push('Secure');
  res.append('Set-Cookie', parts.join('; '));
}

export function clearCookie(
  res: Response,
  name: string,
  options: Omit<CookieOptions, 'max_age_s'>,
): void {
  setCookie(res, name, '', { ...options, max_age_s: 0 });
}

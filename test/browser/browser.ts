// Headless Debian chromium through playwright-core (never a browser download). On a fresh
// machine without /usr/bin/chromium it installs Debian's package first. Every test gets a
// page; when a test fails, a full-page screenshot goes to test-results/browser/ (git-ignored).
import { execSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

export const CHROMIUM = process.env.AIHUB_CHROMIUM ?? '/usr/bin/chromium';
export const RESULTS_DIR = resolve(import.meta.dirname, '../../test-results/browser');

export function ensureChromium(): void {
  if (existsSync(CHROMIUM)) return;
  if (process.platform !== 'linux' || process.getuid?.() !== 0) {
    throw new Error(
      `${CHROMIUM} is missing: install Debian's chromium package (apt-get install -y chromium)`,
    );
  }
  execSync('apt-get update && apt-get install -y --no-install-recommends chromium', {
    stdio: 'inherit',
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
}

export async function launch(): Promise<Browser> {
  ensureChromium();
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
}

export function safeName(text: string): string {
  return text.replace(/[^A-Za-z0-9._-]+/g, '-').slice(0, 120);
}

/**
 * Runs `fn` with a fresh context and page; on a throw, saves a screenshot of every open
 * page of the context and rethrows.
 */
export async function withPage<T>(
  browser: Browser,
  name: string,
  fn: (page: Page, context: BrowserContext) => Promise<T>,
  options: { colorScheme?: 'light' | 'dark' } = {},
): Promise<T> {
  const context = await browser.newContext({
    viewport: { width: 1280, height: 900 },
    colorScheme: options.colorScheme ?? 'light',
  });
  const page = await context.newPage();
  try {
    return await fn(page, context);
  } catch (error) {
    mkdirSync(RESULTS_DIR, { recursive: true });
    let index = 0;
    for (const open of context.pages()) {
      const file = join(RESULTS_DIR, `${safeName(name)}-failure-${index++}.png`);
      await open.screenshot({ path: file, fullPage: true }).catch(() => undefined);
      process.stderr.write(`screenshot of the failing page: ${file} (${open.url()})\n`);
    }
    throw error;
  } finally {
    await context.close();
  }
}

/** Screenshots kept for review (light and dark), when AIHUB_SCREENSHOTS=1. */
export async function reviewShot(page: Page, name: string): Promise<void> {
  if (process.env.AIHUB_SCREENSHOTS !== '1') return;
  const dir = join(RESULTS_DIR, 'pages');
  mkdirSync(dir, { recursive: true });
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    await page.waitForTimeout(400); // let the buttons' colour transitions finish
    await page.screenshot({ path: join(dir, `${safeName(name)}-${scheme}.png`), fullPage: true });
  }
  await page.emulateMedia({ colorScheme: 'light' });
}

/** "₹1,234.50" → 1234.5 */
export function parseMoney(text: string): number {
  const cleaned = text.replace(/[^0-9.−-]/g, '').replace('−', '-');
  const value = Number(cleaned);
  if (!Number.isFinite(value) || cleaned === '')
    throw new Error(`not an amount: ${JSON.stringify(text)}`);
  return value;
}

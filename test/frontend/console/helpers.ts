/**
 * Test helpers for the web console (host/src/frontend/console/, docs/console.md): the Chromium
 * binary the browser test drives through puppeteer-core (Debian's `chromium`; nothing is
 * downloaded), and small page actions.
 */
import { existsSync } from 'node:fs';
import type { Page } from 'puppeteer-core';

/** Where a Chromium binary may be: `$CHROMIUM_PATH` first, then Debian's and the usual names. */
const CANDIDATES = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome', '/usr/bin/google-chrome-stable'];

/** The Chromium binary to drive, or undefined when this machine has none (`apt-get install chromium`). */
export function chromiumPath(): string | undefined {
  return CANDIDATES.find((p): p is string => p !== undefined && p !== '' && existsSync(p));
}

/** Set a text field's or textarea's value as typing would (one `input` event), by CSS selector. */
export async function setValue(page: Page, selector: string, value: string): Promise<void> {
  await page.$eval(
    selector,
    (el, v) => {
      (el as HTMLInputElement).value = v;
      el.dispatchEvent(new Event('input', { bubbles: true }));
    },
    value,
  );
}

/** The text of the element at `selector` (trimmed), once it exists. */
export async function textOf(page: Page, selector: string): Promise<string> {
  await page.waitForSelector(selector);
  return (await page.$eval(selector, (el) => el.textContent ?? '')).trim();
}

/** Click a navigation button of the console and wait for its view's heading. */
export async function openView(page: Page, view: string, heading: string): Promise<void> {
  await page.click(`#nav-${view}`);
  await page.waitForFunction((h) => document.getElementById('view-heading')?.textContent === h, {}, heading);
  await idle(page);
}

/** Wait until the console has no API call in flight (its main region is no longer `aria-busy`). */
export async function idle(page: Page): Promise<void> {
  await page.waitForSelector('main[aria-busy="false"]');
}

import { expect, type Browser, type Locator, type Page } from "@playwright/test";
import path from "node:path";

export const USERS = {
  agent: { username: "agent", password: "agent-e2e" },
  supervisor: { username: "supervisor", password: "supervisor-e2e" },
} as const;

export type RoleName = keyof typeof USERS;

/** Where the README's screenshots are saved. */
export const SCREENSHOTS = path.resolve(__dirname, "../../docs/screenshots");

/** Waits until the page's WASM has hydrated, so that clicks reach Rust. */
export async function hydrated(page: Page) {
  await expect(page.locator("#app")).toHaveAttribute("data-hydrated", "true");
}

/** A conversation's address: `/c/{sessionId}`. */
export const CONVERSATION_URL = /\/c\/([A-Za-z0-9_-]+)$/;

/** The session id of the conversation the page shows. */
export function sessionOf(page: Page): string {
  return page.url().match(CONVERSATION_URL)?.[1] ?? "";
}

/** Signs in through the form and waits for the console, which opens the most recent conversation. */
export async function signIn(page: Page, role: RoleName) {
  await page.goto("/login");
  await hydrated(page);
  await page.getByLabel("Username").fill(USERS[role].username);
  await page.getByLabel("Password").fill(USERS[role].password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page).toHaveURL(CONVERSATION_URL);
  await expect(page.getByTestId("user-role")).toHaveText(role);
  await hydrated(page);
}

/** A page of a fresh browser context, signed in as `role`. */
export async function signedInPage(browser: Browser, role: RoleName, viewport = { width: 1440, height: 900 }) {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  await signIn(page, role);
  return page;
}

/** Starts a new conversation and waits until its event stream is open. */
export async function newConversation(page: Page): Promise<string> {
  const before = sessionOf(page);
  await page.getByTestId("new-conversation").click();
  await expect.poll(() => sessionOf(page)).not.toBe(before);
  await expect(page).toHaveURL(CONVERSATION_URL);
  const sessionId = sessionOf(page);
  await hydrated(page);
  const chat = page.getByTestId("chat");
  await expect(chat).toHaveAttribute("data-session", sessionId);
  await expect(chat).toHaveAttribute("data-connected", "true");
  return sessionId;
}

/** Types a customer message and sends it with Enter. */
export async function send(page: Page, text: string) {
  const composer = page.getByTestId("composer");
  await composer.fill(text);
  await composer.press("Enter");
}

/**
 * Starts recording, inside the page, every text the streaming reply shows.
 * The browser records each change as it happens, so a test runner slowed
 * by a loaded machine misses none of them (polling from the test did).
 * Start it before the action that makes the reply stream.
 */
export async function recordStream(page: Page) {
  await page.evaluate(() => {
    const w = window as unknown as { aicsSeen: string[]; aicsObserver?: MutationObserver };
    w.aicsObserver?.disconnect();
    w.aicsSeen = [];
    const read = () => {
      const text = Array.from(document.querySelectorAll('[data-testid="streaming-reply"]'))
        .map((e) => e.textContent ?? "")
        .join("")
        .trim();
      if (text && w.aicsSeen[w.aicsSeen.length - 1] !== text) w.aicsSeen.push(text);
    };
    w.aicsObserver = new MutationObserver(read);
    w.aicsObserver.observe(document.body, { subtree: true, childList: true, characterData: true });
    read();
  });
  return {
    /** Stops recording; the distinct texts seen, in order. */
    async seen(): Promise<string[]> {
      return page.evaluate(() => {
        const w = window as unknown as { aicsSeen: string[]; aicsObserver?: MutationObserver };
        w.aicsObserver?.disconnect();
        return [...new Set(w.aicsSeen)];
      });
    },
  };
}

/**
 * Records the streaming reply until `until` says the stream ended; returns
 * the distinct texts seen.
 */
export async function sampleStream(page: Page, until: () => Promise<boolean>) {
  const recording = await recordStream(page);
  await waitUntil(until);
  return recording.seen();
}

/** Waits until `until` holds (at most 30 s). */
export async function waitUntil(until: () => Promise<boolean>) {
  for (let i = 0; i < 600 && !(await until()); i++) {
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The tool card of `tool` in the timeline. */
export function toolCard(page: Page, tool: string): Locator {
  return page.getByTestId("timeline-panel").locator(`[data-testid="tool-card"][data-tool="${tool}"]`).last();
}

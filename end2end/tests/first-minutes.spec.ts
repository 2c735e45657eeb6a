import { expect, test, type Page } from "@playwright/test";
import { hydrated, newConversation, sampleStream, sessionOf, signIn, USERS } from "./helpers";

// What a support agent meets in the first minutes: sign in and type at once,
// a conversation with a follow-up, "New" that works the moment it shows.

/** Waits until the open conversation's event stream is connected. */
async function live(page: Page) {
  await hydrated(page);
  await expect(page.getByTestId("chat")).toHaveAttribute("data-connected", "true");
}

/** Sends what is in the composer with Enter and waits for the streamed reply; returns the partial texts seen. */
async function replyStreams(page: Page, replies: number) {
  const assistant = page.locator('[data-role="assistant"]');
  await expect(page.getByTestId("chat")).toHaveAttribute("data-running", "true");
  const seen = await sampleStream(page, async () => (await assistant.count()) >= replies);
  await expect(assistant).toHaveCount(replies);
  const full = ((await assistant.last().getByTestId("assistant-text").textContent()) ?? "").trim();
  expect(full.length).toBeGreaterThan(0);
  const partials = seen.filter((t) => t.length < full.length && full.startsWith(t.slice(0, 6)));
  expect(partials.length, `partial texts seen: ${JSON.stringify(seen)}`).toBeGreaterThan(1);
  return full;
}

test("after sign-in the most recent conversation is open with the composer focused: typing works without a click", async ({
  page,
  playwright,
  baseURL,
}) => {
  // Another agent just started a conversation: it is the most recent one.
  const api = await playwright.request.newContext({ baseURL });
  expect((await api.post("/api/auth/login", { data: USERS.agent })).status()).toBe(200);
  const created = await api.post("/api/conversations", { headers: { Origin: baseURL ?? "" } });
  expect(created.status()).toBe(201);
  const { sessionId } = await created.json();
  await api.dispose();

  // Sign in with the keyboard only.
  await page.goto("/login");
  await hydrated(page);
  await page.getByLabel("Username").fill(USERS.agent.username);
  await page.getByLabel("Password").fill(USERS.agent.password);
  await page.getByLabel("Password").press("Enter");

  // No dead end: the conversation is open and the composer has the focus.
  await expect(page).toHaveURL(new RegExp(`/c/${sessionId}$`));
  await expect(page.getByText("No conversation open")).toHaveCount(0);
  const composer = page.getByTestId("composer");
  await expect(composer).toBeFocused();
  await page.keyboard.type("Where is my order ORD-123?");
  await expect(composer).toHaveValue("Where is my order ORD-123?");
  await expect(
    page.locator(`[data-testid="conversation-item"][data-session="${sessionId}"]`),
  ).toHaveAttribute("aria-current", "page");

  // Enter sends it once the page is live.
  await live(page);
  await expect(composer).toHaveValue("Where is my order ORD-123?");
  await page.keyboard.press("Enter");
  await expect(page.locator('[data-role="customer"]')).toHaveText(["Where is my order ORD-123?"]);
  await expect(page.locator('[data-role="assistant"]')).toHaveCount(1);
  await expect(page.locator('[data-role="assistant"]')).toContainText("ORD-123");
});

test("what is typed before the page's script has run is kept, and sent", async ({ page }) => {
  await signIn(page, "agent");
  const sessionId = await newConversation(page);

  // Hold the script back until the agent has typed.
  let release = () => {};
  const typed = new Promise<void>((resolve) => (release = resolve));
  await page.route(/\.wasm$/, async (route) => {
    await typed;
    await route.continue();
  });
  await page.goto(`/c/${sessionId}`, { waitUntil: "commit" });
  const composer = page.getByTestId("composer");
  await expect(composer).toBeFocused();
  await expect(page.locator("#app")).toHaveAttribute("data-hydrated", "false");
  await page.keyboard.type("Where is my order ORD-123?");
  release();

  await live(page);
  await expect(composer).toHaveValue("Where is my order ORD-123?");
  await expect(page.getByTestId("send")).toBeEnabled();
  await composer.press("Enter");
  await expect(page.locator('[data-role="assistant"]')).toContainText("ORD-123");
});

test("a two-turn conversation: the follow-up gets its own streamed reply, and both turns are stored", async ({ page }) => {
  await signIn(page, "agent");
  const sessionId = await newConversation(page);
  const composer = page.getByTestId("composer");
  const first = "Where is my order ORD-123?";
  const followUp = "Has it shipped yet?";

  await expect(composer).toBeFocused();
  await page.keyboard.type(first);
  await page.keyboard.press("Enter");
  const firstReply = await replyStreams(page, 1);
  expect(firstReply).toContain("ORD-123");

  // The composer is ready again without a click.
  await expect(composer).toBeEnabled();
  await expect(composer).toBeFocused();
  await page.keyboard.type(followUp);
  await page.keyboard.press("Enter");
  await expect(page.locator('[data-role="customer"]')).toHaveText([first, followUp]);
  const secondReply = await replyStreams(page, 2);

  // Each turn has its own trace.
  const gids = page.getByTestId("show-trace");
  await expect(gids).toHaveCount(2);
  await expect(page.getByTestId("trace-panel")).toBeVisible();
  const latest = await page.getByTestId("trace-gid").textContent();
  await gids.first().click();
  await expect(page.getByTestId("trace-gid")).not.toHaveText(latest ?? "");

  // Both turns were stored: a reload shows the same conversation.
  await page.reload();
  await expect(page.locator('[data-role="customer"]')).toHaveText([first, followUp]);
  await expect(page.locator('[data-role="assistant"]').getByTestId("assistant-text")).toHaveText([
    firstReply,
    secondReply,
  ]);
  await expect(page.getByTestId("conversation-title")).toHaveText(first);
  await expect(
    page.locator(`[data-testid="conversation-item"][data-session="${sessionId}"]`).getByTestId("last-message"),
  ).toContainText(secondReply.slice(0, 20));
});

test("New works before the page's script has loaded: a plain form post opens a new conversation", async ({ page }) => {
  await signIn(page, "agent");
  const before = sessionOf(page);
  // No script at all: what a visitor has before the WASM arrives.
  await page.route(/\.wasm$/, (route) => route.abort());
  await page.goto(`/c/${before}`, { waitUntil: "commit" });
  await page.getByTestId("new-conversation").click();

  await expect.poll(() => sessionOf(page)).not.toBe(before);
  const sessionId = sessionOf(page);
  await expect(page.locator("#app")).toHaveAttribute("data-hydrated", "false");
  await expect(page.getByTestId("chat")).toHaveAttribute("data-session", sessionId);
  await expect(page.getByTestId("conversation-title")).toHaveText("New conversation");
  await expect(page.getByTestId("empty-transcript")).toBeVisible();
  await expect(page.getByTestId("composer")).toBeFocused();
  await expect(
    page.locator(`[data-testid="conversation-item"][data-session="${sessionId}"]`),
  ).toHaveAttribute("aria-current", "page");

  // Every icon is inline SVG: no emoji or symbol glyph a font may lack.
  await expect(page.getByTestId("empty-transcript").locator("svg")).toHaveCount(1);
  await expect(page.getByTestId("new-conversation").locator("svg")).toHaveCount(1);
  const text = await page.locator("body").innerText();
  expect(text).not.toMatch(/\p{Extended_Pictographic}|[\u2190-\u21FF]/u);
});

test("New clicked as soon as the page shows opens a new conversation, which is live once hydrated", async ({ page }) => {
  await signIn(page, "agent");
  const before = sessionOf(page);
  await page.goto(`/c/${before}`, { waitUntil: "commit" });
  await page.getByTestId("new-conversation").click();

  await expect.poll(() => sessionOf(page)).not.toBe(before);
  const sessionId = sessionOf(page);
  await live(page);
  await expect(page.getByTestId("chat")).toHaveAttribute("data-session", sessionId);
  await expect(page.getByTestId("conversation-title")).toHaveText("New conversation");
  await expect(page.getByTestId("composer")).toBeFocused();
  // Exactly one new conversation was made.
  const list = page.getByTestId("conversation-item");
  await expect(list.first()).toHaveAttribute("data-session", sessionId);
  await expect(list.nth(1)).toHaveAttribute("data-session", before);
});

import { expect, test } from "@playwright/test";
import path from "node:path";

import { hydrated, newConversation, SCREENSHOTS, signedInPage } from "./helpers";

// Two browser contexts: the agent in the console, the customer on the
// customer page reached through the conversation's link.
test("a customer chats, the agent takes over, replies and hands back", async ({ browser }) => {
  const agent = await signedInPage(browser, "agent");
  await newConversation(agent);

  // The agent copies the customer link.
  await agent.getByTestId("customer-link").click();
  const linkBox = agent.getByTestId("customer-link-url");
  await expect(linkBox).toBeVisible();
  const first = await linkBox.inputValue();
  expect(first).toMatch(/\/chat\/[0-9a-f]{64}$/);
  // Each click mints a new link (the earlier one stops working).
  await agent.getByTestId("customer-link").click();
  await expect(linkBox).not.toHaveValue(first);
  const url = await linkBox.inputValue();
  expect(url).toMatch(/\/chat\/[0-9a-f]{64}$/);

  const customerContext = await browser.newContext({ viewport: { width: 390, height: 844 } });
  const customer = await customerContext.newPage();
  await customer.goto(url);
  await hydrated(customer);
  await expect(customer.getByTestId("customer-page")).toBeVisible();
  await expect(customer.getByTestId("nav-approvals")).toHaveCount(0);
  // The page is lazy: its box answers once the page's own script has run,
  // which may be after the console's root says it is hydrated.
  const composer = customer.getByTestId("customer-composer");
  await expect(composer).toHaveAttribute("data-ready", "true");

  // The customer writes; the agent sees it live, the reply streams to the customer.
  await composer.fill("What is your return policy?");
  await composer.press("Enter");
  await expect(agent.locator('[data-role="customer"]').last()).toContainText("return policy");
  await expect(customer.locator('#customer-composer')).toBeVisible();
  await expect(customer.locator('[data-role="assistant"]').last()).toBeVisible({ timeout: 20_000 });
  await expect(agent.locator('[data-role="assistant"]').last()).toBeVisible();

  // The agent takes over and replies; the reply appears without a reload.
  await agent.getByTestId("handling-take_over").click();
  await expect(agent.getByTestId("assignee")).toContainText("agent");
  await expect(customer.getByTestId("with-human")).toBeVisible();
  await agent.getByTestId("staff-text").fill("Hi, I am **here**. See [our policy](https://shop.example/returns)");
  await agent.getByTestId("send-reply").click();
  const agentReply = customer.locator('[data-role="agent"]').last();
  await expect(agentReply).toContainText("I am here");
  await expect(agentReply.locator("strong")).toHaveText("here");
  await expect(agentReply.locator('a[target="_blank"][rel~="noopener"]')).toHaveAttribute(
    "href",
    "https://shop.example/returns",
  );

  // An internal note never reaches the customer.
  await agent.getByTestId("staff-text").fill("internal: VIP customer");
  await agent.getByTestId("add-note").click();
  await expect(agent.locator('[data-role="note"]').last()).toContainText("internal: VIP");
  await customer.waitForTimeout(500);
  await expect(customer.getByText("internal: VIP")).toHaveCount(0);

  // While the agent holds it, the customer's message starts no AI turn.
  const answers = await customer.locator('[data-role="assistant"]').count();
  await composer.fill("<script>window.__pwned = 1</script> still there?");
  await composer.press("Enter");
  await expect(agent.locator('[data-role="customer"]').last()).toContainText("<script>");
  await customer.waitForTimeout(1000);
  expect(await customer.locator('[data-role="assistant"]').count()).toBe(answers);
  expect(await customer.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();

  await customer.screenshot({ path: path.join(SCREENSHOTS, "customer-page-phone.png") });
  await agent.screenshot({ path: path.join(SCREENSHOTS, "console-customer-panel.png") });

  // Handed back, the AI answers the next message.
  await agent.getByTestId("handling-hand_back").click();
  await expect(customer.getByTestId("with-human")).toBeHidden();
  await composer.fill("And how long do refunds take?");
  await composer.press("Enter");
  await expect
    .poll(() => customer.locator('[data-role="assistant"]').count(), { timeout: 20_000 })
    .toBeGreaterThan(answers);
  await customerContext.close();
});

test("what a customer types before the page's script has run is kept, and sent", async ({ browser }) => {
  const agent = await signedInPage(browser, "agent");
  await newConversation(agent);
  await agent.getByTestId("customer-link").click();
  const linkBox = agent.getByTestId("customer-link-url");
  await expect(linkBox).toHaveValue(/\/chat\/[0-9a-f]{64}$/);
  const url = await linkBox.inputValue();

  const customerContext = await browser.newContext({ viewport: { width: 390, height: 844 } });
  const customer = await customerContext.newPage();
  // Hold the script back until the customer has typed.
  let release = () => {};
  const typed = new Promise<void>((resolve) => (release = resolve));
  await customer.route(/\.wasm$/, async (route) => {
    await typed;
    await route.continue();
  });
  await customer.goto(url, { waitUntil: "commit" });
  const composer = customer.getByTestId("customer-composer");
  await expect(composer).toHaveAttribute("data-ready", "false");
  await composer.fill("Do you ship to Lyon?");
  release();

  await expect(composer).toHaveAttribute("data-ready", "true");
  await expect(composer).toHaveValue("Do you ship to Lyon?");
  await composer.press("Enter");
  await expect(customer.locator('[data-role="customer"]').last()).toContainText("ship to Lyon");
  await expect(agent.locator('[data-role="customer"]').last()).toContainText("ship to Lyon");
  await customerContext.close();
});

test("the start page opens a conversation in the customer's language", async ({ browser }) => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  await page.goto("/chat");
  await hydrated(page);
  await page.getByTestId("chat-name").fill("Wang Fang");
  await page.getByTestId("chat-email").fill("wang.fang@example.com");
  await page.getByTestId("chat-lang").selectOption("zh");
  await page.getByTestId("chat-start-button").click();
  await expect(page).toHaveURL(/\/chat\/[0-9a-f]{64}$/);
  await hydrated(page);
  await expect(page.getByTestId("customer-composer")).toHaveAttribute("placeholder", "请输入消息…");
  await page.screenshot({ path: path.join(SCREENSHOTS, "customer-page-desktop.png") });
  await context.close();
});

// Issue 58: an email typed on the start page is no identity. The visitor
// sees their own name, no order of the customer with that email, and the
// agent sees an unverified contact with a proposal to confirm.
test("a visitor is who they typed; staff decide which customer it is", async ({ browser }) => {
  const context = await browser.newContext({ viewport: { width: 390, height: 844 } });
  const visitor = await context.newPage();
  await visitor.goto("/chat");
  await hydrated(visitor);
  await visitor.getByTestId("chat-name").fill("Mallory");
  await visitor.getByTestId("chat-email").fill("li.wei@example.com");
  await visitor.getByTestId("chat-start-button").click();
  await expect(visitor).toHaveURL(/\/chat\/[0-9a-f]{64}$/);
  await hydrated(visitor);
  const composer = visitor.getByTestId("customer-composer");
  await expect(composer).toHaveAttribute("data-ready", "true");
  const marker = `walrus${Date.now()}`;
  await composer.fill(`Where is my order ORD-123? ${marker}`);
  await composer.press("Enter");
  const reply = visitor.locator('[data-role="assistant"]').last();
  await expect(reply).toBeVisible({ timeout: 20_000 });
  await expect(reply).not.toContainText("Wuhan");

  const agent = await signedInPage(browser, "agent");
  await agent.getByTestId("inbox-search").fill(marker);
  const items = agent.getByTestId("conversation-item");
  await expect(items).toHaveCount(1);
  await items.first().click();
  const panel = agent.getByTestId("customer-panel");
  await expect(panel.getByTestId("customer-contact")).toContainText("Mallory");
  await expect(panel.getByTestId("customer-contact")).toContainText("unverified");
  await expect(panel.getByTestId("customer-profile")).toHaveCount(0);
  await expect(panel.getByTestId("customer-proposed")).toContainText("CUST-001");
  // Linking is the agent's decision, and only then the profile shows.
  await panel.getByTestId("use-proposed").click();
  await expect(panel.getByTestId("customer-profile")).toContainText("li.wei@example.com");
  await context.close();
});

test("the inbox finds a conversation by a word from its middle", async ({ browser }) => {
  const agent = await signedInPage(browser, "agent");
  const sid = await newConversation(agent);
  const word = `zebra${Date.now()}`;
  const composer = agent.getByTestId("composer");
  await composer.fill(`Hello, my ${word} parcel is late`);
  await composer.press("Enter");
  await expect(agent.getByTestId("chat")).toHaveAttribute("data-running", "false", { timeout: 20_000 });
  await agent.getByTestId("inbox-search").fill(word.slice(2, 9));
  const items = agent.getByTestId("conversation-item");
  await expect(items).toHaveCount(1);
  await expect(items.first()).toHaveAttribute("data-session", sid);
});

test("the inbox lists a page of conversations, and Show older lists the next", async ({ browser, baseURL }) => {
  const agent = await signedInPage(browser, "agent");
  // More than a page, made through the API as the signed-in agent.
  for (let i = 0; i < 51; i++) {
    const made = await agent.request.post("/api/conversations", { headers: { Origin: baseURL ?? "" } });
    expect(made.status()).toBe(201);
  }
  const newest = (await (await agent.request.get("/api/conversations?limit=1")).json())[0].sessionId;
  await agent.goto("/");
  await hydrated(agent);
  const items = agent.getByTestId("conversation-item");
  // Other tests add conversations meanwhile: the first page is full either way.
  await expect(items).toHaveCount(50);
  await expect(agent.getByTestId("show-older")).toBeVisible();
  await agent.getByTestId("show-older").click();
  await expect.poll(async () => items.count()).toBeGreaterThan(50);
  expect(await items.count()).toBeLessThanOrEqual(100);
  // Still newest first, and what was shown stays shown.
  await expect(agent.locator(`[data-testid="conversation-item"][data-session="${newest}"]`)).toHaveCount(1);
  // The list is one Tab stop; arrow keys, Home and End move within it.
  await expect(agent.locator('[data-testid="conversation-item"][tabindex="0"]')).toHaveCount(1);
  await agent.locator('[data-testid="conversation-item"][tabindex="0"]').focus();
  const focused = () => agent.evaluate(() => document.activeElement?.getAttribute("data-session"));
  await agent.keyboard.press("End");
  expect(await focused()).toBe(await items.last().getAttribute("data-session"));
  await agent.keyboard.press("Home");
  expect(await focused()).toBe(await items.first().getAttribute("data-session"));
  await agent.keyboard.press("ArrowDown");
  expect(await focused()).toBe(await items.nth(1).getAttribute("data-session"));
  await agent.keyboard.press("ArrowUp");
  expect(await focused()).toBe(await items.first().getAttribute("data-session"));
});

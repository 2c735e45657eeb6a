import { expect, test, type Page } from "@playwright/test";
import { hydrated, newConversation, send, signIn } from "./helpers";

/** Collects console errors and CSP violations of a page. */
function watchForProblems(page: Page): string[] {
  const problems: string[] = [];
  page.on("console", (message) => {
    if (message.type() === "error") problems.push(`console: ${message.text()}`);
  });
  page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
  page.on("response", (response) => {
    if (response.status() >= 500) problems.push(`HTTP ${response.status()} ${response.url()}`);
  });
  return problems;
}

test("the console works under the CSP with no console errors", async ({ page }) => {
  const problems = watchForProblems(page);
  await page.addInitScript(() => {
    document.addEventListener("securitypolicyviolation", (e) => {
      console.error(`CSP violation: ${e.violatedDirective} ${e.blockedURI}`);
    });
  });
  const login = await page.request.get("/login");
  const csp = login.headers()["content-security-policy"];
  expect(csp).toContain("script-src 'self' 'nonce-");
  expect(csp).not.toContain("unsafe-inline");
  expect(login.headers()["x-frame-options"]).toBe("DENY");
  expect(login.headers()["cache-control"]).toBe("no-store");

  await signIn(page, "supervisor");
  await newConversation(page);
  await send(page, "Where is my order ORD-123?");
  await expect(page.locator('[data-role="assistant"]').last()).toBeVisible();
  await page.getByTestId("nav-approvals").click();
  await expect(page.getByRole("heading", { name: "Approvals" })).toBeVisible();
  await hydrated(page);
  await page.reload();
  await hydrated(page);
  expect(problems).toEqual([]);
});

test("repeated wrong passwords get a clear wait-and-retry message on the sign-in page", async ({ page }) => {
  // A name of its own, so no other test's account is throttled.
  const username = `lockout-${Date.now()}`;
  await page.goto("/login");
  await hydrated(page);
  const error = page.getByTestId("login-error");
  let message = "";
  for (let attempt = 0; attempt < 12; attempt++) {
    await page.getByLabel("Username").fill(username);
    await page.getByLabel("Password").fill("not-the-password");
    await page.getByRole("button", { name: "Sign in" }).click();
    await expect(error).toBeVisible();
    await expect(page.getByRole("button", { name: "Sign in" })).toBeEnabled();
    message = (await error.textContent()) ?? "";
    if (message.includes("Too many failed sign-ins")) break;
  }
  expect(message).toMatch(/Too many failed sign-ins\. Wait .+ before trying again\./);
  await expect(page).toHaveURL(/\/login$/);
  // The API says the same with 429 and Retry-After, whatever the password.
  const answer = await page.request.post("/api/auth/login", {
    data: { username, password: "not-the-password" },
  });
  expect(answer.status()).toBe(429);
  expect(Number(answer.headers()["retry-after"])).toBeGreaterThan(0);
});

test("a supervisor creates an agent account; the agent signs in with it and changes the password", async ({ browser }) => {
  const boss = await browser.newContext();
  const supervisor = await boss.newPage();
  await signIn(supervisor, "supervisor");
  const username = `agent-${Date.now()}`;
  const created = await supervisor.request.post("/api/accounts", { data: { username, role: "agent" } });
  expect(created.status()).toBe(201);
  const { password } = await created.json();
  expect(password).toHaveLength(20);

  const own = await browser.newContext();
  const agent = await own.newPage();
  await agent.goto("/login");
  await hydrated(agent);
  await agent.getByLabel("Username").fill(username);
  await agent.getByLabel("Password").fill(password);
  await agent.getByRole("button", { name: "Sign in" }).click();
  await expect(agent.getByTestId("user-name")).toHaveText(username);
  const changed = await agent.request.post("/api/auth/password", {
    data: { currentPassword: password, newPassword: "a long phrase of my own" },
  });
  expect(changed.status()).toBe(204);

  // The old password is gone, the new one works.
  const old = await agent.request.post("/api/auth/login", { data: { username, password } });
  expect(old.status()).toBe(401);
  const accounts = await supervisor.request.get("/api/accounts");
  const account = (await accounts.json()).find((a: { username: string }) => a.username === username);
  expect(account.mustChangePassword).toBe(false);
  expect(account.lastSignInAt).toBeTruthy();
  const audit = await supervisor.request.get("/api/audit.csv");
  const csv = await audit.text();
  expect(csv).toContain(`"account.create","${username}"`);
  expect(csv).toContain(`"account.password_change","${username}"`);
  await boss.close();
  await own.close();
});

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
  // A name of its own, so no other test's account is throttled. The e2e
  // server locks a name at its sixth failure (scripts/e2e.sh), so the
  // refusal below lasts however slow the run is.
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
  await supervisor.getByTestId("nav-accounts").click();
  await expect(supervisor).toHaveURL(/\/accounts$/);
  await expect(supervisor.getByRole("heading", { name: "Accounts" })).toBeVisible();
  await hydrated(supervisor);
  const username = `agent-${Date.now()}`;
  await supervisor.getByLabel("Username").fill(username);
  await supervisor.getByLabel("Role").selectOption("agent");
  await supervisor.getByTestId("create-account").click();
  await expect(supervisor.getByTestId("issued-username")).toHaveText(username);
  const password = ((await supervisor.getByTestId("issued-password").textContent()) ?? "").trim();
  expect(password).toHaveLength(20);
  const row = supervisor.locator(`[data-testid="account-row"][data-username="${username}"]`);
  await expect(row.getByTestId("account-status")).toHaveText("Active");

  // The agent signs in with it, is asked to change it, and does.
  const own = await browser.newContext();
  const agent = await own.newPage();
  await agent.goto("/login");
  await hydrated(agent);
  await agent.getByLabel("Username").fill(username);
  await agent.getByLabel("Password").fill(password);
  await agent.getByRole("button", { name: "Sign in" }).click();
  await expect(agent.getByTestId("user-name")).toHaveText(username);
  await expect(agent.getByTestId("change-password-banner")).toBeVisible();
  await agent.getByTestId("change-password-banner").getByRole("link").click();
  await expect(agent).toHaveURL(/\/account$/);
  await hydrated(agent);
  await agent.getByLabel("Current password").fill(password);
  await agent.getByLabel("New password", { exact: true }).fill("password1234");
  await expect(agent.getByTestId("password-rule")).toContainText("too common");
  await expect(agent.getByTestId("change-password")).toBeDisabled();
  await agent.getByLabel("New password", { exact: true }).fill("a long phrase of my own");
  await agent.getByLabel("New password again").fill("a long phrase of my own");
  await agent.getByTestId("change-password").click();
  await expect(agent.getByTestId("password-changed")).toBeVisible();

  // The old password is gone; the supervisor sees the sign-in and the audit.
  const old = await agent.request.post("/api/auth/login", { data: { username, password } });
  expect(old.status()).toBe(401);
  await supervisor.reload();
  await hydrated(supervisor);
  await expect(row).not.toContainText("password to change");
  await expect(row).not.toContainText("never");
  await expect(supervisor.getByTestId("audit-log")).toContainText("account.password_change");
  const csv = await (await supervisor.request.get("/api/audit.csv")).text();
  expect(csv).toContain(`"account.create","${username}"`);

  // Disabling ends the agent's session.
  await row.getByTestId("disable").click();
  await expect(row.getByTestId("account-status")).toHaveText("Disabled");
  await agent.goto("/");
  await expect(agent).toHaveURL(/\/login$/);
  await boss.close();
  await own.close();
});

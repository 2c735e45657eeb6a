import { expect, test } from "@playwright/test";
import { hydrated, signIn, USERS } from "./helpers";

test("a signed-out visitor is sent to the sign-in page", async ({ page }) => {
  // The server answers with a real redirect, before any script runs.
  const answer = await page.request.get("/", { maxRedirects: 0, headers: { Accept: "text/html" } });
  expect(answer.status()).toBe(302);
  expect(answer.headers()["location"]).toBe("/login");
  await page.goto("/");
  await expect(page).toHaveURL(/\/login$/);
  await page.goto("/approvals");
  await expect(page).toHaveURL(/\/login$/);
  await expect(page.getByRole("heading", { name: "Sign in to aics" })).toBeVisible();
});

test("a wrong password is refused with a clear message", async ({ page }) => {
  await page.goto("/login");
  await hydrated(page);
  await page.getByLabel("Username").fill("agent");
  await page.getByLabel("Password").fill("not-the-password");
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page.getByTestId("login-error")).toBeVisible();
  await expect(page).toHaveURL(/\/login$/);
  // The API refuses the same credentials with 401.
  const answer = await page.request.post("/api/auth/login", {
    data: { username: "agent", password: "wrong" },
  });
  expect(answer.status()).toBe(401);
});

test("an agent signs in, sees the model and no approvals link, and signs out", async ({ page }) => {
  await signIn(page, "agent");
  await expect(page.getByTestId("user-name")).toHaveText(USERS.agent.username);
  await expect(page.getByTestId("model-info")).toContainText("demo");
  await expect(page.getByTestId("nav-approvals")).toHaveCount(0);
  // The approvals page has nothing to decide for an agent.
  await page.goto("/approvals");
  await expect(page.getByTestId("approvals-forbidden")).toBeVisible();
  await expect(page.getByRole("button", { name: "Approve" })).toHaveCount(0);
  await page.goto("/");
  // A reload keeps the session (the cookie).
  await page.reload();
  await expect(page.getByTestId("user-role")).toHaveText("agent");
  await hydrated(page);
  // The header's dot: the default provider, fetched after mount.
  await expect(page.getByTestId("model-info")).toHaveAttribute("data-reachability", "demo");
  await page.getByTestId("sign-out").click();
  await expect(page).toHaveURL(/\/login$/);
  await page.goto("/");
  await expect(page).toHaveURL(/\/login$/);
});

test("a supervisor signs in and reaches the approvals page", async ({ page }) => {
  await signIn(page, "supervisor");
  await expect(page.getByTestId("user-name")).toHaveText(USERS.supervisor.username);
  await page.getByTestId("nav-approvals").click();
  await expect(page).toHaveURL(/\/approvals$/);
  await expect(page.getByRole("heading", { name: "Approvals" })).toBeVisible();
});

import { expect, test } from "@playwright/test";
import { hydrated, newConversation, send, signIn } from "./helpers";

test("a supervisor forks a turn from a step with an edited message and sees both runs side by side", async ({ page }) => {
  await signIn(page, "supervisor");
  const sessionId = await newConversation(page);
  await send(page, "Where is my order ORD-123?");
  await expect(page.locator('[data-role="assistant"]').last()).toBeVisible();
  const messages = await page.locator("[data-role]").count();

  await page.getByTestId("step-history-link").click();
  await expect(page).toHaveURL(/\/turns\//);
  await hydrated(page);
  await expect(page.getByTestId("no-forks")).toBeVisible();

  // Fork from the first step, asking about another order.
  const first = page.getByTestId("checkpoint").first();
  await first.getByTestId("fork-here").click();
  const form = page.getByTestId("fork-form");
  await expect(form.getByTestId("fork-message")).toHaveValue("Where is my order ORD-123?");
  await form.getByTestId("fork-message").fill("Where is my order ORD-456?");
  // The turn's provider is preselected (the demo model, the only one here).
  await expect(form.getByTestId("fork-provider")).toHaveValue("demo");
  await form.getByTestId("fork-protocol").selectOption("json_plan");
  await form.getByTestId("fork-start").click();

  const fork = page.getByTestId("fork").first();
  await expect(fork).toHaveAttribute("data-state", "done", { timeout: 20_000 });
  await expect(fork.getByTestId("fork-edit")).toContainText("ORD-456");
  await expect(fork.getByTestId("fork-provider-name")).toContainText("provider demo");
  await expect(fork.getByTestId("fork-chain")).toContainText("order_query");
  await expect(fork.getByTestId("fork-reply-diff")).not.toBeEmpty();
  await expect(fork.getByTestId("fork-tokens")).toContainText("tokens");

  // The conversation is as it was.
  await page.goto(`/c/${sessionId}`);
  await hydrated(page);
  await expect(page.locator('[data-role="assistant"]').last()).toBeVisible();
  await expect(page.locator("[data-role]")).toHaveCount(messages);
});

test("an agent sees no fork action on the turn page", async ({ page }) => {
  await signIn(page, "agent");
  await newConversation(page);
  await send(page, "Where is my order ORD-123?");
  await expect(page.locator('[data-role="assistant"]').last()).toBeVisible();
  await page.getByTestId("step-history-link").click();
  await hydrated(page);
  await expect(page.getByTestId("checkpoint").first()).toBeVisible();
  await expect(page.getByTestId("fork-here")).toHaveCount(0);
  await expect(page.getByTestId("forks")).toHaveCount(0);
});

import { expect, test } from "@playwright/test";
import { hydrated, newConversation, send, signIn } from "./helpers";

test("a supervisor saves a replay set from a filter, replays it and reads the summary", async ({ page }) => {
  await signIn(page, "supervisor");
  await newConversation(page);
  // A word no other turn has, so the filter matches exactly this one.
  const marker = `zq${Date.now().toString(36)}`;
  await send(page, `Where is my order ORD-123? ${marker}`);
  await expect(page.locator('[data-role="assistant"]').last()).toBeVisible();

  await page.getByTestId("nav-replays").click();
  await expect(page).toHaveURL(/\/replays/);
  await hydrated(page);
  const form = page.getByTestId("replay-create");
  await form.getByTestId("replay-name").fill(`orders ${marker}`);
  await form.getByTestId("replay-q").fill(marker);
  await form.getByTestId("replay-tool").selectOption("order_query");
  await form.getByTestId("replay-preview").click();
  await expect(form.getByTestId("replay-preview-count")).toHaveText("1 turns match.");
  await form.getByTestId("replay-save").click();

  await expect(page).toHaveURL(/\/replays\?set=/);
  const set = page.getByTestId("replay-set");
  await expect(set.getByTestId("replay-set-name")).toHaveText(`orders ${marker}`);
  await expect(set.getByTestId("replay-set-size")).toContainText("1 turns");
  await expect(page.getByTestId("replay-sets")).toContainText(`orders ${marker}`);
  await expect(set.getByTestId("no-replay-runs")).toBeVisible();

  await set.getByTestId("replay-protocol").selectOption("json_plan");
  await set.getByTestId("replay-start").click();
  await expect(page).toHaveURL(/&run=/);
  const run = page.getByTestId("replay-run");
  await expect(run.getByTestId("replay-run-state")).toHaveAttribute("data-state", "done", { timeout: 30_000 });
  await expect(run.getByTestId("replay-total")).toHaveText("1");
  await expect(run.getByTestId("replay-pending")).toHaveText("0");
  const item = run.getByTestId("replay-item");
  await expect(item).toHaveCount(1);
  await expect(item).toHaveAttribute("data-verdict", /^(same|different)$/);
  await expect(item).toContainText("order_query");
  await expect(set.getByTestId("replay-run-link")).toHaveCount(1);

  // A reload renders the same page from the address.
  await page.reload();
  await hydrated(page);
  await expect(page.getByTestId("replay-run").getByTestId("replay-run-state")).toHaveAttribute("data-state", "done");
});

test("an agent has no replays", async ({ page }) => {
  await signIn(page, "agent");
  await expect(page.getByTestId("nav-replays")).toHaveCount(0);
  await page.goto("/replays");
  await hydrated(page);
  await expect(page.getByTestId("replays-forbidden")).toBeVisible();
});

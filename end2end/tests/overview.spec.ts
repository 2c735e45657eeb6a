import { expect, test } from "@playwright/test";
import { newConversation, send, signIn } from "./helpers";

test("the overview's charts render with data for a supervisor, and agents are told it is not theirs", async ({ page }) => {
  await signIn(page, "supervisor");
  await newConversation(page);
  await send(page, "Where is my order ORD-123?");
  await expect(page.locator('[data-role="assistant"]').last()).toBeVisible();

  await page.getByTestId("nav-overview").click();
  await expect(page).toHaveURL(/\/overview/);
  await expect(page.getByTestId("overview-turns")).not.toHaveText("0");
  for (const chart of ["chart-turns", "chart-tokens", "chart-cost", "chart-latency", "chart-tools"]) {
    await expect(page.getByTestId(chart).locator("svg")).toBeVisible();
  }
  // Thirty days of bars, today's one taller than nothing.
  await expect(page.getByTestId("chart-turns").getByTestId("bar")).toHaveCount(30);
  await expect(page.getByTestId("chart-tools")).toContainText("Tool calls");
  await expect(page.getByTestId("overview-tools")).toContainText("order_query");

  await page.getByRole("link", { name: "7 days" }).click();
  await expect(page.getByTestId("chart-turns").getByTestId("bar")).toHaveCount(7);
});

test("agents do not see the overview", async ({ page }) => {
  await signIn(page, "agent");
  await page.goto("/overview");
  await expect(page.getByTestId("overview-forbidden")).toBeVisible();
});

import { expect, test } from "@playwright/test";

test("the chat page hydrates and the reply streams in token by token", async ({ page }) => {
  await page.goto("/");
  await expect(page.getByTestId("chat")).toHaveAttribute("data-hydrated", "true");
  await expect(page.getByTestId("send")).toBeEnabled();

  await page.getByTestId("composer").fill("Where is my order ORD-123?");
  await page.getByTestId("composer").press("Enter");

  // Sample the streaming bubble while tokens arrive: partial text must be
  // seen before the full reply lands in the transcript.
  const streaming = page.getByTestId("streaming-reply");
  await expect(streaming).toBeVisible();
  const seen = new Set<string>();
  for (let i = 0; i < 200 && (await streaming.isVisible()); i++) {
    const text = ((await streaming.textContent()) ?? "").trim();
    if (text) seen.add(text);
    await page.waitForTimeout(20);
  }
  const reply = page.locator('[data-role="assistant"]').last();
  await expect(reply).toBeVisible();
  const full = ((await reply.textContent()) ?? "").trim();
  expect(full.length).toBeGreaterThan(0);
  const partials = [...seen].filter((t) => t.length < full.length && full.startsWith(t.slice(0, 10)));
  expect(partials.length, `partial texts seen: ${JSON.stringify([...seen])}`).toBeGreaterThan(1);
});

import { expect, test } from "@playwright/test";
import { newConversation, send, signedInPage, toolCard } from "./helpers";

for (const [name, viewport] of [
  ["laptop", { width: 1280, height: 800 }],
  ["tablet", { width: 820, height: 1180 }],
] as const) {
  test(`the console fits a ${name} screen`, async ({ browser }, testInfo) => {
    const page = await signedInPage(browser, "agent", viewport);
    await newConversation(page);
    await send(page, "Where is my order ORD-123? I want to track it.");
    await expect(page.locator('[data-role="assistant"]')).toHaveCount(1);
    // Every part is reachable and nothing overflows sideways.
    await expect(page.getByTestId("composer")).toBeVisible();
    await toolCard(page, "order_query").scrollIntoViewIfNeeded();
    await expect(toolCard(page, "order_query")).toBeVisible();
    await expect(page.getByTestId("trace-panel")).toBeAttached();
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    expect(overflow).toBeLessThanOrEqual(0);
    // Keyboard: the composer is reachable with Tab from the conversation list.
    await page.getByTestId("new-conversation").focus();
    let reached = false;
    for (let i = 0; i < 30 && !reached; i++) {
      await page.keyboard.press("Tab");
      reached = await page.getByTestId("composer").evaluate((el) => el === document.activeElement);
    }
    expect(reached).toBe(true);
    await page.screenshot({ path: testInfo.outputPath(`${name}.png`), fullPage: true });
    await page.context().close();
  });
}

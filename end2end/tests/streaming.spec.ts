import { expect, test } from "@playwright/test";
import { hydrated, newConversation, recordStream, send, signIn, toolCard, waitUntil } from "./helpers";

test("the reply streams in token by token, the timeline and trace show the turn, and a reload keeps it", async ({ page }) => {
  await signIn(page, "agent");
  await newConversation(page);

  // Partial texts must be seen before the full reply lands in the transcript.
  const recording = await recordStream(page);
  await send(page, "Where is my order ORD-123?");
  // The composer is locked while the turn runs.
  await expect(page.getByTestId("send")).toBeDisabled();
  await expect(page.getByTestId("composer")).toBeDisabled();

  await expect(page.getByTestId("streaming-reply")).toBeVisible();
  const reply = page.locator('[data-role="assistant"]').last();
  await waitUntil(async () => (await reply.count()) > 0);
  const seen = await recording.seen();
  await expect(reply).toBeVisible();
  const full = ((await reply.getByTestId("assistant-text").textContent()) ?? "").trim();
  expect(full).toContain("ORD-123");
  const partials = seen.filter((t) => t.length < full.length && full.startsWith(t.slice(0, 10)));
  expect(partials.length, `partial texts seen: ${JSON.stringify(seen)}`).toBeGreaterThan(1);

  // The timeline shows the tool call with its JSON; the trace panel the turn.
  const card = toolCard(page, "order_query");
  await expect(card).toHaveAttribute("data-status", "ok");
  await card.getByTestId("tool-input").locator("summary").click();
  await expect(card.getByTestId("json-input")).toContainText('"order_id": "ORD-123"');
  await card.getByTestId("tool-output").locator("summary").click();
  await expect(card.getByTestId("json-output")).toContainText("ORD-123");
  const trace = page.getByTestId("trace-panel");
  await expect(trace.getByTestId("trace-intent")).toHaveText("order");
  await expect(trace.getByTestId("trace-stop-reason")).toHaveText("final answer");
  await expect(trace.getByTestId("executed-nodes")).toContainText("tools");
  await expect(page.getByTestId("composer")).toBeEnabled();

  // Shift+Enter adds a line instead of sending.
  await page.getByTestId("composer").fill("first line");
  await page.getByTestId("composer").press("Shift+Enter");
  await page.getByTestId("composer").pressSequentially("second line");
  await expect(page.getByTestId("composer")).toHaveValue("first line\nsecond line");
  await page.getByTestId("composer").fill("");

  // A reload renders the conversation, its reply and its trace from the server.
  await page.reload();
  await expect(page.locator('[data-role="customer"]')).toHaveText(["Where is my order ORD-123?"]);
  await expect(page.locator('[data-role="assistant"]').getByTestId("assistant-text")).toHaveText([full]);
  await expect(toolCard(page, "order_query")).toHaveAttribute("data-status", "ok");
  await expect(page.getByTestId("trace-panel").getByTestId("trace-intent")).toHaveText("order");
  await hydrated(page);

  // The trace links to the turn's step history.
  await page.getByTestId("step-history-link").click();
  await expect(page).toHaveURL(/\/turns\//);
  const checkpoints = page.getByTestId("checkpoint");
  await expect(checkpoints.first()).toBeVisible();
  expect(await checkpoints.count()).toBeGreaterThan(3);
  await expect(page.getByTestId("checkpoint-node")).toContainText(["init_state"]);
  await checkpoints.first().getByTestId("step-details").locator(":scope > summary").click();
  await checkpoints.first().getByText("Whole state").click();
  await expect(checkpoints.first().getByTestId("checkpoint-state")).toBeVisible();
});

test("an injected model fault shows a clear error and keeps the typed message", async ({ page }) => {
  await signIn(page, "agent");
  await newConversation(page);
  const text = "Where is my order ORD-123? [fault:error]";
  await send(page, text);
  const error = page.getByTestId("turn-error");
  await expect(error).toBeVisible();
  await expect(error).toContainText("failed");
  await expect(page.getByTestId("composer")).toHaveValue(text);
  await expect(page.getByTestId("composer")).toBeEnabled();
  await expect(page.getByTestId("send")).toBeEnabled();

  // Without the fault, the kept message goes through.
  await page.getByTestId("composer").fill(text.replace(" [fault:error]", ""));
  await page.getByTestId("composer").press("Enter");
  await expect(page.getByTestId("turn-error")).toHaveCount(0);
  await expect(page.locator('[data-role="assistant"]').last()).toContainText("ORD-123");
  await expect(page.getByTestId("composer")).toHaveValue("");
});

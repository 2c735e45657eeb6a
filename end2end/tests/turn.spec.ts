import { expect, test } from "@playwright/test";
import { hydrated, newConversation, send, signIn } from "./helpers";

test("the turn page draws the path, and a step expands to its state diff and its LLM call", async ({ page }) => {
  await signIn(page, "agent");
  await newConversation(page);
  await send(page, "Where is my order ORD-123?");
  await expect(page.locator('[data-role="assistant"]').last()).toBeVisible();

  await page.getByTestId("step-history-link").click();
  await expect(page).toHaveURL(/\/turns\//);
  await hydrated(page);

  // The path: agent, tools, agent again (one loop).
  const path = page.getByTestId("turn-path");
  await expect(path.getByTestId("path-node").first()).toBeVisible();
  expect(await path.locator('[data-node="tools"]').count()).toBeGreaterThanOrEqual(1);
  expect(await path.locator('[data-node="agent"]').count()).toBeGreaterThanOrEqual(2);
  await expect(page.getByTestId("path-loops")).toContainText("agent ⇄ tools loop");

  // The first agent step: its diff (a message appended) and its LLM call.
  const agentStep = page.locator('[data-testid="checkpoint"][data-node="agent"]').first();
  await agentStep.getByTestId("step-details").locator(":scope > summary").click();
  await expect(agentStep.locator('[data-testid="diff-field"][data-field="messages"]')).toContainText("appended");
  const call = agentStep.getByTestId("llm-call");
  await expect(call).toHaveCount(1);
  await expect(call.getByTestId("llm-call-figures")).toContainText("demo");
  await expect(call.getByTestId("llm-call-figures")).toContainText("TTFT");
  await call.getByText("Tool calls asked for").click();
  await expect(call.getByTestId("llm-call-tool-calls")).toContainText("order_query");

  // The tools step shows the tool call it ran.
  const toolsStep = page.locator('[data-testid="checkpoint"][data-node="tools"]').first();
  await toolsStep.getByTestId("step-details").locator(":scope > summary").click();
  await expect(toolsStep.getByTestId("step-tools")).toContainText("order_query");
  await expect(page.getByTestId("turn-live")).toHaveAttribute("data-live", "false");
});

import { expect, test } from "@playwright/test";
import { hydrated, newConversation, send, signedInPage, toolCard } from "./helpers";

const COMPLAINT = "My order ORD-123 still hasn't arrived, please check it and open a complaint ticket";

test("a supervisor cancels a turn that waits for approval; the agent's page is free again, live", async ({ browser }) => {
  const agent = await signedInPage(browser, "agent");
  const sessionId = await newConversation(agent);
  await send(agent, COMPLAINT);
  await expect(toolCard(agent, "ticket_create")).toHaveAttribute("data-status", "pending");
  await expect(agent.getByTestId("composer")).toBeDisabled();
  // Agents cannot cancel.
  await expect(agent.getByTestId("cancel-turn")).toHaveCount(0);

  // The supervisor opens the same conversation in another browser.
  const supervisor = await signedInPage(browser, "supervisor");
  await supervisor.goto(`/c/${sessionId}`);
  await hydrated(supervisor);
  await expect(supervisor.getByTestId("chat")).toHaveAttribute("data-connected", "true");
  await supervisor.getByTestId("cancel-turn-open").click();
  await supervisor.getByTestId("cancel-turn-reason").fill("the customer phoned us instead");
  await supervisor.getByTestId("cancel-turn-confirm").click();
  await expect(supervisor.getByTestId("cancel-turn")).toHaveCount(0);

  // The agent's page learns it live: no pending call, the note, a free composer.
  await expect(agent.getByTestId("approval-inline")).toHaveCount(0);
  await expect(agent.getByTestId("transcript").getByText("supervisor cancelled this turn: the customer phoned us instead")).toBeVisible();
  await expect(agent.getByTestId("composer")).toBeEnabled();
  await send(agent, "Where is my order ORD-123 now?");
  await expect(agent.getByTestId("chat")).toHaveAttribute("data-running", "false", { timeout: 20_000 });
  await expect(agent.locator("[data-role='assistant']").last()).toContainText("ORD-123");
});

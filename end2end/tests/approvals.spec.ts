import { expect, test } from "@playwright/test";
import path from "node:path";
import { hydrated, newConversation, recordStream, SCREENSHOTS, send, signedInPage, toolCard, waitUntil } from "./helpers";

const ZH = "订单ORD-123一直没收到，帮我查一下并创建投诉工单";
const EN = "My order ORD-123 still hasn't arrived, please check it and open a complaint ticket";

for (const [lang, message] of [["zh", ZH], ["en", EN]] as const) {
test(`the complaint chain (${lang}): the turn pauses for approval, a supervisor approves, and the agent's page receives the continuation live`, async ({ browser, baseURL }) => {
  // The README's screenshots come from the English run (this machine's
  // chromium may lack CJK fonts).
  const screenshots = lang === "en";
  // The supervisor watches the live queue before the request exists.
  const supervisor = await signedInPage(browser, "supervisor");
  await supervisor.goto("/approvals");
  await hydrated(supervisor);
  await expect(supervisor.getByTestId("approvals-live")).toHaveAttribute("data-connected", "true");

  const agent = await signedInPage(browser, "agent");
  const sessionId = await newConversation(agent);
  await send(agent, message);

  // The timeline fills live: order_query ran, ticket_create waits.
  await expect(toolCard(agent, "order_query")).toHaveAttribute("data-status", "ok");
  const ticket = toolCard(agent, "ticket_create");
  await expect(ticket).toHaveAttribute("data-status", "pending");
  await expect(ticket.getByTestId("tool-status")).toHaveText("pending approval");
  await ticket.getByTestId("tool-input").locator("summary").click();
  await expect(ticket.getByTestId("json-input")).toContainText('"category": "complaint"');
  const order = toolCard(agent, "order_query");
  await order.getByTestId("tool-output").locator("summary").click();
  await expect(order.getByTestId("json-output")).toContainText('"order_id": "ORD-123"');

  // The agent sees that approval is pending, without any button to decide.
  const inline = agent.getByTestId("approval-inline");
  await expect(inline).toBeVisible();
  await expect(inline.getByTestId("approval-waiting")).toBeVisible();
  await expect(agent.getByRole("button", { name: "Approve" })).toHaveCount(0);
  await expect(agent.getByTestId("composer")).toBeDisabled();
  await expect(agent.getByTestId("trace-panel").getByTestId("trace-stop-reason")).toHaveText("awaiting approval");

  // ...and the API refuses the agent's decision too.
  const approvalId = await ticket.getAttribute("data-call-id");
  expect(approvalId).toBeTruthy();
  const refused = await agent.request.post(`/api/approvals/${approvalId}/decision`, {
    data: { approve: true },
    headers: { Origin: baseURL ?? "" },
  });
  expect(refused.status()).toBe(403);
  expect((await refused.json()).error).toBe("forbidden");

  // The supervisor, in a second browser context, sees it arrive in the live queue.
  const card = supervisor.locator(`[data-testid="approval-card"][data-session="${sessionId}"]`);
  await expect(card).toBeVisible();
  await expect(card).toHaveAttribute("data-tool", "ticket_create");
  await expect(card.getByTestId("approval-context")).toContainText(message);
  const args = card.getByTestId("approval-args");
  await expect(args).toHaveValue(/"order_id": "ORD-123"/);

  // Arguments are checked before they can be approved.
  const proposed = await args.inputValue();
  await args.fill("{ not json");
  await expect(card.getByTestId("approval-args-error")).toContainText("Not valid JSON");
  await expect(card.getByTestId("approve")).toBeDisabled();
  // The supervisor corrects the summary before approving; the ticket gets it.
  const edited = { ...JSON.parse(proposed), summary: `Checked by a supervisor (${lang}): order ORD-123 is late.` };
  await args.fill(JSON.stringify(edited, null, 2));
  await expect(card.getByTestId("approval-args-error")).toHaveText("");
  await expect(card.getByTestId("approve")).toBeEnabled();
  await expect(card.getByTestId("reject")).toBeDisabled();
  if (screenshots) await supervisor.screenshot({ path: path.join(SCREENSHOTS, "approvals.png") });

  // The agent's page streams the continuation without a reload: its
  // streaming reply is recorded from before the approval.
  const reply = agent.locator('[data-role="assistant"]').last();
  const recording = await recordStream(agent);
  await card.getByTestId("approve").click();
  await expect(card).toHaveCount(0);
  await waitUntil(async () => (await reply.count()) > 0);
  const seen = await recording.seen();
  await expect(reply).toContainText(/TCK-[0-9A-F]{8}/);
  const full = ((await reply.getByTestId("assistant-text").textContent()) ?? "").trim();
  const partials = seen.filter((t) => t.length < full.length && full.startsWith(t.slice(0, 6)));
  expect(partials.length, `partial texts seen: ${JSON.stringify(seen)}`).toBeGreaterThan(1);
  await expect(toolCard(agent, "ticket_create")).toHaveAttribute("data-status", "ok");
  await toolCard(agent, "ticket_create").getByTestId("tool-output").locator("summary").click();
  await expect(toolCard(agent, "ticket_create").getByTestId("json-output")).toContainText(edited.summary);
  await expect(agent.getByTestId("approval-inline")).toHaveCount(0);
  await expect(agent.getByTestId("composer")).toBeEnabled();
  await expect(
    agent.locator(`[data-testid="conversation-item"][data-session="${sessionId}"]`).getByTestId("handling-label"),
  ).toHaveText("AI");

  // The console, as the README shows it.
  if (screenshots) await agent.screenshot({ path: path.join(SCREENSHOTS, "console.png") });

  // A reload keeps the whole conversation.
  await agent.reload();
  await expect(agent.locator('[data-role="customer"]')).toHaveText([message]);
  await expect(agent.locator('[data-role="assistant"]').last()).toContainText(/TCK-[0-9A-F]{8}/);
  await expect(toolCard(agent, "ticket_create")).toHaveAttribute("data-status", "ok");
  await agent.context().close();
  await supervisor.context().close();
});
}

test("a supervisor rejects with a reason in the conversation, and the reply reflects the denial", async ({ browser }) => {
  const agent = await signedInPage(browser, "agent");
  const sessionId = await newConversation(agent);
  await send(agent, EN);
  await expect(toolCard(agent, "ticket_create")).toHaveAttribute("data-status", "pending");

  // The conversation list labels it as waiting for approval.
  const supervisor = await signedInPage(browser, "supervisor");
  const item = supervisor.locator(`[data-testid="conversation-item"][data-session="${sessionId}"]`);
  await expect(item.getByTestId("handling-label")).toHaveText("Waiting for approval");
  await item.click();
  await expect(supervisor).toHaveURL(new RegExp(`/c/${sessionId}$`));
  await hydrated(supervisor);

  const inline = supervisor.getByTestId("approval-inline");
  await expect(inline).toBeVisible();
  await expect(inline.getByTestId("reject-inline")).toBeDisabled();
  await inline.getByLabel("Reason for rejecting").fill("a ticket for this order is already open");
  await inline.getByTestId("reject-inline").click();

  // Both pages get the continuation live.
  for (const page of [agent, supervisor]) {
    const reply = page.locator('[data-role="assistant"]').last();
    await expect(reply).toContainText("declined");
    await expect(reply).toContainText("a ticket for this order is already open");
    await expect(toolCard(page, "ticket_create")).toHaveAttribute("data-status", "denied");
  }

  // The decision is on record, with its reason.
  await supervisor.goto("/approvals");
  const decided = supervisor.locator('[data-testid="decided-approval"][data-status="rejected"]').filter({ hasText: sessionId });
  await expect(decided).toContainText("a ticket for this order is already open");
  await expect(decided).toContainText("supervisor");
  await agent.context().close();
  await supervisor.context().close();
});

test("a console that cannot fetch the approval controls (the server was updated since it opened) says so, stays live, and has them after a reload", async ({ browser }) => {
  const agent = await signedInPage(browser, "agent");
  const sessionId = await newConversation(agent);
  await send(agent, EN);
  await expect(toolCard(agent, "ticket_create")).toHaveAttribute("data-status", "pending");

  // The cards' chunk is gone, as after a deploy that renamed it.
  const supervisor = await signedInPage(browser, "supervisor");
  const chunk = /split_pending_cards/;
  await supervisor.route(chunk, (route) => route.abort());
  await supervisor.goto(`/c/${sessionId}`);
  await hydrated(supervisor);
  const failed = supervisor.getByTestId("transcript").getByTestId("lazy-load-failed");
  await expect(failed).toContainText("The approval controls could not be loaded");
  await expect(supervisor.getByTestId("approval-inline")).toHaveCount(0);

  // The page still works: another lazy part opens, and closes.
  await supervisor.getByTestId("cancel-turn-open").click();
  await expect(supervisor.getByTestId("cancel-turn-reason")).toBeVisible();
  await supervisor.getByRole("button", { name: "Keep it" }).click();
  await expect(supervisor.getByTestId("cancel-turn-open")).toBeVisible();

  // With the chunk back, "Reload the page" brings the controls.
  await supervisor.unroute(chunk);
  await Promise.all([
    supervisor.waitForEvent("load"),
    failed.getByRole("button", { name: "Reload the page" }).click(),
  ]);
  await hydrated(supervisor);
  await expect(supervisor.getByTestId("approval-inline")).toBeVisible();
  await expect(supervisor.getByTestId("lazy-load-failed")).toHaveCount(0);
  await agent.context().close();
  await supervisor.context().close();
});

test("a page whose chunk cannot be fetched says so, Back returns to a live console, and the page opens once the chunk is back", async ({ browser }) => {
  const supervisor = await signedInPage(browser, "supervisor");
  const chunk = /split_approvals_page/;
  await supervisor.route(chunk, (route) => route.abort());
  await supervisor.getByTestId("nav-approvals").click();
  const failed = supervisor.getByTestId("lazy-load-failed");
  await expect(failed).toContainText("This page could not be loaded");
  await expect(failed.getByRole("button", { name: "Reload the page" })).toBeVisible();

  // The app still runs: Back returns to the console, live.
  await supervisor.goBack();
  await expect(supervisor.getByTestId("transcript")).toBeVisible();
  await expect(supervisor.getByTestId("chat")).toHaveAttribute("data-connected", "true");
  await expect(failed).toHaveCount(0);

  // A failed fetch is not remembered: with the chunk back, the page opens.
  await supervisor.unroute(chunk);
  await supervisor.getByTestId("nav-approvals").click();
  await expect(supervisor.getByRole("heading", { name: "Approvals" })).toBeVisible();
  await supervisor.context().close();
});

//! One LLM call of a step: the figures (latency, time to first token,
//! tokens, cost), then the messages sent, the output, the reasoning and the
//! tool calls it asked for, each behind its own disclosure.

use aics_types::LlmCallRecord;
use leptos::prelude::*;

use super::model::short;
use crate::components::json::JsonBlock;

/// One LLM call.
#[component]
pub fn LlmCallCard(call: LlmCallRecord) -> impl IntoView {
    let cost = call
        .cost_usd
        .map(|c| format!("${c:.6}"))
        .unwrap_or_else(|| "—".into());
    let ttft = call
        .ttft_ms
        .map(|t| format!("{t} ms"))
        .unwrap_or_else(|| "—".into());
    let figures = format!(
        "{} · {} ms · TTFT {ttft} · {} in / {} out · {cost}",
        call.model, call.latency_ms, call.usage.prompt_tokens, call.usage.completion_tokens
    );
    let tools = if call.tools.is_empty() {
        "no tools offered".to_string()
    } else {
        format!(
            "tools: {} (choice {})",
            call.tools.join(", "),
            call.tool_choice
        )
    };
    let messages = call.messages.clone();
    let tool_calls = call.tool_calls.clone();
    let reasoning = call.reasoning.clone();
    view! {
        <div data-testid="llm-call" class="rounded-lg border border-indigo-100 bg-indigo-50/40 p-2 text-xs">
            <div class="flex flex-wrap items-center gap-2">
                <span class="rounded bg-indigo-600 px-1.5 py-0.5 font-mono text-[10px] uppercase text-white">
                    {format!("llm · {}", call.purpose)}
                </span>
                <span data-testid="llm-call-figures" class="tabular-nums text-slate-700">{figures}</span>
                <span class="text-slate-500">{format!("{} · {tools}", call.protocol)}</span>
                {call.finish_reason.clone().map(|f| view! { <span class="text-slate-500">{format!("finish: {f}")}</span> })}
            </div>
            {call.error.clone().map(|e| view! {
                <p class="mt-1 rounded bg-red-50 px-2 py-1 text-red-700">{e}</p>
            })}
            <details class="mt-1.5">
                <summary class="cursor-pointer font-medium text-slate-600 hover:text-slate-900">
                    {format!("Messages sent ({})", messages.len())}
                </summary>
                <ol data-testid="llm-call-messages" class="mt-1 space-y-1">
                    {messages
                        .into_iter()
                        .map(|m| {
                            let calls = m
                                .tool_calls
                                .iter()
                                .map(|c| format!("→ {}({})", c.name, short(&c.arguments, 120)))
                                .collect::<Vec<_>>()
                                .join("\n");
                            view! {
                                <li class="rounded bg-white p-1.5 ring-1 ring-slate-200">
                                    <span class="font-mono text-[10px] uppercase text-slate-500">{m.role.clone()}</span>
                                    <pre class="whitespace-pre-wrap break-words font-mono text-[11px] text-slate-800">{m.content.clone()}</pre>
                                    {(!calls.is_empty()).then(|| view! {
                                        <pre class="whitespace-pre-wrap font-mono text-[11px] text-indigo-800">{calls}</pre>
                                    })}
                                </li>
                            }
                        })
                        .collect_view()}
                </ol>
            </details>
            <details class="mt-1" open=true>
                <summary class="cursor-pointer font-medium text-slate-600 hover:text-slate-900">"Output"</summary>
                <pre data-testid="llm-call-output" class="mt-1 whitespace-pre-wrap break-words rounded bg-white p-1.5 font-mono text-[11px] text-slate-800 ring-1 ring-slate-200">
                    {if call.output.is_empty() { "(no text)".to_string() } else { call.output.clone() }}
                </pre>
            </details>
            <details class="mt-1">
                <summary class="cursor-pointer font-medium text-slate-600 hover:text-slate-900">
                    {if reasoning.is_empty() { "Reasoning (none)".to_string() } else { format!("Reasoning ({} chars)", reasoning.chars().count()) }}
                </summary>
                <pre data-testid="llm-call-reasoning" class="mt-1 whitespace-pre-wrap break-words rounded bg-white p-1.5 font-mono text-[11px] text-slate-600 ring-1 ring-slate-200">
                    {reasoning}
                </pre>
            </details>
            <details class="mt-1">
                <summary class="cursor-pointer font-medium text-slate-600 hover:text-slate-900">
                    {format!("Tool calls asked for ({})", tool_calls.len())}
                </summary>
                <div class="mt-1">
                    <JsonBlock value=serde_json::to_value(&tool_calls).unwrap_or_default() label="tool calls" testid="llm-call-tool-calls"/>
                </div>
            </details>
        </div>
    }
}

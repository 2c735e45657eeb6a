//! The tool-call timeline and the trace panel:
//! each [`ToolCallRecord`] as a card with its status, duration and
//! expandable, copyable JSON; a turn without a tool-call list falls back to
//! its plain tool result text.

use aics_types::{ChatTurnTraceResult, ToolCallRecord, ToolCallStatus};
use leptos::prelude::*;
use serde_json::Value;

/// Pretty-printed JSON; a plain string stays as it is.
pub fn pretty_json(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => serde_json::to_string_pretty(other).unwrap_or_else(|_| other.to_string()),
    }
}

/// The label and the colours of a tool call's status.
pub fn status_badge(status: ToolCallStatus) -> (&'static str, &'static str) {
    match status {
        ToolCallStatus::Running => ("running", "bg-sky-100 text-sky-800 ring-sky-200"),
        ToolCallStatus::Ok => ("ok", "bg-emerald-100 text-emerald-800 ring-emerald-200"),
        ToolCallStatus::Error => ("error", "bg-red-100 text-red-800 ring-red-200"),
        ToolCallStatus::Denied => ("denied", "bg-rose-100 text-rose-800 ring-rose-200"),
        ToolCallStatus::Pending => (
            "pending approval",
            "bg-amber-100 text-amber-900 ring-amber-200",
        ),
    }
}

/// Copies `text` to the clipboard (browser only).
fn copy_to_clipboard(text: &str) {
    #[cfg(feature = "hydrate")]
    if let Some(window) = web_sys::window() {
        let _ = window.navigator().clipboard().write_text(text);
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = text;
}

/// A block of monospace JSON with a copy button.
#[component]
pub fn JsonBlock(
    value: Value,
    /// What the JSON is, for the copy button's name ("input", "output", ...).
    label: &'static str,
    #[prop(optional)] testid: &'static str,
) -> impl IntoView {
    let text = pretty_json(&value);
    let copied = RwSignal::new(false);
    let to_copy = text.clone();
    view! {
        <div class="relative">
            <button
                type="button"
                aria-label=format!("Copy {label} JSON")
                data-testid="copy-json"
                class="absolute right-1.5 top-1.5 rounded border border-slate-600 bg-slate-800 px-1.5 py-0.5 text-[11px] text-slate-200 hover:bg-slate-700"
                on:click=move |_| {
                    copy_to_clipboard(&to_copy);
                    copied.set(true);
                }
            >
                {move || if copied.get() { "Copied" } else { "Copy" }}
            </button>
            <pre
                data-testid=testid
                class="max-h-72 overflow-auto whitespace-pre-wrap break-words rounded-lg bg-slate-900 p-3 pr-14 font-mono text-xs leading-relaxed text-slate-100"
            >
                <code>{text}</code>
            </pre>
        </div>
    }
}

/// One tool call as a card.
#[component]
pub fn ToolCard(record: ToolCallRecord, index: usize) -> impl IntoView {
    let (label, colours) = status_badge(record.status);
    let duration = match (record.duration_ms, record.status) {
        (Some(ms), _) => format!("{ms} ms"),
        (None, ToolCallStatus::Running) => "running…".into(),
        (None, ToolCallStatus::Pending) => "waiting".into(),
        (None, _) => "—".into(),
    };
    let has_output = !record.output.is_null();
    let output = record.output.clone();
    view! {
        <li
            data-testid="tool-card"
            data-call-id=record.id.clone()
            data-tool=record.name.clone()
            data-status=record.status.as_str()
            class="relative rounded-xl border border-slate-200 bg-white p-3 shadow-sm"
        >
            <div class="flex flex-wrap items-center gap-x-2 gap-y-1">
                <span class="grid h-6 w-6 shrink-0 place-items-center rounded-full bg-slate-100 text-xs font-semibold text-slate-600">
                    {index + 1}
                </span>
                <span class="break-all font-mono text-sm font-semibold text-slate-800">
                    {record.name.clone()}
                </span>
                <span class="ml-auto flex shrink-0 items-center gap-2">
                <span
                    data-testid="tool-status"
                    class=format!(
                        "inline-flex shrink-0 items-center gap-1 rounded-full px-2 py-0.5 text-xs font-medium ring-1 {colours}",
                    )
                >
                    {(record.status == ToolCallStatus::Running)
                        .then(|| {
                            view! {
                                <span
                                    aria-hidden="true"
                                    class="h-1.5 w-1.5 animate-pulse rounded-full bg-sky-500"
                                ></span>
                            }
                        })}
                    {label}
                </span>
                <span
                    data-testid="tool-duration"
                    class="w-16 shrink-0 text-right font-mono text-xs tabular-nums text-slate-500"
                >
                    {duration}
                </span>
                </span>
            </div>
            <details data-testid="tool-input" class="group mt-2">
                <summary class="cursor-pointer select-none text-xs font-medium text-slate-600 hover:text-slate-900">
                    "Input"
                </summary>
                <div class="mt-1.5">
                    <JsonBlock value=record.input.clone() label="input" testid="json-input"/>
                </div>
            </details>
            <details data-testid="tool-output" class="group mt-1">
                <summary class="cursor-pointer select-none text-xs font-medium text-slate-600 hover:text-slate-900">
                    "Output"
                </summary>
                <div class="mt-1.5">
                    {if has_output {
                        view! { <JsonBlock value=output.clone() label="output" testid="json-output"/> }
                            .into_any()
                    } else {
                        view! {
                            <p class="text-xs text-slate-500">"No output yet."</p>
                        }
                            .into_any()
                    }}
                </div>
            </details>
        </li>
    }
}

/// The tool calls of a turn, in order; `fallback` is the plain tool result
/// text shown when the turn has no tool-call list.
#[component]
pub fn ToolTimeline(
    #[prop(into)] calls: Signal<Vec<ToolCallRecord>>,
    #[prop(into)] fallback: Signal<Option<String>>,
) -> impl IntoView {
    let empty = Memo::new(move |_| calls.with(|c| c.is_empty()));
    view! {
        {move || {
            if empty.get() {
                match fallback.get() {
                    Some(text) => {
                        view! {
                            <div data-testid="tool-result-fallback" class="rounded-xl border border-slate-200 bg-white p-3">
                                <p class="mb-1.5 text-xs font-medium text-slate-600">"Tool result"</p>
                                <pre class="max-h-72 overflow-auto whitespace-pre-wrap rounded-lg bg-slate-900 p-3 font-mono text-xs text-slate-100">
                                    {text}
                                </pre>
                            </div>
                        }
                            .into_any()
                    }
                    None => {
                        view! {
                            <p data-testid="no-tool-calls" class="rounded-xl border border-dashed border-slate-300 p-4 text-center text-sm text-slate-500">
                                "No tools were called in this turn."
                            </p>
                        }
                            .into_any()
                    }
                }
            } else {
                // Keyed by what a card shows, so a card the reader expanded
                // stays open while other calls of the turn update.
                view! {
                    <ol data-testid="tool-timeline" class="space-y-2">
                        <For
                            each=move || calls.get().into_iter().enumerate()
                            key=|(index, r)| (*index, r.id.clone(), r.status, r.duration_ms, r.output.is_null())
                            children=|(index, record)| view! { <ToolCard record index/> }
                        />
                    </ol>
                }
                    .into_any()
            }
        }}
    }
}

/// The executed nodes as a path: `init_state → route → agent → tools → …`.
#[component]
pub fn NodePath(nodes: Vec<String>) -> impl IntoView {
    let last = nodes.len().saturating_sub(1);
    view! {
        <ol data-testid="executed-nodes" aria-label="Executed nodes" class="flex flex-wrap items-center gap-1">
            {nodes
                .into_iter()
                .enumerate()
                .map(|(i, node)| {
                    view! {
                        <li class="flex items-center gap-1">
                            <span class="rounded-md bg-slate-100 px-1.5 py-0.5 font-mono text-[11px] text-slate-700 ring-1 ring-slate-200">
                                {node}
                            </span>
                            {(i < last)
                                .then(|| view! { <span aria-hidden="true" class="text-slate-400">"→"</span> })}
                        </li>
                    }
                })
                .collect_view()}
        </ol>
    }
}

/// The trace of a finished (or paused) turn.
#[component]
pub fn TracePanel(trace: ChatTurnTraceResult, #[prop(optional)] link: bool) -> impl IntoView {
    let stop = trace
        .stop_reason
        .map(|s| s.as_str().replace('_', " "))
        .unwrap_or_else(|| "—".into());
    let stop_colour = match trace.stop_reason {
        Some(aics_types::StopReason::FinalAnswer) => "text-emerald-700",
        Some(aics_types::StopReason::AwaitingApproval) => "text-amber-700",
        Some(aics_types::StopReason::Error) => "text-red-700",
        Some(_) => "text-orange-700",
        None => "text-slate-700",
    };
    let usage = trace.usage;
    let gid = trace.graph_execution_id.clone();
    let row = |name: &'static str, value: String, testid: &'static str| {
        view! {
            <div class="flex items-baseline justify-between gap-3 py-1">
                <dt class="text-slate-500">{name}</dt>
                <dd data-testid=testid class="text-right font-medium tabular-nums text-slate-800">
                    {value}
                </dd>
            </div>
        }
    };
    view! {
        <section
            data-testid="trace-panel"
            aria-label="Turn trace"
            class="rounded-xl border border-slate-200 bg-white p-3 text-sm shadow-sm"
        >
            <h3 class="mb-2 text-xs font-semibold uppercase tracking-wide text-slate-500">"Trace"</h3>
            <dl class="divide-y divide-slate-100">
                {row("Intent", trace.intent.as_str().to_string(), "trace-intent")}
                <div class="flex items-baseline justify-between gap-3 py-1">
                    <dt class="text-slate-500">"Stop reason"</dt>
                    <dd data-testid="trace-stop-reason" class=format!("text-right font-medium {stop_colour}")>
                        {stop}
                    </dd>
                </div>
                {row("LLM calls", trace.llm_calls.to_string(), "trace-llm-calls")}
                {row("Steps", trace.steps_taken.to_string(), "trace-steps")}
                {row(
                    "Tokens",
                    format!(
                        "{} ({} in / {} out)",
                        usage.total_tokens,
                        usage.prompt_tokens,
                        usage.completion_tokens,
                    ),
                    "trace-tokens",
                )}
                {row("Duration", format!("{} ms", trace.duration_ms), "trace-duration")}
                {row(
                    "Model",
                    if trace.engine.is_empty() {
                        trace.model.clone()
                    } else {
                        format!("{} · {}", trace.model, trace.engine)
                    },
                    "trace-model",
                )}
            </dl>
            {trace
                .error
                .clone()
                .map(|error| {
                    view! {
                        <p class="mt-2 rounded-lg bg-red-50 px-2 py-1.5 text-xs text-red-700">{error}</p>
                    }
                })}
            <div class="mt-2">
                <p class="mb-1 text-xs text-slate-500">"Executed nodes"</p>
                <NodePath nodes=trace.executed_nodes.clone()/>
            </div>
            <div class="mt-3 flex items-center gap-2 border-t border-slate-100 pt-2">
                <span class="text-xs text-slate-500">"Graph execution"</span>
                <code data-testid="trace-gid" class="truncate font-mono text-[11px] text-slate-700" title=gid.clone()>
                    {gid.clone()}
                </code>
            </div>
            {link
                .then(|| {
                    view! {
                        <a
                            data-testid="step-history-link"
                            href=format!("/turns/{gid}")
                            class="mt-2 inline-flex items-center gap-1 text-sm font-medium text-indigo-600 hover:text-indigo-800 hover:underline"
                        >
                            "Step history →"
                        </a>
                    }
                })}
        </section>
    }
}

#[cfg(all(test, feature = "ssr"))]
mod tests {
    use super::*;
    use serde_json::json;

    fn render(view: impl FnOnce() -> AnyView) -> String {
        let owner = Owner::new();
        owner.with(|| view().to_html())
    }

    fn record(status: ToolCallStatus, output: Value) -> ToolCallRecord {
        ToolCallRecord {
            id: "call_1".into(),
            name: "order_query".into(),
            input: json!({"order_id": "ORD-123"}),
            output,
            status,
            timestamp: chrono::DateTime::default(),
            duration_ms: Some(12),
        }
    }

    #[test]
    fn a_turn_without_tool_calls_shows_its_plain_tool_result() {
        let html = render(|| {
            view! {
                <ToolTimeline
                    calls=Signal::stored(Vec::new())
                    fallback=Signal::stored(Some("order ORD-123: delayed".to_string()))
                />
            }
            .into_any()
        });
        assert!(html.contains("tool-result-fallback"), "{html}");
        assert!(html.contains("order ORD-123: delayed"), "{html}");
        let empty = render(|| {
            view! { <ToolTimeline calls=Signal::stored(Vec::new()) fallback=Signal::stored(None::<String>)/> }
                .into_any()
        });
        assert!(empty.contains("No tools were called"), "{empty}");
    }

    #[test]
    fn tool_cards_show_status_duration_and_pretty_json_as_text() {
        let html = render(|| {
            view! {
                <ToolTimeline
                    calls=Signal::stored(vec![record(ToolCallStatus::Ok, json!({"note": "<img src=x onerror=alert(1)>"}))])
                    fallback=Signal::stored(None::<String>)
                />
            }
            .into_any()
        });
        assert!(html.contains(r#"data-status="ok""#), "{html}");
        assert!(html.contains("12 ms"), "{html}");
        assert!(
            html.contains("&quot;order_id&quot;: &quot;ORD-123&quot;")
                || html.contains("\"order_id\": \"ORD-123\""),
            "{html}"
        );
        // Tool output is text: markup in it never becomes elements.
        assert!(!html.contains("<img"), "{html}");
        assert!(html.contains("&lt;img"), "{html}");
    }

    #[test]
    fn statuses_have_distinct_labels() {
        let labels: Vec<_> = [
            ToolCallStatus::Running,
            ToolCallStatus::Ok,
            ToolCallStatus::Error,
            ToolCallStatus::Denied,
            ToolCallStatus::Pending,
        ]
        .into_iter()
        .map(|s| status_badge(s).0)
        .collect();
        assert_eq!(
            labels,
            ["running", "ok", "error", "denied", "pending approval"]
        );
        assert_eq!(pretty_json(&json!("plain")), "plain");
        assert_eq!(pretty_json(&json!({"a": 1})), "{\n  \"a\": 1\n}");
    }
}

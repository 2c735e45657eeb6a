//! The tool-call timeline: each [`ToolCallRecord`] as a card with its
//! status, duration and expandable, copyable JSON; a turn without a
//! tool-call list falls back to its plain tool result text. Used by the
//! console (live and finished turns) and the turn page.

use aics_types::{ToolCallRecord, ToolCallStatus};
use leptos::prelude::*;

use crate::components::badges::ToolStatusPill;
use crate::components::icons::{Icon, IconKind};
use crate::components::json::JsonBlock;

/// One tool call as a card.
#[component]
pub fn ToolCard(record: ToolCallRecord, index: usize) -> impl IntoView {
    let duration = match (record.duration_ms, record.status) {
        (Some(ms), _) => format!("{ms} ms"),
        (None, ToolCallStatus::Running) => "running…".into(),
        (None, ToolCallStatus::Pending) => "waiting".into(),
        (None, _) => "—".into(),
    };
    let has_output = !record.output.is_null();
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
                    <ToolStatusPill status=record.status/>
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
                        view! { <JsonBlock value=record.output.clone() label="output" testid="json-output"/> }
                            .into_any()
                    } else {
                        view! { <p class="text-xs text-slate-500">"No output yet."</p> }.into_any()
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

/// The executed nodes as a path: `init_state › route › agent › tools › …`.
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
                            {(i < last).then(|| view! { <Icon kind=IconKind::Chevron class="h-3 w-3 text-slate-400"/> })}
                        </li>
                    }
                })
                .collect_view()}
        </ol>
    }
}

#[cfg(all(test, feature = "ssr"))]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn render(view: impl FnOnce() -> AnyView) -> String {
        let owner = Owner::new();
        owner.with(|| view().to_html())
    }

    fn record(status: ToolCallStatus, output: Value) -> ToolCallRecord {
        ToolCallRecord {
            id: "call_1".into(),
            name: "order_query".into(),
            input: json!({"order_id": "ORD-123"}).into(),
            output: output.into(),
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
    fn the_node_path_draws_its_separators_as_inline_svg() {
        let html = render(|| {
            view! { <NodePath nodes=vec!["agent".into(), "tools".into(), "finalize".into()]/> }
                .into_any()
        });
        assert_eq!(html.matches("<svg").count(), 2, "{html}");
        assert!(!html.contains('→'), "{html}");
    }
}

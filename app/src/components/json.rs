//! JSON shown as text: pretty-printed, monospace, with a copy button. Tool
//! input and output are model- or customer-controlled: they are always text,
//! never markup.

use aics_types::SharedValue;
use leptos::prelude::*;
use serde_json::Value;

use crate::components::icons::{Icon, IconKind};

/// Pretty-printed JSON; a plain string stays as it is.
pub fn pretty_json(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => serde_json::to_string_pretty(other).unwrap_or_else(|_| other.to_string()),
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
    /// Shared when it is a tool call's arguments or result (no copy).
    #[prop(into)]
    value: SharedValue,
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
                class="absolute right-1.5 top-1.5 inline-flex items-center gap-1 rounded border border-slate-600 bg-slate-800 px-1.5 py-0.5 text-[11px] text-slate-200 hover:bg-slate-700"
                on:click=move |_| {
                    copy_to_clipboard(&to_copy);
                    copied.set(true);
                }
            >
                {move || {
                    if copied.get() {
                        view! { <Icon kind=IconKind::Check/> "Copied" }.into_any()
                    } else {
                        view! { <Icon kind=IconKind::Copy/> "Copy" }.into_any()
                    }
                }}
            </button>
            <pre
                data-testid=(!testid.is_empty()).then_some(testid)
                class="max-h-72 overflow-auto whitespace-pre-wrap break-words rounded-lg bg-slate-900 p-3 pr-20 font-mono text-xs leading-relaxed text-slate-100"
            >
                <code>{text}</code>
            </pre>
        </div>
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strings_stay_as_they_are_and_json_is_indented() {
        assert_eq!(pretty_json(&json!("plain")), "plain");
        assert_eq!(pretty_json(&json!({"a": 1})), "{\n  \"a\": 1\n}");
    }
}

//! The form that saves a replay set: a name, then either turn ids (one
//! per line) or a filter — text of the customer's message, a date range
//! (UTC days, both included), a tool called, the outcome — whose matched
//! count "Preview" shows before the set is saved. The server checks
//! everything again; its refusal is shown under the form.

use aics_types::{NewReplaySet, ReplayFilter, StopReason, Timestamp, MAX_REPLAY_SET_TURNS};
use leptos::prelude::*;
use leptos_router::hooks::use_navigate;

use super::api::{create_replay_set, preview_replay};

/// The tools a filter may name (the support tools).
const TOOLS: [&str; 5] = [
    "order_query",
    "logistics_track",
    "knowledge_search",
    "ticket_create",
    "escalate_to_human",
];

/// The outcomes a filter may name.
const OUTCOMES: [StopReason; 5] = [
    StopReason::FinalAnswer,
    StopReason::AwaitingApproval,
    StopReason::Error,
    StopReason::LoopDetected,
    StopReason::ToolLoopLimit,
];

/// The start of a `YYYY-MM-DD` day (UTC), `days` days later; none when
/// blank or malformed. Read as that day's midnight by
/// `aics_types::timestamp::parse`, not chrono's `%Y-%m-%d` parser, whose
/// code would come to the browser for this one field.
fn day_start(text: &str, days: i64) -> Option<Timestamp> {
    let text = text.trim();
    if text.len() != 10 {
        return None;
    }
    let day = aics_types::timestamp::parse(&format!("{text}T00:00:00Z"))?;
    day.checked_add_signed(chrono::TimeDelta::try_days(days)?)
}

/// The filter the fields describe.
pub fn filter_of(q: &str, from: &str, to: &str, tool: &str, outcome: &str) -> ReplayFilter {
    ReplayFilter {
        q: Some(q.trim().to_owned()).filter(|q| !q.is_empty()),
        from: day_start(from, 0),
        // The last day is included: up to the start of the next.
        to: day_start(to, 1),
        tool: Some(tool.to_owned()).filter(|t| !t.is_empty()),
        outcome: OUTCOMES.into_iter().find(|o| o.as_str() == outcome),
    }
}

/// The turn ids typed, one per line (or separated by spaces or commas).
pub fn ids_of(text: &str) -> Vec<String> {
    text.split(|c: char| c.is_whitespace() || c == ',')
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

#[component]
pub fn CreateSet(version: RwSignal<u32>) -> impl IntoView {
    let name = RwSignal::new(String::new());
    let ids = RwSignal::new(String::new());
    let q = RwSignal::new(String::new());
    let from = RwSignal::new(String::new());
    let to = RwSignal::new(String::new());
    let tool = RwSignal::new(String::new());
    let outcome = RwSignal::new(String::new());
    let preview = RwSignal::new(String::new());
    let error = RwSignal::new(String::new());
    let busy = RwSignal::new(false);
    let filter = move || {
        filter_of(
            &q.get_untracked(),
            &from.get_untracked(),
            &to.get_untracked(),
            &tool.get_untracked(),
            &outcome.get_untracked(),
        )
    };
    let on_preview = move |_| {
        let f = filter();
        leptos::task::spawn_local(async move {
            match preview_replay(f).await {
                Ok(p) => {
                    error.set(String::new());
                    preview.set(if p.matched > p.limit {
                        format!(
                            "{} turns match: more than a set holds ({}); narrow the filter.",
                            p.matched, p.limit
                        )
                    } else {
                        format!("{} turns match.", p.matched)
                    });
                }
                Err(e) => error.set(e.to_string()),
            }
        });
    };
    let navigate = use_navigate();
    let on_submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let turn_ids = ids_of(&ids.get_untracked());
        let request = NewReplaySet {
            name: name.get_untracked(),
            filter: turn_ids.is_empty().then(filter),
            turn_ids,
        };
        let navigate = navigate.clone();
        busy.set(true);
        leptos::task::spawn_local(async move {
            let result = create_replay_set(request).await;
            busy.set(false);
            match result {
                Ok(set) => {
                    error.set(String::new());
                    preview.set(String::new());
                    name.set(String::new());
                    version.update(|v| *v += 1);
                    navigate(&format!("/replays?set={}", set.id), Default::default());
                }
                Err(e) => error.set(e.to_string()),
            }
        });
    };
    const FIELD: &str = "mt-1 block w-full rounded-md border border-slate-300 p-1.5 text-sm";
    view! {
        <form data-testid="replay-create" on:submit=on_submit class="space-y-2 rounded-xl border border-slate-200 bg-white p-3 text-xs text-slate-600 shadow-sm">
            <h2 class="text-sm font-semibold text-slate-700">"New set"</h2>
            <label class="block">
                "Name"
                <input data-testid="replay-name" class=FIELD required maxlength="120"
                    prop:value=move || name.get() on:input=move |ev| name.set(event_target_value(&ev))/>
            </label>
            <fieldset class="space-y-2 rounded-md border border-slate-200 p-2">
                <legend class="px-1">"Turns matching"</legend>
                <label class="block">
                    "Customer message contains"
                    <input data-testid="replay-q" class=FIELD placeholder="refund"
                        prop:value=move || q.get() on:input=move |ev| q.set(event_target_value(&ev))/>
                </label>
                <div class="grid grid-cols-2 gap-2">
                    <label class="block">
                        "From (UTC)"
                        <input type="date" data-testid="replay-from" class=FIELD
                            prop:value=move || from.get() on:input=move |ev| from.set(event_target_value(&ev))/>
                    </label>
                    <label class="block">
                        "To (UTC)"
                        <input type="date" data-testid="replay-to" class=FIELD
                            prop:value=move || to.get() on:input=move |ev| to.set(event_target_value(&ev))/>
                    </label>
                </div>
                <div class="grid grid-cols-2 gap-2">
                    <label class="block">
                        "Tool used"
                        <select data-testid="replay-tool" class=FIELD on:change=move |ev| tool.set(event_target_value(&ev))>
                            <option value="">"any"</option>
                            {TOOLS.into_iter().map(|t| view! { <option value=t>{t}</option> }).collect_view()}
                        </select>
                    </label>
                    <label class="block">
                        "Outcome"
                        <select data-testid="replay-outcome" class=FIELD on:change=move |ev| outcome.set(event_target_value(&ev))>
                            <option value="">"any"</option>
                            {OUTCOMES.into_iter().map(|o| view! { <option value=o.as_str()>{o.as_str()}</option> }).collect_view()}
                        </select>
                    </label>
                </div>
                <div class="flex items-center gap-2">
                    <button type="button" data-testid="replay-preview" on:click=on_preview
                        class="rounded-md border border-slate-300 px-2 py-1 text-xs hover:bg-slate-50">
                        "Preview"
                    </button>
                    <span data-testid="replay-preview-count" class="text-slate-700">{move || preview.get()}</span>
                </div>
            </fieldset>
            <label class="block">
                {format!("…or turn ids, one per line (at most {MAX_REPLAY_SET_TURNS})")}
                <textarea data-testid="replay-ids" rows="2" class=FIELD
                    prop:value=move || ids.get() on:input=move |ev| ids.set(event_target_value(&ev))></textarea>
            </label>
            <div class="flex items-center gap-2">
                <button type="submit" data-testid="replay-save" disabled=move || busy.get()
                    class="rounded-md bg-indigo-600 px-3 py-1 text-xs font-medium text-white hover:bg-indigo-700 disabled:opacity-50">
                    "Save the set"
                </button>
                <span role="alert" data-testid="replay-create-error" class="text-red-700">{move || error.get()}</span>
            </div>
        </form>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fields_make_the_filter() {
        let f = filter_of(" refund ", "2026-12-01", "2026-12-01", "", "error");
        assert_eq!(f.q.as_deref(), Some("refund"));
        assert_eq!(f.from.unwrap().to_rfc3339(), "2026-12-01T00:00:00+00:00");
        assert_eq!(f.to.unwrap().to_rfc3339(), "2026-12-02T00:00:00+00:00");
        assert_eq!(f.tool, None);
        assert_eq!(f.outcome, Some(StopReason::Error));
        assert_eq!(filter_of("", "", "x", "", ""), ReplayFilter::default());
        for bad in [
            "2026-13-01",
            "2026-12-1",
            "2026-12-01T00",
            "12/01/2026",
            "2026-02-30",
        ] {
            assert_eq!(day_start(bad, 0), None, "{bad}");
        }
        assert_eq!(
            day_start(" 2026-12-31 ", 1)
                .map(|t| t.to_rfc3339())
                .as_deref(),
            Some("2027-01-01T00:00:00+00:00")
        );
        assert_eq!(ids_of("a\nb, c  "), ["a", "b", "c"]);
    }
}

//! One replay run's summary: the counts at the top (same chain, different
//! chain, error, pending) and a row per turn — verdict, the original's and
//! the replay's tool chains, whether the reply changed, and the token,
//! cost and latency deltas, each turn linking to its page (where the fork
//! sits beside it). Loaded by the browser after mount and every two
//! seconds while the run runs.

use aics_types::{ReplayItem, ReplayRunReport, ReplayRunState, ReplayVerdict};
use leptos::prelude::*;

use crate::components::poll::poll_every;

use super::api::get_replay_run;
use super::set::state_badge;
use crate::pages::turn::compare::{cost_delta, signed};

fn chain(names: &[String]) -> String {
    if names.is_empty() {
        "—".into()
    } else {
        names.join(" → ")
    }
}

fn verdict_badge(v: ReplayVerdict) -> &'static str {
    match v {
        ReplayVerdict::Pending => "bg-slate-100 text-slate-700",
        ReplayVerdict::Same => "bg-emerald-100 text-emerald-900",
        ReplayVerdict::Different => "bg-amber-100 text-amber-900",
        ReplayVerdict::Error => "bg-red-100 text-red-900",
    }
}

#[component]
pub fn RunSummary(id: String) -> impl IntoView {
    let report = RwSignal::new(None::<Result<ReplayRunReport, String>>);
    let id = StoredValue::new(id);
    let load = move || {
        leptos::task::spawn_local(async move {
            let result = get_replay_run(id.get_value())
                .await
                .map_err(|e| e.to_string());
            report.set(Some(result));
        })
    };
    Effect::new(move |_| load());
    poll_every(std::time::Duration::from_secs(2), move || {
        let running = report.with_untracked(
            |r| !matches!(r, Some(Ok(r)) if r.run.state != ReplayRunState::Running),
        );
        if running {
            load();
        }
    });
    view! {
        <section aria-label="Replay run" data-testid="replay-run" class="rounded-xl border border-slate-200 bg-white p-3 shadow-sm">
            {move || match report.get() {
                None => view! { <p class="text-xs text-slate-500">"Loading the replay…"</p> }.into_any(),
                Some(Err(e)) => view! { <p role="alert" class="text-xs text-red-700">{e}</p> }.into_any(),
                Some(Ok(r)) => view! { <Report report=r/> }.into_any(),
            }}
        </section>
    }
}

#[component]
fn Count(
    name: &'static str,
    value: u64,
    testid: &'static str,
    class: &'static str,
) -> impl IntoView {
    view! {
        <div class=format!("rounded-lg px-3 py-2 {class}")>
            <p class="text-xs">{name}</p>
            <p data-testid=testid class="text-lg font-semibold tabular-nums">{value}</p>
        </div>
    }
}

#[component]
fn Report(report: ReplayRunReport) -> impl IntoView {
    let t = report.totals;
    let run = &report.run;
    view! {
        <div class="flex flex-wrap items-center gap-2 text-xs text-slate-600">
            <h2 class="text-sm font-semibold text-slate-800">{format!("Replay of {}", report.set_name)}</h2>
            <span data-testid="replay-run-state" data-state=run.state.as_str()
                class=format!("rounded-full px-2 py-0.5 font-medium {}", state_badge(run.state))>
                {run.state.as_str()}
            </span>
            <span>{format!(
                "engine {} · protocol {} · by {}",
                run.engine.clone().unwrap_or_else(|| "as each turn".into()),
                run.protocol.clone().unwrap_or_else(|| "as each turn".into()),
                run.created_by
            )}</span>
        </div>
        <div data-testid="replay-totals" data-total=t.total class="mt-2 grid grid-cols-2 gap-2 sm:grid-cols-5">
            <Count name="Turns" value=t.total testid="replay-total" class="bg-slate-50 text-slate-800"/>
            <Count name="Same chain" value=t.same testid="replay-same" class="bg-emerald-50 text-emerald-900"/>
            <Count name="Different chain" value=t.different testid="replay-different" class="bg-amber-50 text-amber-900"/>
            <Count name="Error" value=t.error testid="replay-error" class="bg-red-50 text-red-900"/>
            <Count name="Pending" value=t.pending testid="replay-pending" class="bg-slate-50 text-slate-700"/>
        </div>
        <div class="mt-3 overflow-x-auto">
            <table data-testid="replay-items" class="w-full text-left text-xs">
                <thead class="text-slate-500">
                    <tr>
                        <th class="py-1 pr-2">"Turn"</th>
                        <th class="pr-2">"Result"</th>
                        <th class="pr-2">"Original chain"</th>
                        <th class="pr-2">"Replay chain"</th>
                        <th class="pr-2">"Reply"</th>
                        <th class="pr-2 text-right">"Tokens"</th>
                        <th class="pr-2 text-right">"Cost"</th>
                        <th class="text-right">"Latency"</th>
                    </tr>
                </thead>
                <tbody>
                    {report.items.into_iter().map(|item| view! { <Row item/> }).collect_view()}
                </tbody>
            </table>
        </div>
    }
}

#[component]
fn Row(item: ReplayItem) -> impl IntoView {
    let reply = match item.reply_changed {
        Some(true) => "changed",
        Some(false) => "same",
        None => "—",
    };
    let dash = || "—".to_string();
    let detail = item.error.clone().unwrap_or_default();
    view! {
        <tr data-testid="replay-item" data-verdict=item.verdict.as_str() class="border-t border-slate-100 align-top">
            <td class="py-1 pr-2 font-mono">
                <a class="text-indigo-700 hover:underline" href=format!("/turns/{}", item.graph_execution_id)>
                    {item.graph_execution_id.chars().take(8).collect::<String>()}
                </a>
            </td>
            <td class="pr-2">
                <span class=format!("rounded px-1.5 py-0.5 {}", verdict_badge(item.verdict))>{item.verdict.as_str()}</span>
                <span class="ml-1 text-red-700">{detail}</span>
            </td>
            <td class="pr-2 font-mono">{chain(&item.original_chain)}</td>
            <td class="pr-2 font-mono">{chain(&item.replay_chain)}</td>
            <td class="pr-2">{reply}</td>
            <td class="pr-2 text-right tabular-nums">{item.tokens_delta.map(|d| signed(d, "tok")).unwrap_or_else(dash)}</td>
            <td class="pr-2 text-right tabular-nums">{item.latency_delta_ms.map(|_| cost_delta(item.cost_delta_usd)).unwrap_or_else(dash)}</td>
            <td class="text-right tabular-nums">{item.latency_delta_ms.map(|d| signed(d, "ms")).unwrap_or_else(dash)}</td>
        </tr>
    }
}

#[cfg(all(test, feature = "ssr"))]
mod tests {
    use super::*;
    use aics_types::{ReplayRunInfo, ReplayTotals};

    fn item(verdict: ReplayVerdict, error: Option<&str>) -> ReplayItem {
        ReplayItem {
            graph_execution_id: "0123456789abcdef".into(),
            fork_id: Some("f".into()),
            verdict,
            original_chain: vec!["order_query".into(), "ticket_create".into()],
            replay_chain: vec!["order_query".into()],
            reply_changed: Some(true),
            tokens_delta: Some(-12),
            cost_delta_usd: Some(0.0),
            latency_delta_ms: Some(300),
            error: error.map(str::to_owned),
        }
    }

    #[test]
    fn the_report_shows_the_totals_and_a_row_per_turn() {
        let report = ReplayRunReport {
            run: ReplayRunInfo {
                id: "r".into(),
                set_id: "s".into(),
                created_by: "supervisor".into(),
                created_at: chrono::DateTime::UNIX_EPOCH,
                state: ReplayRunState::Done,
                provider: None,
                engine: Some("linear".into()),
                protocol: None,
                finished_at: None,
            },
            set_name: "refunds".into(),
            totals: ReplayTotals {
                total: 2,
                different: 1,
                error: 1,
                ..ReplayTotals::default()
            },
            items: vec![
                item(ReplayVerdict::Different, None),
                item(ReplayVerdict::Error, Some("the fork failed")),
            ],
        };
        let html = Owner::new().with(|| view! { <Report report/> }.to_html());
        assert!(html.contains("Replay of refunds"), "{html}");
        assert!(html.contains("engine linear"));
        assert_eq!(html.matches("data-testid=\"replay-item\"").count(), 2);
        assert!(html.contains("order_query → ticket_create"));
        assert!(html.contains("−12 tok"));
        assert!(html.contains("+300 ms"));
        assert!(html.contains("the fork failed"));
        assert!(html.contains("data-verdict=\"different\""));
    }
}

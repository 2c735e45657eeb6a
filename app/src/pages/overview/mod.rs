//! `/overview?days=N`: the supervisors' overview — turns per day, tool
//! usage, approval rate and time to decision, p50/p95 latency, tokens and
//! cost per day — as the database counts them (`aics_db::overview`), drawn
//! as inline SVG bar charts ([`chart`]).

pub mod api;
pub mod chart;

use aics_types::Overview;
use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use crate::components::errors::or_alert;
use crate::components::icons::{Icon, IconKind};
use crate::components::layout::Layout;
use crate::session::{Authed, Session};
use crate::wire::{ready, resource};
use api::get_overview;
use chart::{Bar, BarChart};

/// The windows offered.
const WINDOWS: [u32; 3] = [7, 30, 90];

/// `/overview`.
#[component]
pub fn OverviewPage() -> impl IntoView {
    view! {
        <Authed let:session>
            <OverviewBody session/>
        </Authed>
    }
}

#[component]
fn OverviewBody(session: Session) -> impl IntoView {
    let supervisor = session.is_supervisor();
    let query = use_query_map();
    let days = Memo::new(move |_| {
        query
            .read()
            .get("days")
            .and_then(|d| d.parse::<u32>().ok())
            .unwrap_or(30)
    });
    view! {
        <Layout session>
            <main class="mx-auto max-w-6xl space-y-4 p-4 lg:p-6">
                {if supervisor {
                    view! { <OverviewView days/> }.into_any()
                } else {
                    view! {
                        <div role="alert" data-testid="overview-forbidden" class="flex items-start gap-2 rounded-xl border border-amber-200 bg-amber-50 p-4 text-sm text-amber-900">
                            <Icon kind=IconKind::Alert class="mt-0.5 h-4 w-4 shrink-0"/>
                            "Only supervisors see the overview."
                        </div>
                    }
                        .into_any()
                }}
            </main>
        </Layout>
    }
}

#[component]
fn OverviewView(days: Memo<u32>) -> impl IntoView {
    let overview = resource(move || days.get(), get_overview);
    view! {
        <div class="flex flex-wrap items-center gap-3">
            <h1 class="text-xl font-semibold tracking-tight">"Overview"</h1>
            <nav aria-label="Window" class="flex gap-1 text-sm">
                {WINDOWS
                    .into_iter()
                    .map(|n| {
                        let current = move || (days.get() == n).then_some("page");
                        view! {
                            <a
                                href=format!("/overview?days={n}")
                                aria-current=current
                                class="rounded-md px-2 py-1 text-slate-600 hover:bg-slate-100 aria-[current=page]:bg-slate-800 aria-[current=page]:text-white"
                            >
                                {format!("{n} days")}
                            </a>
                        }
                    })
                    .collect_view()}
            </nav>
        </div>
        <Transition fallback=|| view! { <p class="text-sm text-slate-500">"Counting…"</p> }>
            {move || Suspend::new(async move {
                or_alert(ready(overview).await, "", |o| view! { <Charts overview=o/> })
            })}
        </Transition>
    }
}

fn whole(v: f64) -> String {
    format!("{v:.0}")
}

fn dollars(v: f64) -> String {
    format!("${v:.4}")
}

fn ms(v: f64) -> String {
    format!("{v:.0} ms")
}

/// A figure with its name.
#[component]
fn Figure(name: &'static str, value: String, testid: &'static str) -> impl IntoView {
    view! {
        <div class="rounded-xl border border-slate-200 bg-white p-3 shadow-sm">
            <p class="text-xs text-slate-500">{name}</p>
            <p data-testid=testid class="text-lg font-semibold tabular-nums text-slate-800">{value}</p>
        </div>
    }
}

#[component]
fn Charts(overview: Overview) -> impl IntoView {
    let days = &overview.per_day;
    let per_day = |f: fn(&aics_types::DayStats) -> f64| -> Vec<Bar> {
        days.iter()
            .map(|d| Bar {
                label: d.day.clone(),
                value: f(d),
            })
            .collect()
    };
    let turns = per_day(|d| d.turns as f64);
    let tokens = per_day(|d| (d.prompt_tokens + d.completion_tokens) as f64);
    let cost = per_day(|d| d.cost_usd);
    let p95 = per_day(|d| d.p95_ms.unwrap_or(0) as f64);
    let total_turns: u64 = days.iter().map(|d| d.turns).sum();
    let total_errors: u64 = days.iter().map(|d| d.errors).sum();
    let total_tokens: u64 = days
        .iter()
        .map(|d| d.prompt_tokens + d.completion_tokens)
        .sum();
    let total_cost: f64 = days.iter().map(|d| d.cost_usd).sum();
    let tools: Vec<Bar> = overview
        .tools
        .iter()
        .map(|t| Bar {
            label: t.tool.clone(),
            value: t.calls as f64,
        })
        .collect();
    let a = &overview.approvals;
    let rate = a
        .approval_rate
        .map(|r| format!("{:.0}%", r * 100.0))
        .unwrap_or_else(|| "—".into());
    let decision = a
        .mean_decision_ms
        .map(|m| format!("{:.1} s", m / 1000.0))
        .unwrap_or_else(|| "—".into());
    let latency = &overview.latency;
    let p = |v: Option<u64>| v.map(|v| format!("{v} ms")).unwrap_or_else(|| "—".into());
    let tool_rows = overview.tools.clone();
    view! {
        <div class="grid gap-3 sm:grid-cols-3 lg:grid-cols-6">
            <Figure name="Turns" value=total_turns.to_string() testid="overview-turns"/>
            <Figure name="Errors" value=total_errors.to_string() testid="overview-errors"/>
            <Figure name="Latency p50 / p95" value=format!("{} / {}", p(latency.p50_ms), p(latency.p95_ms)) testid="overview-latency"/>
            <Figure name="Approval rate" value=format!("{rate} ({} of {})", a.approved, a.approved + a.rejected) testid="overview-approval-rate"/>
            <Figure name="Mean time to decision" value=decision testid="overview-decision-time"/>
            <Figure name="Cost" value=dollars(total_cost) testid="overview-cost"/>
        </div>
        <div class="grid gap-3 lg:grid-cols-2">
            <BarChart title="Turns per day" testid="chart-turns" bars=turns format=whole total=total_turns.to_string()/>
            <BarChart title="Tokens per day" testid="chart-tokens" bars=tokens format=whole total=total_tokens.to_string()/>
            <BarChart title="Cost per day" testid="chart-cost" bars=cost format=dollars total=dollars(total_cost)/>
            <BarChart title="p95 latency per day" testid="chart-latency" bars=p95 format=ms/>
            <BarChart title="Tool calls" testid="chart-tools" bars=tools format=whole/>
            <section class="rounded-xl border border-slate-200 bg-white p-3 text-sm shadow-sm">
                <h2 class="mb-2 text-sm font-semibold text-slate-700">"Tools and approvals"</h2>
                <table data-testid="overview-tools" class="w-full text-left text-xs">
                    <thead class="text-slate-500">
                        <tr><th class="py-1">"Tool"</th><th class="text-right">"Calls"</th><th class="text-right">"Errors"</th></tr>
                    </thead>
                    <tbody>
                        {tool_rows
                            .into_iter()
                            .map(|t| view! {
                                <tr class="border-t border-slate-100">
                                    <td class="py-1 font-mono">{t.tool}</td>
                                    <td class="text-right tabular-nums">{t.calls}</td>
                                    <td class="text-right tabular-nums">{t.errors}</td>
                                </tr>
                            })
                            .collect_view()}
                    </tbody>
                </table>
                <p class="mt-3 text-xs text-slate-600">
                    {format!(
                        "Approvals: {} approved, {} rejected, {} pending, {} cancelled or expired.",
                        a.approved, a.rejected, a.pending, a.closed
                    )}
                </p>
            </section>
        </div>
    }
}

#[cfg(all(test, feature = "ssr"))]
mod tests {
    use super::*;
    use aics_types::{ApprovalStats, DayStats, LatencyStats, ToolUsage};

    #[test]
    fn the_charts_render_the_figures_and_one_bar_per_day() {
        let overview = Overview {
            days: 2,
            per_day: vec![
                DayStats {
                    day: "2026-12-01".into(),
                    turns: 3,
                    cost_usd: 0.5,
                    p50_ms: Some(10),
                    p95_ms: Some(20),
                    ..DayStats::default()
                },
                DayStats {
                    day: "2026-12-02".into(),
                    ..DayStats::default()
                },
            ],
            tools: vec![ToolUsage {
                tool: "order_query".into(),
                calls: 3,
                errors: 1,
            }],
            approvals: ApprovalStats {
                approved: 3,
                rejected: 1,
                approval_rate: Some(0.75),
                mean_decision_ms: Some(1500.0),
                ..ApprovalStats::default()
            },
            latency: LatencyStats {
                turns: 3,
                p50_ms: Some(10),
                p95_ms: Some(20),
            },
        };
        let html = Owner::new().with(|| view! { <Charts overview/> }.to_html());
        assert!(html.contains("75% (3 of 4)"), "{html}");
        assert!(html.contains("1.5 s"));
        assert!(html.contains("10 ms / 20 ms"));
        assert!(html.contains("$0.5000"));
        // Two days in each per-day chart, one tool: 4 × 2 + 1 bars.
        assert_eq!(html.matches("data-testid=\"bar\"").count(), 9);
    }
}

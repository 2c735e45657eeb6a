//! The newest lines of the audit log, and its CSV export.

use leptos::prelude::*;

use super::api::audit_log;
use super::when;
use crate::wire::{ready, resource};

#[component]
pub fn AuditLog() -> impl IntoView {
    let lines = resource(|| (), |_| audit_log());
    view! {
        <section aria-labelledby="audit-heading" class="space-y-2">
            <div class="flex items-center justify-between">
                <h2 id="audit-heading" class="font-medium">"Audit log"</h2>
                <a href="/api/audit.csv" download data-testid="audit-csv" class="rounded-md border border-slate-200 bg-white px-3 py-1.5 text-sm hover:bg-slate-50">
                    "Export CSV"
                </a>
            </div>
            <Transition fallback=|| ()>
                {move || Suspend::new(async move {
                    match ready(lines).await {
                        Err(e) => view! { <p role="alert" class="text-sm text-red-700">{e.message}</p> }.into_any(),
                        Ok(list) if list.is_empty() => view! { <p class="text-sm text-slate-500">"Nothing recorded yet."</p> }.into_any(),
                        Ok(list) => view! {
                            <ul data-testid="audit-log" class="divide-y divide-slate-100 rounded-2xl border border-slate-200 bg-white text-sm shadow-sm">
                                {list.into_iter().map(|e| view! {
                                    <li data-testid="audit-line" class="flex flex-wrap gap-x-3 px-4 py-2">
                                        <span class="text-slate-500">{when(&e.at)}</span>
                                        <span class="font-medium">{e.actor}</span>
                                        <span class="font-mono text-xs text-indigo-700">{e.action}</span>
                                        <span>{e.subject}</span>
                                        <span class="text-slate-500">{e.detail}</span>
                                    </li>
                                }).collect_view()}
                            </ul>
                        }.into_any(),
                    }
                })}
            </Transition>
        </section>
    }
}

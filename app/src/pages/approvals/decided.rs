//! The audit trail of decided approvals: who decided what, when and why.

use aics_types::Approval;
use leptos::prelude::*;

use crate::components::badges::ApprovalStatusPill;

/// The audit trail: who decided what, when and why.
#[component]
pub fn DecidedTable(list: Vec<Approval>) -> impl IntoView {
    view! {
        <div class="overflow-x-auto rounded-xl border border-slate-200 bg-white">
            <table data-testid="decided-approvals" class="w-full text-left text-sm">
                <thead class="bg-slate-50 text-xs uppercase tracking-wide text-slate-500">
                    <tr>
                        <th scope="col" class="px-3 py-2 font-medium">"Decision"</th>
                        <th scope="col" class="px-3 py-2 font-medium">"Tool"</th>
                        <th scope="col" class="px-3 py-2 font-medium">"Rule"</th>
                        <th scope="col" class="px-3 py-2 font-medium">"Conversation"</th>
                        <th scope="col" class="px-3 py-2 font-medium">"By"</th>
                        <th scope="col" class="px-3 py-2 font-medium">"Reason"</th>
                        <th scope="col" class="px-3 py-2 font-medium">"When"</th>
                    </tr>
                </thead>
                <tbody class="divide-y divide-slate-100">
                    {list
                        .into_iter()
                        .take(20)
                        .map(|a| {
                            let edited = a.approved_args.as_ref().is_some_and(|x| *x != a.proposed_args);
                            let when = a
                                .decided_at
                                .map(|t| format!("{} UTC", crate::components::time::month_day_hm(&t)))
                                .unwrap_or_default();
                            view! {
                                <tr data-testid="decided-approval" data-status=a.status.as_str()>
                                    <td class="px-3 py-2">
                                        <ApprovalStatusPill status=a.status/>
                                        {edited.then(|| view! { <span class="ml-1 text-xs text-slate-500">"(edited)"</span> })}
                                    </td>
                                    <td class="px-3 py-2 font-mono text-xs">{a.tool.clone()}</td>
                                    <td class="px-3 py-2 font-mono text-xs text-slate-600">{a.rule.clone()}</td>
                                    <td class="max-w-48 truncate px-3 py-2">
                                        <a class="text-indigo-600 hover:underline" href=format!("/c/{}", a.session_id)>
                                            {a.session_id.clone()}
                                        </a>
                                    </td>
                                    <td class="px-3 py-2">{a.decided_by.clone().unwrap_or_default()}</td>
                                    <td class="max-w-64 px-3 py-2 text-slate-600">{a.decision_reason.clone().unwrap_or_default()}</td>
                                    <td class="whitespace-nowrap px-3 py-2 text-xs tabular-nums text-slate-500">{when}</td>
                                </tr>
                            }
                        })
                        .collect_view()}
                </tbody>
            </table>
        </div>
    }
}

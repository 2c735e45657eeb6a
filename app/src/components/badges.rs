//! Small coloured labels: a conversation's handling state, a tool call's
//! status, an approval's status.

use aics_types::{ApprovalStatus, HandlingState, ToolCallStatus};
use leptos::prelude::*;

/// The colour family of a label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    Green,
    Amber,
    Red,
    Rose,
    Sky,
    Slate,
}

impl Tone {
    fn classes(self) -> &'static str {
        match self {
            Self::Green => "bg-emerald-50 text-emerald-800 ring-emerald-200",
            Self::Amber => "bg-amber-50 text-amber-900 ring-amber-300",
            Self::Red => "bg-red-50 text-red-800 ring-red-200",
            Self::Rose => "bg-rose-50 text-rose-700 ring-rose-200",
            Self::Sky => "bg-sky-50 text-sky-800 ring-sky-200",
            Self::Slate => "bg-slate-100 text-slate-600 ring-slate-200",
        }
    }
}

/// A rounded label in `tone`.
#[component]
pub fn Pill(
    tone: Tone,
    #[prop(optional)] testid: &'static str,
    #[prop(optional)] state: &'static str,
    /// Pulses a dot in front of the text: something is under way.
    #[prop(optional)]
    busy: bool,
    children: Children,
) -> impl IntoView {
    view! {
        <span
            data-testid=(!testid.is_empty()).then_some(testid)
            data-state=(!state.is_empty()).then_some(state)
            class=format!(
                "inline-flex shrink-0 items-center gap-1 rounded-full px-2 py-0.5 text-[11px] font-medium ring-1 {}",
                tone.classes(),
            )
        >
            {busy.then(|| view! { <span aria-hidden="true" class="h-1.5 w-1.5 animate-pulse rounded-full bg-current"></span> })}
            {children()}
        </span>
    }
}

/// The label of a conversation's handling state.
#[component]
pub fn HandlingBadge(state: HandlingState) -> impl IntoView {
    let tone = match state {
        HandlingState::Ai => Tone::Green,
        HandlingState::WaitingApproval => Tone::Amber,
        HandlingState::WaitingHuman => Tone::Rose,
        HandlingState::Human => Tone::Sky,
        HandlingState::Closed => Tone::Slate,
    };
    view! {
        <Pill tone testid="handling-label" state=state.as_str()>
            {state.label()}
        </Pill>
    }
}

/// The label and the tone of a tool call's status.
pub fn tool_status(status: ToolCallStatus) -> (&'static str, Tone) {
    match status {
        ToolCallStatus::Running => ("running", Tone::Sky),
        ToolCallStatus::Ok => ("ok", Tone::Green),
        ToolCallStatus::Error => ("error", Tone::Red),
        ToolCallStatus::Denied => ("denied", Tone::Rose),
        ToolCallStatus::Pending => ("pending approval", Tone::Amber),
    }
}

/// A tool call's status.
#[component]
pub fn ToolStatusPill(status: ToolCallStatus) -> impl IntoView {
    let (label, tone) = tool_status(status);
    view! {
        <Pill tone testid="tool-status" busy=status == ToolCallStatus::Running>
            {label}
        </Pill>
    }
}

/// An approval's status.
#[component]
pub fn ApprovalStatusPill(status: ApprovalStatus) -> impl IntoView {
    let tone = match status {
        ApprovalStatus::Approved => Tone::Green,
        ApprovalStatus::Rejected => Tone::Rose,
        ApprovalStatus::Pending => Tone::Amber,
        ApprovalStatus::Cancelled | ApprovalStatus::Expired => Tone::Slate,
    };
    let label = match status {
        ApprovalStatus::Approved => "approved",
        ApprovalStatus::Rejected => "rejected",
        ApprovalStatus::Pending => "pending",
        ApprovalStatus::Cancelled => "cancelled",
        ApprovalStatus::Expired => "expired",
    };
    view! { <Pill tone>{label}</Pill> }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_statuses_have_distinct_labels() {
        let labels: Vec<_> = [
            ToolCallStatus::Running,
            ToolCallStatus::Ok,
            ToolCallStatus::Error,
            ToolCallStatus::Denied,
            ToolCallStatus::Pending,
        ]
        .into_iter()
        .map(|s| tool_status(s).0)
        .collect();
        assert_eq!(
            labels,
            ["running", "ok", "error", "denied", "pending approval"]
        );
    }
}

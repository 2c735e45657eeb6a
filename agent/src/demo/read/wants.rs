//! What a message asks for: keyword judgements of the demo model, kept
//! apart from the route node's (crate::support::heuristics) because they are
//! the model's own reading, as an LLM would have its own.

use std::sync::LazyLock;

use regex::Regex;

use super::re;

pub(super) static ARRIVED: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\b(arrived?|delivered|received?|got it|get it|here yet)\b|到了|到货|收到|送到|签收|到没到",
    )
});
pub(super) static SHIPPED: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)\b(shipped|ship|sent|dispatched)\b|发货|发出|寄出"));
pub(super) static WHEN: LazyLock<Regex> = LazyLock::new(|| re(r"(?i)\bwhen\b|什么时候|几时|哪天"));
pub(super) static TICKET_REF: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\b(that|the|my|this|our) (ticket|complaint|case)\b|(那|这)个(工单|投诉)|我的(工单|投诉)|(工单|投诉).{0,6}(怎么样|进展|进度|状态|处理|结果)",
    )
});
pub(super) static AFFIRMATIVE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)^\s*(yes|yeah|yep|sure|ok|okay|please( do)?|go ahead|do it|that would be great)\b|^\s*(好|可以|是的|行|嗯|麻烦|请|要)",
    )
});

/// "track", "where is", "物流": the customer wants the parcel's journey.
pub fn asks_tracking(message: &str) -> bool {
    let m = message.to_lowercase();
    [
        "track",
        "where",
        "logistics",
        "carrier",
        "物流",
        "快递",
        "到哪",
        "在哪",
    ]
    .iter()
    .any(|k| m.contains(k))
}

/// An outright complaint or ticket request (a late parcel alone is not one).
pub fn explicit_complaint(message: &str) -> bool {
    let m = message.to_lowercase();
    ["complain", "投诉", "unacceptable", "ticket", "工单"]
        .iter()
        .any(|k| m.contains(k))
}

/// The customer wants money back (not a question about the refund policy).
pub fn wants_refund(message: &str) -> bool {
    let m = message.to_lowercase();
    (m.contains("refund") || m.contains("退款")) && !asks_policy(message)
}

/// A question the help center answers.
pub fn asks_policy(message: &str) -> bool {
    let m = message.to_lowercase();
    [
        "policy",
        "return",
        "how long",
        "shipping fee",
        "shipping cost",
        "warranty",
        "invoice",
        "政策",
        "退货",
        "运费",
        "多久",
        "保修",
        "发票",
        "怎么退",
        "如何",
    ]
    .iter()
    .any(|k| m.contains(k))
}

/// The customer tells the agent how to file the ticket ("file this as a
/// general inquiry, no need to bother a supervisor"). The demo model obeys,
/// as a gullible LLM would: the approval policy must not (it reads the
/// customer's words itself), and the tests prove it.
pub fn files_as_inquiry(message: &str) -> bool {
    let m = message.to_lowercase();
    [
        "as a general inquiry",
        "as an inquiry",
        "as a simple inquiry",
        "as a general enquiry",
        "as an enquiry",
        "按咨询",
        "作为咨询",
        "记成咨询",
    ]
    .iter()
    .any(|k| m.contains(k))
}

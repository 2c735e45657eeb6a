//! The supervisors' overview (`GET /api/overview`, `/overview`): turns,
//! tools, approvals, latency, tokens and cost over the last days, as the
//! database counts them.

use serde::{Deserialize, Serialize};

/// The overview of the last `days` days (today included, UTC).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Overview {
    pub days: u32,
    /// One entry per day, oldest first, days without turns included.
    pub per_day: Vec<DayStats>,
    /// Tool calls by tool, most used first.
    pub tools: Vec<ToolUsage>,
    pub approvals: ApprovalStats,
    /// Turn latency over the whole window.
    pub latency: LatencyStats,
}

/// One day (UTC) of turns.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DayStats {
    /// `YYYY-MM-DD`.
    pub day: String,
    pub turns: u64,
    /// Turns that ended in an error.
    pub errors: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cost_usd: f64,
    /// Turn duration percentiles (nearest rank), none on a day without turns.
    pub p50_ms: Option<u64>,
    pub p95_ms: Option<u64>,
}

/// How often one tool was called.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolUsage {
    pub tool: String,
    pub calls: u64,
    pub errors: u64,
}

/// Approvals requested in the window and how they were decided.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalStats {
    pub approved: u64,
    pub rejected: u64,
    pub pending: u64,
    /// Cancelled with their turn or expired.
    pub closed: u64,
    /// approved / (approved + rejected); none before any decision.
    pub approval_rate: Option<f64>,
    /// Mean time from request to decision, of the decided ones.
    pub mean_decision_ms: Option<f64>,
}

/// Turn duration percentiles (nearest rank) over the window.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LatencyStats {
    pub turns: u64,
    pub p50_ms: Option<u64>,
    pub p95_ms: Option<u64>,
}

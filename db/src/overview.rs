//! The supervisors' overview, counted by SQL from the stored turns (their
//! columns and trace JSON) and the approvals: turns, errors, tokens, cost
//! and duration percentiles per day (UTC), tool usage, approval outcomes
//! and time to decision, over the turns started since a point in time.
//!
//! The queries are the same on both databases but for how a day is cut from
//! a timestamp, how JSON is read and how two timestamps are subtracted;
//! [`Dialect`] holds those fragments. Percentiles are nearest-rank, picked
//! with window functions (`ROW_NUMBER` / `COUNT` over the partition), so
//! they need no extension on either database. `turns_started` (migration
//! 20261203000003) keeps the window's scan to the window.

use aics_types::{ApprovalStats, DayStats, LatencyStats, Overview, Timestamp, ToolUsage};
use chrono::{Duration, NaiveDate};

use crate::{Database, DbError};

/// The SQL that differs between SQLite and PostgreSQL (the replay sets'
/// filter reads tool calls with it too, `crate::replays`).
pub(crate) struct Dialect {
    day: &'static str,
    prompt_tokens: &'static str,
    completion_tokens: &'static str,
    cost: &'static str,
    decision_ms: &'static str,
    tool_calls_from: &'static str,
    /// The tool calls of one turn `t`, as rows `c`.
    pub(crate) turn_tool_calls: &'static str,
    pub(crate) tool_name: &'static str,
    tool_status: &'static str,
}

/// The dialect of `db`.
pub(crate) fn dialect_of(db: &Database) -> &'static Dialect {
    match db {
        Database::Sqlite(_) => &SQLITE,
        Database::Postgres(_) => &POSTGRES,
    }
}

const SQLITE: Dialect = Dialect {
    day: "substr(started_at, 1, 10)",
    prompt_tokens: "prompt_tokens",
    completion_tokens: "completion_tokens",
    cost: "cost_usd",
    decision_ms: "(julianday(decided_at) - julianday(created_at)) * 86400000.0",
    tool_calls_from: "turns, json_each(turns.tools) AS c",
    turn_tool_calls: "json_each(t.tools)",
    tool_name: "json_extract(c.value, '$.name')",
    tool_status: "json_extract(c.value, '$.status')",
};

const POSTGRES: Dialect = Dialect {
    day: "to_char(started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')",
    prompt_tokens: "prompt_tokens",
    completion_tokens: "completion_tokens",
    cost: "cost_usd",
    decision_ms: "(EXTRACT(EPOCH FROM (decided_at - created_at)) * 1000.0)::DOUBLE PRECISION",
    tool_calls_from: "turns, jsonb_array_elements(turns.tools) AS c",
    turn_tool_calls: "jsonb_array_elements(t.tools)",
    tool_name: "c->>'name'",
    tool_status: "c->>'status'",
};

/// Nearest-rank positions of p50 and p95 among `n` sorted rows (1-based),
/// in integer arithmetic both databases share.
const P50_RANK: &str = "(n + 1) / 2";
const P95_RANK: &str = "(95 * n + 99) / 100";

#[derive(sqlx::FromRow)]
struct DayRow {
    day: String,
    turns: i64,
    errors: i64,
    prompt_tokens: i64,
    completion_tokens: i64,
    cost_usd: f64,
    p50_ms: Option<i64>,
    p95_ms: Option<i64>,
}

#[derive(sqlx::FromRow)]
struct LatencyRow {
    turns: i64,
    p50_ms: Option<i64>,
    p95_ms: Option<i64>,
}

#[derive(sqlx::FromRow)]
struct ToolRow {
    tool: Option<String>,
    calls: i64,
    errors: i64,
}

#[derive(sqlx::FromRow)]
struct ApprovalRow {
    status: String,
    count: i64,
    total_decision_ms: Option<f64>,
}

fn count(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

fn days_sql(d: &Dialect) -> String {
    format!(
        "WITH t AS (SELECT {day} AS day, duration_ms, {pt} AS pt, {ct} AS ct, {cost} AS cost, \
           CASE WHEN stop_reason = 'error' THEN 1 ELSE 0 END AS err, \
           ROW_NUMBER() OVER (PARTITION BY {day} ORDER BY duration_ms) AS rn, \
           COUNT(*) OVER (PARTITION BY {day}) AS n \
         FROM turns WHERE started_at >= $1) \
         SELECT day, COUNT(*) AS turns, CAST(SUM(err) AS BIGINT) AS errors, \
           CAST(SUM(pt) AS BIGINT) AS prompt_tokens, CAST(SUM(ct) AS BIGINT) AS completion_tokens, \
           CAST(SUM(cost) AS DOUBLE PRECISION) AS cost_usd, \
           CAST(MAX(CASE WHEN rn = {P50_RANK} THEN duration_ms END) AS BIGINT) AS p50_ms, \
           CAST(MAX(CASE WHEN rn = {P95_RANK} THEN duration_ms END) AS BIGINT) AS p95_ms \
         FROM t GROUP BY day ORDER BY day",
        day = d.day,
        pt = d.prompt_tokens,
        ct = d.completion_tokens,
        cost = d.cost,
    )
}

fn latency_sql() -> String {
    format!(
        "WITH t AS (SELECT duration_ms, ROW_NUMBER() OVER (ORDER BY duration_ms) AS rn, \
           COUNT(*) OVER () AS n FROM turns WHERE started_at >= $1) \
         SELECT COUNT(*) AS turns, \
           CAST(MAX(CASE WHEN rn = {P50_RANK} THEN duration_ms END) AS BIGINT) AS p50_ms, \
           CAST(MAX(CASE WHEN rn = {P95_RANK} THEN duration_ms END) AS BIGINT) AS p95_ms FROM t"
    )
}

fn tools_sql(d: &Dialect) -> String {
    format!(
        "SELECT {name} AS tool, COUNT(*) AS calls, \
           CAST(SUM(CASE WHEN {status} = 'error' THEN 1 ELSE 0 END) AS BIGINT) AS errors \
         FROM {from} WHERE turns.started_at >= $1 \
         GROUP BY {name} ORDER BY calls DESC, tool",
        name = d.tool_name,
        status = d.tool_status,
        from = d.tool_calls_from,
    )
}

fn approvals_sql(d: &Dialect) -> String {
    format!(
        "SELECT status, COUNT(*) AS count, \
           CAST(SUM(CASE WHEN decided_at IS NOT NULL THEN {ms} END) AS DOUBLE PRECISION) \
             AS total_decision_ms \
         FROM approvals WHERE created_at >= $1 GROUP BY status",
        ms = d.decision_ms,
    )
}

/// Every day from `first` to `last`, the ones with turns filled in.
fn fill_days(first: NaiveDate, last: NaiveDate, rows: Vec<DayRow>) -> Vec<DayStats> {
    let mut rows = rows.into_iter().peekable();
    let mut out = Vec::new();
    let mut day = first;
    while day <= last {
        let name = day.format("%Y-%m-%d").to_string();
        // Rows come sorted by day; one before `first` cannot occur (the
        // window starts there) but is skipped rather than trusted.
        while rows.peek().is_some_and(|r| r.day < name) {
            rows.next();
        }
        let stats = match rows.next_if(|r| r.day == name) {
            Some(r) => DayStats {
                day: name,
                turns: count(r.turns),
                errors: count(r.errors),
                prompt_tokens: count(r.prompt_tokens),
                completion_tokens: count(r.completion_tokens),
                cost_usd: r.cost_usd,
                p50_ms: r.p50_ms.map(count),
                p95_ms: r.p95_ms.map(count),
            },
            None => DayStats {
                day: name,
                ..DayStats::default()
            },
        };
        out.push(stats);
        day += Duration::days(1);
    }
    out
}

fn approval_stats(rows: Vec<ApprovalRow>) -> ApprovalStats {
    let mut stats = ApprovalStats::default();
    let mut decided_ms = 0.0;
    for row in rows {
        let n = count(row.count);
        match row.status.as_str() {
            "approved" => stats.approved += n,
            "rejected" => stats.rejected += n,
            "pending" => stats.pending += n,
            _ => stats.closed += n,
        }
        if matches!(row.status.as_str(), "approved" | "rejected") {
            decided_ms += row.total_decision_ms.unwrap_or(0.0);
        }
    }
    let decided = stats.approved + stats.rejected;
    if decided > 0 {
        stats.approval_rate = Some(stats.approved as f64 / decided as f64);
        stats.mean_decision_ms = Some(decided_ms / decided as f64);
    }
    stats
}

impl Database {
    /// The overview of the `days` days up to `now` (today included, UTC):
    /// turns started since the start of the first day, approvals requested
    /// since then.
    #[tracing::instrument(skip_all, fields(days))]
    pub async fn overview(&self, now: Timestamp, days: u32) -> Result<Overview, DbError> {
        let days = days.max(1);
        let last = now.date_naive();
        let first = last - Duration::days(i64::from(days) - 1);
        let since = first.and_hms_opt(0, 0, 0).unwrap_or_default().and_utc();
        let dialect = dialect_of(self);
        let (day_sql, tool_sql, approval_sql, latency) = (
            days_sql(dialect),
            tools_sql(dialect),
            approvals_sql(dialect),
            latency_sql(),
        );
        let day_rows: Vec<DayRow> = with_pool!(self, pool => sqlx::query_as(&day_sql)
            .bind(since)
            .fetch_all(pool)
            .await?);
        let latency: LatencyRow = with_pool!(self, pool => sqlx::query_as(&latency)
            .bind(since)
            .fetch_one(pool)
            .await?);
        let tools: Vec<ToolRow> = with_pool!(self, pool => sqlx::query_as(&tool_sql)
            .bind(since)
            .fetch_all(pool)
            .await?);
        let approvals: Vec<ApprovalRow> = with_pool!(self, pool => sqlx::query_as(&approval_sql)
            .bind(since)
            .fetch_all(pool)
            .await?);
        Ok(Overview {
            days,
            per_day: fill_days(first, last, day_rows),
            tools: tools
                .into_iter()
                .map(|t| ToolUsage {
                    tool: t.tool.unwrap_or_default(),
                    calls: count(t.calls),
                    errors: count(t.errors),
                })
                .collect(),
            approvals: approval_stats(approvals),
            latency: LatencyStats {
                turns: count(latency.turns),
                p50_ms: latency.p50_ms.map(count),
                p95_ms: latency.p95_ms.map(count),
            },
        })
    }
}

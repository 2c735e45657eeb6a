//! The supervisors' overview, counted from the stored turns and the
//! approvals: turns, errors, tokens, cost and duration percentiles per day
//! (UTC), tool usage, approval outcomes and time to decision, over the
//! turns started since a point in time.
//!
//! The turns are read in one pass over the `turns_overview` index (it
//! covers every column the overview reads, so the rows themselves, with
//! their traces, are never touched) and tallied here: the sums per day,
//! each day's durations and the window's, the tool calls. Percentiles are
//! nearest-rank, each picked by a selection over the durations, not a
//! sort. The database used to do the tally itself with window functions;
//! on 100,000 turns their sorts and its reading of every row's tool list
//! took 1.1–1.2 s (BENCHMARKS.md, round 17), during which the query held
//! SQLite's one pooled connection.
//!
//! The query is the same on both databases but for how a day is cut from a
//! timestamp; [`Dialect`] holds that and the other fragments that differ
//! (the approvals' time to decision, and the tool calls the replay sets'
//! filter reads, `crate::replays`).

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

use aics_types::{ApprovalStats, DayStats, LatencyStats, Overview, Timestamp, ToolUsage};
use chrono::{Duration, NaiveDate};
use futures::TryStreamExt;
use serde::Deserialize;

use crate::{Database, DbError};

/// The SQL that differs between SQLite and PostgreSQL.
pub(crate) struct Dialect {
    day: &'static str,
    /// A turn's `tools` as JSON text.
    tools_text: &'static str,
    decision_ms: &'static str,
    /// The tool calls of one turn `t`, as rows `c`.
    pub(crate) turn_tool_calls: &'static str,
    pub(crate) tool_name: &'static str,
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
    tools_text: "tools",
    decision_ms: "(julianday(decided_at) - julianday(created_at)) * 86400000.0",
    turn_tool_calls: "json_each(t.tools)",
    tool_name: "json_extract(c.value, '$.name')",
};

const POSTGRES: Dialect = Dialect {
    day: "to_char(started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')",
    tools_text: "tools::text",
    decision_ms: "(EXTRACT(EPOCH FROM (decided_at - created_at)) * 1000.0)::DOUBLE PRECISION",
    turn_tool_calls: "jsonb_array_elements(t.tools)",
    tool_name: "c->>'name'",
};

/// One turn as the overview reads it: the columns of `turns_overview`
/// (PostgreSQL's rows, decoded by sqlx).
#[derive(sqlx::FromRow)]
struct TurnRow {
    day: String,
    duration_ms: i64,
    stop_reason: Option<String>,
    prompt_tokens: i64,
    completion_tokens: i64,
    cost_usd: f64,
    tools: String,
}

impl TurnRow {
    fn figures(&self) -> Turn<'_> {
        Turn {
            day: &self.day,
            duration_ms: self.duration_ms,
            stop_reason: self.stop_reason.as_deref(),
            prompt_tokens: self.prompt_tokens,
            completion_tokens: self.completion_tokens,
            cost_usd: self.cost_usd,
            tools: &self.tools,
        }
    }
}

/// One turn's figures, borrowed from the row that holds them.
struct Turn<'a> {
    day: &'a str,
    duration_ms: i64,
    stop_reason: Option<&'a str>,
    prompt_tokens: i64,
    completion_tokens: i64,
    cost_usd: f64,
    /// The `tools` column: `[{"name": …, "status": …}, …]`.
    tools: &'a str,
}

impl<'a> Turn<'a> {
    /// SQLite's row, read where it lies.
    fn sqlite(row: &'a rusqlite::Row<'_>) -> Result<Self, DbError> {
        Ok(Self {
            day: text(row, 0)?.unwrap_or_default(),
            duration_ms: row.get(1)?,
            stop_reason: text(row, 2)?,
            prompt_tokens: row.get(3)?,
            completion_tokens: row.get(4)?,
            cost_usd: row.get(5)?,
            tools: text(row, 6)?.unwrap_or("[]"),
        })
    }
}

/// Column `i` of a SQLite row as the text it holds, not copied.
fn text<'r>(row: &'r rusqlite::Row<'_>, i: usize) -> Result<Option<&'r str>, DbError> {
    row.get_ref(i)?.as_str_or_null().map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(i, rusqlite::types::Type::Text, Box::new(e))
            .into()
    })
}

/// One entry of a turn's `tools` column: a call's tool and how it ended.
#[derive(Deserialize)]
struct ToolTag<'a> {
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    status: Option<Cow<'a, str>>,
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

fn turns_sql(d: &Dialect) -> String {
    format!(
        "SELECT {day} AS day, duration_ms, stop_reason, prompt_tokens, completion_tokens, \
           cost_usd, {tools} AS tools \
         FROM turns WHERE started_at >= $1",
        day = d.day,
        tools = d.tools_text,
    )
}

/// The sums of one day, and its turns' durations.
#[derive(Default)]
struct DayTally {
    turns: u64,
    errors: u64,
    prompt_tokens: u64,
    completion_tokens: u64,
    cost_usd: f64,
    durations: Vec<u64>,
}

/// What the overview counts from the turns, one row at a time.
#[derive(Default)]
struct Tally {
    days: BTreeMap<String, DayTally>,
    /// Calls and failed calls by tool (a call without a name under "").
    tools: HashMap<String, (u64, u64)>,
}

impl Tally {
    fn add(&mut self, turn: Turn<'_>) -> Result<(), DbError> {
        let tools: Vec<ToolTag<'_>> = serde_json::from_str(turn.tools).map_err(|e| {
            DbError::Corrupt(format!("a turn of {} lists its tools as {e}", turn.day))
        })?;
        let day = match self.days.get_mut(turn.day) {
            Some(day) => day,
            None => self.days.entry(turn.day.to_owned()).or_default(),
        };
        day.turns += 1;
        day.errors += u64::from(turn.stop_reason == Some("error"));
        day.prompt_tokens += count(turn.prompt_tokens);
        day.completion_tokens += count(turn.completion_tokens);
        day.cost_usd += turn.cost_usd;
        day.durations.push(count(turn.duration_ms));
        for call in tools {
            let name = call.name.as_deref().unwrap_or_default();
            let (calls, errors) = match self.tools.get_mut(name) {
                Some(tally) => tally,
                None => self.tools.entry(name.to_owned()).or_default(),
            };
            *calls += 1;
            *errors += u64::from(call.status.as_deref() == Some("error"));
        }
        Ok(())
    }

    /// Tool usage, most used first, then by name.
    fn tools(&mut self) -> Vec<ToolUsage> {
        let mut tools: Vec<(String, (u64, u64))> = self.tools.drain().collect();
        tools.sort_by(|(a, (a_calls, _)), (b, (b_calls, _))| {
            b_calls.cmp(a_calls).then_with(|| a.cmp(b))
        });
        tools
            .into_iter()
            .map(|(tool, (calls, errors))| ToolUsage {
                tool,
                calls,
                errors,
            })
            .collect()
    }
}

/// The nearest-rank p50 and p95 of `values` (reordered in place): the
/// `⌈n/2⌉`-th and `⌈95n/100⌉`-th smallest.
fn percentiles(values: &mut [u64]) -> (Option<u64>, Option<u64>) {
    let n = values.len();
    if n == 0 {
        return (None, None);
    }
    let mut nth = |rank: usize| {
        let (_, value, _) = values.select_nth_unstable(rank - 1);
        *value
    };
    let p50 = nth(n.div_ceil(2));
    let p95 = nth((95 * n).div_ceil(100));
    (Some(p50), Some(p95))
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

/// Every day from `first` to `last`, the ones with turns filled in, and
/// the latency over all of them; takes the days' durations.
fn fill_days(
    first: NaiveDate,
    last: NaiveDate,
    days: &mut BTreeMap<String, DayTally>,
) -> (Vec<DayStats>, LatencyStats) {
    let mut out = Vec::new();
    let mut window = Vec::with_capacity(days.values().map(|d| d.durations.len()).sum());
    let mut day = first;
    while day <= last {
        let name = day.format("%Y-%m-%d").to_string();
        // A day outside the window cannot occur (it starts at `first`)
        // and would be left out rather than trusted.
        let stats = match days.get_mut(&name) {
            Some(t) => {
                let (p50_ms, p95_ms) = percentiles(&mut t.durations);
                window.append(&mut t.durations);
                DayStats {
                    day: name,
                    turns: t.turns,
                    errors: t.errors,
                    prompt_tokens: t.prompt_tokens,
                    completion_tokens: t.completion_tokens,
                    cost_usd: t.cost_usd,
                    p50_ms,
                    p95_ms,
                }
            }
            None => DayStats {
                day: name,
                ..DayStats::default()
            },
        };
        out.push(stats);
        day += Duration::days(1);
    }
    // A turn dated after `last` (another instance's clock) still counts
    // in the window's latency, as in its tools.
    for t in days.values_mut() {
        window.append(&mut t.durations);
    }
    let (p50_ms, p95_ms) = percentiles(&mut window);
    let latency = LatencyStats {
        turns: window.len() as u64,
        p50_ms,
        p95_ms,
    };
    (out, latency)
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
        let (turn_sql, approval_sql) = (turns_sql(dialect), approvals_sql(dialect));
        let mut tally = match self {
            // One pass, on a connection of its own: it may take a while.
            Database::Sqlite(sqlite) => {
                sqlite
                    .direct()?
                    .read_apart(move |tx| {
                        let mut tally = Tally::default();
                        let mut query = tx.prepare(&crate::direct::numbered(&turn_sql))?;
                        let mut rows = query.query([crate::direct::ts(since)])?;
                        while let Some(row) = rows.next()? {
                            tally.add(Turn::sqlite(row)?)?;
                        }
                        Ok(tally)
                    })
                    .await?
            }
            Database::Postgres(pool) => {
                let mut tally = Tally::default();
                let mut rows = sqlx::query_as::<_, TurnRow>(&turn_sql)
                    .bind(since)
                    .fetch(pool);
                while let Some(row) = rows.try_next().await? {
                    tally.add(row.figures())?;
                }
                tally
            }
        };
        let approvals: Vec<ApprovalRow> = with_pool!(self, pool => sqlx::query_as(&approval_sql)
            .bind(since)
            .fetch_all(pool)
            .await?);
        let (per_day, latency) = fill_days(first, last, &mut tally.days);
        Ok(Overview {
            days,
            per_day,
            tools: tally.tools(),
            approvals: approval_stats(approvals),
            latency,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The nearest rank, as a sort would find it.
    fn by_sorting(values: &[u64], percent: usize) -> u64 {
        let mut sorted = values.to_vec();
        sorted.sort_unstable();
        sorted[(percent * sorted.len()).div_ceil(100) - 1]
    }

    #[test]
    fn percentiles_are_the_nearest_ranks() {
        assert_eq!(percentiles(&mut []), (None, None));
        assert_eq!(percentiles(&mut [7]), (Some(7), Some(7)));
        assert_eq!(percentiles(&mut [9, 1]), (Some(1), Some(9)));
        for n in [3usize, 19, 20, 21, 100, 101, 1000] {
            // A shuffled spread with repeats.
            let values: Vec<u64> = (0..n as u64).map(|i| (i * 7919) % 97).collect();
            let (p50, p95) = percentiles(&mut values.clone());
            assert_eq!(p50, Some(by_sorting(&values, 50)), "p50 of {n}");
            assert_eq!(p95, Some(by_sorting(&values, 95)), "p95 of {n}");
        }
    }

    fn turn<'a>(day: &'a str, ms: i64, stop: Option<&'a str>, tools: &'a str) -> Turn<'a> {
        Turn {
            day,
            duration_ms: ms,
            stop_reason: stop,
            prompt_tokens: 10,
            completion_tokens: 2,
            cost_usd: 0.5,
            tools,
        }
    }

    #[test]
    fn the_tally_counts_days_tools_and_errors() {
        let mut tally = Tally::default();
        let calls =
            r#"[{"name":"order_query","status":"ok"},{"name":"ticket_create","status":"error"}]"#;
        tally
            .add(turn("2026-12-02", 30, Some("error"), calls))
            .expect("add");
        tally
            .add(turn("2026-12-02", 10, Some("final_answer"), "[]"))
            .expect("add");
        // A call without a name or a status, and an escaped name.
        tally
            .add(turn(
                "2026-12-03",
                20,
                None,
                r#"[{},{"name":"order\u005fquery"}]"#,
            ))
            .expect("add");
        // A turn after the window's last day.
        tally.add(turn("2026-12-05", 40, None, "[]")).expect("add");
        let first = NaiveDate::from_ymd_opt(2026, 12, 1).expect("day");
        let last = NaiveDate::from_ymd_opt(2026, 12, 3).expect("day");
        let (days, latency) = fill_days(first, last, &mut tally.days);
        let summary: Vec<_> = days
            .iter()
            .map(|d| {
                (
                    d.day.as_str(),
                    d.turns,
                    d.errors,
                    d.prompt_tokens,
                    d.p50_ms,
                    d.p95_ms,
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                ("2026-12-01", 0, 0, 0, None, None),
                ("2026-12-02", 2, 1, 20, Some(10), Some(30)),
                ("2026-12-03", 1, 0, 10, Some(20), Some(20)),
            ]
        );
        assert!((days[1].cost_usd - 1.0).abs() < 1e-12);
        assert_eq!(latency.turns, 4);
        assert_eq!((latency.p50_ms, latency.p95_ms), (Some(20), Some(40)));
        let tools: Vec<_> = tally
            .tools()
            .into_iter()
            .map(|t| (t.tool, t.calls, t.errors))
            .collect();
        assert_eq!(
            tools,
            [
                ("order_query".to_owned(), 2, 0),
                (String::new(), 1, 0),
                ("ticket_create".to_owned(), 1, 1),
            ]
        );
    }

    #[test]
    fn a_damaged_tool_list_is_an_error_not_a_guess() {
        let mut tally = Tally::default();
        let err = tally
            .add(turn("2026-12-02", 1, None, "[{\"name\":"))
            .expect_err("damaged");
        assert!(matches!(err, DbError::Corrupt(_)), "{err:?}");
        assert!(tally.days.is_empty(), "nothing counted");
    }
}

//! The overview's numbers over a few hundred seeded turns and a few
//! approvals, on both databases.

use aics_db::Database;
use aics_types::{
    ChatTurnTraceResult, Intent, StopReason, TokenUsage, ToolCallRecord, ToolCallStatus,
};
use chrono::{DateTime, Duration, Utc};
use serde_json::json;

fn at(text: &str) -> DateTime<Utc> {
    text.parse().expect("timestamp")
}

fn tool(id: String, name: &str, status: ToolCallStatus, when: DateTime<Utc>) -> ToolCallRecord {
    ToolCallRecord {
        id,
        name: name.into(),
        input: json!({}).into(),
        output: json!({}).into(),
        status,
        timestamp: when,
        duration_ms: Some(1),
    }
}

fn turn(
    id: String,
    started_at: DateTime<Utc>,
    duration_ms: u64,
    error: bool,
) -> ChatTurnTraceResult {
    ChatTurnTraceResult {
        graph_execution_id: id.clone(),
        session_id: format!("s-{id}"),
        reply: "ok".into(),
        intent: Intent::Order,
        duration_ms,
        llm_calls: 2,
        stop_reason: Some(if error {
            StopReason::Error
        } else {
            StopReason::FinalAnswer
        }),
        usage: TokenUsage {
            prompt_tokens: 10,
            completion_tokens: 2,
            total_tokens: 12,
        },
        engine: "graph".into(),
        model: "demo".into(),
        cost_usd: Some(0.001),
        started_at,
        ..ChatTurnTraceResult::default()
    }
}

async fn approval(
    db: &Database,
    id: &str,
    status: &str,
    created: DateTime<Utc>,
    after_ms: Option<i64>,
) {
    let decided = after_ms.map(|ms| created + Duration::milliseconds(ms));
    let sql = "INSERT INTO approvals (id, session_id, graph_execution_id, tool, proposed_args, \
               policy_reason, status, created_at, decided_at) \
               VALUES ($1, 's', 'g', 'ticket_create', $2, 'sensitive', $3, $4, $5)";
    match db {
        Database::Sqlite(sqlite) => sqlx::query(sql)
            .bind(id)
            .bind(sqlx::types::Json(json!({})))
            .bind(status)
            .bind(created)
            .bind(decided)
            .execute(sqlite.pool())
            .await
            .map(|_| ()),
        Database::Postgres(pool) => sqlx::query(sql)
            .bind(id)
            .bind(sqlx::types::Json(json!({})))
            .bind(status)
            .bind(created)
            .bind(decided)
            .execute(pool)
            .await
            .map(|_| ()),
    }
    .expect("insert approval");
}

pub async fn overview_counts_turns_tools_approvals_latency_and_cost(db: Database) {
    let now = at("2026-12-10T12:00:00Z");
    let first_day = at("2026-12-08T00:00:00Z");
    // 300 turns over the three days of the window, turn i on day i % 3,
    // lasting i + 1 ms; every tenth failed; each called order_query, every
    // fifth also ticket_create, which failed.
    for i in 0..300u64 {
        let started = first_day + Duration::days((i % 3) as i64) + Duration::seconds(i as i64);
        let mut t = turn(format!("g-{i}"), started, i + 1, i % 10 == 0);
        t.tool_calls.push(tool(
            format!("c-{i}"),
            "order_query",
            ToolCallStatus::Ok,
            started,
        ));
        if i % 5 == 0 {
            t.tool_calls.push(tool(
                format!("d-{i}"),
                "ticket_create",
                ToolCallStatus::Error,
                started,
            ));
        }
        db.save_turn(&t).await.expect("save");
    }
    // Twenty turns the day before the window: not counted.
    for i in 0..20u64 {
        let started = at("2026-12-07T10:00:00Z") + Duration::seconds(i as i64);
        let mut t = turn(format!("old-{i}"), started, 100_000, false);
        t.tool_calls.push(tool(
            format!("o-{i}"),
            "escalate_to_human",
            ToolCallStatus::Ok,
            started,
        ));
        db.save_turn(&t).await.expect("save");
    }
    let asked = at("2026-12-09T09:00:00Z");
    for i in 0..10 {
        approval(&db, &format!("a-{i}"), "approved", asked, Some(2000)).await;
    }
    for i in 0..5 {
        approval(&db, &format!("r-{i}"), "rejected", asked, Some(4000)).await;
    }
    for i in 0..3 {
        approval(&db, &format!("p-{i}"), "pending", asked, None).await;
    }
    for i in 0..2 {
        approval(&db, &format!("x-{i}"), "cancelled", asked, None).await;
    }
    approval(
        &db,
        "old",
        "approved",
        at("2026-12-01T09:00:00Z"),
        Some(999_999),
    )
    .await;

    let o = db.overview(now, 3).await.expect("overview");
    assert_eq!(o.days, 3);
    let days: Vec<&str> = o.per_day.iter().map(|d| d.day.as_str()).collect();
    assert_eq!(days, ["2026-12-08", "2026-12-09", "2026-12-10"]);
    for (n, day) in o.per_day.iter().enumerate() {
        assert_eq!(day.turns, 100, "{day:?}");
        assert_eq!(day.errors, 10, "{day:?}");
        assert_eq!(day.prompt_tokens, 1000);
        assert_eq!(day.completion_tokens, 200);
        assert!((day.cost_usd - 0.1).abs() < 1e-9, "{day:?}");
        // Durations n+1, n+4, …: the 50th and the 95th of 100.
        let n = n as u64;
        assert_eq!(day.p50_ms, Some(n + 1 + 3 * 49), "{day:?}");
        assert_eq!(day.p95_ms, Some(n + 1 + 3 * 94), "{day:?}");
    }
    assert_eq!(o.latency.turns, 300);
    assert_eq!(o.latency.p50_ms, Some(150));
    assert_eq!(o.latency.p95_ms, Some(285));
    assert_eq!(
        o.tools
            .iter()
            .map(|t| (t.tool.as_str(), t.calls, t.errors))
            .collect::<Vec<_>>(),
        [("order_query", 300, 0), ("ticket_create", 60, 60)]
    );
    let a = &o.approvals;
    assert_eq!((a.approved, a.rejected, a.pending, a.closed), (10, 5, 3, 2));
    assert!((a.approval_rate.expect("a rate") - 10.0 / 15.0).abs() < 1e-9);
    let mean = a.mean_decision_ms.expect("a mean");
    assert!((mean - 40_000.0 / 15.0).abs() < 1.0, "{mean}");

    // A day without turns is there, empty; a window of one day.
    let later = db
        .overview(at("2026-12-11T08:00:00Z"), 2)
        .await
        .expect("overview");
    assert_eq!(later.per_day[1].day, "2026-12-11");
    assert_eq!(later.per_day[1].turns, 0);
    assert_eq!(later.per_day[1].p50_ms, None);
    assert_eq!(later.latency.turns, 100);
    let empty = db
        .overview(at("2030-01-01T00:00:00Z"), 1)
        .await
        .expect("empty");
    assert_eq!(empty.latency, Default::default());
    assert!(empty.tools.is_empty());
    assert_eq!(empty.approvals.approval_rate, None);
}

//! Replay sets, on fresh SQLite databases and on PostgreSQL: a set of 20
//! demo turns replayed (twice at once, so forks queue behind the studio's
//! cap) summarises to counts that add up; sets from a filter; the limits;
//! supervisors only; a run whose process died is ended by the sweep.

#![allow(clippy::unwrap_used)]

mod common;

use common::{agent, ready, supervisor, CHAIN};

use std::time::Duration;

use aics_agent::policy::ApprovalsConfig;
use aics_db::{AuditQuery, Database};
use aics_service::{Console, ConsoleConfig};
use aics_types::{
    ChatTurnTraceResult, NewReplaySet, ReplayFilter, ReplayOptions, ReplayRunReport,
    ReplayRunState, ReplayVerdict, StopReason,
};
use sqlx::{PgPool, SqlitePool};

/// No approval rule: every demo turn ends.
fn no_approvals() -> ConsoleConfig {
    ConsoleConfig {
        approvals: ApprovalsConfig {
            rules: Vec::new(),
            ..ApprovalsConfig::default()
        },
        ..ConsoleConfig::for_tests()
    }
}

/// Waits until the replay run is no longer running.
async fn ended(console: &Console, id: &str) -> ReplayRunReport {
    for _ in 0..1_500 {
        let report = console.replay_run(&supervisor(), id).await.unwrap();
        if report.run.state != ReplayRunState::Running {
            return report;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("replay run {id} still running");
}

fn by_ids(name: &str, ids: &[String]) -> NewReplaySet {
    NewReplaySet {
        name: name.into(),
        turn_ids: ids.to_vec(),
        filter: None,
    }
}

fn by_filter(name: &str, filter: ReplayFilter) -> NewReplaySet {
    NewReplaySet {
        name: name.into(),
        turn_ids: Vec::new(),
        filter: Some(filter),
    }
}

/// The message of demo turn `i` of the set: order questions, complaints
/// that open a ticket, and model failures.
fn message(i: usize) -> &'static str {
    match i % 5 {
        0 | 1 => "Where is my order ORD-123?",
        2 | 3 => CHAIN,
        _ => "Where is ORD-123? [fault:error]",
    }
}

async fn a_set_of_20_turns_replays_and_summarises(db: Database) {
    let db = ready(db).await;
    let console = Console::new(db.clone(), no_approvals()).await.unwrap();
    let mut ids = Vec::new();
    for i in 0..20 {
        let trace = console
            .chat(&agent(), &format!("replay-{i}"), message(i))
            .await
            .unwrap();
        ids.push(trace.graph_execution_id.clone());
    }
    let set = console
        .create_replay_set(&supervisor(), &by_ids(" the twenty ", &ids))
        .await
        .unwrap();
    assert_eq!(set.name, "the twenty");
    assert_eq!(set.turn_ids, ids);

    // Two runs at once: 40 forks behind a cap of 4 queue, none fails.
    let same = console
        .start_replay(&supervisor(), &set.id, &ReplayOptions::default())
        .await
        .unwrap();
    assert_eq!(same.state, ReplayRunState::Running);
    let linear = console
        .start_replay(
            &supervisor(),
            &set.id,
            &ReplayOptions {
                engine: Some("linear".into()),
                ..ReplayOptions::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(linear.engine.as_deref(), Some("linear"));

    let report = ended(&console, &same.id).await;
    assert_eq!(report.run.state, ReplayRunState::Done);
    assert_eq!(report.set_name, "the twenty");
    let t = report.totals;
    assert_eq!(t.total, 20);
    assert_eq!(t.same + t.different + t.error + t.pending, t.total);
    assert_eq!(t.pending, 0);
    assert_eq!((t.same, t.different, t.error), (16, 0, 4), "{report:#?}");
    for (i, item) in report.items.iter().enumerate() {
        assert_eq!(item.graph_execution_id, ids[i]);
        assert!(item.fork_id.is_some(), "every turn was forked");
        if message(i).contains("[fault:error]") {
            assert_eq!(item.verdict, ReplayVerdict::Error);
            assert!(item.error.is_some());
        } else {
            assert_eq!(item.verdict, ReplayVerdict::Same, "{item:?}");
            assert_eq!(item.original_chain, item.replay_chain);
            assert!(!item.original_chain.is_empty());
            assert!(item.tokens_delta.is_some() && item.latency_delta_ms.is_some());
            assert!(item.reply_changed.is_some());
        }
    }
    // The complaint's ticket was simulated: the identical replay's reply
    // names no new ticket, so it changed; the order answer did not.
    assert_eq!(report.items[0].reply_changed, Some(false));
    assert_eq!(report.items[2].reply_changed, Some(true));

    // On the linear engine a complaint makes one tool step, not two.
    let report = ended(&console, &linear.id).await;
    assert_eq!(report.run.state, ReplayRunState::Done);
    let t = report.totals;
    assert_eq!(t.same + t.different + t.error, 20);
    assert_eq!(t.error, 4);
    assert!(t.different >= 8, "{report:#?}");
    let complaint = &report.items[2];
    assert_eq!(complaint.verdict, ReplayVerdict::Different);
    assert_ne!(complaint.original_chain, complaint.replay_chain);

    // Nothing reached the conversations: one turn each, as before.
    for i in [0, 2, 4] {
        assert_eq!(
            console
                .list_turns(&format!("replay-{i}"))
                .await
                .unwrap()
                .len(),
            1
        );
    }
    let shown = console.replay_set(&supervisor(), &set.id).await.unwrap();
    assert_eq!(shown.runs.len(), 2);
    let listed = console.list_replay_sets(&supervisor()).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].turns, 20);
    let audit = console
        .list_audit(
            &supervisor(),
            &AuditQuery {
                limit: 100,
                before_id: None,
                actor: None,
                action_prefix: Some("replay.".into()),
            },
        )
        .await
        .unwrap();
    let actions: Vec<&str> = audit.iter().map(|a| a.action.as_str()).collect();
    assert_eq!(actions, ["replay.start", "replay.start", "replay.create"]);
}

async fn sets_from_a_filter(db: Database) {
    let db = ready(db).await;
    let console = Console::new(db.clone(), no_approvals()).await.unwrap();
    let refund = "I want a REFUND for order ORD-123";
    let mut refunds = Vec::new();
    for i in 0..3 {
        let t = console
            .chat(&agent(), &format!("refund-{i}"), refund)
            .await
            .unwrap();
        refunds.push(t.graph_execution_id.clone());
    }
    console
        .chat(&agent(), "other-0", "Where is my order ORD-123?")
        .await
        .unwrap();
    let failed = console
        .chat(&agent(), "other-1", "Where is ORD-123? [fault:error]")
        .await
        .unwrap();
    assert_eq!(failed.stop_reason, Some(StopReason::Error));

    let preview = |filter: ReplayFilter| {
        let console = console.clone();
        async move {
            console
                .preview_replay_filter(&supervisor(), &filter)
                .await
                .unwrap()
                .matched
        }
    };
    let text = ReplayFilter {
        q: Some("refund".into()),
        ..ReplayFilter::default()
    };
    assert_eq!(preview(text.clone()).await, 3);
    assert_eq!(preview(ReplayFilter::default()).await, 5);
    let errors = ReplayFilter {
        outcome: Some(StopReason::Error),
        ..ReplayFilter::default()
    };
    assert_eq!(preview(errors.clone()).await, 1);
    let tickets = ReplayFilter {
        tool: Some("no_such_tool".into()),
        ..ReplayFilter::default()
    };
    assert_eq!(preview(tickets).await, 0);
    let orders = ReplayFilter {
        tool: Some("order_query".into()),
        q: Some("ORD-123".into()),
        ..ReplayFilter::default()
    };
    assert!(preview(orders).await >= 4);
    let now = chrono::Utc::now();
    let today = ReplayFilter {
        from: Some(now - chrono::Duration::hours(1)),
        to: Some(now + chrono::Duration::hours(1)),
        ..text.clone()
    };
    assert_eq!(preview(today).await, 3);
    let later = ReplayFilter {
        from: Some(now + chrono::Duration::hours(1)),
        ..ReplayFilter::default()
    };
    assert_eq!(preview(later.clone()).await, 0);

    let set = console
        .create_replay_set(&supervisor(), &by_filter("refund complaints", text.clone()))
        .await
        .unwrap();
    let mut got = set.turn_ids.clone();
    got.sort();
    refunds.sort();
    assert_eq!(got, refunds);
    assert_eq!(
        set.filter.as_ref().and_then(|f| f.q.as_deref()),
        Some("refund")
    );
    let shown = console.replay_set(&supervisor(), &set.id).await.unwrap();
    assert_eq!(shown.filter, set.filter);
    assert_eq!(shown.turn_ids, set.turn_ids);

    // A filter that matches nothing makes no set.
    let err = console
        .create_replay_set(&supervisor(), &by_filter("empty", later))
        .await
        .unwrap_err();
    assert_eq!(err.status_code(), 400);

    // More turns than a set holds: a clear 400, nothing stored.
    for i in 0..201 {
        let trace = ChatTurnTraceResult {
            graph_execution_id: format!("bulk-{i}"),
            session_id: "bulk".into(),
            stop_reason: Some(StopReason::LoopDetected),
            started_at: chrono::Utc::now(),
            ..ChatTurnTraceResult::default()
        };
        db.save_turn(&trace).await.unwrap();
    }
    let loops = ReplayFilter {
        outcome: Some(StopReason::LoopDetected),
        ..ReplayFilter::default()
    };
    assert_eq!(preview(loops.clone()).await, 201);
    let err = console
        .create_replay_set(&supervisor(), &by_filter("too many", loops))
        .await
        .unwrap_err();
    assert_eq!(err.status_code(), 400);
    assert!(err.to_string().contains("201 turns"), "{err}");
    let ids: Vec<String> = (0..201).map(|i| format!("bulk-{i}")).collect();
    let err = console
        .create_replay_set(&supervisor(), &by_ids("too many", &ids))
        .await
        .unwrap_err();
    assert_eq!(err.status_code(), 400);
    assert!(err.to_string().contains("at most 200"), "{err}");
    assert_eq!(
        console.list_replay_sets(&supervisor()).await.unwrap().len(),
        1
    );
}

async fn only_supervisors_and_only_good_input(db: Database) {
    let db = ready(db).await;
    let console = Console::new(db.clone(), no_approvals()).await.unwrap();
    let gid = console
        .chat(&agent(), "bad-input", "Where is my order ORD-123?")
        .await
        .unwrap()
        .graph_execution_id
        .clone();
    let good = by_ids("one", std::slice::from_ref(&gid));
    let status = |e: aics_service::ServiceError| e.status_code();
    // Agents: 403 for every call.
    assert_eq!(
        status(
            console
                .create_replay_set(&agent(), &good)
                .await
                .unwrap_err()
        ),
        403
    );
    assert_eq!(
        status(console.list_replay_sets(&agent()).await.unwrap_err()),
        403
    );
    assert_eq!(
        status(
            console
                .preview_replay_filter(&agent(), &ReplayFilter::default())
                .await
                .unwrap_err()
        ),
        403
    );
    let set = console
        .create_replay_set(&supervisor(), &good)
        .await
        .unwrap();
    assert_eq!(
        status(console.replay_set(&agent(), &set.id).await.unwrap_err()),
        403
    );
    assert_eq!(
        status(
            console
                .start_replay(&agent(), &set.id, &ReplayOptions::default())
                .await
                .unwrap_err()
        ),
        403
    );
    let run = console
        .start_replay(&supervisor(), &set.id, &ReplayOptions::default())
        .await
        .unwrap();
    assert_eq!(
        status(console.replay_run(&agent(), &run.id).await.unwrap_err()),
        403
    );
    let report = ended(&console, &run.id).await;
    assert_eq!(report.totals.same, 1);

    // Bad input: 400 (404 for what does not exist), nothing stored.
    let bad = [
        by_ids("  ", std::slice::from_ref(&gid)),
        by_ids(&"n".repeat(121), std::slice::from_ref(&gid)),
        by_ids("none", &[]),
        by_ids("unknown", &["no-such-turn".to_owned()]),
        by_ids("malformed", &["not a turn id!".to_owned()]),
        NewReplaySet {
            name: "both".into(),
            turn_ids: vec![gid.clone()],
            filter: Some(ReplayFilter::default()),
        },
        by_filter(
            "control",
            ReplayFilter {
                q: Some("a\u{7}b".into()),
                ..ReplayFilter::default()
            },
        ),
    ];
    for request in &bad {
        let err = console
            .create_replay_set(&supervisor(), request)
            .await
            .unwrap_err();
        assert_eq!(err.status_code(), 400, "{request:?}: {err}");
    }
    assert_eq!(
        console.list_replay_sets(&supervisor()).await.unwrap().len(),
        1
    );
    for options in [
        ReplayOptions {
            engine: Some("warp".into()),
            ..ReplayOptions::default()
        },
        ReplayOptions {
            protocol: Some("smoke".into()),
            ..ReplayOptions::default()
        },
        ReplayOptions {
            provider: Some("nowhere".into()),
            ..ReplayOptions::default()
        },
    ] {
        let err = console
            .start_replay(&supervisor(), &set.id, &options)
            .await
            .unwrap_err();
        assert_eq!(err.status_code(), 400);
    }
    let err = console
        .start_replay(&supervisor(), "no-such-set", &ReplayOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.status_code(), 404);
    assert_eq!(
        console
            .replay_run(&supervisor(), "no-such-run")
            .await
            .unwrap_err()
            .status_code(),
        404
    );
    assert_eq!(
        console
            .replay_set(&supervisor(), &set.id)
            .await
            .unwrap()
            .runs
            .len(),
        1
    );
}

/// A run left `running` by a dead process: once its lease ran out the
/// sweep ends it `interrupted`, its turns not yet forked as errors, once;
/// the dead owner's late end changes nothing.
async fn a_dead_run_is_swept(db: Database) {
    const LEASE: Duration = Duration::from_millis(1_500);
    let db = ready(db).await;
    let config = ConsoleConfig {
        purge_every: Duration::from_secs(1),
        ..no_approvals()
    };
    let builder = Console::new(db.clone(), no_approvals()).await.unwrap();
    let mut ids = Vec::new();
    for i in 0..2 {
        ids.push(
            builder
                .chat(&agent(), &format!("dead-{i}"), "Where is my order ORD-123?")
                .await
                .unwrap()
                .graph_execution_id
                .clone(),
        );
    }
    let set = builder
        .create_replay_set(&supervisor(), &by_ids("dead", &ids))
        .await
        .unwrap();
    drop(builder);
    let run = db
        .insert_replay_run(&aics_db::NewReplayRun {
            id: "replay-dead",
            set_id: &set.id,
            created_by: "supervisor",
            provider: None,
            engine: None,
            protocol: None,
            owner: "dead-instance",
            // Long enough that the builder's own first sweep, which may
            // still be under way, leaves it alone; it has run out by the
            // time the second console starts.
            lease: LEASE,
        })
        .await
        .unwrap();
    assert_eq!(run.state, ReplayRunState::Running);
    let items = db.replay_run_items("replay-dead").await.unwrap();
    assert_eq!(items.len(), 2);
    // The dead process had forked the first turn; that fork never ended.
    db.insert_studio_run(&aics_db::NewStudioRun {
        id: "fork-of-dead",
        source_graph_execution_id: &ids[0],
        source_checkpoint_id: "c",
        created_by: "supervisor",
        message: None,
        engine: None,
        protocol: None,
        provider: None,
    })
    .await
    .unwrap();
    assert!(db
        .set_replay_item_fork("replay-dead", items[0].position, "fork-of-dead")
        .await
        .unwrap());

    tokio::time::sleep(LEASE).await;
    let console = Console::new(db.clone(), config).await.unwrap();
    let report = ended(&console, "replay-dead").await;
    assert_eq!(report.run.state, ReplayRunState::Interrupted);
    assert!(report.run.finished_at.is_some());
    assert_eq!(report.totals.error, 2, "{report:#?}");
    assert_eq!(report.totals.pending, 0);
    assert!(report.items[1]
        .error
        .as_deref()
        .unwrap()
        .contains("stopped before"));
    assert!(!db
        .finish_replay_run("replay-dead", "dead-instance")
        .await
        .unwrap());
    assert!(!db
        .renew_replay_lease("replay-dead", "dead-instance", Duration::from_secs(30))
        .await
        .unwrap());
    assert!(!db
        .set_replay_item_fork("replay-dead", items[1].position, "late")
        .await
        .unwrap());
    assert_eq!(
        db.interrupt_stale_replay_runs(chrono::Utc::now(), "again")
            .await
            .unwrap(),
        0
    );
}

#[sqlx::test(migrations = false)]
async fn sqlite_a_set_of_20_turns_replays_and_summarises(pool: SqlitePool) {
    a_set_of_20_turns_replays_and_summarises(Database::from(pool)).await;
}

#[sqlx::test(migrations = false)]
async fn postgres_a_set_of_20_turns_replays_and_summarises(pool: PgPool) {
    a_set_of_20_turns_replays_and_summarises(Database::Postgres(pool)).await;
}

#[sqlx::test(migrations = false)]
async fn sqlite_sets_from_a_filter(pool: SqlitePool) {
    sets_from_a_filter(Database::from(pool)).await;
}

#[sqlx::test(migrations = false)]
async fn postgres_sets_from_a_filter(pool: PgPool) {
    sets_from_a_filter(Database::Postgres(pool)).await;
}

#[sqlx::test(migrations = false)]
async fn sqlite_only_supervisors_and_only_good_input(pool: SqlitePool) {
    only_supervisors_and_only_good_input(Database::from(pool)).await;
}

#[sqlx::test(migrations = false)]
async fn postgres_only_supervisors_and_only_good_input(pool: PgPool) {
    only_supervisors_and_only_good_input(Database::Postgres(pool)).await;
}

#[sqlx::test(migrations = false)]
async fn sqlite_a_dead_run_is_swept(pool: SqlitePool) {
    a_dead_run_is_swept(Database::from(pool)).await;
}

#[sqlx::test(migrations = false)]
async fn postgres_a_dead_run_is_swept(pool: PgPool) {
    a_dead_run_is_swept(Database::Postgres(pool)).await;
}

//! Integration tests on SQLite and on PostgreSQL.
//!
//! Each test of `suite` runs twice: `sqlite::name` on a fresh SQLite file
//! made by `#[sqlx::test]` (no setup needed), and `postgres::name` on a fresh
//! PostgreSQL database that `#[sqlx::test]` creates through `DATABASE_URL`.
//! The PostgreSQL tests are never skipped: without `DATABASE_URL` they fail.
//! Set it with `export DATABASE_URL=$(scripts/postgres.sh | tail -n 1)`.
//!
//! Migrations are applied by the test itself (`Database::migrate`, not the
//! attribute), so the embedded migrations are what is tested.

mod suite;

use aics_db::Database;

/// Declares each suite test once per database.
macro_rules! on_both_databases {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[sqlx::test(migrations = false)]
                async fn $name(pool: sqlx::SqlitePool) {
                    super::suite::$name(super::suite::ready(aics_db::Database::from(pool)).await).await;
                }
            )*
        }
        mod postgres {
            $(
                #[sqlx::test(migrations = false)]
                async fn $name(pool: sqlx::PgPool) {
                    super::suite::$name(super::suite::ready(aics_db::Database::Postgres(pool)).await).await;
                }
            )*
        }
    };
}

on_both_databases!(
    migrations_and_seed,
    conversations_and_messages,
    turns,
    a_conversation_is_read_whole,
    checkpoints,
    large_states_read_back_as_written,
    every_state_reads_back_however_its_run_was_written,
    approvals,
    approval_token_single_use,
    racing_decisions,
    racing_ticket_calls,
    memories,
    users,
    tool_registry,
    tool_order_query,
    tool_logistics_track,
    tool_ticket_create,
    tool_knowledge_search,
    tool_escalate_to_human,
    accounts,
    sessions_idle_cap_and_purge,
    sign_in_throttle,
    parallel_reservations_pass_at_most_the_limit,
    a_blocked_key_counts_nothing,
    quiet_counts_start_over_and_releases_take_back,
    known_addresses_and_a_users_counts,
    audit_log,
    group_commit_keeps_every_callers_write,
    an_idle_writer_lets_its_caller_write_directly,
    group_commit_fails_only_the_caller_whose_row_fails,
    a_turn_begins_all_at_once_or_not_at_all,
    overview_counts_turns_tools_approvals_latency_and_cost,
    takeover_holds_the_conversation_from_the_ai,
    a_turn_and_a_takeover_never_both_win,
    two_agents_taking_one_conversation_one_wins,
    inbox_search_in_both_languages,
);

/// Says plainly what is missing instead of letting every PostgreSQL test
/// fail with sqlx's terse message.
#[test]
fn postgres_tests_have_a_database_url() {
    let url = std::env::var("DATABASE_URL").unwrap_or_default();
    assert!(
        url.starts_with("postgres://") || url.starts_with("postgresql://"),
        "DATABASE_URL must point at PostgreSQL for the postgres::* tests (got {url:?}); \
         run `export DATABASE_URL=$(scripts/postgres.sh | tail -n 1)` first"
    );
}

/// On SQLite a large state is stored compressed, a small one as its text,
/// a row written as text before compression existed still reads, and a
/// damaged row is reported as corrupt rather than read or panicked on.
#[sqlx::test(migrations = false)]
async fn sqlite_stores_large_states_compressed(pool: sqlx::SqlitePool) {
    use aics_graph::{CheckpointError, Checkpointer};
    let db = suite::ready(Database::from(pool.clone())).await;
    let saver = aics_db::SqlCheckpointer::new(db.clone());
    let messages = vec![
        serde_json::json!({"role": "user", "content": "我的订单 ORD-2024-001 到哪了？"});
        50
    ];
    let big =
        serde_json::json!({ "messages": messages, "llm_call_records": [{ "messages": messages }] });
    let mut cp = suite::checkpoint("s", 0, None, "agent", None);
    cp.state = (&big).into();
    saver.put(&cp).await.expect("put");
    let small = suite::checkpoint("s", 1, Some("s-cp0"), "tools", None);
    saver.put(&small).await.expect("put");

    let rows: Vec<(String, String, i64)> = sqlx::query_as(
        "SELECT checkpoint_id, typeof(state), length(CAST(state AS BLOB)) FROM checkpoints \
         WHERE thread_n = (SELECT n FROM checkpoint_threads WHERE thread_id = 's') ORDER BY seq",
    )
    .fetch_all(&pool)
    .await
    .expect("rows");
    assert_eq!(rows[0].1, "blob", "the large state is compressed");
    let text_len = cp.state.get().len() as i64;
    assert!(
        rows[0].2 * 5 < text_len,
        "{} of {text_len} bytes",
        rows[0].2
    );
    assert_eq!(rows[1].1, "text", "the small state stays text");
    let back = saver.list("s").await.expect("list");
    assert_eq!(back[0].state.get(), cp.state.get());
    assert_eq!(back[1].state.get(), small.state.get());

    // A row as it was stored before: the state's text.
    sqlx::query("INSERT INTO checkpoint_threads (thread_id, n) VALUES ('old', 1000)")
        .execute(&pool)
        .await
        .expect("old thread");
    sqlx::query(
        "INSERT INTO checkpoints (seq, thread_n, checkpoint_id, parent_id, step, node, next_node, \
         path, state, pending_interrupts, created_at) VALUES (1000, 1000, 'old-0', NULL, 0, \
         'agent', NULL, '[\"agent\"]', ?, '[]', '2026-12-01T00:00:00Z')",
    )
    .bind(big.to_string())
    .execute(&pool)
    .await
    .expect("old row");
    let old = saver.latest("old").await.expect("latest").expect("some");
    assert_eq!(old.state.to_value(), big);

    // A compressed row whose bytes were damaged.
    sqlx::query(
        "UPDATE checkpoints SET state = substr(state, 1, 40) WHERE checkpoint_id = 's-cp0'",
    )
    .execute(&pool)
    .await
    .expect("damage");
    match saver.get("s", "s-cp0").await {
        Err(CheckpointError::Corrupt(_)) => {}
        other => panic!("a damaged state read as {other:?}"),
    }
}

/// Runs the embedded SQLite migrations older than `version`: the schema
/// a database had before that migration, to write rows it must keep.
async fn migrate_before(pool: &sqlx::SqlitePool, version: i64) {
    let mut before = sqlx::migrate!("./migrations/sqlite");
    before.migrations = before
        .migrations
        .iter()
        .filter(|m| m.version < version)
        .cloned()
        .collect::<Vec<_>>()
        .into();
    before.run(pool).await.expect("the migrations before");
}

/// The migration that names each run's thread by a number keeps every
/// checkpoint written before it: two runs written interleaved read back
/// whole and in order, a run paused before it goes on after it, and a new
/// run gets a number of its own (the `seq` of its first row, as the
/// migrated runs got theirs).
#[sqlx::test(migrations = false)]
async fn sqlite_checkpoints_written_before_thread_numbers_read_back(pool: sqlx::SqlitePool) {
    use aics_graph::Checkpointer;
    migrate_before(&pool, 20261208000001).await;
    // Rows as they were written then, the thread's id on each; `a` and
    // `b` interleaved, `a` paused after its third.
    for (seq, thread, step) in [
        (1, "a", 0),
        (2, "b", 0),
        (3, "a", 1),
        (4, "b", 1),
        (5, "a", 2),
    ] {
        let cp = suite::checkpoint(
            thread,
            step,
            step.checked_sub(1)
                .map(|p| format!("{thread}-cp{p}"))
                .as_deref(),
            "agent",
            Some("tools"),
        );
        sqlx::query(
            "INSERT INTO checkpoints (seq, thread_id, checkpoint_id, parent_id, step, node, \
             next_node, path, state, pending_interrupts, created_at) \
             VALUES (?, ?, ?, ?, ?, 'agent', 'tools', '[\"agent\"]', ?, '[]', \
             '2026-12-05T00:00:00Z')",
        )
        .bind(seq)
        .bind(thread)
        .bind(&cp.checkpoint_id)
        .bind(&cp.parent_id)
        .bind(step)
        .bind(cp.state.get())
        .execute(&pool)
        .await
        .expect("an old row");
    }
    let db = suite::ready(Database::from(pool.clone())).await;
    let saver = aics_db::SqlCheckpointer::new(db.clone());

    for (thread, steps) in [("a", vec![0, 1, 2]), ("b", vec![0, 1])] {
        let list = saver.list(thread).await.expect("list");
        assert_eq!(list.iter().map(|c| c.step).collect::<Vec<_>>(), steps);
        for cp in &list {
            assert_eq!(cp.thread_id.as_str(), thread);
            let written = suite::checkpoint(thread, cp.step, None, "agent", None);
            assert_eq!(cp.state, written.state, "{thread} step {}", cp.step);
        }
    }
    let paused = saver.latest("a").await.expect("latest").expect("some");
    assert_eq!(paused.checkpoint_id, "a-cp2");
    let next = suite::checkpoint("a", 3, Some("a-cp2"), "tools", None);
    saver.put(&next).await.expect("the paused run goes on");
    saver
        .put(&suite::checkpoint("c", 0, None, "agent", None))
        .await
        .expect("a new run");
    assert_eq!(saver.list("a").await.expect("list").len(), 4);
    assert_eq!(saver.list("b").await.expect("list").len(), 2);
    assert_eq!(saver.list("c").await.expect("list").len(), 1);

    let numbers: Vec<(String, i64, i64)> = sqlx::query_as(
        "SELECT t.thread_id, t.n, min(c.seq) FROM checkpoint_threads t \
         JOIN checkpoints c ON c.thread_n = t.n GROUP BY t.thread_id ORDER BY t.n",
    )
    .fetch_all(&pool)
    .await
    .expect("numbers");
    assert_eq!(
        numbers,
        [("a".into(), 1, 1), ("b".into(), 2, 2), ("c".into(), 7, 7)]
    );
}

/// The migration that checks runs, messages and conversations by
/// comparisons instead of `IN` lists keeps every row and what each column
/// accepts: a conversation, its messages and its runs written before it
/// read back the same after it, a new message's id follows the old ones,
/// the paused run is still the conversation's active run and keeps a
/// second one out, and a name the columns never accepted is still refused.
#[sqlx::test(migrations = false)]
async fn sqlite_rows_written_before_checks_as_comparisons_read_back(pool: sqlx::SqlitePool) {
    migrate_before(&pool, 20261209000001).await;
    for statement in [
        "INSERT INTO conversations (session_id, customer_id, title, handling, created_at, \
         updated_at, event_epoch, assignee, chat_token_hash) VALUES ('s', 'CUST-001', 'Late', \
         'human', '2026-12-05T00:00:00Z', '2026-12-05T00:00:09Z', 3, 'alice', 'h')",
        "INSERT INTO messages (session_id, role, content, graph_execution_id, created_at, author) \
         VALUES ('s', 'customer', 'Where is ORD-123?', NULL, '2026-12-05T00:00:01Z', NULL), \
         ('s', 'assistant', 'On its way.', 'g1', '2026-12-05T00:00:02Z', NULL), \
         ('s', 'note', 'Checked the carrier.', NULL, '2026-12-05T00:00:03Z', 'alice')",
        "INSERT INTO runs (graph_execution_id, session_id, state, lease_owner, lease_expires_at, \
         attempts, note, ended_by, created_at, updated_at) VALUES \
         ('g1', 's', 'finished', NULL, NULL, 1, NULL, NULL, '2026-12-05T00:00:01Z', \
          '2026-12-05T00:00:02Z'), \
         ('g2', 's', 'paused', NULL, NULL, 2, 'waits', NULL, '2026-12-05T00:00:04Z', \
          '2026-12-05T00:00:05Z')",
    ] {
        sqlx::query(statement)
            .execute(&pool)
            .await
            .expect("an old row");
    }
    // Every column of the three tables, in row order, as one JSON text.
    let rows = || async {
        let mut all = Vec::new();
        for query in [
            "SELECT json_group_array(json_array(session_id, customer_id, title, handling, \
             created_at, updated_at, event_epoch, assignee, chat_token_hash)) \
             FROM (SELECT * FROM conversations ORDER BY session_id)",
            "SELECT json_group_array(json_array(id, session_id, role, content, \
             graph_execution_id, created_at, author)) FROM (SELECT * FROM messages ORDER BY id)",
            "SELECT json_group_array(json_array(graph_execution_id, session_id, state, \
             lease_owner, lease_expires_at, attempts, note, ended_by, created_at, updated_at)) \
             FROM (SELECT * FROM runs ORDER BY graph_execution_id)",
        ] {
            let (json,): (String,) = sqlx::query_as(query).fetch_one(&pool).await.expect("rows");
            all.push(json);
        }
        all
    };
    let written = rows().await;
    let db = suite::ready(Database::from(pool.clone())).await;
    assert_eq!(rows().await, written);

    let active = db
        .active_run("s")
        .await
        .expect("read")
        .expect("the paused run");
    assert_eq!(
        (active.graph_execution_id.as_str(), active.state),
        ("g2", aics_types::RunState::Paused)
    );
    let (id,): (i64,) = sqlx::query_as(
        "INSERT INTO messages (session_id, role, content, created_at) \
         VALUES ('s', 'agent', 'Here is a refund.', '2026-12-05T00:00:06Z') RETURNING id",
    )
    .fetch_one(&pool)
    .await
    .expect("a new message");
    assert_eq!(id, 4);
    for refused in [
        "INSERT INTO runs (graph_execution_id, session_id, state, created_at, updated_at) \
         VALUES ('g3', 's', 'running', 't', 't')",
        "INSERT INTO runs (graph_execution_id, session_id, state, created_at, updated_at) \
         VALUES ('g4', 'other', 'sleeping', 't', 't')",
        "INSERT INTO messages (session_id, role, content, created_at) \
         VALUES ('s', 'robot', 'x', 't')",
        "UPDATE conversations SET handling = 'lost' WHERE session_id = 's'",
    ] {
        let e = sqlx::query(refused)
            .execute(&pool)
            .await
            .expect_err(refused);
        assert!(
            e.to_string().contains("constraint failed"),
            "{refused}: {e}"
        );
    }
}

/// On SQLite a checkpoint's state is stored on its parent's: a run of 40
/// small steps takes a fraction of the bytes of its states compressed
/// alone, no chain of rows stored on parents passes 16, and a row whose
/// chain lost a row reads as corrupt, not as a wrong state or a panic,
/// while the rows before it still read.
#[sqlx::test(migrations = false)]
async fn sqlite_stores_each_state_on_its_parents(pool: sqlx::SqlitePool) {
    use aics_graph::{CheckpointError, Checkpointer};
    let db = suite::ready(Database::from(pool.clone())).await;
    let saver = aics_db::SqlCheckpointer::new(db.clone());
    let run = suite::growing_run("r", 0, 40);
    for cp in &run {
        saver.put(cp).await.expect("put");
    }
    let rows: Vec<(String, Vec<u8>)> = sqlx::query_as(
        "SELECT checkpoint_id, CAST(state AS BLOB) FROM checkpoints \
         WHERE thread_n = (SELECT n FROM checkpoint_threads WHERE thread_id = 'r') ORDER BY seq",
    )
    .fetch_all(&pool)
    .await
    .expect("rows");
    let on_parent: Vec<bool> = rows.iter().map(|(_, s)| s.first() == Some(&0x02)).collect();
    assert!(!on_parent[0], "the first state has no parent");
    assert!(
        on_parent.iter().filter(|&&p| p).count() >= 36,
        "{on_parent:?}"
    );
    let longest = on_parent
        .split(|&p| !p)
        .map(<[bool]>::len)
        .max()
        .unwrap_or(0);
    assert!(longest < 16, "a chain of {longest} rows: {on_parent:?}");
    let stored: usize = rows.iter().map(|(_, s)| s.len()).sum();
    // The same states as a writer that knows no parents stores them.
    for cp in &run {
        db.put_checkpoint(&aics_graph::Checkpoint {
            thread_id: "alone".into(),
            ..cp.clone()
        })
        .await
        .expect("put");
    }
    let (alone,): (i64,) = sqlx::query_as(
        "SELECT sum(length(CAST(state AS BLOB))) FROM checkpoints \
         WHERE thread_n = (SELECT n FROM checkpoint_threads WHERE thread_id = 'alone')",
    )
    .fetch_one(&pool)
    .await
    .expect("sum");
    assert!(
        stored * 3 < alone as usize,
        "{stored} bytes on parents against {alone} alone"
    );

    // A row lost from a chain (by hand: nothing deletes one).
    let lost = rows
        .iter()
        .position(|(_, s)| s.first() == Some(&0x02))
        .expect("a row on its parent");
    sqlx::query("DELETE FROM checkpoints WHERE checkpoint_id = ?")
        .bind(&rows[lost].0)
        .execute(&pool)
        .await
        .expect("delete");
    let before = saver
        .get("r", &rows[lost - 1].0)
        .await
        .expect("the row before still reads")
        .expect("some");
    assert_eq!(before.state, run[lost - 1].state);
    match saver.get("r", &rows[lost + 1].0).await {
        Err(CheckpointError::Corrupt(_)) => {}
        other => panic!("a row whose parent is gone read as {other:?}"),
    }
    assert!(
        matches!(saver.list("r").await, Err(CheckpointError::Corrupt(_))),
        "the run's list reports the broken chain"
    );
}

/// On SQLite a turn's trace is stored compressed whichever path writes it
/// (ending a run on the direct connection, cancelling one through sqlx),
/// reads back the same, a trace stored as text before still reads, and a
/// damaged one is an error, not a panic.
#[sqlx::test(migrations = false)]
async fn sqlite_stores_traces_compressed(pool: sqlx::SqlitePool) {
    use aics_db::runs::{Ending, WhenHeld};
    use aics_types::{ChatTurnTraceResult, MessageRole, RunState, ToolCallRecord};
    let db = suite::ready(Database::from(pool.clone())).await;
    let output =
        serde_json::json!({"order_id": "ORD-2024-001", "status": "已发货", "carrier": "顺丰"});
    let trace = |id: &str, session: &str| ChatTurnTraceResult {
        graph_execution_id: id.into(),
        session_id: session.into(),
        reply: "Your order ORD-2024-001 has shipped.".into(),
        tool_calls: (0..20)
            .map(|i| ToolCallRecord {
                id: format!("call_{i}"),
                name: "order_query".into(),
                input: serde_json::json!({"order_id": "ORD-2024-001"}).into(),
                output: output.clone().into(),
                status: aics_types::ToolCallStatus::Ok,
                timestamp: chrono::Utc::now(),
                duration_ms: Some(3),
            })
            .collect(),
        ..Default::default()
    };
    let lease = std::time::Duration::from_secs(30);
    for (run, session) in [("g-end", "s-end"), ("g-cancel", "s-cancel")] {
        db.begin_turn(run, session, "me", lease, "hi", "hi", 20, WhenHeld::Keep)
            .await
            .expect("begin")
            .started()
            .expect("started");
    }
    let ended = trace("g-end", "s-end");
    db.end_run(
        "me",
        &ended,
        Ending {
            state: RunState::Finished,
            message: Some((MessageRole::Assistant, &ended.reply)),
            note: None,
            json_back: false,
        },
    )
    .await
    .expect("end");
    let cancelled = trace("g-cancel", "s-cancel");
    db.cancel_run(&cancelled, "supervisor", "stopped")
        .await
        .expect("cancel")
        .expect("was active");

    for t in [&ended, &cancelled] {
        let (kind, stored): (String, i64) = sqlx::query_as(
            "SELECT typeof(trace), length(CAST(trace AS BLOB)) FROM turns \
             WHERE graph_execution_id = ?",
        )
        .bind(&t.graph_execution_id)
        .fetch_one(&pool)
        .await
        .expect("row");
        let text_len = serde_json::to_string(t).expect("json").len() as i64;
        assert_eq!(kind, "blob", "{} is compressed", t.graph_execution_id);
        assert!(stored * 3 < text_len, "{stored} of {text_len} bytes");
        let back = db
            .turn(&t.graph_execution_id)
            .await
            .expect("read")
            .expect("stored");
        assert_eq!(&back, t);
    }
    assert_eq!(
        db.list_turns("s-end").await.expect("list"),
        std::slice::from_ref(&ended)
    );

    // A trace as it was stored before: its text.
    sqlx::query("UPDATE turns SET trace = ? WHERE graph_execution_id = 'g-end'")
        .bind(serde_json::to_string(&ended).expect("json"))
        .execute(&pool)
        .await
        .expect("old row");
    assert_eq!(db.turn("g-end").await.expect("read"), Some(ended.clone()));
    let page = db.conversation_detail("s-end").await.expect("read");
    assert_eq!(page.expect("s-end").turns, [ended]);

    // A compressed trace whose bytes were damaged.
    sqlx::query(
        "UPDATE turns SET trace = substr(trace, 1, 40) WHERE graph_execution_id = 'g-cancel'",
    )
    .execute(&pool)
    .await
    .expect("damage");
    assert!(
        db.turn("g-cancel").await.is_err(),
        "a damaged trace is an error"
    );
    assert!(
        matches!(
            db.conversation_detail("s-cancel").await,
            Err(aics_db::DbError::Corrupt(_))
        ),
        "and so is the page of its conversation"
    );
}

/// A pending approval and its checkpoint survive closing the pool and
/// opening a new one on the same SQLite file; the file and its folder are
/// created by `connect`, in WAL mode with synchronous = NORMAL.
#[tokio::test]
async fn sqlite_approval_survives_a_restart() {
    let dir = std::env::temp_dir().join(format!("aics-db-test-{}", uuid::Uuid::new_v4()));
    let url = format!("sqlite://{}/nested/aics.db", dir.display());
    let token = aics_db::tokens::new_token();

    let db = suite::ready(Database::connect(&url).await.expect("connect")).await;
    let Database::Sqlite(sqlite) = &db else {
        panic!("expected SQLite")
    };
    let pool = sqlite.pool();
    let mode: (String,) = sqlx::query_as("PRAGMA journal_mode")
        .fetch_one(pool)
        .await
        .expect("pragma");
    assert_eq!(mode.0, "wal");
    let sync: (i64,) = sqlx::query_as("PRAGMA synchronous")
        .fetch_one(pool)
        .await
        .expect("pragma");
    assert_eq!(sync.0, 1, "synchronous = NORMAL");
    suite::before_restart(&db, &token).await;
    db.close().await;

    let db = Database::connect(&url).await.expect("reconnect");
    db.migrate().await.expect("migrate");
    assert_eq!(db.seed().await.expect("seed"), Default::default());
    suite::after_restart(&db, &token).await;
    db.close().await;
    std::fs::remove_dir_all(dir).expect("clean up");
}

/// The same on PostgreSQL: two pools, one after the other, on the test's
/// database.
#[sqlx::test(migrations = false)]
async fn postgres_approval_survives_a_restart(
    pool_options: sqlx::postgres::PgPoolOptions,
    connect_options: sqlx::postgres::PgConnectOptions,
) {
    let token = aics_db::tokens::new_token();
    let first = pool_options
        .clone()
        .connect_with(connect_options.clone())
        .await
        .expect("connect");
    let db = suite::ready(Database::Postgres(first)).await;
    suite::before_restart(&db, &token).await;
    db.close().await;

    let second = pool_options
        .connect_with(connect_options)
        .await
        .expect("reconnect");
    let db = Database::Postgres(second);
    db.migrate().await.expect("migrate");
    suite::after_restart(&db, &token).await;
    db.close().await;
}

/// A run ending while its conversation's next message arrives, on
/// PostgreSQL: the message's transaction holds the conversation (its
/// upsert) when it tries to begin a run, which waits for any change to the
/// conversation's active run; the end must not hold that run while it
/// waits for the conversation (runs/end.rs, LOCK_ORDER), or the database
/// aborts one of them as a deadlock (seen in CI: a customer's message got
/// "deadlock detected" as a turn ended on another instance).
#[sqlx::test(migrations = false)]
async fn postgres_a_turn_ending_as_a_message_arrives_never_deadlocks(pool: sqlx::PgPool) {
    use aics_db::runs::{Ending, WhenHeld};
    use aics_types::{ChatTurnTraceResult, MessageRole, RunState};

    let db = suite::ready(Database::Postgres(pool.clone())).await;
    let lease = std::time::Duration::from_secs(30);
    for (i, cancel) in [false, true].into_iter().enumerate() {
        let (run, session) = (format!("g-lock-{i}"), format!("s-lock-{i}"));
        db.begin_turn(&run, &session, "me", lease, "hi", "hi", 20, WhenHeld::Keep)
            .await
            .expect("begin")
            .started()
            .expect("started");
        // The next message's transaction, up to its run's insert: the
        // conversation's row is held (as the upsert holds it).
        let mut message = pool.begin().await.expect("a transaction");
        sqlx::query("UPDATE conversations SET updated_at = now() WHERE session_id = $1")
            .bind(&session)
            .execute(&mut *message)
            .await
            .expect("the conversation's row");
        // The run ends (or is cancelled) meanwhile, and waits for the row.
        let ending = {
            let (db, run, session) = (db.clone(), run.clone(), session.clone());
            tokio::spawn(async move {
                let trace = ChatTurnTraceResult {
                    graph_execution_id: run,
                    session_id: session,
                    reply: "done".into(),
                    ..Default::default()
                };
                if cancel {
                    db.cancel_run(&trace, "supervisor", "stopped")
                        .await
                        .map(|cancelled| assert!(cancelled.is_some()))
                } else {
                    db.end_run(
                        "me",
                        &trace,
                        Ending {
                            state: RunState::Finished,
                            message: Some((MessageRole::Assistant, "done")),
                            note: None,
                            json_back: false,
                        },
                    )
                    .await
                    .map(|_| ())
                }
            })
        };
        let mut waiting = false;
        for _ in 0..500 {
            let (n,): (i64,) = sqlx::query_as(
                "SELECT count(*) FROM pg_stat_activity \
                 WHERE datname = current_database() AND wait_event_type = 'Lock'",
            )
            .fetch_one(&pool)
            .await
            .expect("activity");
            if n > 0 {
                waiting = true;
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        assert!(waiting, "the end never waited for the conversation");
        // The message's run: the conversation's run is still active, so
        // it is refused at once, not held up behind the ending run.
        let inserted = sqlx::query(
            "INSERT INTO runs (graph_execution_id, session_id, state, lease_owner, \
             lease_expires_at, attempts, created_at, updated_at) \
             VALUES ($1, $2, 'running', 'other', now(), 1, now(), now()) ON CONFLICT DO NOTHING",
        )
        .bind(format!("{run}-next"))
        .bind(&session)
        .execute(&mut *message)
        .await
        .expect("no deadlock for the message")
        .rows_affected();
        assert_eq!(inserted, 0, "the turn still ran");
        message.rollback().await.expect("rollback");
        ending
            .await
            .expect("the ending task")
            .expect("no deadlock for the ending run");
        let state = db.run(&run).await.expect("read").expect("run").state;
        assert_eq!(
            state,
            if cancel {
                RunState::Cancelled
            } else {
                RunState::Finished
            }
        );
    }
}

#[tokio::test]
async fn connect_rejects_other_urls() {
    let err = Database::connect("mysql://root:secret@localhost/x")
        .await
        .expect_err("unsupported");
    let text = err.to_string();
    assert!(text.contains("unsupported"), "{text}");
    assert!(
        !text.contains("secret"),
        "the password is not echoed: {text}"
    );
}

#[tokio::test]
async fn in_memory_sqlite_works() {
    let db = suite::ready(Database::connect("sqlite::memory:").await.expect("connect")).await;
    assert!(db.order_detail("ORD-123").await.expect("query").is_some());
    // The overview's pass reads on the one connection an in-memory
    // database has (on a file it opens its own).
    let overview = db.overview(chrono::Utc::now(), 7).await.expect("overview");
    assert_eq!(overview.per_day.len(), 7);
}

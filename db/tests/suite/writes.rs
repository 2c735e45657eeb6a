//! The shared write paths: the group-commit writer behind
//! [`SqlCheckpointer`] and the one transaction that begins a turn.

use std::sync::Arc;
use std::time::Duration;

use aics_db::runs::WhenHeld;
use aics_db::{Database, SqlCheckpointer};
use aics_graph::{Checkpoint, Checkpointer};
use aics_types::MessageRole;
use serde_json::json;

fn row(thread: &str, step: u32, state: serde_json::Value) -> Checkpoint {
    Checkpoint {
        thread_id: thread.into(),
        checkpoint_id: format!("{thread}-{step}"),
        parent_id: step.checked_sub(1).map(|p| format!("{thread}-{p}")),
        step,
        node: format!("n{step}").into(),
        next: Some(format!("n{}", step + 1).into()),
        path: (0..=step).map(|s| format!("n{s}").into()).collect(),
        state: (&state).into(),
        pending_interrupts: Vec::new(),
        created_at: chrono::Utc::now(),
    }
}

/// Holds the checkpoints table's write lock on a connection of its own, so
/// the writer's next batch waits (and the callers after it queue up).
/// Dropped: the lock goes.
enum Blocker {
    Sqlite(sqlx::pool::PoolConnection<sqlx::Sqlite>),
    Postgres(sqlx::Transaction<'static, sqlx::Postgres>),
}

async fn block_writes(db: &Database) -> Blocker {
    match db {
        Database::Sqlite(sqlite) => {
            let mut conn = sqlite.pool().acquire().await.expect("a connection");
            sqlx::query("BEGIN IMMEDIATE")
                .execute(&mut *conn)
                .await
                .expect("the write lock");
            Blocker::Sqlite(conn)
        }
        Database::Postgres(pool) => {
            let mut tx = pool.begin().await.expect("a transaction");
            sqlx::query("LOCK TABLE checkpoints IN EXCLUSIVE MODE")
                .execute(&mut *tx)
                .await
                .expect("the table lock");
            Blocker::Postgres(tx)
        }
    }
}

async fn release(blocker: Blocker) {
    match blocker {
        Blocker::Sqlite(mut conn) => {
            sqlx::query("ROLLBACK")
                .execute(&mut *conn)
                .await
                .expect("rollback");
        }
        Blocker::Postgres(tx) => tx.rollback().await.expect("rollback"),
    }
}

/// Waits until the writer was handed `n` callers' writes.
async fn queued(cp: &SqlCheckpointer, n: u64) {
    for _ in 0..2000 {
        if cp.writer_stats().jobs >= n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("only {:?} reached the writer", cp.writer_stats());
}

const CALLERS: usize = 64;

/// 64 runs write at once, half of them one checkpoint at a time (as the
/// `sync` and `async` modes do), half in one batch of four (`exit`): every
/// caller's rows are there, in order, each visible the moment its caller
/// returns, and the writer shared its commits (the callers that queued
/// while a batch was held all went into the next one).
pub async fn group_commit_keeps_every_callers_write(db: Database) {
    let cp = Arc::new(SqlCheckpointer::new(db.clone()));
    let blocker = block_writes(&db).await;
    let mut callers = Vec::new();
    for caller in 0..CALLERS {
        let (cp, db) = (cp.clone(), db.clone());
        callers.push(tokio::spawn(async move {
            let thread = format!("run-{caller}");
            let rows: Vec<Checkpoint> = (0..4)
                .map(|s| row(&thread, s, json!({"caller": caller, "step": s})))
                .collect();
            if caller % 2 == 0 {
                for r in rows {
                    let id = r.checkpoint_id.clone();
                    cp.put_owned(r).await.expect("put");
                    // Answered only once committed: another connection sees it.
                    let latest = db.latest_checkpoint(&thread).await.expect("read");
                    assert_eq!(latest.map(|c| c.checkpoint_id), Some(id));
                }
            } else {
                cp.put_batch(rows).await.expect("put_batch");
                assert_eq!(db.list_checkpoints(&thread).await.expect("read").len(), 4);
            }
        }));
    }
    // Every caller's first write waits behind the held lock.
    queued(&cp, CALLERS as u64).await;
    release(blocker).await;
    for caller in callers {
        caller.await.expect("a caller");
    }
    for caller in 0..CALLERS {
        let list = db
            .list_checkpoints(&format!("run-{caller}"))
            .await
            .expect("list");
        let steps: Vec<u32> = list.iter().map(|c| c.step).collect();
        assert_eq!(steps, [0, 1, 2, 3], "caller {caller}");
        assert_eq!(
            list[3].state.to_value(),
            json!({"caller": caller, "step": 3})
        );
    }
    let stats = cp.writer_stats();
    let jobs = (CALLERS / 2 * 4 + CALLERS / 2) as u64;
    assert_eq!(stats.jobs, jobs);
    assert_eq!(stats.rows, (CALLERS * 4) as u64);
    // At most the first caller's write was taken before the lock was
    // released; the other 63 queued writes shared one transaction.
    assert!(
        stats.batches <= jobs - (CALLERS as u64 - 2),
        "commits were not shared: {stats:?}"
    );
}

/// One run writing alone finds the writer idle every time: it writes its
/// rows itself (no hop to the writer task), each visible when its call
/// returns; and a direct write held by a lock makes the callers behind it
/// queue for the writer, who batches them once the direct write is done.
pub async fn an_idle_writer_lets_its_caller_write_directly(db: Database) {
    let cp = Arc::new(SqlCheckpointer::new(db.clone()));
    for step in 0..5 {
        let r = row("alone", step, json!({"step": step}));
        let id = r.checkpoint_id.clone();
        cp.put_owned(r).await.expect("put");
        let latest = db.latest_checkpoint("alone").await.expect("read");
        assert_eq!(latest.map(|c| c.checkpoint_id), Some(id));
    }
    let stats = cp.writer_stats();
    assert_eq!(
        (stats.jobs, stats.direct, stats.rows),
        (5, 5, 5),
        "{stats:?}"
    );

    let blocker = block_writes(&db).await;
    let mut callers = Vec::new();
    for caller in 0..8 {
        let cp = cp.clone();
        callers.push(tokio::spawn(async move {
            cp.put_owned(row(&format!("behind-{caller}"), 0, json!({})))
                .await
        }));
    }
    queued(&cp, 5 + 8).await;
    release(blocker).await;
    for caller in callers {
        caller.await.expect("a caller").expect("written");
    }
    let stats = cp.writer_stats();
    assert_eq!(stats.rows, 13);
    // At most one of the eight wrote directly (the first, held by the
    // lock); the others shared the writer's next batch.
    assert!(stats.direct <= 6, "{stats:?}");
    assert!(stats.batches <= 5 + 2, "{stats:?}");
}

/// A batch that fails is written caller by caller: a row PostgreSQL's
/// `jsonb` refuses (a NUL character) fails its own caller, never the
/// others that shared its batch. (SQLite stores it like any text.)
pub async fn group_commit_fails_only_the_caller_whose_row_fails(db: Database) {
    let cp = Arc::new(SqlCheckpointer::new(db.clone()));
    let blocker = block_writes(&db).await;
    let mut callers = Vec::new();
    for caller in 0..8 {
        let cp = cp.clone();
        callers.push(tokio::spawn(async move {
            let state = if caller == 3 {
                json!({"text": "nul \u{0000} inside"})
            } else {
                json!({"text": "fine"})
            };
            cp.put_owned(row(&format!("mixed-{caller}"), 0, state))
                .await
        }));
    }
    queued(&cp, 8).await;
    release(blocker).await;
    let postgres = matches!(db, Database::Postgres(_));
    for (caller, handle) in callers.into_iter().enumerate() {
        let result = handle.await.expect("a caller");
        let stored = db
            .latest_checkpoint(&format!("mixed-{caller}"))
            .await
            .expect("read");
        if caller == 3 && postgres {
            assert!(result.is_err(), "the refused row fails its caller");
            assert!(stored.is_none());
        } else {
            result.expect("the other callers are written");
            assert!(stored.is_some(), "caller {caller}");
        }
    }
}

/// A turn begins in one transaction: the run, the conversation, the
/// message and the event epoch, with the earlier messages read before the
/// new one; a second turn of the same conversation writes nothing.
pub async fn a_turn_begins_all_at_once_or_not_at_all(db: Database) {
    let lease = Duration::from_secs(30);
    let first = db
        .begin_turn(
            "g-a",
            "s-begin",
            "me",
            lease,
            "hello there",
            "hello there",
            20,
            WhenHeld::Keep,
        )
        .await
        .expect("begin")
        .started()
        .expect("the conversation was free");
    assert!(first.earlier.is_empty());
    assert_eq!(first.customer_id, None);
    let conversation = db
        .conversation("s-begin")
        .await
        .expect("read")
        .expect("made");
    assert_eq!(conversation.title, "hello there");
    let messages = db.list_messages("s-begin").await.expect("messages");
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0].role, MessageRole::Customer);
    // What the turn was told it stored is what is stored (SQLite's direct
    // connection answers it from what it bound and the row's id).
    assert_eq!(first.stored, messages[0]);

    // The conversation is held: nothing of a second turn is written.
    let busy = db
        .begin_turn(
            "g-b",
            "s-begin",
            "me",
            lease,
            "again?",
            "again?",
            20,
            WhenHeld::Keep,
        )
        .await
        .expect("begin");
    assert_eq!(busy, aics_db::runs::Begin::Busy);
    assert!(db.run("g-b").await.expect("read").is_none());
    assert_eq!(
        db.list_messages("s-begin").await.expect("messages").len(),
        1
    );

    // Once the first run ended, the next turn sees the earlier message and
    // the next epoch.
    let trace = aics_types::ChatTurnTraceResult {
        graph_execution_id: "g-a".into(),
        session_id: "s-begin".into(),
        reply: "hi!".into(),
        ..Default::default()
    };
    let ended = super::finish_with_reply(&db, &trace, "hi!").await;
    let messages = db.list_messages("s-begin").await.expect("messages");
    assert_eq!(ended.message.as_ref(), messages.last());
    let second = db
        .begin_turn(
            "g-c",
            "s-begin",
            "me",
            lease,
            "and now?",
            "and now?",
            20,
            WhenHeld::Keep,
        )
        .await
        .expect("begin")
        .started()
        .expect("free again");
    let earlier: Vec<&str> = second.earlier.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(earlier, ["hello there", "hi!"]);
    assert!(second.event_epoch > first.event_epoch);
    assert_eq!(
        db.conversation("s-begin")
            .await
            .expect("read")
            .expect("kept")
            .title,
        "hello there",
        "a titled conversation keeps its title"
    );
}

//! A run ends, pauses or is cancelled: one transaction each, with what it
//! stores (the trace, the reply, the approvals), each conditional on the
//! run still being the caller's (or still active). Ending is on every
//! turn's path: on SQLite it runs on the direct connection
//! ([`crate::direct`]); pausing and cancelling go through sqlx.

use aics_types::{Approval, ChatMessage, ChatTurnTraceResult, MessageRole, RunInfo, RunState};

use crate::approvals::NewApproval;
use crate::conversations::{append_message_direct, TraceColumn, TurnColumns};
use crate::direct::{prepare, ts};
use crate::tokens::hash_token;
use crate::{now, Database, DbError};

/// What an ending run stores beside its trace.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ending<'a> {
    /// `Finished` or `Failed`.
    pub state: RunState,
    /// The message the conversation shows for it: the reply, or a note.
    pub message: Option<(MessageRole, &'a str)>,
    /// Why it failed, for the run's record.
    pub note: Option<&'a str>,
    /// Hand back the trace's JSON as stored ([`RunEnded::trace_json`]),
    /// for a caller that answers with it. Only then is the text kept
    /// while the write waits for its commit (a thousand turns ending at
    /// once would hold 9 KB each).
    pub json_back: bool,
}

/// What ending a run wrote that its caller may use.
#[derive(Debug, Clone, PartialEq)]
pub struct RunEnded {
    /// The message the conversation shows for it, as appended.
    pub message: Option<ChatMessage>,
    /// With [`Ending::json_back`], the trace's JSON as SQLite stores it
    /// (packed), which is the text serde_json writes for the trace: the
    /// answer to the turn's caller can be these bytes. `None` on
    /// PostgreSQL, whose `jsonb` is written by sqlx.
    pub trace_json: Option<String>,
}

// LOCK_ORDER: a transaction that writes both a conversation's row and
// one of its runs takes the conversation's first, as a turn's beginning
// does (`begin.rs`: the conversation's row, then the run's insert, which
// waits for any other change to the conversation's active run). On
// PostgreSQL the other order deadlocks with a message arriving as the
// turn ends: the end held the run and waited for the conversation, the
// beginning held the conversation and waited for the run. (SQLite has
// one writer at a time: no order to keep.)

/// A run's cancellation, while it is not over.
static CANCEL_RUN: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "UPDATE runs SET state = 'cancelled', note = $2, ended_by = $3, \
         lease_owner = NULL, lease_expires_at = NULL, updated_at = $4 \
         WHERE graph_execution_id = $1 AND {}",
        super::ACTIVE
    )
});

/// The run's end, when `$2` still owns it.
const END_RUN: &str = "UPDATE runs SET state = $3, note = $4, lease_owner = NULL, \
     lease_expires_at = NULL, updated_at = $5 \
     WHERE graph_execution_id = $1 AND lease_owner = $2 \
     AND state IN ('running', 'resuming')";

impl Database {
    /// Ends a run `owner` holds, in one transaction with its trace and the
    /// message the conversation shows for it. [`DbError::LeaseLost`] (and
    /// nothing written) when the run is no longer the owner's.
    #[tracing::instrument(skip_all, fields(graph_execution_id = %trace.graph_execution_id, state = ending.state.as_str()))]
    pub async fn end_run(
        &self,
        owner: &str,
        trace: &ChatTurnTraceResult,
        ending: Ending<'_>,
    ) -> Result<RunEnded, DbError> {
        let id = &trace.graph_execution_id;
        match self {
            Self::Sqlite(sqlite) => {
                // Serialised and compressed once, outside the transaction
                // (which holds the one write connection, and may run
                // again); owned, as the write may run in another caller's
                // transaction (crate::direct's writer).
                let (column, trace_json) = TraceColumn(trace).sqlite_and_json(ending.json_back)?;
                let row = TurnColumns::of(trace).direct_row(column)?;
                let (id, owner, session_id) =
                    (id.clone(), owner.to_owned(), trace.session_id.clone());
                let (state, note) = (ending.state, ending.note.map(str::to_owned));
                let message = ending.message.map(|(role, text)| (role, text.to_owned()));
                sqlite
                    .direct()?
                    .write(move |tx| {
                        let ended = prepare(tx, END_RUN)?.execute(rusqlite::params![
                            id,
                            owner,
                            state.as_str(),
                            note,
                            ts(now()),
                        ])?;
                        if ended == 0 {
                            return Err(DbError::LeaseLost(id.clone()));
                        }
                        row.save(tx)?;
                        message
                            .as_ref()
                            .map(|(role, text)| {
                                append_message_direct(tx, &session_id, *role, text, Some(&id))
                            })
                            .transpose()
                    })
                    .await
                    .map(|message| RunEnded {
                        message,
                        trace_json,
                    })
            }
            Self::Postgres(pool) => {
                let mut tx = pool.begin().await?;
                // The conversation first, then the run (LOCK_ORDER): the
                // message is appended before the run is ended.
                let row = match ending.message {
                    Some((role, text)) => Some(append_message!(
                        &mut *tx,
                        &trace.session_id,
                        role,
                        text,
                        Some(id.as_str())
                    )),
                    None => None,
                };
                let ended = sqlx::query(END_RUN)
                    .bind(id)
                    .bind(owner)
                    .bind(ending.state.as_str())
                    .bind(ending.note)
                    .bind(now())
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
                if ended == 0 {
                    // Dropping the transaction rolls the message back.
                    return Err(DbError::LeaseLost(id.clone()));
                }
                save_turn!(&mut *tx, trace);
                tx.commit().await?;
                Ok(RunEnded {
                    message: row.map(ChatMessage::try_from).transpose()?,
                    trace_json: None,
                })
            }
        }
    }

    /// Pauses a run `owner` holds until supervisors decide its calls, in one
    /// transaction with its trace and one pending approval per call (all
    /// sharing the single-use `token`, stored as its hash). A decision can
    /// only land once this committed, so it always finds the run paused.
    #[tracing::instrument(skip_all, fields(graph_execution_id = %trace.graph_execution_id, calls = approvals.len()))]
    pub async fn pause_run(
        &self,
        owner: &str,
        trace: &ChatTurnTraceResult,
        approvals: &[NewApproval],
        token: &str,
    ) -> Result<Vec<Approval>, DbError> {
        if token.len() < 16 {
            return Err(DbError::InvalidInput(
                "an approval token must be at least 16 characters".into(),
            ));
        }
        let id = &trace.graph_execution_id;
        let token_hash = hash_token(token);
        with_pool!(self, pool => {
            let mut tx = pool.begin().await?;
            let paused = sqlx::query(
                "UPDATE runs SET state = 'paused', lease_owner = NULL, lease_expires_at = NULL, \
                 updated_at = $3 WHERE graph_execution_id = $1 AND lease_owner = $2 \
                 AND state IN ('running', 'resuming')",
            )
            .bind(id)
            .bind(owner)
            .bind(now())
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if paused == 0 {
                return Err(DbError::LeaseLost(id.clone()));
            }
            save_turn!(&mut *tx, trace);
            for approval in approvals {
                insert_approval!(&mut *tx, approval, &token_hash);
            }
            tx.commit().await?;
        });
        let mut stored = Vec::with_capacity(approvals.len());
        for approval in approvals {
            if let Some(a) = self.approval(&approval.id).await? {
                stored.push(a);
            }
        }
        Ok(stored)
    }

    /// Cancels an active run (a supervisor's call), whoever holds it: its
    /// pending approvals are cancelled with it, `trace` is stored as its
    /// last word and `note` shown in the conversation. `None` when the run
    /// is not active (it ended, or never existed). The owner, if alive,
    /// finds its lease gone at its next heartbeat and stops.
    #[tracing::instrument(skip_all, fields(graph_execution_id = %trace.graph_execution_id, by))]
    pub async fn cancel_run(
        &self,
        trace: &ChatTurnTraceResult,
        by: &str,
        note: &str,
    ) -> Result<Option<(RunInfo, Vec<String>)>, DbError> {
        let id = &trace.graph_execution_id;
        let at = now();
        let cancelled_calls = with_pool!(self, pool => {
            let mut tx = pool.begin().await?;
            // The conversation first, then the run (LOCK_ORDER): the note
            // is appended before the run is cancelled.
            append_message!(
                &mut *tx,
                &trace.session_id,
                MessageRole::System,
                note,
                Some(id.as_str())
            );
            let cancelled = sqlx::query(&CANCEL_RUN)
                .bind(id)
                .bind(note)
                .bind(by)
                .bind(at)
                .execute(&mut *tx)
                .await?
                .rows_affected();
            if cancelled == 0 {
                return Ok(None);
            }
            let calls: Vec<(String,)> = sqlx::query_as(
                "UPDATE approvals SET status = 'cancelled', decided_by = $2, decided_at = $3, \
                 decision_reason = $4, token_hash = NULL \
                 WHERE graph_execution_id = $1 AND status = 'pending' RETURNING id",
            )
            .bind(id)
            .bind(by)
            .bind(at)
            .bind(note)
            .fetch_all(&mut *tx)
            .await?;
            save_turn!(&mut *tx, trace);
            tx.commit().await?;
            calls.into_iter().map(|(c,)| c).collect::<Vec<_>>()
        });
        let run = self
            .run(id)
            .await?
            .ok_or_else(|| DbError::NotFound(format!("run {id}")))?;
        Ok(Some((run, cancelled_calls)))
    }
}

//! Runs: every graph run's durable state (running, paused, resuming,
//! finished, failed, cancelled) and the lease its owner renews while it
//! runs. At most one active run per conversation (a partial unique index):
//! that is the conversation's lock, across every instance, with no stale
//! timeout to guess — a lease that is not renewed expires, and recovery takes
//! the run over.
//!
//! Ending, pausing and cancelling a run are one transaction each, together
//! with what they store (the trace, the reply, the approvals), and each is
//! conditional on the caller still owning the run: a run that was cancelled
//! or taken over cannot be ended twice.

use std::time::Duration;

use aics_types::{
    Approval, ChatMessage, ChatTurnTraceResult, HandlingState, MessageRole, RunInfo, RunState,
    Timestamp,
};

use crate::approvals::NewApproval;
use crate::tokens::hash_token;
use crate::{now, parse_stored, Database, DbError};

#[derive(sqlx::FromRow)]
struct RunRow {
    graph_execution_id: String,
    session_id: String,
    state: String,
    attempts: i64,
    note: Option<String>,
    ended_by: Option<String>,
    created_at: Timestamp,
    updated_at: Timestamp,
}

impl TryFrom<RunRow> for RunInfo {
    type Error = DbError;
    fn try_from(r: RunRow) -> Result<Self, DbError> {
        Ok(RunInfo {
            state: parse_stored("run state", &r.state, RunState::parse)?,
            attempts: u32::try_from(r.attempts).unwrap_or(u32::MAX),
            graph_execution_id: r.graph_execution_id,
            session_id: r.session_id,
            note: r.note,
            ended_by: r.ended_by,
            created_at: r.created_at,
            updated_at: r.updated_at,
        })
    }
}

const COLUMNS: &str =
    "graph_execution_id, session_id, state, attempts, note, ended_by, created_at, updated_at";

/// What a turn that began works with (see [`Database::begin_turn`]).
#[derive(Debug, Clone, PartialEq)]
pub struct BegunTurn {
    /// The conversation's messages before the new one, oldest first.
    pub earlier: Vec<ChatMessage>,
    /// The customer the conversation is with, when known.
    pub customer_id: Option<String>,
    /// The epoch of the run's live events (see [`Database::next_event_epoch`]).
    pub event_epoch: u64,
    /// The customer's message as stored: the run's first live event.
    pub stored: ChatMessage,
}

/// How [`Database::begin_turn`] went.
#[derive(Debug, Clone, PartialEq)]
pub enum Begin {
    /// The run holds the conversation; the message is stored.
    Started(BegunTurn),
    /// Another run holds the conversation: nothing was written.
    Busy,
    /// A person holds the conversation: no run; the message is stored
    /// (`kept`) when asked for with [`WhenHeld::Keep`], else nothing is.
    Held {
        assignee: Option<String>,
        kept: Option<Kept>,
    },
}

/// The customer's message kept for the person who holds the conversation,
/// and the event epoch taken with it (to announce it).
#[derive(Debug, Clone, PartialEq)]
pub struct Kept {
    pub message: ChatMessage,
    pub event_epoch: u64,
}

impl Begin {
    /// The turn that started, if one did.
    pub fn started(self) -> Option<BegunTurn> {
        match self {
            Self::Started(turn) => Some(turn),
            _ => None,
        }
    }
}

/// What to do with the customer's message when a person holds the
/// conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhenHeld {
    /// Store it for the person to read (a message to the conversation).
    Keep,
    /// Store nothing (a call that wants the AI's answer).
    Refuse,
}

/// What an ending run stores beside its trace.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ending<'a> {
    /// `Finished` or `Failed`.
    pub state: RunState,
    /// The message the conversation shows for it: the reply, or a note.
    pub message: Option<(MessageRole, &'a str)>,
    /// Why it failed, for the run's record.
    pub note: Option<&'a str>,
}

fn until(lease: Duration) -> Timestamp {
    now() + chrono::Duration::from_std(lease).unwrap_or(chrono::Duration::seconds(30))
}

impl Database {
    /// Begins a turn for a customer's `message`, in one transaction: run
    /// `graph_execution_id` takes conversation `session_id` (created when
    /// new, titled `title`) for `owner` for `lease`, the message is stored,
    /// and the run's event epoch is taken. Returns the `history` messages
    /// before it, the conversation's customer and the epoch; `Busy`, with
    /// nothing written, when another run holds the conversation (it runs,
    /// waits for approval or resumes). Either all of it is stored or none:
    /// a turn never holds a conversation without its message.
    ///
    /// While a person holds the conversation (handling `human`) no run
    /// begins: `Held`, with the message kept or not as `when_held` says.
    /// The conversation's row is written (and locked) first and its
    /// handling read under that lock; taking over writes the same row
    /// first and then looks for an active run (`change_handling`), so of a
    /// turn beginning and an agent taking over at the same moment exactly
    /// one happens, on SQLite and PostgreSQL alike.
    #[tracing::instrument(skip_all, fields(session_id, graph_execution_id))]
    #[allow(clippy::too_many_arguments)]
    pub async fn begin_turn(
        &self,
        graph_execution_id: &str,
        session_id: &str,
        owner: &str,
        lease: Duration,
        message: &str,
        title: &str,
        history: u32,
        when_held: WhenHeld,
    ) -> Result<Begin, DbError> {
        let at = now();
        let begun = with_pool!(self, pool => {
            let mut tx = pool.begin().await?;
            // One statement makes or touches the conversation, takes its
            // next event epoch and says who handles it: the run, the
            // message and the epoch all roll back together if any step
            // below refuses.
            let (handling, assignee, epoch, customer_id): (String, Option<String>, i64, Option<String>) =
                sqlx::query_as(
                    "INSERT INTO conversations \
                     (session_id, title, handling, event_epoch, created_at, updated_at) \
                     VALUES ($1, $2, 'ai', 1, $3, $3) ON CONFLICT (session_id) DO UPDATE \
                     SET title = CASE WHEN conversations.title = '' THEN excluded.title \
                                 ELSE conversations.title END, \
                         event_epoch = conversations.event_epoch + 1, \
                         updated_at = excluded.updated_at \
                     RETURNING handling, assignee, event_epoch, customer_id",
                )
                .bind(session_id)
                .bind(title)
                .bind(at)
                .fetch_one(&mut *tx)
                .await?;
            let event_epoch = u64::try_from(epoch).unwrap_or(0);
            let held = handling == HandlingState::Human.as_str();
            if held && when_held == WhenHeld::Refuse {
                return Ok(Begin::Held { assignee, kept: None }); // rolls back
            }
            // A run only when the AI answers; then the earlier messages,
            // read before the new one is stored.
            let earlier = if held {
                None
            } else {
                let inserted = sqlx::query(
                    "INSERT INTO runs (graph_execution_id, session_id, state, lease_owner, \
                     lease_expires_at, attempts, created_at, updated_at) \
                     VALUES ($1, $2, 'running', $3, $4, 1, $5, $5) ON CONFLICT DO NOTHING",
                )
                .bind(graph_execution_id)
                .bind(session_id)
                .bind(owner)
                .bind(until(lease))
                .bind(at)
                .execute(&mut *tx)
                .await?
                .rows_affected();
                if inserted == 0 {
                    return Ok(Begin::Busy); // the transaction rolls back: nothing written
                }
                Some(recent_messages!(&mut *tx, session_id, history)?)
            };
            let stored = insert_message!(
                &mut *tx,
                session_id,
                MessageRole::Customer,
                message,
                None::<&str>,
                None::<&str>,
                at
            );
            tx.commit().await?;
            let stored = ChatMessage::try_from(stored)?;
            match earlier {
                None => Begin::Held {
                    assignee,
                    kept: Some(Kept {
                        message: stored,
                        event_epoch,
                    }),
                },
                Some(earlier) => Begin::Started(BegunTurn {
                    earlier,
                    customer_id,
                    event_epoch,
                    stored,
                }),
            }
        });
        Ok(begun)
    }

    /// Renews the lease of a run `owner` runs; `false` when it is no longer
    /// the owner's (cancelled, taken over, ended): the owner must stop.
    pub async fn renew_lease(
        &self,
        graph_execution_id: &str,
        owner: &str,
        lease: Duration,
    ) -> Result<bool, DbError> {
        let renewed = with_pool!(self, pool => sqlx::query(
            "UPDATE runs SET lease_expires_at = $3, updated_at = $4 \
             WHERE graph_execution_id = $1 AND lease_owner = $2 \
             AND state IN ('running', 'resuming')",
        )
        .bind(graph_execution_id)
        .bind(owner)
        .bind(until(lease))
        .bind(now())
        .execute(pool)
        .await?
        .rows_affected());
        Ok(renewed == 1)
    }

    /// Claims a paused run whose calls are all decided, to resume it:
    /// exactly one caller, on any instance, gets `true`.
    #[tracing::instrument(skip_all, fields(graph_execution_id))]
    pub async fn claim_paused_run(
        &self,
        graph_execution_id: &str,
        owner: &str,
        lease: Duration,
    ) -> Result<bool, DbError> {
        let claimed = with_pool!(self, pool => sqlx::query(
            "UPDATE runs SET state = 'resuming', lease_owner = $2, lease_expires_at = $3, \
             updated_at = $4 WHERE graph_execution_id = $1 AND state = 'paused'",
        )
        .bind(graph_execution_id)
        .bind(owner)
        .bind(until(lease))
        .bind(now())
        .execute(pool)
        .await?
        .rows_affected());
        Ok(claimed == 1)
    }

    /// Active runs whose owner stopped renewing their lease (its process
    /// died): the candidates of a recovery sweep, oldest first.
    pub async fn expired_runs(&self, limit: u32) -> Result<Vec<RunInfo>, DbError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM runs WHERE state IN ('running', 'resuming') \
             AND (lease_expires_at IS NULL OR lease_expires_at < $1) \
             ORDER BY updated_at LIMIT $2"
        );
        let rows = with_pool!(self, pool => sqlx::query_as::<_, RunRow>(&sql)
            .bind(now())
            .bind(i64::from(limit))
            .fetch_all(pool)
            .await?);
        rows.into_iter().map(RunInfo::try_from).collect()
    }

    /// Takes over a run whose lease expired, counting the attempt: exactly
    /// one instance gets it back (with its new attempt count).
    #[tracing::instrument(skip_all, fields(graph_execution_id))]
    pub async fn take_over_run(
        &self,
        graph_execution_id: &str,
        owner: &str,
        lease: Duration,
    ) -> Result<Option<RunInfo>, DbError> {
        let at = now();
        let taken = with_pool!(self, pool => sqlx::query(
            "UPDATE runs SET lease_owner = $2, lease_expires_at = $3, attempts = attempts + 1, \
             updated_at = $4 WHERE graph_execution_id = $1 AND state IN ('running', 'resuming') \
             AND (lease_expires_at IS NULL OR lease_expires_at < $4)",
        )
        .bind(graph_execution_id)
        .bind(owner)
        .bind(until(lease))
        .bind(at)
        .execute(pool)
        .await?
        .rows_affected());
        if taken == 0 {
            return Ok(None);
        }
        self.run(graph_execution_id).await
    }

    /// Paused runs none of whose calls waits any more (a decision landed but
    /// its resume never started): the other candidates of a recovery sweep.
    pub async fn decided_paused_runs(&self, limit: u32) -> Result<Vec<RunInfo>, DbError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM runs r WHERE r.state = 'paused' \
             AND EXISTS (SELECT 1 FROM approvals a \
                         WHERE a.graph_execution_id = r.graph_execution_id) \
             AND NOT EXISTS (SELECT 1 FROM approvals a \
                             WHERE a.graph_execution_id = r.graph_execution_id \
                             AND a.status = 'pending') \
             ORDER BY r.updated_at LIMIT $1"
        );
        let rows = with_pool!(self, pool => sqlx::query_as::<_, RunRow>(&sql)
            .bind(i64::from(limit))
            .fetch_all(pool)
            .await?);
        rows.into_iter().map(RunInfo::try_from).collect()
    }

    /// One run.
    pub async fn run(&self, graph_execution_id: &str) -> Result<Option<RunInfo>, DbError> {
        let sql = format!("SELECT {COLUMNS} FROM runs WHERE graph_execution_id = $1");
        let row = with_pool!(self, pool => sqlx::query_as::<_, RunRow>(&sql)
            .bind(graph_execution_id)
            .fetch_optional(pool)
            .await?);
        row.map(RunInfo::try_from).transpose()
    }

    /// The run that holds a conversation now, if any.
    pub async fn active_run(&self, session_id: &str) -> Result<Option<RunInfo>, DbError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM runs WHERE session_id = $1 \
             AND state IN ('running', 'paused', 'resuming')"
        );
        let row = with_pool!(self, pool => sqlx::query_as::<_, RunRow>(&sql)
            .bind(session_id)
            .fetch_optional(pool)
            .await?);
        row.map(RunInfo::try_from).transpose()
    }

    /// Ends a run `owner` holds, in one transaction with its trace and the
    /// message the conversation shows for it. [`DbError::LeaseLost`] (and
    /// nothing written) when the run is no longer the owner's.
    #[tracing::instrument(skip_all, fields(graph_execution_id = %trace.graph_execution_id, state = ending.state.as_str()))]
    pub async fn end_run(
        &self,
        owner: &str,
        trace: &ChatTurnTraceResult,
        ending: Ending<'_>,
    ) -> Result<Option<ChatMessage>, DbError> {
        let id = &trace.graph_execution_id;
        let row = with_pool!(self, pool => {
            let mut tx = pool.begin().await?;
            let ended = sqlx::query(
                "UPDATE runs SET state = $3, note = $4, lease_owner = NULL, \
                 lease_expires_at = NULL, updated_at = $5 \
                 WHERE graph_execution_id = $1 AND lease_owner = $2 \
                 AND state IN ('running', 'resuming')",
            )
            .bind(id)
            .bind(owner)
            .bind(ending.state.as_str())
            .bind(ending.note)
            .bind(now())
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if ended == 0 {
                return Err(DbError::LeaseLost(id.clone()));
            }
            save_turn!(&mut *tx, trace);
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
            tx.commit().await?;
            row
        });
        row.map(ChatMessage::try_from).transpose()
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
            let cancelled = sqlx::query(
                "UPDATE runs SET state = 'cancelled', note = $2, ended_by = $3, \
                 lease_owner = NULL, lease_expires_at = NULL, updated_at = $4 \
                 WHERE graph_execution_id = $1 AND state IN ('running', 'paused', 'resuming')",
            )
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
            append_message!(
                &mut *tx,
                &trace.session_id,
                MessageRole::System,
                note,
                Some(id.as_str())
            );
            tx.commit().await?;
            calls.into_iter().map(|(c,)| c).collect::<Vec<_>>()
        });
        let run = self
            .run(id)
            .await?
            .ok_or_else(|| DbError::NotFound(format!("run {id}")))?;
        Ok(Some((run, cancelled_calls)))
    }

    /// The next epoch of a conversation's live events: every publisher of
    /// them (a run starting or resuming, a decision) takes one, so sequence
    /// numbers grow across instances without a write per event. 0 when the
    /// conversation does not exist (yet).
    pub async fn next_event_epoch(&self, session_id: &str) -> Result<u64, DbError> {
        let row: Option<(i64,)> = with_pool!(self, pool => sqlx::query_as(
            "UPDATE conversations SET event_epoch = event_epoch + 1 WHERE session_id = $1 \
             RETURNING event_epoch",
        )
        .bind(session_id)
        .fetch_optional(pool)
        .await?);
        Ok(row.map_or(0, |(e,)| u64::try_from(e).unwrap_or(0)))
    }
}

impl Database {
    /// Marks every running run's lease expired: for SQLite at start-up,
    /// where one process owns the file and a running run is a crash's
    /// leftover. Returns how many there were.
    pub async fn expire_all_leases(&self) -> Result<u64, DbError> {
        Ok(with_pool!(self, pool => sqlx::query(
            "UPDATE runs SET lease_expires_at = NULL WHERE state IN ('running', 'resuming')",
        )
        .execute(pool)
        .await?
        .rows_affected()))
    }

    /// Gives up the leases `owner` holds (a graceful shutdown with turns
    /// still running), so that recovery resumes them at once.
    pub async fn release_leases(&self, owner: &str) -> Result<u64, DbError> {
        Ok(with_pool!(self, pool => sqlx::query(
            "UPDATE runs SET lease_expires_at = NULL \
             WHERE lease_owner = $1 AND state IN ('running', 'resuming')",
        )
        .bind(owner)
        .execute(pool)
        .await?
        .rows_affected()))
    }
}

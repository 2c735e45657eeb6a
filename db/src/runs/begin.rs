//! A turn begins: in one transaction, the run takes the conversation
//! (created when new) with the customer's message, the history the turn
//! reads and its event epoch — on SQLite on the direct connection
//! ([`crate::direct`]), on PostgreSQL through sqlx, over the same SQL.

use std::time::Duration;

use aics_types::{ChatMessage, HandlingState, MessageRole, Timestamp};
use rusqlite::OptionalExtension as _;

use super::until;
use crate::conversations::{insert_message_direct, recent_messages_direct};
use crate::direct::{prepare, ts, Keep};
use crate::{now, Database, DbError};

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

/// The text of [`UPSERT_CONVERSATION`] and [`TOUCH_OR_MAKE_CONVERSATION`].
macro_rules! upsert_conversation {
    () => {
        "INSERT INTO conversations \
         (session_id, title, handling, event_epoch, created_at, updated_at) \
         VALUES ($1, $2, 'ai', 1, $3, $3) ON CONFLICT (session_id) DO UPDATE \
         SET title = CASE WHEN conversations.title = '' THEN excluded.title \
                     ELSE conversations.title END, \
             event_epoch = conversations.event_epoch + 1, \
             updated_at = excluded.updated_at"
    };
}
/// One statement makes or touches the conversation, takes its next event
/// epoch and says who handles it: the run, the message and the epoch all
/// roll back together if any step after it refuses.
const UPSERT_CONVERSATION: &str = concat!(
    upsert_conversation!(),
    " RETURNING handling, assignee, event_epoch, customer_id"
);
/// [`UPSERT_CONVERSATION`] on SQLite's direct connection: without its
/// `RETURNING` (as `INSERT_MESSAGE_ROW`, db/src/conversations/statements.rs,
/// says why), the row read by [`TOUCHED`] next, in the same transaction.
const TOUCH_OR_MAKE_CONVERSATION: &str = upsert_conversation!();
/// What [`UPSERT_CONVERSATION`] returns.
const TOUCHED: &str =
    "SELECT handling, assignee, event_epoch, customer_id FROM conversations WHERE session_id = $1";
/// The run, unless another holds the conversation (a partial unique index).
const INSERT_RUN: &str = "INSERT INTO runs (graph_execution_id, session_id, state, lease_owner, \
     lease_expires_at, attempts, created_at, updated_at) \
     VALUES ($1, $2, 'running', $3, $4, 1, $5, $5) ON CONFLICT DO NOTHING";

/// What the conversation's row said when the turn touched it.
struct Touched {
    handling: String,
    assignee: Option<String>,
    event_epoch: u64,
    customer_id: Option<String>,
}

impl Touched {
    fn held(&self) -> bool {
        self.handling == HandlingState::Human.as_str()
    }

    /// The outcome once the message is stored (`earlier` is `None` when a
    /// person holds the conversation and no run began).
    fn begun(self, earlier: Option<Vec<ChatMessage>>, stored: ChatMessage) -> Begin {
        match earlier {
            None => Begin::Held {
                assignee: self.assignee,
                kept: Some(Kept {
                    message: stored,
                    event_epoch: self.event_epoch,
                }),
            },
            Some(earlier) => Begin::Started(BegunTurn {
                earlier,
                customer_id: self.customer_id,
                event_epoch: self.event_epoch,
                stored,
            }),
        }
    }
}

/// What a turn begins with (the arguments of [`Database::begin_turn`]),
/// owned: on SQLite the write may run in another caller's transaction
/// (crate::direct's writer).
struct NewTurn {
    graph_execution_id: String,
    session_id: String,
    owner: String,
    lease_until: Timestamp,
    message: String,
    title: String,
    history: u32,
    when_held: WhenHeld,
    at: Timestamp,
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
        let turn = NewTurn {
            graph_execution_id: graph_execution_id.to_owned(),
            session_id: session_id.to_owned(),
            owner: owner.to_owned(),
            lease_until: until(lease),
            message: message.to_owned(),
            title: title.to_owned(),
            history,
            when_held,
            at: now(),
        };
        match self {
            Self::Sqlite(sqlite) => {
                sqlite
                    .direct()?
                    .transact(move |tx| begin_direct(tx, &turn))
                    .await
            }
            Self::Postgres(pool) => begin_postgres(pool, &turn).await,
        }
    }
}

/// [`Database::begin_turn`] on SQLite's direct connection.
fn begin_direct(tx: &crate::direct::Tx<'_>, t: &NewTurn) -> Result<Keep<Begin>, DbError> {
    prepare(tx, TOUCH_OR_MAKE_CONVERSATION)?.execute(rusqlite::params![
        &t.session_id,
        &t.title,
        ts(t.at)
    ])?;
    let touched = prepare(tx, TOUCHED)?
        .query_row([&t.session_id], |row| {
            Ok(Touched {
                handling: row.get(0)?,
                assignee: row.get(1)?,
                event_epoch: u64::try_from(row.get::<_, i64>(2)?).unwrap_or(0),
                customer_id: row.get(3)?,
            })
        })
        .optional()?
        .ok_or_else(|| DbError::Corrupt("the conversation upsert left no row".into()))?;
    let held = touched.held();
    if held && t.when_held == WhenHeld::Refuse {
        return Ok(Keep::RollBack(Begin::Held {
            assignee: touched.assignee,
            kept: None,
        }));
    }
    // A run only when the AI answers; then the earlier messages, read
    // before the new one is stored.
    let earlier = if held {
        None
    } else {
        let inserted = prepare(tx, INSERT_RUN)?.execute(rusqlite::params![
            &t.graph_execution_id,
            &t.session_id,
            &t.owner,
            ts(t.lease_until),
            ts(t.at),
        ])?;
        if inserted == 0 {
            return Ok(Keep::RollBack(Begin::Busy));
        }
        Some(recent_messages_direct(tx, &t.session_id, t.history)?)
    };
    let stored = insert_message_direct(
        tx,
        &t.session_id,
        MessageRole::Customer,
        &t.message,
        None,
        t.at,
    )?;
    Ok(Keep::Commit(touched.begun(earlier, stored)))
}

/// [`Database::begin_turn`] on PostgreSQL.
async fn begin_postgres(pool: &sqlx::PgPool, t: &NewTurn) -> Result<Begin, DbError> {
    let mut tx = pool.begin().await?;
    let (handling, assignee, epoch, customer_id): (String, Option<String>, i64, Option<String>) =
        sqlx::query_as(UPSERT_CONVERSATION)
            .bind(&t.session_id)
            .bind(&t.title)
            .bind(t.at)
            .fetch_one(&mut *tx)
            .await?;
    let touched = Touched {
        handling,
        assignee,
        event_epoch: u64::try_from(epoch).unwrap_or(0),
        customer_id,
    };
    let held = touched.held();
    if held && t.when_held == WhenHeld::Refuse {
        // Dropping the transaction rolls it back.
        return Ok(Begin::Held {
            assignee: touched.assignee,
            kept: None,
        });
    }
    let earlier = if held {
        None
    } else {
        let inserted = sqlx::query(INSERT_RUN)
            .bind(&t.graph_execution_id)
            .bind(&t.session_id)
            .bind(&t.owner)
            .bind(t.lease_until)
            .bind(t.at)
            .execute(&mut *tx)
            .await?
            .rows_affected();
        if inserted == 0 {
            return Ok(Begin::Busy); // rolls back: nothing written
        }
        Some(recent_messages!(&mut *tx, &t.session_id, t.history)?)
    };
    let stored = insert_message!(
        &mut *tx,
        &t.session_id,
        MessageRole::Customer,
        &t.message,
        None::<&str>,
        None::<&str>,
        t.at
    );
    tx.commit().await?;
    Ok(touched.begun(earlier, ChatMessage::try_from(stored)?))
}

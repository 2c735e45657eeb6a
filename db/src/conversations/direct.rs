//! Conversations' statements on SQLite's direct connection
//! ([`crate::direct`]): the same SQL as the sqlx macros of
//! [`super::statements`], for the writes and reads inside a turn's own
//! transactions.

use aics_types::{ChatMessage, MessageRole, Timestamp};

use super::{
    role_name, MessageRow, TurnColumns, INSERT_MESSAGE, RECENT_MESSAGES, SAVE_TURN,
    TOUCH_CONVERSATION,
};
use crate::direct::{all, first, json, prepare, read_ts, ts};
use crate::DbError;

impl TurnColumns<'_> {
    /// Saves the row on SQLite's direct connection, with the trace as
    /// [`TraceColumn::sqlite`] made it (before the transaction began).
    pub(crate) fn save_direct(
        &self,
        tx: &rusqlite::Transaction<'_>,
        trace: &rusqlite::types::Value,
    ) -> Result<(), DbError> {
        let t = self.trace;
        prepare(tx, SAVE_TURN)?.execute(rusqlite::params![
            t.graph_execution_id,
            t.session_id,
            t.intent.as_str(),
            t.stop_reason.map(|s| s.as_str()),
            t.pending_approval,
            self.duration_ms,
            t.llm_calls,
            t.steps_taken,
            trace,
            ts(t.started_at),
            ts(self.at),
            self.prompt_tokens,
            self.completion_tokens,
            self.cost_usd,
            json(&self.tools)?,
        ])?;
        Ok(())
    }
}

impl MessageRow {
    /// A row of [`INSERT_MESSAGE`] or [`RECENT_MESSAGES`] read on SQLite's
    /// direct connection.
    fn direct(row: &rusqlite::Row<'_>) -> Result<Self, DbError> {
        Ok(Self {
            id: row.get(0)?,
            role: row.get(1)?,
            content: row.get(2)?,
            graph_execution_id: row.get(3)?,
            created_at: read_ts(&row.get::<_, String>(4)?)?,
            author: row.get(5)?,
        })
    }
}

/// The last `n` messages of a conversation, oldest first, on SQLite's
/// direct connection (as `recent_messages!`).
pub(crate) fn recent_messages_direct(
    tx: &rusqlite::Transaction<'_>,
    session_id: &str,
    n: u32,
) -> Result<Vec<ChatMessage>, DbError> {
    let mut messages = all(
        tx,
        RECENT_MESSAGES,
        rusqlite::params![session_id, n],
        |row| ChatMessage::try_from(MessageRow::direct(row)?),
    )?;
    messages.reverse();
    Ok(messages)
}

/// Inserts a message at `at` on SQLite's direct connection, without
/// touching the conversation (as `insert_message!`).
pub(crate) fn insert_message_direct(
    tx: &rusqlite::Transaction<'_>,
    session_id: &str,
    role: MessageRole,
    content: &str,
    graph_execution_id: Option<&str>,
    at: Timestamp,
) -> Result<ChatMessage, DbError> {
    let params = rusqlite::params![
        session_id,
        role_name(role),
        content,
        graph_execution_id,
        ts(at),
        None::<&str>,
    ];
    first(tx, INSERT_MESSAGE, params, |row| {
        ChatMessage::try_from(MessageRow::direct(row)?)
    })?
    .ok_or_else(|| DbError::Corrupt("an insert returned no row".into()))
}

/// Appends a message and touches its conversation on SQLite's direct
/// connection (as `append_message!`); `NotFound` when the conversation is
/// missing.
pub(crate) fn append_message_direct(
    tx: &rusqlite::Transaction<'_>,
    session_id: &str,
    role: MessageRole,
    content: &str,
    graph_execution_id: Option<&str>,
) -> Result<ChatMessage, DbError> {
    let at = crate::now();
    let touched =
        prepare(tx, TOUCH_CONVERSATION)?.execute(rusqlite::params![session_id, ts(at)])?;
    if touched == 0 {
        return Err(DbError::NotFound(format!("conversation {session_id}")));
    }
    insert_message_direct(tx, session_id, role, content, graph_execution_id, at)
}

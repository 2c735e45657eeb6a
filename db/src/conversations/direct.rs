//! Conversations' statements on SQLite's direct connection
//! ([`crate::direct`]): the same SQL as the sqlx macros of
//! [`super::statements`], for the writes and reads inside a turn's own
//! transactions.

use aics_types::{ChatMessage, ConversationDetail, ConversationSummary, MessageRole, Timestamp};
use rusqlite::types::Value;

use super::{
    role_name, MessageRow, SummaryRow, TurnColumns, CONVERSATION, INSERT_MESSAGE_ROW, MESSAGES,
    RECENT_MESSAGES, SAVE_TURN, TOUCH_CONVERSATION, TURNS,
};
use crate::direct::{all, first, json, prepare, read_ts, ts};
use crate::DbError;

impl TurnColumns<'_> {
    /// The row's values for SQLite's direct connection, owned (the write
    /// may run in another caller's transaction: crate::direct's writer),
    /// with the trace as [`TraceColumn::sqlite`] made it.
    pub(crate) fn direct_row(&self, trace: Value) -> Result<TurnRow, DbError> {
        let t = self.trace;
        Ok(TurnRow([
            t.graph_execution_id.clone().into(),
            t.session_id.clone().into(),
            t.intent.as_str().to_owned().into(),
            t.stop_reason.map(|s| s.as_str().to_owned()).into(),
            t.pending_approval.into(),
            self.duration_ms.into(),
            i64::from(t.llm_calls).into(),
            i64::from(t.steps_taken).into(),
            trace,
            ts(t.started_at).into(),
            ts(self.at).into(),
            self.prompt_tokens.into(),
            self.completion_tokens.into(),
            self.cost_usd.into(),
            json(&self.tools)?.into(),
        ]))
    }
}

/// A turn's row, its values in [`SAVE_TURN`]'s order.
pub(crate) struct TurnRow([Value; 15]);

impl TurnRow {
    /// Saves (or replaces) the row.
    pub(crate) fn save(&self, tx: &crate::direct::Tx<'_>) -> Result<(), DbError> {
        prepare(tx, SAVE_TURN)?.execute(rusqlite::params_from_iter(&self.0))?;
        Ok(())
    }
}

impl SummaryRow {
    /// A row of [`super::SUMMARY_SELECT`] read on SQLite's direct
    /// connection.
    pub(super) fn direct(row: &rusqlite::Row<'_>) -> Result<Self, DbError> {
        Ok(Self {
            session_id: row.get(0)?,
            title: row.get(1)?,
            handling: row.get(2)?,
            updated_at: read_ts(&row.get::<_, String>(3)?)?,
            assignee: row.get(4)?,
            customer_id: row.get(5)?,
            last_message: row.get(6)?,
            awaiting_reply: row.get(7)?,
        })
    }
}

impl MessageRow {
    /// A row of [`MESSAGES`] or [`RECENT_MESSAGES`]
    /// read on SQLite's direct connection.
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

/// A conversation with its messages, turns and active run, in `tx`'s one
/// snapshot (as `Database::conversation_detail` reads them on PostgreSQL).
pub(super) fn detail(
    tx: &crate::direct::Tx<'_>,
    session_id: &str,
) -> Result<Option<ConversationDetail>, DbError> {
    let summary = first(tx, &CONVERSATION, [session_id], |row| {
        ConversationSummary::try_from(SummaryRow::direct(row)?)
    })?;
    let Some(summary) = summary else {
        return Ok(None);
    };
    Ok(Some(ConversationDetail {
        summary,
        messages: all(tx, MESSAGES, [session_id], |row| {
            ChatMessage::try_from(MessageRow::direct(row)?)
        })?,
        turns: all(tx, TURNS, [session_id], |row| {
            crate::packed::unpacked_direct(row.get_ref(0)?)
        })?,
        active_run: crate::runs::active_run_direct(tx, session_id)?,
    }))
}

/// The last `n` messages of a conversation, oldest first, on SQLite's
/// direct connection (as `recent_messages!`).
pub(crate) fn recent_messages_direct(
    tx: &crate::direct::Tx<'_>,
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
/// touching the conversation (as `insert_message!`). The row is what was
/// bound and its rowid: [`INSERT_MESSAGE_ROW`] says why it is not read
/// back.
pub(crate) fn insert_message_direct(
    tx: &crate::direct::Tx<'_>,
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
    prepare(tx, INSERT_MESSAGE_ROW)?.execute(params)?;
    Ok(ChatMessage {
        id: tx.last_insert_rowid(),
        role,
        content: content.to_owned(),
        graph_execution_id: graph_execution_id.map(str::to_owned),
        created_at: at,
        author: None,
    })
}

/// Appends a message and touches its conversation on SQLite's direct
/// connection (as `append_message!`); `NotFound` when the conversation is
/// missing.
pub(crate) fn append_message_direct(
    tx: &crate::direct::Tx<'_>,
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

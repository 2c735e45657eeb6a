//! Conversations (one per session id, with who handles it), their messages
//! and the stored traces of their turns.

use aics_types::{
    ChatMessage, ChatTurnTraceResult, ConversationDetail, ConversationSummary, HandlingState,
    MessageRole, Timestamp, TurnDetail,
};
use sqlx::types::Json;

use crate::direct::{json, prepare, read_ts, ts};
use crate::{parse_stored, Database, DbError};

#[derive(sqlx::FromRow)]
pub(crate) struct SummaryRow {
    session_id: String,
    title: String,
    handling: String,
    last_message: Option<String>,
    updated_at: Timestamp,
    assignee: Option<String>,
    customer_id: Option<String>,
    awaiting_reply: bool,
}

impl TryFrom<SummaryRow> for ConversationSummary {
    type Error = DbError;
    fn try_from(r: SummaryRow) -> Result<Self, DbError> {
        Ok(ConversationSummary {
            session_id: r.session_id,
            title: r.title,
            handling: parse_stored("handling state", &r.handling, HandlingState::parse)?,
            last_message: r.last_message,
            updated_at: r.updated_at,
            assignee: r.assignee,
            customer_id: r.customer_id,
            awaiting_reply: r.awaiting_reply,
        })
    }
}

#[derive(sqlx::FromRow)]
pub(crate) struct MessageRow {
    id: i64,
    role: String,
    content: String,
    graph_execution_id: Option<String>,
    created_at: Timestamp,
    author: Option<String>,
}

pub(crate) fn role_name(role: MessageRole) -> &'static str {
    match role {
        MessageRole::Customer => "customer",
        MessageRole::Assistant => "assistant",
        MessageRole::System => "system",
        MessageRole::Agent => "agent",
        MessageRole::Note => "note",
    }
}

fn parse_role(name: &str) -> Option<MessageRole> {
    Some(match name {
        "customer" => MessageRole::Customer,
        "assistant" => MessageRole::Assistant,
        "system" => MessageRole::System,
        "agent" => MessageRole::Agent,
        "note" => MessageRole::Note,
        _ => return None,
    })
}

impl TryFrom<MessageRow> for ChatMessage {
    type Error = DbError;
    fn try_from(r: MessageRow) -> Result<Self, DbError> {
        Ok(ChatMessage {
            id: r.id,
            role: parse_stored("message role", &r.role, parse_role)?,
            content: r.content,
            graph_execution_id: r.graph_execution_id,
            created_at: r.created_at,
            author: r.author,
        })
    }
}

#[derive(sqlx::FromRow)]
struct TraceRow {
    trace: Json<ChatTurnTraceResult>,
}

/// The summary query: the last message comes from a correlated subquery so
/// that one statement serves the list and the single lookup.
/// "Waiting for approval" is read from the conversation's paused run, the
/// one place that fact is kept; the stored handling says who else handles it.
/// `awaiting_reply`: the last message the customer sees is their own.
pub(crate) const SUMMARY_SELECT: &str = "SELECT c.session_id, c.title, \
     CASE WHEN EXISTS (SELECT 1 FROM runs r WHERE r.session_id = c.session_id \
          AND r.state = 'paused') THEN 'waiting_approval' ELSE c.handling END AS handling, \
     c.updated_at, c.assignee, c.customer_id, \
     (SELECT m.content FROM messages m WHERE m.session_id = c.session_id \
      ORDER BY m.id DESC LIMIT 1) AS last_message, \
     COALESCE((SELECT m.role FROM messages m WHERE m.session_id = c.session_id \
      AND m.role IN ('customer', 'assistant', 'agent') ORDER BY m.id DESC LIMIT 1) = 'customer', \
      1 = 0) AS awaiting_reply \
     FROM conversations c";

/// The longest title made from a first message, in characters.
const TITLE_CHARS: usize = 60;

/// A conversation title from its first message.
pub fn title_from(message: &str) -> String {
    let line = message.trim().lines().next().unwrap_or_default();
    let mut title: String = line.chars().take(TITLE_CHARS).collect();
    if line.chars().count() > TITLE_CHARS {
        title.push('…');
    }
    if title.is_empty() {
        "New conversation".to_owned()
    } else {
        title
    }
}

/// Creates conversation `$session_id` on executor `$exec` unless it exists;
/// an existing one keeps its customer (or gets `$customer_id`) and gets
/// `$title` only while it has none.
macro_rules! ensure_conversation {
    ($exec:expr, $session_id:expr, $customer_id:expr, $title:expr) => {{
        sqlx::query(
            "INSERT INTO conversations (session_id, customer_id, title, handling, created_at, updated_at) \
             VALUES ($1, $2, $3, 'ai', $4, $4) ON CONFLICT (session_id) DO UPDATE \
             SET customer_id = COALESCE(conversations.customer_id, excluded.customer_id), \
                 title = CASE WHEN conversations.title = '' THEN excluded.title ELSE conversations.title END",
        )
        .bind($session_id)
        .bind($customer_id)
        .bind($title)
        .bind($crate::now())
        .execute(&mut *$exec)
        .await?
    }};
}

/// The last `$n` messages of conversation `$session_id` on executor
/// `$exec`, oldest first, as a `Result<Vec<ChatMessage>, DbError>`.
macro_rules! recent_messages {
    ($exec:expr, $session_id:expr, $n:expr) => {{
        let rows = sqlx::query_as::<_, $crate::conversations::MessageRow>(
            $crate::conversations::RECENT_MESSAGES,
        )
        .bind($session_id)
        .bind(i64::from($n))
        .fetch_all(&mut *$exec)
        .await?;
        rows.into_iter()
            .rev()
            .map(aics_types::ChatMessage::try_from)
            .collect::<Result<Vec<_>, $crate::DbError>>()
    }};
}

/// Appends a message on executor `$exec` (a transaction: the conversation is
/// touched in the same step) and evaluates to its [`MessageRow`]; returns
/// `NotFound` from the enclosing function when the conversation is missing.
macro_rules! append_message {
    ($exec:expr, $session_id:expr, $role:expr, $content:expr, $graph_execution_id:expr) => {
        append_message!(
            $exec,
            $session_id,
            $role,
            $content,
            $graph_execution_id,
            None::<&str>
        )
    };
    ($exec:expr, $session_id:expr, $role:expr, $content:expr, $graph_execution_id:expr, $author:expr) => {{
        let at = $crate::now();
        let touched = sqlx::query($crate::conversations::TOUCH_CONVERSATION)
            .bind($session_id)
            .bind(at)
            .execute(&mut *$exec)
            .await?
            .rows_affected();
        if touched == 0 {
            return Err($crate::DbError::NotFound(format!(
                "conversation {}",
                $session_id
            )));
        }
        insert_message!(
            $exec,
            $session_id,
            $role,
            $content,
            $graph_execution_id,
            $author,
            at
        )
    }};
}

/// Inserts a message on executor `$exec` at time `$at`, evaluating to its
/// [`MessageRow`], without touching the conversation: for a caller whose
/// statement already did (and made sure it exists).
macro_rules! insert_message {
    ($exec:expr, $session_id:expr, $role:expr, $content:expr, $graph_execution_id:expr, $author:expr, $at:expr) => {{
        sqlx::query_as::<_, $crate::conversations::MessageRow>(
            $crate::conversations::INSERT_MESSAGE,
        )
        .bind($session_id)
        .bind($crate::conversations::role_name($role))
        .bind($content)
        .bind($graph_execution_id)
        .bind($at)
        .bind($author)
        .fetch_one(&mut *$exec)
        .await?
    }};
}

/// One tool call as the overview counts it (`turns.tools`).
#[derive(serde::Serialize)]
pub(crate) struct TurnTool<'a> {
    pub(crate) name: &'a str,
    pub(crate) status: aics_types::ToolCallStatus,
}

/// Saves (or replaces) a trace on executor `$exec`.
macro_rules! save_turn {
    ($exec:expr, $trace:expr) => {{
        let row = $crate::conversations::TurnColumns::of($trace);
        sqlx::query($crate::conversations::SAVE_TURN)
            .bind(&row.trace.graph_execution_id)
            .bind(&row.trace.session_id)
            .bind(row.trace.intent.as_str())
            .bind(row.trace.stop_reason.map(|s| s.as_str()))
            .bind(row.trace.pending_approval)
            .bind(row.duration_ms)
            .bind(i64::from(row.trace.llm_calls))
            .bind(i64::from(row.trace.steps_taken))
            .bind(sqlx::types::Json(row.trace))
            .bind(row.trace.started_at)
            .bind(row.at)
            .bind(row.prompt_tokens)
            .bind(row.completion_tokens)
            .bind(row.cost_usd)
            .bind(sqlx::types::Json(&row.tools))
            .execute($exec)
            .await?
            .rows_affected()
    }};
}

/// The statements the macros above and SQLite's direct connection
/// ([`crate::direct`]) share: one text each, whichever driver runs it.
pub(crate) const RECENT_MESSAGES: &str =
    "SELECT id, role, content, graph_execution_id, created_at, author FROM messages \
     WHERE session_id = $1 ORDER BY id DESC LIMIT $2";
pub(crate) const TOUCH_CONVERSATION: &str =
    "UPDATE conversations SET updated_at = $2 WHERE session_id = $1";
pub(crate) const INSERT_MESSAGE: &str =
    "INSERT INTO messages (session_id, role, content, graph_execution_id, created_at, author) \
     VALUES ($1, $2, $3, $4, $5, $6) \
     RETURNING id, role, content, graph_execution_id, created_at, author";
pub(crate) const SAVE_TURN: &str =
    "INSERT INTO turns (graph_execution_id, session_id, intent, stop_reason, pending_approval, \
     duration_ms, llm_calls, steps_taken, trace, started_at, updated_at, \
     prompt_tokens, completion_tokens, cost_usd, tools) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) \
     ON CONFLICT (graph_execution_id) DO UPDATE SET \
     intent = excluded.intent, stop_reason = excluded.stop_reason, \
     pending_approval = excluded.pending_approval, duration_ms = excluded.duration_ms, \
     llm_calls = excluded.llm_calls, steps_taken = excluded.steps_taken, \
     trace = excluded.trace, updated_at = excluded.updated_at, \
     prompt_tokens = excluded.prompt_tokens, completion_tokens = excluded.completion_tokens, \
     cost_usd = excluded.cost_usd, tools = excluded.tools";

/// What a stored turn's row holds beside the trace: the overview's
/// figures (db/src/overview.rs reads these, never the trace).
pub(crate) struct TurnColumns<'a> {
    pub(crate) trace: &'a ChatTurnTraceResult,
    pub(crate) duration_ms: i64,
    pub(crate) prompt_tokens: i64,
    pub(crate) completion_tokens: i64,
    pub(crate) cost_usd: f64,
    pub(crate) tools: Vec<TurnTool<'a>>,
    /// When the row is written.
    pub(crate) at: Timestamp,
}

impl<'a> TurnColumns<'a> {
    pub(crate) fn of(trace: &'a ChatTurnTraceResult) -> Self {
        Self {
            trace,
            duration_ms: i64::try_from(trace.duration_ms).unwrap_or(i64::MAX),
            prompt_tokens: i64::try_from(trace.usage.prompt_tokens).unwrap_or(i64::MAX),
            completion_tokens: i64::try_from(trace.usage.completion_tokens).unwrap_or(i64::MAX),
            cost_usd: trace.cost_usd.unwrap_or(0.0),
            tools: trace
                .tool_calls
                .iter()
                .map(|c| TurnTool {
                    name: &c.name,
                    status: c.status,
                })
                .collect(),
            at: crate::now(),
        }
    }

    /// Saves the row on SQLite's direct connection.
    pub(crate) fn save_direct(&self, tx: &rusqlite::Transaction<'_>) -> Result<(), DbError> {
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
            json(t)?,
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
    let mut query = prepare(tx, RECENT_MESSAGES)?;
    let mut rows = query.query(rusqlite::params![session_id, n])?;
    let mut messages = Vec::new();
    while let Some(row) = rows.next()? {
        messages.push(ChatMessage::try_from(MessageRow::direct(row)?)?);
    }
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
    let mut insert = prepare(tx, INSERT_MESSAGE)?;
    let mut rows = insert.query(rusqlite::params![
        session_id,
        role_name(role),
        content,
        graph_execution_id,
        ts(at),
        None::<&str>,
    ])?;
    let row = rows
        .next()?
        .ok_or_else(|| DbError::Corrupt("an insert returned no row".into()))?;
    ChatMessage::try_from(MessageRow::direct(row)?)
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

impl Database {
    /// The conversation of a session, created (handled by the AI) when new.
    /// An existing conversation keeps its title, unless it was created
    /// without one (the console's "New" button): then it takes this one. It
    /// gains a customer id if it had none.
    #[tracing::instrument(skip_all, fields(session_id))]
    pub async fn ensure_conversation(
        &self,
        session_id: &str,
        customer_id: Option<&str>,
        title: &str,
    ) -> Result<ConversationSummary, DbError> {
        tracing::Span::current().record("session_id", session_id);
        with_pool!(self, pool => {
            let mut conn = pool.acquire().await?;
            ensure_conversation!(&mut *conn, session_id, customer_id, title);
        });
        self.conversation(session_id)
            .await?
            .ok_or_else(|| DbError::NotFound(format!("conversation {session_id}")))
    }

    /// One conversation's summary.
    #[tracing::instrument(skip_all, fields(session_id))]
    pub async fn conversation(
        &self,
        session_id: &str,
    ) -> Result<Option<ConversationSummary>, DbError> {
        tracing::Span::current().record("session_id", session_id);
        let sql = format!("{SUMMARY_SELECT} WHERE c.session_id = $1");
        let row = with_pool!(self, pool => sqlx::query_as::<_, SummaryRow>(&sql)
            .bind(session_id)
            .fetch_optional(pool)
            .await?);
        row.map(ConversationSummary::try_from).transpose()
    }

    /// The customer a conversation is with, when known.
    #[tracing::instrument(skip_all, fields(session_id))]
    pub async fn conversation_customer(&self, session_id: &str) -> Result<Option<String>, DbError> {
        tracing::Span::current().record("session_id", session_id);
        let row: Option<(Option<String>,)> = with_pool!(self, pool => sqlx::query_as(
            "SELECT customer_id FROM conversations WHERE session_id = $1",
        )
        .bind(session_id)
        .fetch_optional(pool)
        .await?);
        Ok(row.and_then(|(c,)| c))
    }

    /// Conversations, most recently active first, with their last message.
    #[tracing::instrument(skip_all, fields(limit))]
    pub async fn list_conversations(
        &self,
        limit: u32,
    ) -> Result<Vec<ConversationSummary>, DbError> {
        let sql = format!("{SUMMARY_SELECT} ORDER BY c.updated_at DESC, c.session_id LIMIT $1");
        let rows = with_pool!(self, pool => sqlx::query_as::<_, SummaryRow>(&sql)
            .bind(i64::from(limit))
            .fetch_all(pool)
            .await?);
        rows.into_iter()
            .map(ConversationSummary::try_from)
            .collect()
    }

    /// Appends a message to an existing conversation and touches it.
    #[tracing::instrument(skip_all, fields(session_id, role = role_name(role)))]
    pub async fn append_message(
        &self,
        session_id: &str,
        role: MessageRole,
        content: &str,
        graph_execution_id: Option<&str>,
    ) -> Result<ChatMessage, DbError> {
        tracing::Span::current().record("session_id", session_id);
        let row = with_pool!(self, pool => {
            let mut tx = pool.begin().await?;
            let row = append_message!(&mut *tx, session_id, role, content, graph_execution_id);
            tx.commit().await?;
            row
        });
        ChatMessage::try_from(row)
    }

    /// A conversation's messages, oldest first.
    #[tracing::instrument(skip_all, fields(session_id))]
    pub async fn list_messages(&self, session_id: &str) -> Result<Vec<ChatMessage>, DbError> {
        tracing::Span::current().record("session_id", session_id);
        let rows = with_pool!(self, pool => sqlx::query_as::<_, MessageRow>(
            "SELECT id, role, content, graph_execution_id, created_at, author FROM messages \
             WHERE session_id = $1 ORDER BY id",
        )
        .bind(session_id)
        .fetch_all(pool)
        .await?);
        rows.into_iter().map(ChatMessage::try_from).collect()
    }

    /// The last `n` messages of a conversation, oldest first.
    #[tracing::instrument(skip_all, fields(session_id, n))]
    pub async fn recent_messages(
        &self,
        session_id: &str,
        n: u32,
    ) -> Result<Vec<ChatMessage>, DbError> {
        tracing::Span::current().record("session_id", session_id);
        with_pool!(self, pool => {
            let mut conn = pool.acquire().await?;
            recent_messages!(&mut *conn, session_id, n)
        })
    }

    /// Saves a turn's trace; saving the same graph execution id again
    /// replaces it (a paused turn is saved, then saved again when it ends).
    #[tracing::instrument(skip_all, fields(graph_execution_id = %trace.graph_execution_id))]
    pub async fn save_turn(&self, trace: &ChatTurnTraceResult) -> Result<(), DbError> {
        with_pool!(self, pool => save_turn!(pool, trace));
        Ok(())
    }

    /// One turn's trace by its graph execution id.
    #[tracing::instrument(skip_all, fields(graph_execution_id))]
    pub async fn turn(
        &self,
        graph_execution_id: &str,
    ) -> Result<Option<ChatTurnTraceResult>, DbError> {
        tracing::Span::current().record("graph_execution_id", graph_execution_id);
        let row = with_pool!(self, pool => sqlx::query_as::<_, TraceRow>(
            "SELECT trace FROM turns WHERE graph_execution_id = $1",
        )
        .bind(graph_execution_id)
        .fetch_optional(pool)
        .await?);
        Ok(row.map(|r| r.trace.0))
    }

    /// A session's turns, oldest first.
    #[tracing::instrument(skip_all, fields(session_id))]
    pub async fn list_turns(&self, session_id: &str) -> Result<Vec<ChatTurnTraceResult>, DbError> {
        tracing::Span::current().record("session_id", session_id);
        let rows = with_pool!(self, pool => sqlx::query_as::<_, TraceRow>(
            "SELECT trace FROM turns WHERE session_id = $1 ORDER BY started_at, graph_execution_id",
        )
        .bind(session_id)
        .fetch_all(pool)
        .await?);
        Ok(rows.into_iter().map(|r| r.trace.0).collect())
    }

    /// A turn with its checkpoints, for the step-by-step trace view.
    pub async fn turn_detail(
        &self,
        graph_execution_id: &str,
    ) -> Result<Option<TurnDetail>, DbError> {
        let Some(trace) = self.turn(graph_execution_id).await? else {
            return Ok(None);
        };
        let checkpoints = self.checkpoint_views(graph_execution_id).await?;
        Ok(Some(TurnDetail { trace, checkpoints }))
    }

    /// A conversation with its messages and turns.
    pub async fn conversation_detail(
        &self,
        session_id: &str,
    ) -> Result<Option<ConversationDetail>, DbError> {
        let Some(summary) = self.conversation(session_id).await? else {
            return Ok(None);
        };
        Ok(Some(ConversationDetail {
            summary,
            messages: self.list_messages(session_id).await?,
            turns: self.list_turns(session_id).await?,
            active_run: self.active_run(session_id).await?,
        }))
    }
}

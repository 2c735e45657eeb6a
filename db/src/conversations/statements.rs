//! The statements of conversations, one text each for both drivers: the
//! macros that run them through sqlx on any executor (a pool or another
//! store's transaction) and the constants [`super::direct`] runs on
//! SQLite's direct connection.

use aics_types::{ChatTurnTraceResult, Timestamp};

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
            .bind($crate::conversations::TraceColumn(row.trace))
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
/// The text of [`INSERT_MESSAGE`] and [`INSERT_MESSAGE_ROW`].
macro_rules! insert_message_text {
    () => {
        "INSERT INTO messages (session_id, role, content, graph_execution_id, created_at, author) \
         VALUES ($1, $2, $3, $4, $5, $6)"
    };
}
pub(crate) const INSERT_MESSAGE: &str = concat!(
    insert_message_text!(),
    " RETURNING id, role, content, graph_execution_id, created_at, author"
);
/// [`INSERT_MESSAGE`] without its `RETURNING`, for SQLite's direct
/// connection, which reads the new row's id as the connection's last
/// rowid and knows the rest (it bound it). SQLite runs a `RETURNING` as a
/// trigger, which makes the statement keep a journal of every page it
/// changes, and gathers the rows in a temporary table, made and freed
/// each time (BENCHMARKS.md, round 33).
pub(crate) const INSERT_MESSAGE_ROW: &str = insert_message_text!();
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
}

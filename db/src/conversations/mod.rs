//! Conversations (one per session id, with who handles it), their messages
//! and the stored traces of their turns.
//!
//! - this file: the rows, the titles and the [`Database`] methods;
//! - [`statements`]: the SQL text and the statement macros that other
//!   stores' transactions reuse (`runs` begins and ends a turn with them);
//! - [`direct`]: the same statements on SQLite's direct connection
//!   ([`crate::direct`]), for the writes and reads of a turn and a
//!   conversation's page.
//! - [`trace_column`]: how `turns.trace` is stored and read back.

use aics_types::{
    ChatMessage, ChatTurnTraceResult, ConversationDetail, ConversationSummary, HandlingState,
    MessageRole, Timestamp, TurnDetail,
};

use crate::{parse_stored, Database, DbError};

#[macro_use]
mod statements;
mod direct;
mod trace_column;

pub(crate) use direct::{append_message_direct, insert_message_direct, recent_messages_direct};
pub(crate) use statements::{
    TurnColumns, INSERT_MESSAGE, INSERT_MESSAGE_ROW, RECENT_MESSAGES, SAVE_TURN, TOUCH_CONVERSATION,
};
pub(crate) use trace_column::TraceColumn;

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
            last_message: r.last_message.as_deref().map(preview),
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
    trace: crate::packed::Unpacked<ChatTurnTraceResult>,
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

/// The inbox: the `$1` most recently active conversations, newest first.
static INBOX: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!("{SUMMARY_SELECT} ORDER BY c.updated_at DESC, c.session_id LIMIT $1")
});

/// One conversation's summary.
static CONVERSATION: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| format!("{SUMMARY_SELECT} WHERE c.session_id = $1"));

/// A conversation's messages, oldest first.
const MESSAGES: &str = "SELECT id, role, content, graph_execution_id, created_at, author \
     FROM messages WHERE session_id = $1 ORDER BY id";

/// A conversation's turns, oldest first.
const TURNS: &str =
    "SELECT trace FROM turns WHERE session_id = $1 ORDER BY started_at, graph_execution_id";

/// The longest title made from a first message, in characters.
const TITLE_CHARS: usize = 60;

/// The longest preview of a conversation's last message, in characters:
/// the inbox shows one line of it, and the whole message is in the
/// conversation.
pub const PREVIEW_CHARS: usize = 140;

/// A conversation title from its first message, without the characters
/// that reorder or hide what staff read in the inbox
/// ([`aics_types::is_invisible_char`]).
pub fn title_from(message: &str) -> String {
    let message = aics_types::strip_invisible(message);
    let line = message.trim().lines().next().unwrap_or_default();
    let title = cut(line, TITLE_CHARS);
    if title.is_empty() {
        "New conversation".to_owned()
    } else {
        title
    }
}

/// The start of a message as the inbox lists it: its words on one line, its
/// first [`PREVIEW_CHARS`] characters and "…" when it has more.
pub fn preview(message: &str) -> String {
    // Only the words that make the preview are read (a reply may be long).
    let mut line = String::with_capacity(PREVIEW_CHARS + 8);
    let mut chars = 0;
    for word in message.split_whitespace() {
        if chars > PREVIEW_CHARS {
            break;
        }
        if chars > 0 {
            line.push(' ');
            chars += 1;
        }
        line.push_str(word);
        chars += word.chars().count();
    }
    cut(&line, PREVIEW_CHARS)
}

/// The first `chars` characters of `text`, and "…" when it has more.
fn cut(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars) {
        None => text.to_owned(),
        Some((end, _)) => format!("{}…", text[..end].trim_end()),
    }
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
        let row = with_pool!(self, pool => sqlx::query_as::<_, SummaryRow>(&CONVERSATION)
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
        let limit = i64::from(limit);
        match self {
            // Every console page reads it: on the direct reader it neither
            // waits for the pool's one connection (the page's other reads)
            // nor copies each row across that connection's thread.
            Self::Sqlite(sqlite) => {
                sqlite
                    .direct()?
                    .read(|tx| {
                        crate::direct::all(tx, &INBOX, [limit], |row| {
                            ConversationSummary::try_from(SummaryRow::direct(row)?)
                        })
                    })
                    .await
            }
            Self::Postgres(pool) => sqlx::query_as::<_, SummaryRow>(&INBOX)
                .bind(limit)
                .fetch_all(pool)
                .await?
                .into_iter()
                .map(ConversationSummary::try_from)
                .collect(),
        }
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
        let rows = with_pool!(self, pool => sqlx::query_as::<_, MessageRow>(MESSAGES)
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
        let rows = with_pool!(self, pool => sqlx::query_as::<_, TraceRow>(TURNS)
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

    /// A conversation with its messages, turns and active run.
    pub async fn conversation_detail(
        &self,
        session_id: &str,
    ) -> Result<Option<ConversationDetail>, DbError> {
        match self {
            // A console page reads it on every opening: on the direct
            // reader its four reads see one snapshot (a turn that ends
            // meanwhile is shown whole or not at all) and neither wait for
            // the pool's one connection nor copy their rows across its
            // thread.
            Self::Sqlite(sqlite) => {
                sqlite
                    .direct()?
                    .read(|tx| direct::detail(tx, session_id))
                    .await
            }
            Self::Postgres(_) => {
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_title_is_the_first_line_cut_at_sixty_characters() {
        assert_eq!(
            title_from("  Where is ORD-1?\nIt is late."),
            "Where is ORD-1?"
        );
        assert_eq!(title_from(" \n "), "New conversation");
        let long = "订".repeat(61);
        assert_eq!(title_from(&long), format!("{}…", "订".repeat(60)));
        assert_eq!(title_from(&long[..60 * 3]), "订".repeat(60));
        // Direction controls and zero-width characters are dropped.
        assert_eq!(
            title_from("\u{202E}Refund\u{200B} approved\u{2066}\u{FEFF}"),
            "Refund approved"
        );
        assert_eq!(title_from("\u{200B}\u{202E}"), "New conversation");
    }

    #[test]
    fn a_preview_is_one_line_cut_at_a_character_boundary() {
        assert_eq!(
            preview("Your order\n\n**is**   delayed. "),
            "Your order **is** delayed."
        );
        let exact = "é".repeat(PREVIEW_CHARS);
        assert_eq!(preview(&exact), exact);
        let long = format!("{} tail", "word ".repeat(PREVIEW_CHARS / 5));
        let cut = preview(&long);
        assert_eq!(cut.chars().count(), PREVIEW_CHARS, "{cut}");
        assert!(
            cut.ends_with("word…"),
            "a space before the cut is dropped: {cut}"
        );
        let unbroken = "x".repeat(PREVIEW_CHARS + 1);
        assert_eq!(
            preview(&unbroken),
            format!("{}…", &unbroken[..PREVIEW_CHARS])
        );
        assert_eq!(preview(""), "");
    }
}

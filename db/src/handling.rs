//! Who handles a conversation: the one function that changes it (over the
//! table of allowed transitions in `aics_types::HANDLING_TRANSITIONS`), and
//! the messages staff write outside a turn (agents' replies, internal
//! notes). Each change is a conditional UPDATE, so of two agents taking the
//! same conversation exactly one wins, and a conversation a person holds is
//! changed only by them (or by a supervisor); taking over is refused while a
//! run holds the conversation, and `begin_turn` refuses a turn while a
//! person holds it — both read the other's fact under the conversation's
//! row lock.

use aics_types::{ChatMessage, ConversationSummary, HandlingAction, HandlingState, MessageRole};

use crate::runs::ACTIVE;
use crate::{now, Database, DbError};

/// The state of the conversation's active run, if it has one.
static RUN_STATE: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!("SELECT state FROM runs WHERE session_id = $1 AND {ACTIVE}")
});

/// A handling change that happened: the conversation as it is now and the
/// line the timeline shows for it.
#[derive(Debug, Clone, PartialEq)]
pub struct HandlingChange {
    pub summary: ConversationSummary,
    pub line: ChatMessage,
}

/// The `IN (…)` list of states an action may start from (fixed names from
/// the table, never user input).
fn state_list(states: &[HandlingState]) -> String {
    states
        .iter()
        .map(|s| format!("'{}'", s.as_str()))
        .collect::<Vec<_>>()
        .join(", ")
}

impl Database {
    /// Applies `action` by `by` (a staff member's name, or `ai`), if the
    /// conversation's handling allows it: [`DbError::Conflict`] (and nothing
    /// written) when it does not — already taken by someone, held by a
    /// person other than `by`, or a run holds the conversation — and
    /// `NotFound` when there is no conversation. The new state, its assignee
    /// and the timeline line are one transaction.
    pub async fn change_handling(
        &self,
        session_id: &str,
        action: HandlingAction,
        by: &str,
    ) -> Result<HandlingChange, DbError> {
        self.change_handling_as(session_id, action, by, false).await
    }

    /// [`Self::change_handling`]; with `over_holder` (a supervisor) `by`
    /// may also hand back or resolve a conversation another person holds.
    #[tracing::instrument(skip_all, fields(session_id, action = action.as_str(), by))]
    pub async fn change_handling_as(
        &self,
        session_id: &str,
        action: HandlingAction,
        by: &str,
        over_holder: bool,
    ) -> Result<HandlingChange, DbError> {
        tracing::Span::current().record("session_id", session_id);
        let (from, to) = action.transition();
        let assignee = (to == HandlingState::Human).then_some(by);
        // Checked in the UPDATE itself, under the row lock: a conversation
        // taken over between a caller's look and this change stays its holder's.
        let holder_only = if over_holder {
            ""
        } else {
            " AND (handling <> 'human' OR assignee = $5)"
        };
        let sql = format!(
            "UPDATE conversations SET handling = $2, assignee = $3, updated_at = $4 \
             WHERE session_id = $1 AND handling IN ({}){holder_only}",
            state_list(from)
        );
        let line = format!("{by} {}", action.timeline());
        let row = with_pool!(self, pool => {
            let mut tx = pool.begin().await?;
            // The row lock taken here is the one `begin_turn` takes first.
            let mut update = sqlx::query(&sql)
                .bind(session_id)
                .bind(to.as_str())
                .bind(assignee)
                .bind(now());
            if !over_holder {
                update = update.bind(by);
            }
            let changed = update.execute(&mut *tx).await?.rows_affected();
            if changed == 0 {
                let current: Option<(String, Option<String>)> = sqlx::query_as(
                    "SELECT handling, assignee FROM conversations WHERE session_id = $1",
                )
                .bind(session_id)
                .fetch_optional(&mut *tx)
                .await?;
                return Err(match current {
                    None => DbError::NotFound(format!("conversation {session_id}")),
                    Some((state, Some(holder))) if state == "human" => DbError::Conflict(format!(
                        "{holder} handles this conversation already"
                    )),
                    Some((state, _)) => DbError::Conflict(format!(
                        "a conversation in state {state:?} cannot be changed by {:?}",
                        action.as_str()
                    )),
                });
            }
            if to == HandlingState::Human {
                let running: Option<(String,)> = sqlx::query_as(&RUN_STATE)
                    .bind(session_id)
                    .fetch_optional(&mut *tx)
                    .await?;
                if let Some((state,)) = running {
                    // Rolled back: the AI keeps the conversation.
                    return Err(DbError::Conflict(if state == "paused" {
                        "a turn of this conversation waits for approval; decide or cancel it first"
                            .into()
                    } else {
                        "the AI is answering right now; take over once its reply is done".into()
                    }));
                }
            }
            let row = append_message!(
                &mut *tx,
                session_id,
                MessageRole::System,
                &line,
                None::<&str>,
                Some(by)
            );
            tx.commit().await?;
            row
        });
        let summary = self
            .conversation(session_id)
            .await?
            .ok_or_else(|| DbError::NotFound(format!("conversation {session_id}")))?;
        Ok(HandlingChange {
            summary,
            line: ChatMessage::try_from(row)?,
        })
    }

    /// A staff member's reply to the customer, stored only while `author`
    /// holds the conversation ([`DbError::Conflict`] otherwise).
    #[tracing::instrument(skip_all, fields(session_id, author))]
    pub async fn append_agent_reply(
        &self,
        session_id: &str,
        author: &str,
        content: &str,
    ) -> Result<ChatMessage, DbError> {
        tracing::Span::current().record("session_id", session_id);
        let row = with_pool!(self, pool => {
            let mut tx = pool.begin().await?;
            let held = sqlx::query(
                "UPDATE conversations SET updated_at = $3 \
                 WHERE session_id = $1 AND handling = 'human' AND assignee = $2",
            )
            .bind(session_id)
            .bind(author)
            .bind(now())
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if held == 0 {
                let exists: Option<(String,)> =
                    sqlx::query_as("SELECT handling FROM conversations WHERE session_id = $1")
                        .bind(session_id)
                        .fetch_optional(&mut *tx)
                        .await?;
                return Err(match exists {
                    None => DbError::NotFound(format!("conversation {session_id}")),
                    Some(_) => DbError::Conflict(
                        "take over the conversation before replying to the customer".into(),
                    ),
                });
            }
            let row = append_message!(
                &mut *tx,
                session_id,
                MessageRole::Agent,
                content,
                None::<&str>,
                Some(author)
            );
            tx.commit().await?;
            row
        });
        ChatMessage::try_from(row)
    }

    /// An internal note by `author`: staff only, whoever handles the
    /// conversation.
    #[tracing::instrument(skip_all, fields(session_id, author))]
    pub async fn append_note(
        &self,
        session_id: &str,
        author: &str,
        content: &str,
    ) -> Result<ChatMessage, DbError> {
        tracing::Span::current().record("session_id", session_id);
        let row = with_pool!(self, pool => {
            let mut tx = pool.begin().await?;
            let row = append_message!(
                &mut *tx,
                session_id,
                MessageRole::Note,
                content,
                None::<&str>,
                Some(author)
            );
            tx.commit().await?;
            row
        });
        ChatMessage::try_from(row)
    }

    /// How many conversations wait for a person (the header's count).
    pub async fn waiting_for_human_count(&self) -> Result<u64, DbError> {
        let (n,): (i64,) = with_pool!(self, pool => sqlx::query_as(
            "SELECT COUNT(*) FROM conversations WHERE handling = 'waiting_human'",
        )
        .fetch_one(pool)
        .await?);
        Ok(u64::try_from(n).unwrap_or(0))
    }
}

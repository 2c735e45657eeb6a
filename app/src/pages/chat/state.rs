//! The customer's page as a plain value, updated by each [`CustomerEvent`]
//! of the customer's stream (unit-tested; no signals here).

use aics_types::{
    CustomerChat, CustomerEvent, CustomerMessage, MessageHtml, MessageRole, Timestamp, WithHtml,
};

use crate::components::markdown::{html_of, is_markdown};

/// The customer's conversation as the page shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatState {
    pub messages: Vec<CustomerMessage>,
    /// The reply being written, token by token (`Some` while typing).
    pub streaming: Option<String>,
    pub with_human: bool,
    pub failed: bool,
    /// Ids for lines added here before the server answers (negative).
    next_local: i64,
    /// The stored replies' HTML, as the server rendered it; a reply without
    /// one shows as text until the next reload.
    html: Vec<MessageHtml>,
}

impl ChatState {
    pub fn new(chat: &CustomerChat) -> Self {
        Self {
            messages: chat.messages.clone(),
            streaming: chat.answering.then(String::new),
            with_human: chat.with_human,
            failed: false,
            next_local: -1,
            html: Vec::new(),
        }
    }

    /// The stored messages with their replies' HTML, as the server sent them.
    pub fn loaded(loaded: &WithHtml<CustomerChat>) -> Self {
        Self {
            html: loaded.html.clone(),
            ..Self::new(&loaded.data)
        }
    }

    /// The HTML of reply `id`, when the server sent one.
    pub fn html_of(&self, id: i64) -> Option<String> {
        html_of(&self.html, id)
    }

    /// The customer sent `text`: shown at once.
    pub fn sent(&mut self, text: &str, now: Timestamp) {
        self.failed = false;
        self.messages.push(CustomerMessage {
            id: self.next_local,
            role: MessageRole::Customer,
            content: text.to_owned(),
            author: None,
            created_at: now,
        });
        self.next_local -= 1;
    }

    /// The message was refused: take its line back out, and give its text
    /// back to be sent again (nothing the customer typed is lost).
    pub fn send_failed(&mut self) -> Option<String> {
        if self.messages.last().is_some_and(|m| m.id < 0) {
            return self.messages.pop().map(|m| m.content);
        }
        None
    }

    /// Adds a stored message once (replacing this page's own line for it).
    fn add(&mut self, message: CustomerMessage) {
        if self.messages.iter().any(|m| m.id == message.id) {
            return;
        }
        if let Some(local) = self
            .messages
            .iter_mut()
            .find(|m| m.id < 0 && m.role == message.role && m.content == message.content)
        {
            *local = message;
            return;
        }
        self.messages.push(message);
    }

    /// Applies one event; `true` when the page must reload the messages
    /// (it missed some, or a reply came as text and its HTML is stored).
    pub fn apply(&mut self, event: CustomerEvent, now: Timestamp) -> bool {
        match event {
            CustomerEvent::Typing => self.streaming = Some(String::new()),
            CustomerEvent::Token { token } => self
                .streaming
                .get_or_insert_with(String::new)
                .push_str(&token),
            CustomerEvent::Done { reply } => {
                self.streaming = None;
                if let Some(content) = reply.filter(|r| !r.is_empty()) {
                    self.messages.push(CustomerMessage {
                        id: self.next_local,
                        role: MessageRole::Assistant,
                        content,
                        author: None,
                        created_at: now,
                    });
                    self.next_local -= 1;
                    return true;
                }
            }
            CustomerEvent::Message { message } => {
                let reload = is_markdown(message.role) && self.html_of(message.id).is_none();
                self.add(message);
                return reload;
            }
            CustomerEvent::Handling { with_human } => self.with_human = with_human,
            CustomerEvent::Failed => {
                self.streaming = None;
                self.failed = true;
            }
            CustomerEvent::Resync => return true,
        }
        false
    }

    /// The stored messages, after a resync.
    pub fn reload(&mut self, loaded: &WithHtml<CustomerChat>) {
        *self = Self {
            next_local: self.next_local,
            ..Self::loaded(loaded)
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chat() -> CustomerChat {
        CustomerChat {
            title: String::new(),
            lang: "en".into(),
            customer_name: None,
            with_human: false,
            answering: false,
            messages: Vec::new(),
        }
    }

    #[test]
    fn a_reply_streams_then_lands_and_an_agent_reply_shows_once() {
        let mut s = ChatState::new(&chat());
        s.sent("Where is ORD-123?", Timestamp::default());
        assert!(!s.apply(CustomerEvent::Typing, Timestamp::default()));
        for t in ["It ", "ships ", "today."] {
            s.apply(
                CustomerEvent::Token { token: t.into() },
                Timestamp::default(),
            );
        }
        assert_eq!(s.streaming.as_deref(), Some("It ships today."));
        s.apply(
            CustomerEvent::Done {
                reply: Some("It ships today.".into()),
            },
            Timestamp::default(),
        );
        assert_eq!(s.streaming, None);
        assert_eq!(s.messages.len(), 2);
        let reply = CustomerMessage {
            id: 9,
            role: MessageRole::Agent,
            content: "Alice here".into(),
            author: Some("alice".into()),
            created_at: Timestamp::default(),
        };
        s.apply(
            CustomerEvent::Handling { with_human: true },
            Timestamp::default(),
        );
        s.apply(
            CustomerEvent::Message {
                message: reply.clone(),
            },
            Timestamp::default(),
        );
        s.apply(
            CustomerEvent::Message { message: reply },
            Timestamp::default(),
        );
        assert!(s.with_human);
        assert_eq!(s.messages.len(), 3);
        assert!(s.apply(CustomerEvent::Resync, Timestamp::default()));
    }

    #[test]
    fn a_refused_message_leaves_the_page_and_its_text_comes_back() {
        let mut s = ChatState::new(&chat());
        s.sent("Where is ORD-123?", Timestamp::default());
        assert_eq!(s.send_failed().as_deref(), Some("Where is ORD-123?"));
        assert!(s.messages.is_empty());
        // Nothing of this page's own to take back: a stored line stays.
        s.apply(
            CustomerEvent::Message {
                message: CustomerMessage {
                    id: 4,
                    role: MessageRole::Customer,
                    content: "stored".into(),
                    author: None,
                    created_at: Timestamp::default(),
                },
            },
            Timestamp::default(),
        );
        assert_eq!(s.send_failed(), None);
        assert_eq!(s.messages.len(), 1);
    }
}

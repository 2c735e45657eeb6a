//! A conversation's customer as the console's customer panel shows it:
//! the profile, orders, tickets, past conversations and remembered facts.

use serde::{Deserialize, Serialize};

use crate::{ConversationSummary, Customer, HandlingState, Order, Ticket, Timestamp};

/// One remembered fact of a customer, with where it came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MemoryFact {
    pub id: i64,
    pub text: String,
    #[serde(deserialize_with = "crate::timestamp::deserialize")]
    pub created_at: Timestamp,
    /// Who remembered it: `ai` (the customer asked the AI) or a name.
    #[serde(default)]
    pub created_by: Option<String>,
    /// The conversation it came from, when known.
    #[serde(default)]
    pub session_id: Option<String>,
}

/// Everything the panel shows of one customer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CustomerProfile {
    pub customer: Customer,
    pub orders: Vec<Order>,
    pub tickets: Vec<Ticket>,
    pub conversations: Vec<ConversationSummary>,
    pub memories: Vec<MemoryFact>,
}

/// Who a visitor on the customer channel said they are: what they typed on
/// the start page, unverified. It names no customer; a person on staff may
/// link the conversation to one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Contact {
    pub name: String,
    pub email: String,
    /// `en` or `zh`.
    pub lang: String,
}

/// The customer panel of a conversation: its customer, or — when it has
/// none — the one its visitor's email or an order id in it points to (a
/// proposal for staff to confirm, never applied by itself).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CustomerPanel {
    #[serde(default)]
    pub profile: Option<CustomerProfile>,
    #[serde(default)]
    pub proposed: Option<Customer>,
    /// The visitor's unverified name and email, on a conversation started
    /// from the customer page.
    #[serde(default)]
    pub contact: Option<Contact>,
}

/// `PUT /api/conversations/{id}/customer`: a customer id or email.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CustomerRef {
    pub customer: String,
}

/// Conversations per page of the inbox. The list shows one page at first
/// and one more each time "Show older" is pressed (it asks for
/// `INBOX_PAGE × pages`, so a live refresh keeps what is shown); a search
/// answers a page at a time ([`InboxQuery::offset`]).
pub const INBOX_PAGE: u32 = 50;

/// The most conversations one list asks for (twenty pages).
pub const INBOX_MAX: u32 = 20 * INBOX_PAGE;

/// The inbox's search and filters (`GET /api/conversations/search`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InboxQuery {
    /// Words found anywhere in a conversation's title or messages (any
    /// part of a word; Chinese as written).
    #[serde(default)]
    pub q: Option<String>,
    #[serde(default)]
    pub handling: Option<HandlingState>,
    #[serde(default)]
    pub assignee: Option<String>,
    #[serde(default)]
    pub customer: Option<String>,
    /// Skip this many (pages of 50).
    #[serde(default)]
    pub offset: u32,
}

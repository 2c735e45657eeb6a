//! The answer: what to tell the customer, from the tool results received this
//! turn and what the customer asked, in the customer's language.
//!
//! [`compose`] decides *what* to say, the same way for both languages: each
//! order looked up (answering the question asked — "has it shipped?" gets a
//! yes or a not yet), the ticket opened, the article found; one clarifying
//! question for order ids that do not exist; one sentence per system that
//! did not answer; never a raw tool error. A [`Voice`] says it: [`en`] and
//! [`zh`], the latter with [`carrier_zh`] for the carriers' English scans.
//! Order data comes only from tool results: a reply never states more.

mod carrier_zh;
mod en;
mod zh;

use chrono::{DateTime, Utc};
use sonic_rs::{JsonContainerTrait, JsonValueTrait, Value};

use super::read::{
    explicit_complaint, wants_refund, Failure, Lang, Observation, Orders, Question, Reading,
};
use crate::support::heuristics::{
    is_chinese, memory_instruction, sounds_like_complaint, wants_human,
};

/// The company the demo model speaks for.
#[derive(Debug, Clone, Copy)]
pub struct Company<'a> {
    pub en: &'a str,
    pub zh: &'a str,
}

/// One logistics event as a tool reported it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Event {
    /// The carrier's sentence ("Arrived at the Wuhan sorting centre").
    pub description: Option<String>,
    /// The event's code ("at_sorting_center", "delivered").
    pub code: Option<String>,
    pub location: Option<String>,
}

impl Event {
    fn from_value(v: &Value) -> Option<Self> {
        let text = |key: &str| v[key].as_str().map(str::to_owned);
        let e = if let Some(s) = v.as_str() {
            Self {
                description: Some(s.to_owned()),
                ..Self::default()
            }
        } else if v.is_object() {
            Self {
                description: text("description"),
                code: text("event").or_else(|| text("status")),
                location: text("location"),
            }
        } else {
            return None;
        };
        (e.description.is_some() || e.code.is_some()).then_some(e)
    }
}

/// An order as `order_query` (or `logistics_track`) returned it.
#[derive(Debug, Clone, PartialEq)]
pub struct Order {
    pub id: String,
    /// The status code: processing, shipped, in_transit, delayed, delivered, lost, refunded.
    pub status: String,
    pub latest: Option<Event>,
    /// The anomaly's description, as the carrier or the shop wrote it.
    pub anomaly: Option<String>,
    pub promised_by: Option<DateTime<Utc>>,
    pub delivered_at: Option<DateTime<Utc>>,
}

impl Order {
    pub fn from_result(r: &Value) -> Option<Self> {
        let date = |key: &str| r[key].as_str().and_then(|s| s.parse().ok());
        Some(Self {
            id: r["order_id"].as_str()?.to_owned(),
            status: r["status"].as_str()?.to_owned(),
            latest: Event::from_value(&r["latest_event"]).or_else(|| {
                r["logistics"]
                    .as_array()
                    .and_then(|a| a.last())
                    .and_then(Event::from_value)
            }),
            anomaly: r["anomaly"]["description"]
                .as_str()
                .or_else(|| r["anomaly"].as_str())
                .map(|a| a.trim_end_matches(['.', '。', ' ']).to_owned()),
            promised_by: date("promised_by"),
            delivered_at: date("delivered_at"),
        })
    }

    /// Late, lost, or stuck: worth a complaint.
    pub fn troubled(&self) -> bool {
        matches!(self.status.as_str(), "delayed" | "lost") || self.anomaly.is_some()
    }
}

/// A parcel's tracking as `logistics_track` returned it.
#[derive(Debug, Clone, PartialEq)]
pub struct Tracking {
    pub carrier: Option<String>,
    pub tracking_number: Option<String>,
    pub latest: Option<Event>,
}

impl Tracking {
    fn from_result(r: &Value) -> Self {
        let text = |key: &str| r[key].as_str().map(str::to_owned);
        Self {
            carrier: text("carrier"),
            tracking_number: text("tracking_number"),
            latest: r["events"]
                .as_array()
                .and_then(|a| a.last())
                .and_then(Event::from_value)
                .or_else(|| Event::from_value(&r["latest_event"])),
        }
    }
}

/// A help-center article `knowledge_search` found.
#[derive(Debug, Clone, PartialEq)]
pub struct Article {
    pub title: String,
    pub snippet: String,
    /// Written in Chinese.
    pub zh: bool,
    /// About how complaints are handled (its category, else its title).
    pub complaints: bool,
}

impl Article {
    fn from_value(a: &Value) -> Self {
        let title = a["title"].as_str().unwrap_or_default().to_owned();
        let snippet = a["snippet"].as_str().unwrap_or_default().to_owned();
        let zh = match a["lang"].as_str() {
            Some(lang) => lang.starts_with("zh"),
            None => is_chinese(&title) || is_chinese(&snippet),
        };
        let complaints = match a["category"].as_str() {
            Some(c) => c == "complaints",
            None => title.to_lowercase().contains("complaint") || title.contains("投诉"),
        };
        Self {
            title,
            snippet,
            zh,
            complaints,
        }
    }
}

/// A system behind the tools that did not answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum System {
    Orders,
    Tracking,
    Tickets,
    HelpCenter,
    Escalation,
}

/// The sentences of one language. Each returns whole sentences with their
/// punctuation; [`Voice::join`] goes between them.
pub trait Voice: Sync {
    /// What goes between two sentences.
    fn join(&self) -> &'static str;
    fn greeting(&self, company: Company<'_>) -> String;
    /// A memory instruction was stored.
    fn noted(&self) -> String;
    /// The customer asked for a person and no tool could hand over.
    fn will_escalate(&self) -> String;
    fn escalated(&self) -> String;
    /// The customer spoke of an order but never named it.
    fn need_order_number(&self) -> String;
    /// "it" could be several orders.
    fn which_order(&self, ids: &[String]) -> String;
    /// One clarifying question for order ids that do not exist.
    fn unknown_orders(&self, ids: &[String]) -> String;
    fn unavailable(&self, system: System) -> String;
    /// A supervisor declined a call.
    fn denied(&self, reason: &str) -> String;
    /// The order, answering `question`; the latest event unless tracking follows.
    fn order(&self, order: &Order, question: Question, with_latest: bool) -> String;
    fn tracking(&self, tracking: &Tracking) -> String;
    fn ticket_opened(&self, id: &str, category: &str) -> String;
    /// A complaint about an order this conversation already opened a ticket for.
    fn ticket_exists(&self, ticket: &str, order: &str) -> String;
    /// "That ticket": what can be said without a tool that reads it.
    fn ticket_follow_up(&self, ticket: &str) -> String;
    fn article(&self, article: &Article) -> String;
    fn no_article(&self) -> String;
    /// The order is in trouble: offer a complaint, in one sentence that
    /// names the order (the reader recognises the offer and its order).
    fn offer_complaint(&self, order: &str) -> String;
    fn anything_else(&self) -> String;
    fn email_updates(&self) -> String;
    /// The summary of a ticket about `order`.
    fn ticket_summary(&self, order: &Order) -> String;
    fn escalation_reason(&self) -> String;
    /// The help-center query for how complaints are handled.
    fn complaints_query(&self) -> String;
}

/// The voice of a language.
pub fn voice(lang: Lang) -> &'static dyn Voice {
    match lang {
        Lang::En => &en::En,
        Lang::Zh => &zh::Zh,
    }
}

const ORDER_TOOLS: [&str; 2] = ["order_query", "logistics_track"];

/// The answer to the request.
pub fn compose(r: &Reading, company: Company<'_>) -> String {
    let v = voice(r.lang);
    let obs = &r.observations;
    let question = r.question();
    let mut parts: Vec<String> = Vec::new();
    let mut unknown: Vec<String> = Vec::new();
    let mut down: Vec<System> = Vec::new();
    let mut note_down = |s: System| {
        if !down.contains(&s) {
            down.push(s);
        }
    };

    let mut found: Vec<Order> = Vec::new();
    for id in looked_up_orders(obs) {
        let order = about(obs, "order_query", &id)
            .find(|o| o.ok())
            .map(|o| &o.result);
        let track = about(obs, "logistics_track", &id)
            .find(|o| o.ok())
            .map(|o| &o.result);
        let failures: Vec<Failure> = ORDER_TOOLS
            .iter()
            .flat_map(|t| about(obs, t, &id).filter_map(Observation::failure))
            .collect();
        match order.or(track).and_then(Order::from_result) {
            Some(o) => {
                parts.push(v.order(&o, question, track.is_none()));
                found.push(o);
            }
            None if track.is_none() && failures.contains(&Failure::NotFound) => {
                unknown.push(id.clone())
            }
            None if track.is_none() && failures.contains(&Failure::Unavailable) => {
                note_down(System::Orders)
            }
            None => {}
        }
        if let Some(t) = track {
            parts.push(v.tracking(&Tracking::from_result(t)));
        } else if order.is_some() && failures.contains(&Failure::Unavailable) {
            note_down(System::Tracking);
        }
    }

    let mut opened = false;
    for o in obs {
        if let Some(reason) = &o.denied {
            parts.push(v.denied(reason));
            continue;
        }
        let failure = o.failure();
        match (o.tool.as_str(), failure) {
            ("ticket_create", None) => {
                let id = o.result["ticket_id"].as_str().unwrap_or("—");
                let category = o.result["category"].as_str().unwrap_or("support");
                parts.push(v.ticket_opened(id, category));
                opened = true;
            }
            ("ticket_create", Some(Failure::NotFound)) => {
                if let Some(id) = o.order_id().filter(|id| !unknown.contains(id)) {
                    unknown.push(id);
                }
            }
            ("ticket_create", Some(_)) => note_down(System::Tickets),
            ("knowledge_search", None) => {
                let articles: Vec<Article> = o.result["articles"]
                    .as_array()
                    .map(|a| a.iter().map(Article::from_value).collect())
                    .unwrap_or_default();
                let in_language = |a: &&Article| a.zh == r.zh();
                match r.ticket_asked_after() {
                    // Only an article on how complaints are handled says
                    // anything about a ticket.
                    Some(t) => {
                        parts.push(v.ticket_follow_up(&t));
                        let complaints: Vec<&Article> =
                            articles.iter().filter(|a| a.complaints).collect();
                        let best = complaints.iter().copied().find(in_language);
                        if let Some(a) = best.or(complaints.first().copied()) {
                            parts.push(v.article(a));
                        }
                    }
                    None => {
                        let best = articles.iter().find(in_language).or(articles.first());
                        parts.push(best.map_or_else(|| v.no_article(), |a| v.article(a)));
                    }
                }
            }
            ("knowledge_search", Some(_)) => note_down(System::HelpCenter),
            ("escalate_to_human", None) => parts.push(v.escalated()),
            ("escalate_to_human", Some(_)) => note_down(System::Escalation),
            _ => {}
        }
    }

    let complaining = sounds_like_complaint(&r.intent)
        || explicit_complaint(&r.intent)
        || wants_refund(&r.intent);
    let ticket_tried = obs.iter().any(|o| o.tool == "ticket_create");
    if !ticket_tried {
        let existing: Vec<(String, &str)> = found
            .iter()
            .filter_map(|o| r.ticket_for(&o.id).map(|t| (t, o.id.as_str())))
            .collect();
        if complaining || r.accepted_complaint {
            for (ticket, order) in &existing {
                parts.push(v.ticket_exists(ticket, order));
            }
        } else if let Some(o) = found
            .iter()
            .find(|o| o.troubled() && r.ticket_for(&o.id).is_none())
        {
            parts.push(v.offer_complaint(&o.id));
        }
    }
    if !unknown.is_empty() {
        parts.push(v.unknown_orders(&unknown));
    }
    parts.extend(down.iter().map(|s| v.unavailable(*s)));

    if parts.is_empty() {
        let bad_order_args = obs.iter().any(|o| {
            ORDER_TOOLS.contains(&o.tool.as_str()) && o.failure() == Some(Failure::InvalidArguments)
        });
        if wants_human(&r.message) {
            parts.push(v.will_escalate());
        } else if let Some(t) = r.ticket_asked_after() {
            parts.push(v.ticket_follow_up(&t));
        } else {
            match r.orders() {
                Orders::Ambiguous(ids) => parts.push(v.which_order(&ids)),
                Orders::Missing => parts.push(v.need_order_number()),
                _ if bad_order_args => parts.push(v.need_order_number()),
                _ => {}
            }
        }
    }
    if memory_instruction(&r.message).is_some() {
        parts.push(v.noted());
    }
    if parts.is_empty() {
        parts.push(v.greeting(company));
    }
    if opened {
        parts.push(v.anything_else());
        if r.prefers_email() {
            parts.push(v.email_updates());
        }
    }
    parts.join(v.join())
}

/// The results of `tool` about one order.
fn about<'a>(
    obs: &'a [Observation],
    tool: &'a str,
    order_id: &'a str,
) -> impl Iterator<Item = &'a Observation> {
    obs.iter()
        .filter(move |o| o.tool == tool && o.order_id().as_deref() == Some(order_id))
}

/// The orders the order tools were asked about, in the order first asked.
fn looked_up_orders(obs: &[Observation]) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for o in obs
        .iter()
        .filter(|o| ORDER_TOOLS.contains(&o.tool.as_str()))
    {
        if let Some(id) = o.order_id() {
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
    }
    ids
}

#[cfg(test)]
mod tests;

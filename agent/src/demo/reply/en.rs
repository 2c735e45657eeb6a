//! The demo model's English.

use chrono::{DateTime, Utc};

use super::{Article, Company, Event, Order, System, Tracking, Voice};
use crate::demo::read::Question;

pub struct En;

/// An order status in words ("ORD-1 is …").
pub fn status(code: &str) -> String {
    match code {
        "delivered" => "delivered".into(),
        "shipped" => "shipped".into(),
        "in_transit" => "on its way".into(),
        "delayed" => "delayed".into(),
        "lost" => "reported lost in transit".into(),
        "refunded" => "refunded".into(),
        "processing" => "being prepared for shipment".into(),
        other => other.replace('_', " "),
    }
}

fn date(d: &DateTime<Utc>) -> String {
    d.format("%-d %B %Y").to_string()
}

/// "ORD-1", "ORD-1 or ORD-2", "ORD-1, ORD-2 or ORD-3".
fn list(ids: &[String], last: &str) -> String {
    match ids {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., tail] => format!("{} {last} {tail}", init.join(", ")),
    }
}

/// The event in the carrier's words, with its place unless they name it.
fn event(e: &Event) -> String {
    match (&e.description, &e.location) {
        (Some(d), Some(at)) if !d.to_lowercase().contains(&at.to_lowercase()) => {
            format!("{d} ({at})")
        }
        (Some(d), _) => d.clone(),
        (None, at) => {
            let code = e.code.as_deref().unwrap_or_default().replace('_', " ");
            match at {
                Some(at) => format!("{code} ({at})"),
                None => code,
            }
        }
    }
}

impl Voice for En {
    fn join(&self) -> &'static str {
        " "
    }

    fn greeting(&self, company: Company<'_>) -> String {
        format!(
            "Hello! I'm the {} support assistant. I can check orders and deliveries, handle complaints and refunds, or explain our policies. How can I help?",
            company.en
        )
    }

    fn noted(&self) -> String {
        "Noted — I'll keep that in mind for your future requests.".into()
    }

    fn will_escalate(&self) -> String {
        "I'll ask a colleague to take over as soon as possible.".into()
    }

    fn escalated(&self) -> String {
        "I've handed this conversation to a human colleague — they'll be with you shortly.".into()
    }

    fn need_order_number(&self) -> String {
        "Could you give me your order number (for example ORD-123)? I'll look it up right away."
            .into()
    }

    fn which_order(&self, ids: &[String]) -> String {
        format!("Which order do you mean: {}?", list(ids, "or"))
    }

    fn unknown_orders(&self, ids: &[String]) -> String {
        match ids {
            [one] => format!(
                "I couldn't find an order {one} — could you double-check the order number (for example ORD-123)?"
            ),
            many => format!(
                "I couldn't find the orders {} — could you double-check the order numbers?",
                list(many, "or")
            ),
        }
    }

    fn unavailable(&self, system: System) -> String {
        match system {
            System::Orders => "I couldn't reach our order system just now, so I can't see that order yet. Please try again in a moment.",
            System::Tracking => "The carrier's tracking didn't answer just now; I'll have the latest scans once it does.",
            System::Tickets => "I couldn't open a ticket just now. Please try again in a moment, or ask for a colleague.",
            System::HelpCenter => "I couldn't search our help center just now; a colleague can answer that for you.",
            System::Escalation => "I couldn't reach a colleague just now. Please try again in a moment.",
        }
        .into()
    }

    fn denied(&self, reason: &str) -> String {
        format!("I wasn't able to complete that step: a supervisor declined it ({reason}). We'll follow up with you another way.")
    }

    fn order(&self, o: &Order, question: Question, with_latest: bool) -> String {
        let id = &o.id;
        let is = status(&o.status);
        let s = o.status.as_str();
        let mut text = match (question, s) {
            (Question::Arrived, "delivered") => match &o.delivered_at {
                Some(d) => format!("Yes — your order {id} was delivered on {}.", date(d)),
                None => format!("Yes — your order {id} was delivered."),
            },
            (Question::Arrived, "refunded") => format!("Your order {id} was refunded."),
            (Question::Arrived, _) => format!("Not yet — your order {id} is {is}."),
            (Question::Shipped, "processing") => {
                format!("Not yet — your order {id} is still being prepared for shipment.")
            }
            (Question::Shipped, "shipped") => format!("Yes — your order {id} has shipped."),
            (Question::Shipped, "in_transit") => {
                format!("Yes — your order {id} has shipped and is on its way.")
            }
            (Question::Shipped, "delayed") => {
                format!("Yes — your order {id} has shipped, but it is delayed.")
            }
            (Question::Shipped, "delivered") => {
                format!("Yes — your order {id} has shipped and was delivered.")
            }
            (Question::Shipped, "lost") => {
                format!("Your order {id} shipped, but it was reported lost in transit.")
            }
            (Question::When, "delivered") => match &o.delivered_at {
                Some(d) => format!("Your order {id} was delivered on {}.", date(d)),
                None => format!("Your order {id} is delivered."),
            },
            (Question::When, "processing" | "shipped" | "in_transit" | "delayed") => {
                match &o.promised_by {
                    Some(d) => format!(
                        "Your order {id} is {is}; its promised delivery date is {}.",
                        date(d)
                    ),
                    None => format!("Your order {id} is {is}."),
                }
            }
            _ => format!("Your order {id} is {is}."),
        };
        let latest = o.latest.as_ref().map(event);
        if with_latest {
            if let Some(l) = &latest {
                text.push_str(&format!(" Latest update: {l}."));
            }
        }
        let anomaly = o
            .anomaly
            .as_deref()
            .filter(|a| !(with_latest && latest.as_deref().is_some_and(|l| l.contains(a))));
        if let Some(a) = anomaly {
            text.push_str(&format!(" Logistics anomaly: {a}."));
        }
        text
    }

    fn tracking(&self, t: &Tracking) -> String {
        let carrier = t.carrier.as_deref().unwrap_or("the carrier");
        let number = t
            .tracking_number
            .as_deref()
            .map(|n| format!(" (tracking number {n})"))
            .unwrap_or_default();
        match &t.latest {
            Some(e) => format!("The latest scan from {carrier}{number}: {}.", event(e)),
            None => "There are no tracking events yet.".into(),
        }
    }

    fn ticket_opened(&self, id: &str, category: &str) -> String {
        format!("I've opened {category} ticket {id} so our team can follow up and resolve this quickly.")
    }

    fn ticket_exists(&self, ticket: &str, order: &str) -> String {
        format!("Ticket {ticket} for {order} is already open with our team, so I haven't opened a second one; your message is noted in this conversation.")
    }

    fn ticket_follow_up(&self, ticket: &str) -> String {
        format!("Ticket {ticket} from earlier in this conversation is with our team. I can't see a ticket's progress from here, but a colleague can, whenever you ask.")
    }

    fn article(&self, a: &Article) -> String {
        if a.zh {
            format!(
                "Our help center covers this in Chinese, \"{}\": \"{}\"",
                a.title, a.snippet
            )
        } else {
            format!("From our help center, \"{}\": {}", a.title, a.snippet)
        }
    }

    fn no_article(&self) -> String {
        "I couldn't find a help-center article on that; a colleague can answer it for you.".into()
    }

    fn offer_complaint(&self, order: &str) -> String {
        format!("I'm sorry about the trouble with {order} — would you like me to open a complaint so our team follows it up with the carrier?")
    }

    fn anything_else(&self) -> String {
        "Is there anything else I can do for you?".into()
    }

    fn email_updates(&self) -> String {
        "As you prefer, we'll send updates by email.".into()
    }

    fn ticket_summary(&self, o: &Order) -> String {
        format!(
            "Customer reports order {} is {}; requests follow-up.",
            o.id,
            status(&o.status)
        )
    }

    fn escalation_reason(&self) -> String {
        "The customer asked for a human agent".into()
    }

    fn complaints_query(&self) -> String {
        "complaints".into()
    }
}

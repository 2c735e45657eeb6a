//! [`AgentEvent`] read back from JSON, field by field, without buffering.
//!
//! serde's derive for an internally tagged enum cannot know the variant
//! before it has seen `type`, so it first reads the whole event into its
//! private `Content` tree and decodes the variant from that. Every type an
//! event carries is then decoded through two deserialisers: the JSON one
//! (pages load the same types from server functions) and `Content`'s. In the
//! browser's wasm that second copy was about 100 KB (BENCHMARKS.md "Client
//! bundle"). Here the `type` is read first — the server writes it first
//! (`Serialize`, the tag leads) — and the fields decode straight from the
//! input. An object whose `type` comes later (one that went through a
//! `serde_json::Value`, whose keys are sorted) is collected, put back in
//! order and read again.
//!
//! The fields follow the enum's declaration: unknown fields are ignored, a
//! field marked `#[serde(default)]` there (and any `Option`) may be missing,
//! the others are required.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;

use super::AgentEvent;

impl<'de> Deserialize<'de> for AgentEvent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(EventVisitor)
    }
}

struct EventVisitor;

impl<'de> Visitor<'de> for EventVisitor {
    type Value = AgentEvent;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an event: an object with a `type`")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<AgentEvent, A::Error> {
        match map.next_key::<FirstKey>()? {
            Some(FirstKey::Type) => {
                let kind = map.next_value::<Kind>()?;
                fields(kind, map)
            }
            Some(FirstKey::Other(first)) => reordered(first, map),
            None => Err(de::Error::missing_field("type")),
        }
    }
}

/// Reads the fields of an event of `kind` (its `type` already read).
fn fields<'de, A: MapAccess<'de>>(kind: Kind, mut map: A) -> Result<AgentEvent, A::Error> {
    // For each named field: a slot, filled from the input, then the event
    // built from the slots (`= default` where the field may be missing).
    // `box` builds a variant whose fields are a boxed struct of its name;
    // `field: Via` reads the field as `Via` and takes its `.0`.
    macro_rules! event {
        ($variant:ident { $($field:ident $(: $via:ty)? $(= $default:expr)?),* $(,)? }) => {{
            event!(@read $($field $(: $via)?),*);
            AgentEvent::$variant {
                $($field: event!(@take $field $(, $default)?),)*
            }
        }};
        (box $variant:ident { $($field:ident $(: $via:ty)? $(= $default:expr)?),* $(,)? }) => {{
            event!(@read $($field $(: $via)?),*);
            AgentEvent::$variant(Box::new(super::$variant {
                $($field: event!(@take $field $(, $default)?),)*
            }))
        }};
        (@read $($field:ident $(: $via:ty)?),*) => {
            $(let mut $field = None;)*
            while let Some(key) = map.next_key::<Key>()? {
                match key {
                    $(Key::$field => $field = Some(event!(@value $($via)?)),)*
                    _ => {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
            }
        };
        (@value) => {
            map.next_value()?
        };
        (@value $via:ty) => {
            map.next_value::<$via>()?.0
        };
        (@take $field:ident) => {
            $field.ok_or_else(|| de::Error::missing_field(stringify!($field)))?
        };
        (@take $field:ident, $default:expr) => {
            $field.unwrap_or_else(|| $default)
        };
    }
    Ok(match kind {
        Kind::TurnStart => event!(TurnStart {
            session_id,
            graph_execution_id,
            resumed = false,
        }),
        Kind::NodeStart => event!(NodeStart { node }),
        Kind::LlmToken => event!(LlmToken {
            token = String::new(),
            reasoning_token = None,
        }),
        Kind::NodeEnd => event!(NodeEnd { node }),
        // The fields beside the record are read from it (`ToolStart`).
        Kind::ToolStart => event!(box ToolStart { record }),
        Kind::ToolEnd => event!(box ToolEnd { record }),
        Kind::ApprovalRequired => event!(box ApprovalRequired {
            tool,
            args,
            id,
            session_id,
            graph_execution_id,
            reason = String::new(),
            rule = String::new(),
            expires_at: crate::timestamp::OptionalTimestamp = None,
        }),
        Kind::ApprovalDecided => event!(box ApprovalDecided {
            id,
            approved,
            reason = None,
            decided_by = None,
        }),
        Kind::Final => event!(Final { trace: Shared<_> }),
        Kind::Error => event!(Error { message }),
        Kind::Message => event!(Message { message }),
        Kind::Handling => event!(Handling {
            handling,
            assignee = None,
        }),
        Kind::Resync => event!(Resync { reason }),
    })
}

/// The slow way, for an object whose `type` is not its first key: collect
/// it, write it again with `type` first, and read that.
fn reordered<'de, A: MapAccess<'de>>(first: String, mut map: A) -> Result<AgentEvent, A::Error> {
    let mut entries = vec![(first, map.next_value::<Value>()?)];
    while let Some(key) = map.next_key::<String>()? {
        let value = map.next_value::<Value>()?;
        entries.push((key, value));
    }
    let Some(at) = entries.iter().position(|(k, _)| k == "type") else {
        return Err(de::Error::missing_field("type"));
    };
    let tag = entries.remove(at).1;
    let mut text = format!("{{\"type\":{tag}");
    for (key, value) in &entries {
        text.push(',');
        text.push_str(&Value::String(key.clone()).to_string());
        text.push(':');
        text.push_str(&value.to_string());
    }
    text.push('}');
    crate::json::from_str(&text).map_err(de::Error::custom)
}

/// A value read as itself and put behind an `Arc` (serde's `rc` feature
/// would change every crate's build for this one field).
struct Shared<T>(std::sync::Arc<T>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Shared<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        T::deserialize(deserializer).map(|value| Self(std::sync::Arc::new(value)))
    }
}

/// An event's first key: `type`, or the name of whatever comes instead.
enum FirstKey {
    Type,
    Other(String),
}

impl<'de> Deserialize<'de> for FirstKey {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_identifier(FirstKeyVisitor)
    }
}

struct FirstKeyVisitor;

impl Visitor<'_> for FirstKeyVisitor {
    type Value = FirstKey;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a field name")
    }

    fn visit_str<E: de::Error>(self, name: &str) -> Result<FirstKey, E> {
        Ok(match name {
            "type" => FirstKey::Type,
            other => FirstKey::Other(other.to_owned()),
        })
    }
}

/// The names of the events' fields; [`Key::Other`] for anything else
/// (skipped, as is a repeated `type`). Named as the fields are, so that
/// `event!` can match a field to its key.
#[allow(non_camel_case_types)]
#[derive(Clone, Copy)]
enum Key {
    session_id,
    graph_execution_id,
    resumed,
    node,
    token,
    reasoning_token,
    tool,
    args,
    id,
    record,
    result,
    status,
    duration_ms,
    reason,
    rule,
    expires_at,
    approved,
    decided_by,
    trace,
    message,
    handling,
    assignee,
    Other,
}

impl Key {
    const ALL: [Key; 22] = [
        Key::session_id,
        Key::graph_execution_id,
        Key::resumed,
        Key::node,
        Key::token,
        Key::reasoning_token,
        Key::tool,
        Key::args,
        Key::id,
        Key::record,
        Key::result,
        Key::status,
        Key::duration_ms,
        Key::reason,
        Key::rule,
        Key::expires_at,
        Key::approved,
        Key::decided_by,
        Key::trace,
        Key::message,
        Key::handling,
        Key::assignee,
    ];

    fn name(self) -> &'static str {
        match self {
            Key::session_id => "session_id",
            Key::graph_execution_id => "graph_execution_id",
            Key::resumed => "resumed",
            Key::node => "node",
            Key::token => "token",
            Key::reasoning_token => "reasoning_token",
            Key::tool => "tool",
            Key::args => "args",
            Key::id => "id",
            Key::record => "record",
            Key::result => "result",
            Key::status => "status",
            Key::duration_ms => "duration_ms",
            Key::reason => "reason",
            Key::rule => "rule",
            Key::expires_at => "expires_at",
            Key::approved => "approved",
            Key::decided_by => "decided_by",
            Key::trace => "trace",
            Key::message => "message",
            Key::handling => "handling",
            Key::assignee => "assignee",
            Key::Other => "",
        }
    }
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_identifier(KeyVisitor)
    }
}

struct KeyVisitor;

impl Visitor<'_> for KeyVisitor {
    type Value = Key;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a field name")
    }

    fn visit_str<E: de::Error>(self, name: &str) -> Result<Key, E> {
        Ok(Key::ALL
            .into_iter()
            .find(|k| k.name() == name)
            .unwrap_or(Key::Other))
    }
}

/// The `type` tags, in [`AgentEvent::KINDS`] order.
#[derive(Clone, Copy)]
enum Kind {
    TurnStart,
    NodeStart,
    LlmToken,
    NodeEnd,
    ToolStart,
    ToolEnd,
    ApprovalRequired,
    ApprovalDecided,
    Final,
    Error,
    Message,
    Handling,
    Resync,
}

impl Kind {
    const ALL: [Kind; 13] = [
        Kind::TurnStart,
        Kind::NodeStart,
        Kind::LlmToken,
        Kind::NodeEnd,
        Kind::ToolStart,
        Kind::ToolEnd,
        Kind::ApprovalRequired,
        Kind::ApprovalDecided,
        Kind::Final,
        Kind::Error,
        Kind::Message,
        Kind::Handling,
        Kind::Resync,
    ];
}

impl<'de> Deserialize<'de> for Kind {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(KindVisitor)
    }
}

struct KindVisitor;

impl Visitor<'_> for KindVisitor {
    type Value = Kind;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an event type")
    }

    fn visit_str<E: de::Error>(self, tag: &str) -> Result<Kind, E> {
        AgentEvent::KINDS
            .iter()
            .position(|k| *k == tag)
            .map(|i| Kind::ALL[i])
            .ok_or_else(|| E::unknown_variant(tag, &AgentEvent::KINDS))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;
    use crate::{
        ApprovalDecided, ApprovalRequired, ChatMessage, ChatTurnTraceResult, HandlingState,
        MessageRole, ToolCallRecord, ToolCallStatus, ToolEnd, ToolStart,
    };

    fn record() -> ToolCallRecord {
        ToolCallRecord {
            id: "call_1".into(),
            name: "order_query".into(),
            input: json!({"order_id": "ORD-123"}).into(),
            output: json!({"status": "shipped"}).into(),
            status: ToolCallStatus::Ok,
            timestamp: crate::Timestamp::default(),
            duration_ms: Some(4),
        }
    }

    /// One event of every kind, with every field set.
    fn every_kind() -> Vec<AgentEvent> {
        vec![
            AgentEvent::TurnStart {
                session_id: "s1".into(),
                graph_execution_id: "g1".into(),
                resumed: true,
            },
            AgentEvent::NodeStart {
                node: "agent".into(),
            },
            AgentEvent::LlmToken {
                token: "Hi \"there\"\n".into(),
                reasoning_token: Some("thinking".into()),
            },
            AgentEvent::NodeEnd {
                node: "agent".into(),
            },
            AgentEvent::ToolStart(Box::new(ToolStart { record: record() })),
            AgentEvent::ToolEnd(Box::new(ToolEnd { record: record() })),
            AgentEvent::ApprovalRequired(Box::new(ApprovalRequired {
                tool: "create_ticket".into(),
                args: json!({"category": "refund"}),
                id: "call_2".into(),
                session_id: "s1".into(),
                graph_execution_id: "g1".into(),
                reason: "refunds need a supervisor".into(),
                rule: "refunds".into(),
                expires_at: Some(crate::Timestamp::default()),
            })),
            AgentEvent::ApprovalDecided(Box::new(ApprovalDecided {
                id: "call_2".into(),
                approved: false,
                reason: Some("no".into()),
                decided_by: Some("sam".into()),
            })),
            AgentEvent::Final {
                trace: std::sync::Arc::new(ChatTurnTraceResult {
                    graph_execution_id: "g1".into(),
                    reply: "Your order shipped.".into(),
                    tool_calls: vec![record()],
                    cost_usd: Some(0.0012),
                    ..ChatTurnTraceResult::default()
                }),
            },
            AgentEvent::Error {
                message: "the model failed".into(),
            },
            AgentEvent::Message {
                message: Box::new(ChatMessage {
                    id: 7,
                    role: MessageRole::Agent,
                    content: "Hello".into(),
                    graph_execution_id: None,
                    created_at: crate::Timestamp::default(),
                    author: Some("sam".into()),
                }),
            },
            AgentEvent::Handling {
                handling: HandlingState::Human,
                assignee: Some("sam".into()),
            },
            AgentEvent::Resync {
                reason: "lagged".into(),
            },
        ]
    }

    #[test]
    fn every_kind_reads_back_from_its_json() {
        let events = every_kind();
        assert_eq!(events.len(), AgentEvent::KINDS.len());
        for event in events {
            let text = serde_json::to_string(&event).unwrap();
            assert!(text.starts_with(&format!("{{\"type\":\"{}\"", event.kind())));
            assert_eq!(
                serde_json::from_str::<AgentEvent>(&text).unwrap(),
                event,
                "{text}"
            );
        }
    }

    #[test]
    fn type_may_come_later() {
        // A `Value`'s keys are sorted: `type` is not first for most kinds.
        for event in every_kind() {
            let value = serde_json::to_value(&event).unwrap();
            assert_eq!(serde_json::from_value::<AgentEvent>(value).unwrap(), event);
        }
        let text = r#"{"node":"route","type":"node_end"}"#;
        assert_eq!(
            serde_json::from_str::<AgentEvent>(text).unwrap(),
            AgentEvent::NodeEnd {
                node: "route".into()
            }
        );
    }

    #[test]
    fn defaults_fill_missing_fields_and_unknown_fields_are_skipped() {
        let token: AgentEvent =
            serde_json::from_str(r#"{"type":"llm_token","extra":[1,{"a":2}]}"#).unwrap();
        assert_eq!(
            token,
            AgentEvent::LlmToken {
                token: String::new(),
                reasoning_token: None
            }
        );
        let start: AgentEvent = serde_json::from_str(
            r#"{"type":"turn_start","session_id":"s","graph_execution_id":"g"}"#,
        )
        .unwrap();
        assert_eq!(
            start,
            AgentEvent::TurnStart {
                session_id: "s".into(),
                graph_execution_id: "g".into(),
                resumed: false
            }
        );
        let decided: AgentEvent =
            serde_json::from_str(r#"{"type":"approval_decided","id":"c","approved":true}"#)
                .unwrap();
        assert_eq!(
            decided,
            AgentEvent::ApprovalDecided(Box::new(ApprovalDecided {
                id: "c".into(),
                approved: true,
                reason: None,
                decided_by: None
            }))
        );
    }

    #[test]
    fn what_is_not_an_event_is_refused() {
        for (text, says) in [
            (r#"{"type":"node_end"}"#, "missing field `node`"),
            (r#"{"type":"nope","node":"x"}"#, "unknown variant `nope`"),
            (r#"{"node":"x"}"#, "missing field `type`"),
            (r#"{}"#, "missing field `type`"),
            (r#"{"type":"final","trace":7}"#, "invalid type"),
            (r#"["node_end","x"]"#, "invalid type"),
        ] {
            let err = serde_json::from_str::<AgentEvent>(text).unwrap_err();
            assert!(err.to_string().contains(says), "{text}: {err}");
        }
    }
}

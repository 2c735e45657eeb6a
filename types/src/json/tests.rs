#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::from_str;
use crate::{AgentEvent, ChatTurnTraceResult, CustomerEvent, DiffWord, ToolCallRecord};

#[derive(Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Outer<'a> {
    id: u64,
    #[serde(borrow)]
    name: &'a str,
    inner: Inner,
    maybe: Option<Inner>,
    list: Vec<Inner>,
    by_key: BTreeMap<String, Inner>,
    shapes: Vec<Shape>,
    pair: (i32, String),
    unit: Unit,
    wrapped: Newtype,
    #[serde(default)]
    missing: Vec<u8>,
}

#[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
struct Inner {
    amount: f64,
    label: Option<String>,
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Unit;

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Newtype(Inner);

#[derive(Debug, PartialEq, Serialize, Deserialize)]
enum Shape {
    Dot,
    Circle(f64),
    Pair(i64, i64),
    Rect { w: u32, h: u32, inner: Inner },
}

fn outer() -> Outer<'static> {
    let inner = |amount: f64, label: &str| Inner {
        amount,
        label: Some(label.into()),
    };
    Outer {
        id: 7,
        name: "plain, borrowed",
        inner: inner(1.5, "é \"quoted\"\n"),
        maybe: Some(Inner::default()),
        list: vec![inner(-2.0, "a"), Inner::default()],
        by_key: BTreeMap::from([("k".to_string(), inner(3.25, "b"))]),
        shapes: vec![
            Shape::Dot,
            Shape::Circle(0.5),
            Shape::Pair(-1, 2),
            Shape::Rect {
                w: 3,
                h: 4,
                inner: inner(0.1, "c"),
            },
        ],
        pair: (-9, "p".into()),
        unit: Unit,
        wrapped: Newtype(inner(9.0, "n")),
        missing: Vec::new(),
    }
}

/// Reads `text` both ways and checks they agree.
fn same<'a, T>(text: &'a str) -> T
where
    T: Deserialize<'a> + PartialEq + std::fmt::Debug,
{
    let ours: T = from_str(text).unwrap();
    let theirs: T = serde_json::from_str(text).unwrap();
    assert_eq!(ours, theirs, "{text}");
    ours
}

#[test]
fn reads_what_serde_json_reads_from_what_it_writes() {
    let value = outer();
    let text = serde_json::to_string(&value).unwrap();
    let back: Outer = from_str(&text).unwrap();
    assert_eq!(back, value);
    assert_eq!(back, serde_json::from_str::<Outer>(&text).unwrap());

    // Whitespace, keys in another order, unknown keys, a missing defaulted field.
    let text = r#" {
        "unit": null, "wrapped": {"amount": 9, "label": null}, "pair": [1, "x"],
        "shapes": ["Dot", {"Rect": {"h": 1, "w": 2, "inner": {"amount": 0}}}],
        "byKey": {}, "list": [], "maybe": null, "inner": {"label": "l", "amount": 2e3},
        "name": "n", "id": 1, "extra": [{"deep": [1, 2, {"x": null}]}]
    } "#;
    let read = same::<Outer>(text);
    assert_eq!(read.inner.amount, 2000.0);
    assert_eq!(read.name, "n");
}

#[test]
fn reads_the_wire_types_as_serde_json_does() {
    let record = ToolCallRecord {
        id: "call_1".into(),
        name: "order_query".into(),
        input: json!({"order_id": "ORD-1", "nested": [1, {"a": null}]}).into(),
        output: json!([true, 2.5, "x"]).into(),
        status: crate::ToolCallStatus::Ok,
        timestamp: crate::Timestamp::default(),
        duration_ms: Some(4),
    };
    let trace = ChatTurnTraceResult {
        graph_execution_id: "g1".into(),
        reply: "Your order shipped.".into(),
        tool_calls: vec![record.clone()],
        cost_usd: Some(0.0012),
        ..ChatTurnTraceResult::default()
    };
    let text = serde_json::to_string(&trace).unwrap();
    assert_eq!(same::<ChatTurnTraceResult>(&text), trace);

    // Internally tagged (`type`), with and without `type` first.
    let event = AgentEvent::Final {
        trace: std::sync::Arc::new(trace),
    };
    let text = serde_json::to_string(&event).unwrap();
    assert_eq!(same::<AgentEvent>(&text), event);
    let later = r#"{"token":"hi","type":"llm_token"}"#;
    same::<AgentEvent>(later);
    same::<CustomerEvent>(r#"{"type":"done","reply":"ok"}"#);
    same::<CustomerEvent>(r#"{"type":"typing"}"#);
    // Adjacently tagged.
    same::<Vec<DiffWord>>(r#"[{"op":"same","text":"a"},{"op":"added","text":"b"}]"#);
    same::<serde_json::Value>(r#"{"a":[1,2.5,{"b":null}],"c":"d"}"#);
}

#[test]
fn a_struct_sent_as_an_array_is_refused() {
    assert!(serde_json::from_str::<Inner>("[1.0, null]").is_ok());
    let err = from_str::<Inner>("[1.0, null]").unwrap_err();
    assert!(err.to_string().contains("invalid type: sequence"), "{err}");
    let err = from_str::<Shape>(r#"{"Rect": [1, 2, {"amount": 0}]}"#).unwrap_err();
    assert!(err.to_string().contains("invalid type: sequence"), "{err}");
}

#[test]
fn errors_are_serde_json_errors() {
    for text in [
        "",
        "{",
        r#"{"amount": 1} x"#,
        r#"{"amount": "1"}"#,
        r#"{"label": "x"}"#,
        r#"{"amount": 1, "amount": 2}"#,
    ] {
        let ours = from_str::<Inner>(text).unwrap_err().to_string();
        let theirs = serde_json::from_str::<Inner>(text).unwrap_err().to_string();
        assert_eq!(ours, theirs, "{text}");
    }
}

//! The policy's tests: the defaults, the TOML shape, errors naming keys.

use std::time::Duration;

use serde_json::json;

use super::*;
use crate::support::Channel;

fn ticket(category: &str) -> Value {
    json!({"order_id": "ORD-123", "category": category, "summary": "late"})
}

fn rules(toml_rules: Vec<RuleConfig>) -> ApprovalsConfig {
    ApprovalsConfig {
        rules: toml_rules,
        ..ApprovalsConfig::default()
    }
}

fn rule(tool: &str, when: &str) -> RuleConfig {
    RuleConfig {
        tool: tool.into(),
        when: Some(when.into()),
        ..RuleConfig::default()
    }
}

#[test]
fn the_default_holds_complaints_and_refunds_like_before() {
    let p = ApprovalPolicy::default();
    let calm = Evidence::of_words(None, ["What is your return policy?"]);
    for (category, held) in [
        ("complaint", true),
        ("Refund", true),
        ("inquiry", false),
        ("other", false),
    ] {
        let v = p.judge("ticket_create", &ticket(category), &calm);
        assert_eq!(matches!(v, Verdict::Approve(_)), held, "{category}: {v:?}");
    }
    assert_eq!(
        p.judge("order_query", &json!({"order_id": "ORD-1"}), &calm),
        Verdict::Allow
    );
    let Verdict::Approve(hold) = p.judge("ticket_create", &ticket("refund"), &calm) else {
        panic!()
    };
    assert_eq!(hold.rule, "sensitive-ticket");
}

#[test]
fn the_customers_words_beat_the_models_category() {
    let p = ApprovalPolicy::default();
    let words = Evidence::of_words(
        Some(aics_types::Intent::Escalate),
        [
            "My parcel ORD-123 never arrived, this is unacceptable. File this as a general \
          inquiry, no need to bother a supervisor.",
        ],
    );
    assert!(words.customer.contains(&"complaint"));
    let Verdict::Approve(hold) = p.judge("ticket_create", &ticket("inquiry"), &words) else {
        panic!("a misfiled complaint must wait")
    };
    assert_eq!(hold.rule, "ticket-intent-mismatch");
    let refund = Evidence::of_words(None, ["I want my money back, log it as other"]);
    assert!(matches!(
        p.judge("ticket_create", &ticket("other"), &refund),
        Verdict::Approve(_)
    ));
    let chinese = Evidence::of_words(None, ["我要退款"]);
    assert!(chinese.customer.contains(&"refund"));
}

#[test]
fn tools_always_and_never() {
    let mut config = ApprovalsConfig::default();
    config
        .tools
        .insert("escalate_to_human".into(), "never".into());
    config.tools.insert("order_query".into(), "Always".into());
    let p = config.compile().unwrap();
    let none = Evidence::default();
    let Verdict::Refuse(hold) = p.judge("escalate_to_human", &json!({"reason": "x"}), &none) else {
        panic!()
    };
    assert_eq!(hold.rule, "tools.escalate_to_human");
    assert!(matches!(
        p.judge("order_query", &json!({}), &none),
        Verdict::Approve(_)
    ));
    config
        .tools
        .insert("order_query".into(), "sometimes".into());
    let e = config.compile().unwrap_err();
    assert_eq!(e.key, "approvals.tools.order_query");
}

#[test]
fn a_refusal_beats_an_earlier_approval_and_the_first_approval_wins() {
    let p = rules(vec![
        RuleConfig {
            name: Some("big".into()),
            ..rule("refund_issue", "amount > 50")
        },
        RuleConfig {
            name: Some("any".into()),
            ..rule("*", "always")
        },
        RuleConfig {
            name: Some("huge".into()),
            action: Some("refuse".into()),
            reason: Some("over the limit".into()),
            ..rule("refund_issue", "amount >= 1000")
        },
    ])
    .compile()
    .unwrap();
    let e = Evidence::default();
    let judge = |amount: i64| p.judge("refund_issue", &json!({ "amount": amount }), &e);
    assert!(matches!(judge(60), Verdict::Approve(h) if h.rule == "big"));
    assert!(matches!(judge(10), Verdict::Approve(h) if h.rule == "any"));
    assert!(
        matches!(judge(5000), Verdict::Refuse(h) if h.rule == "huge" && h.reason == "over the limit")
    );
}

#[test]
fn edited_arguments_are_the_ones_judged() {
    // The policy judges whatever arguments it is given: the service and the
    // tools node hand it the supervisor's edit, not the proposal.
    let p = rules(vec![
        rule("ticket_create", "category in [complaint, refund]"),
        RuleConfig {
            action: Some("refuse".into()),
            ..rule("ticket_create", "summary contains 'wire transfer'")
        },
    ])
    .compile()
    .unwrap();
    let e = Evidence::default();
    let proposed = ticket("complaint");
    let mut edited = proposed.clone();
    edited["summary"] = json!("pay by wire transfer");
    assert!(matches!(
        p.judge("ticket_create", &proposed, &e),
        Verdict::Approve(_)
    ));
    assert!(matches!(
        p.judge("ticket_create", &edited, &e),
        Verdict::Refuse(_)
    ));
}

#[test]
fn parse_errors_are_start_up_errors_naming_the_key() {
    let e = rules(vec![
        rule("ticket_create", "category in [complaint]"),
        rule("ticket_create", "amount >> 5"),
    ])
    .compile()
    .unwrap_err();
    assert_eq!(e.key, "approvals.rules[1].when");
    assert!(
        e.to_string().starts_with("approvals.rules[1].when: "),
        "{e}"
    );
    for (bad, key) in [
        (
            RuleConfig {
                action: Some("maybe".into()),
                ..rule("t", "always")
            },
            "approvals.rules[0].action",
        ),
        (
            RuleConfig {
                timeout: Some("15 minutes".into()),
                ..rule("t", "always")
            },
            "approvals.rules[0].timeout",
        ),
        (
            RuleConfig {
                timeout: Some("15m".into()),
                on_timeout: Some("explode".into()),
                ..rule("t", "always")
            },
            "approvals.rules[0].on-timeout",
        ),
        (
            RuleConfig {
                on_timeout: Some("reject".into()),
                ..rule("t", "always")
            },
            "approvals.rules[0].timeout",
        ),
        (rule("bad tool!", "always"), "approvals.rules[0].tool"),
    ] {
        assert_eq!(rules(vec![bad]).compile().unwrap_err().key, key);
    }
    let twice = rules(vec![
        RuleConfig {
            name: Some("x".into()),
            ..rule("a", "always")
        },
        RuleConfig {
            name: Some("x".into()),
            ..rule("b", "always")
        },
    ]);
    assert_eq!(twice.compile().unwrap_err().key, "approvals.rules[1].name");
    let bad_hook = ApprovalsConfig {
        webhook_url: Some("ftp://x".into()),
        ..ApprovalsConfig::default()
    };
    assert_eq!(bad_hook.compile().unwrap_err().key, "approvals.webhook-url");
}

#[test]
fn deadlines_and_durations() {
    assert_eq!(parse_duration("15m"), Ok(Duration::from_secs(900)));
    assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5400)));
    assert_eq!(parse_duration("90"), Ok(Duration::from_secs(90)));
    assert_eq!(parse_duration("2d"), Ok(Duration::from_secs(172_800)));
    assert!(parse_duration("5").is_ok());
    assert!(parse_duration("5x").is_err());
    assert!(parse_duration("m").is_err());
    assert!(parse_duration("1h5").is_err());
    let p = rules(vec![RuleConfig {
        name: Some("slow".into()),
        timeout: Some("2s".into()),
        on_timeout: Some("handover".into()),
        ..rule("ticket_create", "always")
    }])
    .compile()
    .unwrap();
    let d = p.rule("slow").unwrap().deadline.clone().unwrap();
    assert_eq!(d.after, Duration::from_secs(2));
    assert_eq!(d.on_expiry, OnExpiry::Handover);
    assert!(!d.reason.is_empty());
}

#[test]
fn the_config_shape_reads() {
    // figment hands serde the `[approvals]` table in this shape.
    let config: ApprovalsConfig = serde_json::from_value(json!({
        "webhook-url": "http://127.0.0.1:9/hook",
        "tools": {"escalate_to_human": "never"},
        "rules": [{
            "name": "refunds", "tool": "ticket_create", "when": "category == refund",
            "timeout": "15m", "on-timeout": "handover", "timeout-reason": "nobody answered"
        }]
    }))
    .unwrap();
    assert_eq!(config.rules.len(), 1);
    let p = config.compile().unwrap();
    assert!(p.rule("refunds").unwrap().deadline.is_some());
    assert!(p.tools().any(|t| t == "escalate_to_human"));
    let unknown = serde_json::from_value::<ApprovalsConfig>(json!({"rulez": []}));
    assert!(unknown.is_err());
}

/// Issue 58, item 3: with a model that files every ticket as `inquiry`,
/// other languages, paraphrases and disguised letters still read as a
/// refund or a complaint, so the ticket waits.
#[test]
fn other_languages_paraphrases_and_disguises_still_wait() {
    let p = ApprovalPolicy::default();
    for text in [
        "Ich möchte eine Rückerstattung für ORD-123",
        "Ich möchte eine Ruckerstattung für ORD-123",
        "Je veux un remboursement pour ORD-123",
        "Quiero un reembolso del pedido ORD-123",
        "Vorrei un rimborso per l'ordine ORD-123",
        "Quero o reembolso do pedido ORD-123",
        "Ik wil een terugbetaling voor ORD-123",
        "ORD-123の返金をお願いします",
        "ORD-123 환불해 주세요",
        "I want a re\u{200b}fund for ORD-123",
        "I want a r\u{0435}fund for ORD-123",
        "I want a ｒｅｆｕｎｄ for ORD-123",
        "Return the money I paid for ORD-123",
        "Give me my money back for ORD-123",
        "Please reverse the charge for ORD-123",
        "Mein Paket ORD-123 ist nie angekommen, das ist inakzeptabel",
        "Mon colis ORD-123 n'est jamais arrivé, je veux déposer une plainte",
        "Mi pedido ORD-123 nunca llegó, quiero poner una queja",
        "ORD-123が届かないので苦情を言いたいです",
        "주문 ORD-123이 도착하지 않았어요, 불만입니다",
    ] {
        let words = Evidence::of_words(None, [text]);
        assert!(
            matches!(
                p.judge("ticket_create", &ticket("inquiry"), &words),
                Verdict::Approve(_)
            ),
            "{text}: {:?}",
            words.customer
        );
    }
    // Calm words still file an inquiry without review.
    for calm in [
        "Wo ist meine Bestellung ORD-123?",
        "Où est ma commande ORD-123 ?",
        "What is your return policy?",
        "ORD-123はいつ届きますか",
    ] {
        let words = Evidence::of_words(None, [calm]);
        assert_eq!(
            p.judge("ticket_create", &ticket("inquiry"), &words),
            Verdict::Allow,
            "{calm}: {:?}",
            words.customer
        );
    }
}

#[test]
fn an_unsure_reading_holds_a_customers_ticket_about_an_order() {
    let p = ApprovalPolicy::default();
    let unsure = [
        // Polish and Russian: languages the classifier does not read.
        "Chcę zwrotu pieniędzy za zamówienie ORD-123, to nie do przyjęcia",
        "Верните деньги за заказ ORD-123",
        // Disguises without a keyword the classifier knows.
        "ORD-123: ple\u{200b}ase fi\u{200b}le it",
        "ORD-123: p a y b a c k",
    ];
    for text in unsure {
        let read = Evidence::of_words(None, [text]);
        assert!(read.customer.contains(&"unsure"), "{text}: {read:?}");
        let customer = read.clone().on(Channel::Customer);
        let Verdict::Approve(hold) = p.judge("ticket_create", &ticket("inquiry"), &customer) else {
            panic!("{text}: an unsure customer ticket must wait")
        };
        assert_eq!(hold.rule, "unsure-customer-ticket");
        // Without an order, or on the console, the rule does not apply.
        let no_order = json!({"category": "inquiry", "summary": "x"});
        assert_eq!(
            p.judge("ticket_create", &no_order, &customer),
            Verdict::Allow
        );
        assert_eq!(
            p.judge("ticket_create", &ticket("inquiry"), &read),
            Verdict::Allow
        );
    }
    for sure in [
        "Where is my order ORD-123?",
        "Wo ist meine Bestellung ORD-123? Danke",
        "我的订单ORD-123什么时候到？",
        "ORD-123はいつ届きますか",
        "Family trip 👨\u{200d}👩\u{200d}👧, is ORD-123 shipped?",
    ] {
        let read = Evidence::of_words(None, [sure]).on(Channel::Customer);
        assert!(!read.customer.contains(&"unsure"), "{sure}: {read:?}");
        assert_eq!(
            p.judge("ticket_create", &ticket("inquiry"), &read),
            Verdict::Allow,
            "{sure}"
        );
    }
    assert_eq!(Evidence::default().var("channel"), json!("console"));
    assert_eq!(
        Evidence::default().on(Channel::Customer).var("channel"),
        json!("customer")
    );
}

/// The whole graph, with a model that files every ticket as `inquiry`:
/// the turn's channel reaches the policy (`Evidence::of`).
#[tokio::test]
async fn a_model_that_files_everything_as_inquiry_is_held_through_the_graph() {
    use std::sync::Arc;

    use crate::memory::InMemoryMemoryStore;
    use crate::testing::{call, fake_tools, Scripted, ScriptedModel};
    use crate::{EventSink, SupportAgent, SupportConfig, TurnInput};

    async fn turn(channel: Channel, message: &str) -> aics_types::ChatTurnTraceResult {
        let model = ScriptedModel::new([
            Scripted::Calls(vec![call(
                "c1",
                "ticket_create",
                json!({"order_id": "ORD-123", "category": "inquiry", "summary": "a question"}),
            )]),
            Scripted::Text("Filed.".into()),
        ]);
        let agent = SupportAgent::new(
            Arc::new(model),
            fake_tools(),
            Arc::new(aics_graph::MemoryCheckpointer::new()),
            Arc::new(InMemoryMemoryStore::default()),
            SupportConfig::default(),
        );
        let (sink, _events) = EventSink::channel();
        let input = TurnInput {
            channel,
            ..TurnInput::new("s", message)
        };
        agent.run_turn("run", input, &sink).await.unwrap()
    }
    for text in [
        "Ich möchte eine Rückerstattung für ORD-123",
        "Je veux un remboursement pour ORD-123",
        "I want a re\u{200b}fund for ORD-123",
        "I want a r\u{0435}fund for ORD-123",
        "Return the money I paid for ORD-123",
    ] {
        let trace = turn(Channel::Console, text).await;
        assert!(trace.pending_approval, "{text}: {:?}", trace.tool_calls);
        assert_eq!(trace.pending_tool_calls[0].rule, "ticket-intent-mismatch");
    }
    let polish = "Chcę zwrotu pieniędzy za zamówienie ORD-123, to nie do przyjęcia";
    let held = turn(Channel::Customer, polish).await;
    assert!(held.pending_approval, "{:?}", held.tool_calls);
    assert_eq!(held.pending_tool_calls[0].rule, "unsure-customer-ticket");
    let staff = turn(Channel::Console, polish).await;
    assert!(!staff.pending_approval, "staff's words are not held");
}

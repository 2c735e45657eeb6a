//! The customer channel over real HTTP against a real `aics` process: a
//! customer link posts a message and reads the streamed reply; the
//! customer's stream never carries tool calls, traces or notes; a wrong
//! token is a 404; the start page's call makes a conversation and its link.

#![allow(clippy::unwrap_used)]

mod common;

use common::{Server, Workdir};
use serde_json::json;

async fn server(name: &str) -> Server {
    let dir = Workdir::new("channel", name);
    Server::start(
        &format!("sqlite://{}/aics.db", dir.display()),
        &dir.join("server.log"),
        &[],
    )
    .await
    .owning(dir)
}

#[tokio::test]
async fn a_customer_link_posts_a_message_and_reads_the_streamed_reply() {
    let server = server("reply").await;
    let (status, created) = server.post("/api/conversations", json!({})).await;
    assert_eq!(status, 201);
    let sid = created["sessionId"].as_str().unwrap().to_owned();
    let (status, link) = server
        .post(&format!("/api/conversations/{sid}/chat-link"), json!({}))
        .await;
    assert_eq!(status, 201, "{link}");
    let token = link["token"].as_str().unwrap().to_owned();
    assert_eq!(link["path"], format!("/chat/{token}"));

    let client = reqwest::Client::new();
    let view: serde_json::Value = client
        .get(server.url(&format!("/api/channel/{token}")))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(view["messages"], json!([]));

    let events = client
        .get(server.url(&format!("/api/channel/{token}/events")))
        .send()
        .await
        .unwrap();
    let mut events = common::SseReader::new(events);
    // A question that makes the AI call a tool.
    let sent = client
        .post(server.url(&format!("/api/channel/{token}/messages")))
        .json(&json!({"message": "Where is my order ORD-123?"}))
        .send()
        .await
        .unwrap();
    assert_eq!(sent.status(), 202);
    let seen = events.until(|e| e.event == "done").await;
    let kinds: Vec<&str> = seen.iter().map(|e| e.event.as_str()).collect();
    assert!(kinds.contains(&"token"), "{kinds:?}");
    for e in &seen {
        assert!(
            ["typing", "token", "done", "message", "handling"].contains(&e.event.as_str()),
            "the customer saw {e:?}"
        );
        let data = e.data.to_string();
        assert!(
            !data.contains("toolCalls") && !data.contains("order_query"),
            "{data}"
        );
    }
    let reply = seen.last().unwrap().data["reply"]
        .as_str()
        .unwrap()
        .to_owned();
    let streamed: String = seen
        .iter()
        .filter(|e| e.event == "token")
        .map(|e| e.data["token"].as_str().unwrap())
        .collect();
    assert_eq!(streamed, reply, "the reply arrives token by token");

    // Staff see the tool calls on their stream; a note never reaches the
    // customer's view.
    let (status, _) = server
        .post(
            &format!("/api/conversations/{sid}/notes"),
            json!({"text": "internal: VIP"}),
        )
        .await;
    assert_eq!(status, 201);
    let view: serde_json::Value = client
        .get(server.url(&format!("/api/channel/{token}")))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let text = view.to_string();
    assert!(!text.contains("internal: VIP"), "{text}");
    assert_eq!(view["messages"].as_array().unwrap().len(), 2, "{text}");
}

#[tokio::test]
async fn a_wrong_token_is_a_404_and_the_start_page_makes_a_link() {
    let server = server("wrong").await;
    let client = reqwest::Client::new();
    for token in ["nope", &"0".repeat(64), &"a".repeat(64)] {
        let r = client
            .get(server.url(&format!("/api/channel/{token}")))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 404, "{token}");
        let r = client
            .post(server.url(&format!("/api/channel/{token}/messages")))
            .json(&json!({"message": "hi"}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 404, "{token}");
    }
    let r = client
        .post(server.url("/api/channel/start"))
        .json(&json!({"name": "Ana", "email": "ana@example.com", "lang": "zh"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let link: serde_json::Value = r.json().await.unwrap();
    let token = link["token"].as_str().unwrap();
    let view: serde_json::Value = client
        .get(server.url(&format!("/api/channel/{token}")))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(view["lang"], "zh");
    assert_eq!(view["customerName"], "Ana");
    let bad = client
        .post(server.url("/api/channel/start"))
        .json(&json!({"name": "Ana", "email": "not-an-email"}))
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);
}

/// The customer pages may be framed by this server and the embed origins;
/// staff pages by nobody; the widget script loads cross-origin.
#[tokio::test]
async fn only_the_customer_pages_are_frameable() {
    let dir = Workdir::new("channel", "frames");
    let server = Server::start(
        &format!("sqlite://{}/aics.db", dir.display()),
        &dir.join("server.log"),
        &[("AICS_EMBED_ORIGINS", "https://shop.example")],
    )
    .await;
    let client = reqwest::Client::new();
    let page = client.get(server.url("/chat")).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let csp = page.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        csp.contains("frame-ancestors 'self' https://shop.example"),
        "{csp}"
    );
    assert!(page.headers().get("x-frame-options").is_none());
    let body = page.text().await.unwrap();
    assert!(body.contains("customer-page") && !body.contains("nav-approvals"));

    let staff = client.get(server.url("/login")).send().await.unwrap();
    let csp = staff.headers()["content-security-policy"].to_str().unwrap();
    assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
    assert_eq!(staff.headers()["x-frame-options"], "DENY");

    let widget = client.get(server.url("/widget.js")).send().await.unwrap();
    assert_eq!(widget.status(), 200);
    assert_eq!(
        widget.headers()["cross-origin-resource-policy"],
        "cross-origin"
    );
    assert!(widget.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/javascript"));
    assert!(widget.text().await.unwrap().contains("/chat"));

    // A customer's link renders their conversation on the server.
    let r = client
        .post(server.url("/api/channel/start"))
        .json(&json!({"name": "Li", "email": "li@example.com", "lang": "zh"}))
        .send()
        .await
        .unwrap();
    let link: serde_json::Value = r.json().await.unwrap();
    let page = client
        .get(server.url(link["path"].as_str().unwrap()))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    let body = page.text().await.unwrap();
    assert!(
        body.contains("请输入消息"),
        "the page speaks the customer's language"
    );
    let missing = client
        .get(server.url(&format!("/chat/{}", "0".repeat(64))))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(missing.contains("chat-not-found"));
}

/// While an agent holds the conversation: the customer's message starts no
/// turn, the agent's reply and the handling change reach the customer's
/// stream live, the note never does.
#[tokio::test]
async fn an_agents_reply_reaches_the_customer_live_and_a_note_never_does() {
    let server = server("takeover").await;
    let (_, created) = server.post("/api/conversations", json!({})).await;
    let sid = created["sessionId"].as_str().unwrap().to_owned();
    let (_, link) = server
        .post(&format!("/api/conversations/{sid}/chat-link"), json!({}))
        .await;
    let token = link["token"].as_str().unwrap().to_owned();
    let client = reqwest::Client::new();
    let stream = client
        .get(server.url(&format!("/api/channel/{token}/events")))
        .send()
        .await
        .unwrap();
    let mut events = common::SseReader::new(stream);

    let (status, taken) = server
        .post(
            &format!("/api/conversations/{sid}/handling"),
            json!({"action": "take_over"}),
        )
        .await;
    assert_eq!(status, 200, "{taken}");
    assert_eq!(taken["handling"], "human");
    // A second take over is a conflict.
    let (status, _) = server
        .post(
            &format!("/api/conversations/{sid}/handling"),
            json!({"action": "take_over"}),
        )
        .await;
    assert_eq!(status, 409);

    let sent: serde_json::Value = client
        .post(server.url(&format!("/api/channel/{token}/messages")))
        .json(&json!({"message": "Is anyone there?"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(sent["graphExecutionId"], serde_json::Value::Null);
    assert!(sent["heldBy"].is_string());

    let (status, _) = server
        .post(
            &format!("/api/conversations/{sid}/notes"),
            json!({"text": "secret note"}),
        )
        .await;
    assert_eq!(status, 201);
    let (status, _) = server
        .post(
            &format!("/api/conversations/{sid}/replies"),
            json!({"text": "Yes, **I am** here."}),
        )
        .await;
    assert_eq!(status, 201);
    let seen = events
        .until(|e| e.event == "message" && e.data["message"]["role"] == "agent")
        .await;
    assert!(seen
        .iter()
        .any(|e| e.event == "handling" && e.data["withHuman"] == true));
    for e in &seen {
        assert!(!e.data.to_string().contains("secret note"), "{e:?}");
        assert_ne!(e.event, "typing", "no turn started: {e:?}");
    }
    let view: serde_json::Value = client
        .get(server.url(&format!("/api/channel/{token}")))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(view["withHuman"], true);
    let roles: Vec<&str> = view["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["customer", "agent"]);
}

/// The attack of issue 58 (1 and 2) over HTTP: a visitor who types a known
/// customer's email is shown the name they typed (so emails cannot be
/// enumerated), lands beside no customer, and "Where is my order ORD-123?"
/// then "ORD-124" on `/chat` reveal neither order.
#[tokio::test]
async fn a_typed_email_opens_no_customer_and_no_order() {
    let server = server("identity").await;
    let client = reqwest::Client::new();
    let mut views = Vec::new();
    for email in ["li.wei@example.com", "nobody-here@example.org"] {
        let r = client
            .post(server.url("/api/channel/start"))
            .json(&json!({"name": "Mallory", "email": email}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 201);
        let link: serde_json::Value = r.json().await.unwrap();
        let token = link["token"].as_str().unwrap().to_owned();
        let view: serde_json::Value = client
            .get(server.url(&format!("/api/channel/{token}")))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        views.push((token, link["sessionId"].as_str().unwrap().to_owned(), view));
    }
    assert_eq!(
        views[0].2, views[1].2,
        "a known and an unknown email look alike"
    );
    assert_eq!(views[0].2["customerName"], "Mallory");

    let (token, sid, _) = &views[0];
    let (status, panel) = server
        .get(&format!("/api/conversations/{sid}/customer"))
        .await;
    assert_eq!(status, 200, "{panel}");
    assert!(panel["profile"].is_null(), "{panel}");
    assert_eq!(panel["contact"]["name"], "Mallory");

    let mut events = common::SseReader::new(
        client
            .get(server.url(&format!("/api/channel/{token}/events")))
            .send()
            .await
            .unwrap(),
    );
    for order in ["ORD-123", "ORD-124"] {
        let sent = client
            .post(server.url(&format!("/api/channel/{token}/messages")))
            .json(&json!({"message": format!("Where is my order {order}?")}))
            .send()
            .await
            .unwrap();
        assert_eq!(sent.status(), 202);
        let seen = events.until(|e| e.event == "done").await;
        let reply = seen.last().unwrap().data["reply"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(!reply.contains("Wuhan") && !reply.contains("@"), "{reply}");
    }
    let (status, turns) = server.get(&format!("/api/conversations/{sid}/turns")).await;
    assert_eq!(status, 200);
    let text = turns.to_string();
    assert!(!text.contains("tracking_number"), "{text}");
    assert!(!text.contains("li.wei@example.com"), "{text}");
}

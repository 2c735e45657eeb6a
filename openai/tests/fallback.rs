//! Servers that refuse tools while streaming (llama-cpp-python answers
//! `tool_choice: "auto"` with `stream: true` by "Automatic streaming tool
//! choice is not supported", or by an empty stream): the provider makes the
//! call again unstreamed, and remembers it for its later calls with tools.

mod support;

use aics_agent::model::{
    collect_response, ChatModel, FinishReason, Message, ModelRequest, ToolChoice, ToolSpec,
};
use serde_json::{json, Value};
use support::{model, sse, test_config, MockServer, Reply};

/// llama-cpp-python's error body for the refusal (its RouteErrorHandler).
const REFUSAL: &str = r#"{"error":{"message":"Automatic streaming tool choice is not supported","type":"internal_server_error","param":null,"code":null}}"#;

/// An unstreamed completion with one tool call, as llama-cpp-python sends it.
const COMPLETION: &str = r#"{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"smollm2-135m",
"choices":[{"index":0,"logprobs":null,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,
"tool_calls":[{"id":"call__0_order_query_cmpl-1","type":"function","function":{"name":"order_query","arguments":"{\"order_id\": \"A12345\"}"}}]}}],
"usage":{"prompt_tokens":120,"completion_tokens":14,"total_tokens":134}}"#;

const TEXT_COMPLETION: &str = r#"{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"It shipped yesterday."}}],
"usage":{"prompt_tokens":150,"completion_tokens":5,"total_tokens":155}}"#;

fn with_tools() -> ModelRequest {
    ModelRequest {
        tools: vec![ToolSpec {
            name: "order_query".into(),
            description: "Look up an order".into(),
            parameters: json!({"type": "object", "properties": {"order_id": {"type": "string"}}}),
        }]
        .into(),
        tool_choice: ToolChoice::Auto,
        ..ModelRequest::new([Message::user("Where is my order A12345?")])
    }
}

fn no_tools() -> ModelRequest {
    ModelRequest::new([Message::user("hello")])
}

fn streamed(body: &Value) -> bool {
    body["stream"] == json!(true)
}

async fn refused_then_unstreamed(refusal: Reply) {
    let server = MockServer::start(vec![
        refusal,
        Reply::json(COMPLETION),
        Reply::json(TEXT_COMPLETION),
        Reply::stream(sse(&[
            r#"{"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":"stop"}]}"#,
        ])),
    ])
    .await;
    let model = model(test_config(&server.base_url));
    assert!(!model.tools_unstreamed());

    // The refusal is not retried: the same call goes again, unstreamed.
    let first = collect_response(model.stream(with_tools()).await.expect("falls back"))
        .await
        .expect("no error");
    assert_eq!(first.tool_calls.len(), 1);
    assert_eq!(first.tool_calls[0].name, "order_query");
    assert_eq!(first.tool_calls[0].arguments, json!({"order_id": "A12345"}));
    assert_eq!(first.finish, Some(FinishReason::ToolCalls));
    assert_eq!(first.usage.map(|u| u.completion_tokens), Some(14));
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert!(streamed(&requests[0].body));
    let fallback = &requests[1].body;
    assert_eq!(fallback["stream"], json!(false));
    assert!(fallback.get("stream_options").is_none());
    assert_eq!(fallback["tool_choice"], "auto");
    assert_eq!(fallback["tools"][0]["function"]["name"], "order_query");
    assert_eq!(fallback["max_tokens"], 1024);
    assert_eq!(
        requests[1].header("accept").as_deref(),
        Some("application/json")
    );
    assert!(model.tools_unstreamed(), "remembered for the provider");

    // A clone (the service hands the provider around) shares the memory: the
    // next call with tools goes straight to the fallback, its reply as one delta.
    let again = model.clone();
    let second = collect_response(again.stream(with_tools()).await.expect("unstreamed"))
        .await
        .expect("no error");
    assert_eq!(second.content, "It shipped yesterday.");
    assert_eq!(server.requests().len(), 3);
    assert_eq!(server.requests()[2].body["stream"], json!(false));

    // Calls without tools still stream.
    let third = collect_response(model.stream(no_tools()).await.expect("streams"))
        .await
        .expect("no error");
    assert_eq!(third.content, "Hi");
    assert!(streamed(&server.requests()[3].body));
}

#[tokio::test]
async fn a_500_refusal_of_streamed_tools_falls_back_to_an_unstreamed_call_and_is_remembered() {
    refused_then_unstreamed(Reply::status(500, REFUSAL)).await;
}

#[tokio::test]
async fn a_400_refusal_falls_back_too() {
    refused_then_unstreamed(Reply::status(
        400,
        r#"{"error":{"message":"tool_choice \"auto\" is not supported with stream=true"}}"#,
    ))
    .await;
}

#[tokio::test]
async fn an_empty_stream_to_a_request_with_tools_falls_back() {
    refused_then_unstreamed(Reply::stream(Vec::new())).await;
}

#[tokio::test]
async fn other_errors_are_not_taken_for_a_refusal() {
    // A 500 that says nothing of streaming is retried as before, then fails.
    let server = MockServer::start(vec![Reply::status(
        500,
        r#"{"error":{"message":"CUDA out of memory"}}"#,
    )])
    .await;
    let model = model(test_config(&server.base_url));
    assert!(model.stream(with_tools()).await.is_err());
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert!(requests.iter().all(|r| streamed(&r.body)));
    assert!(!model.tools_unstreamed());
}

#[tokio::test]
async fn a_failing_fallback_reports_its_own_error() {
    let server = MockServer::start(vec![
        Reply::status(500, REFUSAL),
        Reply::status(401, r#"{"error":{"message":"bad key"}}"#),
    ])
    .await;
    let model = model(test_config(&server.base_url));
    let err = model.stream(with_tools()).await.err().expect("an error");
    assert_eq!(
        err,
        aics_agent::model::ModelError::Status {
            status: 401,
            message: "bad key".into()
        }
    );
    assert_eq!(server.requests().len(), 2);
}

//! Streams that succeed: the llama-cpp-python recordings replayed byte for
//! byte, streams in OpenAI's own format, and the request the provider sends.

mod support;

use aics_agent::model::{
    collect_response, ChatModel, FinishReason, Message, ModelChunk, ModelRequest, ToolCall,
    ToolChoice, ToolSpec,
};
use aics_types::TokenUsage;
use futures::StreamExt;
use serde_json::{json, Value};
use support::{fixture, model, sse, test_config, MockServer, Reply};

/// The request the recordings answered (shared/fixtures/openai-sse/request-with-tools.json).
fn order_request() -> ModelRequest {
    ModelRequest {
        tools: vec![order_query_spec()].into(),
        tool_choice: ToolChoice::Named("order_query".into()),
        ..ModelRequest::new([
            Message::system("You are a customer support assistant. Use the tools when needed."),
            Message::user("Where is my order? The order id is A12345."),
        ])
    }
}

fn order_query_spec() -> ToolSpec {
    ToolSpec {
        name: "order_query".into(),
        description: "Look up the status of a customer order by its id".into(),
        parameters: json!({
            "type": "object",
            "properties": {"order_id": {"type": "string", "description": "The order id, e.g. A12345"}},
            "required": ["order_id"],
        }),
    }
}

/// All chunks of a call, errors included.
async fn all_chunks(
    server: &MockServer,
    request: ModelRequest,
) -> Vec<Result<ModelChunk, aics_agent::model::ModelError>> {
    let model = model(test_config(&server.base_url));
    model
        .stream(request)
        .await
        .expect("the call starts")
        .collect()
        .await
}

/// Replays one recording and checks what llama-cpp-python's quirks must
/// not change: one call, its id and name, the arguments exactly as
/// streamed (the legacy `function_call` beside `tool_calls` not counted).
async fn check_recording(name: &str, raw_arguments: &str, id: &str, in_pieces: bool) {
    let bytes = fixture(name);
    let reply = if in_pieces {
        Reply::stream_in_pieces(&bytes, 31)
    } else {
        Reply::stream(bytes.clone())
    };
    let server = MockServer::start(vec![reply]).await;
    let chunks = all_chunks(&server, order_request()).await;

    let chunks: Vec<ModelChunk> = chunks
        .into_iter()
        .map(|c| c.expect("no error in a recorded stream"))
        .collect();
    let deltas: Vec<&ModelChunk> = chunks
        .iter()
        .filter(|c| matches!(c, ModelChunk::ToolCallDelta { .. }))
        .collect();
    // One delta per `tool_calls` entry in the recording, none for `function_call`.
    let text = String::from_utf8(bytes).expect("utf-8");
    assert_eq!(deltas.len(), text.matches("\"tool_calls\": [").count());
    let streamed: String = deltas
        .iter()
        .map(|c| match c {
            ModelChunk::ToolCallDelta {
                index, arguments, ..
            } => {
                assert_eq!(*index, 0);
                arguments.as_str()
            }
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(streamed, raw_arguments);
    assert_eq!(
        chunks.last(),
        Some(&ModelChunk::Finish(FinishReason::ToolCalls))
    );
    assert!(!chunks.iter().any(|c| matches!(c, ModelChunk::Text(_))));

    let mut builder = aics_agent::model::ResponseBuilder::default();
    for chunk in chunks {
        builder.push(chunk);
    }
    let response = builder.finish();
    assert_eq!(
        response.tool_calls,
        vec![ToolCall {
            id: String::new(),
            provider_id: Some(id.into()),
            name: "order_query".into(),
            arguments: json!({"order_id": "A12345"}),
        }]
    );
    assert_eq!(response.content, "");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn smollm2_recording_replayed_byte_for_byte() {
    check_recording(
        "llama-cpp-python-smollm2-forced-tool-call.sse",
        r#"{"order_id": "A12345"}"#,
        "call__0_order_query_cmpl-e18d7e3c-cc37-4a8d-b94f-94571ff88d52",
        false,
    )
    .await;
}

#[tokio::test]
async fn qwen_recording_replayed_byte_for_byte_with_its_ping_comment() {
    check_recording(
        "llama-cpp-python-qwen2.5-coder-forced-tool-call.sse",
        r#"{ "order_id": "A12345" }"#,
        "call__0_order_query_cmpl-a6826177-ee20-4204-bc9a-dfe47db72c63",
        false,
    )
    .await;
}

#[tokio::test]
async fn recordings_split_into_31_byte_pieces_parse_the_same() {
    check_recording(
        "llama-cpp-python-smollm2-forced-tool-call.sse",
        r#"{"order_id": "A12345"}"#,
        "call__0_order_query_cmpl-e18d7e3c-cc37-4a8d-b94f-94571ff88d52",
        true,
    )
    .await;
    check_recording(
        "llama-cpp-python-qwen2.5-coder-forced-tool-call.sse",
        r#"{ "order_id": "A12345" }"#,
        "call__0_order_query_cmpl-a6826177-ee20-4204-bc9a-dfe47db72c63",
        true,
    )
    .await;
}

#[tokio::test]
async fn openai_text_stream_with_usage_in_a_last_chunk_without_choices() {
    let body = sse(&[
        r#"{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":null}"#,
        r#"{"id":"c1","choices":[{"index":0,"delta":{"content":"Your order "},"finish_reason":null}],"usage":null}"#,
        r#"{"id":"c1","choices":[{"index":0,"delta":{"content":"has shipped — 已发货."},"finish_reason":null}],"usage":null}"#,
        r#"{"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}"#,
        r#"{"id":"c1","choices":[],"usage":{"prompt_tokens":42,"completion_tokens":9,"total_tokens":51,"prompt_tokens_details":{"cached_tokens":0}}}"#,
    ]);
    // Pieces of 5 bytes split the multi-byte characters too.
    let server = MockServer::start(vec![Reply::stream_in_pieces(body.as_bytes(), 5)]).await;
    let model = model(test_config(&server.base_url));
    let request = ModelRequest::new(vec![Message::user("where is my order?")]);
    let response = collect_response(model.stream(request).await.expect("starts"))
        .await
        .expect("a complete stream");
    assert_eq!(response.content, "Your order has shipped — 已发货.");
    assert_eq!(response.finish, Some(FinishReason::Stop));
    assert_eq!(
        response.usage,
        Some(TokenUsage {
            prompt_tokens: 42,
            completion_tokens: 9,
            total_tokens: 51
        })
    );
    assert!(response.tool_calls.is_empty());
    // No tools bound: neither tools nor tool_choice was sent.
    let sent = &server.requests()[0].body;
    assert!(sent.get("tools").is_none() && sent.get("tool_choice").is_none());
}

#[tokio::test]
async fn openai_parallel_tool_calls_with_the_id_only_in_the_first_chunk() {
    let body = sse(&[
        r#"{"id":"c2","choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_A","type":"function","function":{"name":"order_query","arguments":""}}]},"finish_reason":null}]}"#,
        r#"{"id":"c2","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"order_id\""}}]},"finish_reason":null}]}"#,
        r#"{"id":"c2","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_B","type":"function","function":{"name":"knowledge_search","arguments":""}}]},"finish_reason":null}]}"#,
        r#"{"id":"c2","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":": \"A12345\"}"}}]},"finish_reason":null}]}"#,
        r#"{"id":"c2","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{\"query\": \"refund policy\"}"}}]},"finish_reason":null}]}"#,
        r#"{"id":"c2","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
        r#"{"id":"c2","choices":[],"usage":{"prompt_tokens":80,"completion_tokens":30,"total_tokens":110}}"#,
    ]);
    let server = MockServer::start(vec![Reply::stream(body)]).await;
    let model = model(test_config(&server.base_url));
    let response = collect_response(model.stream(order_request()).await.expect("starts"))
        .await
        .expect("complete");
    assert_eq!(
        response.tool_calls,
        vec![
            ToolCall {
                id: String::new(),
                provider_id: Some("call_A".into()),
                name: "order_query".into(),
                arguments: json!({"order_id": "A12345"}),
            },
            ToolCall {
                id: String::new(),
                provider_id: Some("call_B".into()),
                name: "knowledge_search".into(),
                arguments: json!({"query": "refund policy"}),
            },
        ]
    );
    assert_eq!(response.finish, Some(FinishReason::ToolCalls));
    assert_eq!(response.usage.map(|u| u.total_tokens), Some(110));
}

#[tokio::test]
async fn deepseek_reasoning_content_then_the_answer() {
    let body = sse(&[
        r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":null,"reasoning_content":""}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":null,"reasoning_content":"The user asks about "}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":null,"reasoning_content":"a refund."}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"Refunds take 5 days.","reasoning_content":null}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":""},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":20,"total_tokens":30,"completion_tokens_details":{"reasoning_tokens":12}}}"#,
    ]);
    let server = MockServer::start(vec![Reply::stream(body)]).await;
    let chunks = all_chunks(&server, order_request()).await;
    let chunks: Vec<ModelChunk> = chunks.into_iter().map(|c| c.expect("ok")).collect();
    assert_eq!(
        chunks,
        vec![
            ModelChunk::Reasoning("The user asks about ".into()),
            ModelChunk::Reasoning("a refund.".into()),
            ModelChunk::Text("Refunds take 5 days.".into()),
            ModelChunk::Finish(FinishReason::Stop),
            ModelChunk::Usage(TokenUsage {
                prompt_tokens: 10,
                completion_tokens: 20,
                total_tokens: 30
            }),
        ]
    );
}

#[tokio::test]
async fn invalid_json_arguments_are_kept_as_the_raw_string() {
    let body = sse(&[
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_X","function":{"name":"order_query","arguments":"{order_id: A1"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
    ]);
    let server = MockServer::start(vec![Reply::stream(body)]).await;
    let model = model(test_config(&server.base_url));
    let response = collect_response(model.stream(order_request()).await.expect("starts"))
        .await
        .expect("complete");
    assert_eq!(response.tool_calls.len(), 1);
    assert_eq!(response.tool_calls[0].name, "order_query");
    assert_eq!(
        response.tool_calls[0].arguments,
        Value::String("{order_id: A1".into())
    );
}

#[tokio::test]
async fn empty_finish_reason_and_missing_index_from_lax_servers() {
    let body = sse(&[
        r#"{"choices":[{"delta":{"content":"Hi"},"finish_reason":""}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"id":"t1","function":{"name":"order_query","arguments":"{}"}}]},"finish_reason":""}]}"#,
    ]);
    let server = MockServer::start(vec![Reply::stream(body)]).await;
    let model = model(test_config(&server.base_url));
    let response = collect_response(model.stream(order_request()).await.expect("starts"))
        .await
        .expect("complete");
    assert_eq!(response.content, "Hi");
    assert_eq!(response.tool_calls[0].provider_id.as_deref(), Some("t1"));
    assert_eq!(response.tool_calls[0].arguments, json!({}));
    // Only "" was ever sent: passed on as it came, at [DONE].
    assert_eq!(response.finish, Some(FinishReason::Other(String::new())));
}

#[tokio::test]
async fn the_request_body_and_headers_the_provider_sends() {
    let server = MockServer::start(vec![Reply::stream(sse(&[
        r#"{"choices":[{"delta":{"content":"ok"},"finish_reason":"stop"}]}"#,
    ]))])
    .await;
    let mut config = test_config(&server.base_url);
    config.model = "smollm2-135m".into();
    config.api_key = Some("sk-test-key".into());
    config.temperature = Some(0.0);
    config.max_tokens = Some(128);
    config.headers.insert("X-Tenant".into(), "acme".into());
    let model = model(config);
    collect_response(model.stream(order_request()).await.expect("starts"))
        .await
        .expect("complete");

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert!(
        request
            .head
            .starts_with("POST /v1/chat/completions HTTP/1.1"),
        "{}",
        request.head
    );
    assert_eq!(
        request.header("authorization").as_deref(),
        Some("Bearer sk-test-key")
    );
    assert_eq!(request.header("x-tenant").as_deref(), Some("acme"));
    assert_eq!(
        request.header("accept").as_deref(),
        Some("text/event-stream")
    );
    assert_eq!(
        request.header("content-type").as_deref(),
        Some("application/json")
    );

    // The same messages and tools as the request that produced the recordings.
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/fixtures/openai-sse/request-with-tools.json"
    );
    let recorded: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("fixture")).expect("json");
    let body = &request.body;
    assert_eq!(body["messages"], recorded["messages"]);
    assert_eq!(body["tools"], recorded["tools"]);
    assert_eq!(body["model"], recorded["model"]);
    assert_eq!(body["max_tokens"], recorded["max_tokens"]);
    assert_eq!(body["temperature"], json!(0.0));
    assert_eq!(body["stream"], json!(true));
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(
        body["tool_choice"],
        json!({"type": "function", "function": {"name": "order_query"}})
    );
}

#[tokio::test]
async fn a_follow_up_call_sends_assistant_tool_calls_and_tool_results() {
    let server = MockServer::start(vec![Reply::stream(sse(&[
        r#"{"choices":[{"delta":{"content":"It shipped."},"finish_reason":"stop"}]}"#,
    ]))])
    .await;
    let model = model(test_config(&server.base_url));
    let mut request = order_request();
    request.tool_choice = ToolChoice::Auto;
    request.messages.push(
        Message::Assistant {
            content: String::new(),
            tool_calls: vec![ToolCall {
                id: "call_1".into(),
                provider_id: None,
                name: "order_query".into(),
                arguments: json!({"order_id": "A12345"}),
            }],
        }
        .into(),
    );
    request.messages.push(
        Message::Tool {
            tool_call_id: "call_1".into(),
            name: "order_query".into(),
            content: r#"{"status":"shipped"}"#.into(),
        }
        .into(),
    );
    let response = collect_response(model.stream(request).await.expect("starts"))
        .await
        .expect("complete");
    assert_eq!(response.content, "It shipped.");

    let body = &server.requests()[0].body;
    assert_eq!(body["tool_choice"], "auto");
    assert_eq!(
        body["messages"][2],
        json!({
            "role": "assistant",
            "content": null,
            "tool_calls": [{"id": "call_1", "type": "function",
                "function": {"name": "order_query", "arguments": "{\"order_id\":\"A12345\"}"}}],
        })
    );
    assert_eq!(
        body["messages"][3],
        json!({"role": "tool", "tool_call_id": "call_1", "content": "{\"status\":\"shipped\"}"})
    );
    // No key configured: no Authorization header at all.
    assert_eq!(server.requests()[0].header("authorization"), None);
}

/// Every recording in the fixtures folder parses: a new one is covered the
/// moment it is added (no error, tool calls or text, a finish reason).
#[tokio::test]
async fn every_recorded_stream_in_the_fixtures_parses() {
    let dir = support::fixtures_dir();
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|err| panic!("reading {dir}: {err}"))
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter(|name| name.ends_with(".sse"))
        .collect();
    names.sort();
    assert!(!names.is_empty(), "no recordings in {dir}");
    for name in names {
        let server = MockServer::start(vec![Reply::stream_in_pieces(&fixture(&name), 17)]).await;
        let response = collect_response(
            model(test_config(&server.base_url))
                .stream(order_request())
                .await
                .unwrap_or_else(|err| panic!("{name}: {err}")),
        )
        .await
        .unwrap_or_else(|err| panic!("{name}: {err}"));
        assert!(
            !response.tool_calls.is_empty() || !response.content.is_empty(),
            "{name}: nothing parsed"
        );
        assert!(response.finish.is_some(), "{name}: no finish reason");
        for call in &response.tool_calls {
            assert!(call.arguments.is_object(), "{name}: {call:?}");
        }
    }
}

//! `aics-load streams`: many `POST /api/chat/stream` turns at once, each
//! stream's tokens checked against its reply (the module docs of
//! `main.rs` say what it prints).

use std::sync::Arc;
use std::time::Instant;

use futures::StreamExt;
use serde_json::{json, Value};

use crate::{check_up, loadavg, server_rss, Args, LoadError};

/// What one stream delivered.
#[derive(Default)]
struct Delivered {
    tokens: usize,
    text: String,
    reply: Option<String>,
    resyncs: usize,
}

/// One `POST /api/chat/stream`, read to its `final` event.
async fn stream_turn(client: &reqwest::Client, args: &Args) -> Result<Delivered, LoadError> {
    let sid = format!("stream-{}", uuid::Uuid::new_v4().simple());
    let response = client
        .post(format!("{}/api/chat/stream", args.base))
        .bearer_auth(&args.token)
        .json(&json!({"sessionId": sid, "message": args.message}))
        .send()
        .await?
        .error_for_status()?;
    let mut body = response.bytes_stream();
    let mut buffer = String::new();
    let mut out = Delivered::default();
    while let Some(chunk) = body.next().await {
        buffer.push_str(&String::from_utf8_lossy(&chunk?));
        while let Some(end) = buffer.find("\n\n") {
            let block: String = buffer.drain(..end + 2).collect();
            let mut event = "";
            let mut data = String::new();
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("event:") {
                    event = v.trim();
                } else if let Some(v) = line.strip_prefix("data:") {
                    data.push_str(v.trim_start());
                }
            }
            let data: Value = serde_json::from_str(&data).unwrap_or(Value::Null);
            match event {
                "llm_token" => {
                    if let Some(token) = data["token"].as_str().filter(|t| !t.is_empty()) {
                        out.tokens += 1;
                        out.text.push_str(token);
                    }
                }
                "resync" => out.resyncs += 1,
                "final" => {
                    out.reply = data["trace"]["reply"].as_str().map(str::to_owned);
                    return Ok(out);
                }
                _ => {}
            }
        }
    }
    Ok(out)
}

pub(crate) async fn streams(args: Arc<Args>) -> Result<(), LoadError> {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(args.streams)
        .build()?;
    check_up(&client, &args.base).await?;
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(args.streams);
    for _ in 0..args.streams {
        let (client, args) = (client.clone(), args.clone());
        tasks.push(tokio::spawn(
            async move { stream_turn(&client, &args).await },
        ));
    }
    let (mut complete, mut incomplete, mut errors, mut tokens, mut missing, mut resyncs) =
        (0usize, 0usize, 0usize, 0usize, 0usize, 0usize);
    for task in tasks {
        match task.await? {
            Ok(d) => {
                tokens += d.tokens;
                resyncs += d.resyncs;
                match d.reply {
                    Some(reply) if reply == d.text => complete += 1,
                    Some(reply) => {
                        incomplete += 1;
                        missing += reply.chars().count().saturating_sub(d.text.chars().count());
                    }
                    None => errors += 1,
                }
            }
            Err(_) => errors += 1,
        }
    }
    println!(
        "http=streams streams={} complete={complete} incomplete={incomplete} errors={errors} \
         tokens_delivered={tokens} chars_missing={missing} resyncs={resyncs} seconds={:.2}{} loadavg={}",
        args.streams,
        started.elapsed().as_secs_f64(),
        server_rss(&args),
        loadavg(),
    );
    Ok(())
}

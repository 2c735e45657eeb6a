//! Event streams over real HTTP against a real `aics` process: a client that
//! reconnects with `Last-Event-ID` gets every event exactly once, `final`
//! included; a client that never reads its stream does not slow the turns.

#![allow(clippy::unwrap_used)]

mod common;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use common::{Server, Workdir, API_TOKEN};
use serde_json::json;
use tokio::io::AsyncWriteExt;

#[tokio::test]
async fn a_reconnect_with_last_event_id_gets_every_event_exactly_once() {
    let dir = Workdir::new("streams", "reconnect");
    let server = Server::start(
        &format!("sqlite://{}/aics.db", dir.display()),
        &dir.join("server.log"),
        &[("AICS_DEMO_TOKEN_DELAY_MS", "10")],
    )
    .await;
    let sid = "reconnects";
    let mut full = server.events(sid, None).await;
    let mut flaky = server.events(sid, None).await;
    let (status, _) = server
        .post(
            &format!("/api/conversations/{sid}/messages"),
            json!({"message": "Where is my order ORD-123?"}),
        )
        .await;
    assert_eq!(status, 202);
    // The flaky client sees the start of the turn, then its connection drops.
    let mut first_part = Vec::new();
    while first_part.len() < 8 {
        first_part.push(flaky.next().await.unwrap());
    }
    drop(flaky);
    let last_seen = first_part
        .last()
        .unwrap()
        .id
        .clone()
        .expect("events carry ids");
    let all = full.until_final().await;
    // It reconnects as an EventSource does, naming the last event it saw.
    let mut again = server.events(sid, Some(&last_seen)).await;
    let rest = again.until_final().await;
    let ids = |events: &[common::Sse]| -> Vec<String> {
        events.iter().map(|e| e.id.clone().unwrap()).collect()
    };
    let mut stitched = ids(&first_part);
    stitched.extend(ids(&rest));
    assert_eq!(stitched, ids(&all), "every event once, in order");
    assert_eq!(
        stitched.iter().collect::<HashSet<_>>().len(),
        stitched.len()
    );
    assert_eq!(rest.last().unwrap().event, "final");
    // An id the server no longer keeps: the client is told to reload.
    let mut stale = server.events(sid, Some("0-0")).await;
    assert_eq!(stale.next().await.unwrap().event, "resync");
}

/// Runs `n` turns through `/api/chat`, one after the other; returns how long.
async fn turns(server: &Server, sid: &str, n: usize) -> Duration {
    let started = Instant::now();
    for i in 0..n {
        let (status, trace) = tokio::time::timeout(
            Duration::from_secs(60),
            server.post(
                "/api/chat",
                json!({"sessionId": sid, "message": format!("What is your refund policy? ({i})")}),
            ),
        )
        .await
        .expect("a turn was held up");
        assert_eq!(status, 200, "{trace}");
        assert_eq!(trace["stopReason"], "final_answer");
    }
    started.elapsed()
}

#[tokio::test]
async fn a_client_that_never_reads_its_stream_does_not_slow_the_turns() {
    let dir = Workdir::new("streams", "stuck");
    let server = Server::start(
        &format!("sqlite://{}/aics.db", dir.display()),
        &dir.join("server.log"),
        &[],
    )
    .await;
    let sid = "stuck-reader";
    let baseline = turns(&server, "baseline", 20).await;
    // A client subscribes with a tiny receive window and never reads.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(1024).unwrap();
    let addr = server.base.trim_start_matches("http://").to_owned();
    let mut stuck = socket.connect(addr.parse().unwrap()).await.unwrap();
    stuck
        .write_all(
            format!(
                "GET /api/conversations/{sid}/events HTTP/1.1\r\nHost: {addr}\r\n\
                 Authorization: Bearer {API_TOKEN}\r\nAccept: text/event-stream\r\n\r\n"
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let beside_it = turns(&server, sid, 20).await;
    println!(
        "20 turns: {baseline:?} with no stream open, {beside_it:?} beside a stream that is never read"
    );
    drop(stuck);
}

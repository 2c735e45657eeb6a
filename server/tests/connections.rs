//! One client cannot take every connection, against a real `aics`
//! process: silent connections are closed after the first-byte timeout
//! (and a half-sent protocol preface after the header-read timeout), one
//! address holds at most its cap, the last slots are kept for new
//! clients, and customer chat streams are capped per client address across
//! chat links. Other clients come from other loopback addresses
//! (127.0.0.2…), which Linux routes to the same interface.

#![allow(clippy::unwrap_used)]

mod common;

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use common::{Server, Workdir};
use reqwest::StatusCode;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

async fn start(name: &str, env: &[(&str, &str)]) -> Server {
    let dir = Workdir::new("connections", name);
    Server::start(
        &format!("sqlite://{}/aics.db", dir.display()),
        &dir.join("server.log"),
        env,
    )
    .await
    .owning(dir)
}

fn server_addr(server: &Server) -> SocketAddr {
    server.base.trim_start_matches("http://").parse().unwrap()
}

/// A TCP connection to `server` from the loopback address `from`.
async fn connect_from(server: &Server, from: &str) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket
        .bind(SocketAddr::new(from.parse::<IpAddr>().unwrap(), 0))
        .unwrap();
    socket.connect(server_addr(server)).await.unwrap()
}

/// Whether the server closed `stream` within `within` (what it sent
/// before, if anything, is returned).
async fn closed_within(stream: &mut TcpStream, within: Duration) -> Option<String> {
    let mut seen = Vec::new();
    match tokio::time::timeout(within, stream.read_to_end(&mut seen)).await {
        Ok(_) => Some(String::from_utf8_lossy(&seen).into_owned()),
        Err(_) => None,
    }
}

/// A client at `from`.
fn client_from(from: &str) -> reqwest::Client {
    reqwest::Client::builder()
        .local_address(from.parse::<IpAddr>().unwrap())
        .build()
        .unwrap()
}

/// `/healthz` from `from` answers within 3 s.
async fn healthz_answers(server: &Server, from: &str) {
    let answer = tokio::time::timeout(
        Duration::from_secs(3),
        client_from(from).get(server.url("/healthz")).send(),
    )
    .await
    .expect("/healthz answered a new client in time")
    .unwrap();
    assert_eq!(answer.status(), StatusCode::OK);
}

#[tokio::test]
async fn silent_connections_are_closed_early() {
    let server = start(
        "silent",
        &[
            ("AICS_FIRST_BYTE_TIMEOUT_SECS", "1"),
            ("AICS_HEADER_READ_TIMEOUT_SECS", "2"),
        ],
    )
    .await;
    // Nothing at all: closed after the first-byte timeout.
    let mut silent = connect_from(&server, "127.0.0.1").await;
    // The first byte of the HTTP/2 preface, then nothing: hyper's protocol
    // detection waits for more with no timer, so ours must close it.
    let mut preface = connect_from(&server, "127.0.0.1").await;
    preface.write_all(b"P").await.unwrap();
    assert!(
        closed_within(&mut silent, Duration::from_secs(5))
            .await
            .is_some(),
        "a silent connection is closed after the first-byte timeout"
    );
    assert!(
        closed_within(&mut preface, Duration::from_secs(6))
            .await
            .is_some(),
        "a connection that sends no request is closed after the header-read timeout"
    );
    healthz_answers(&server, "127.0.0.1").await;
}

#[tokio::test]
async fn one_address_cannot_take_every_connection() {
    let server = start(
        "per-address",
        &[
            ("AICS_MAX_CONNECTIONS", "48"),
            ("AICS_MAX_CONNECTIONS_PER_ADDRESS", "16"),
        ],
    )
    .await;
    let mut held = Vec::new();
    for _ in 0..100 {
        held.push(connect_from(&server, "127.0.0.3").await);
    }
    // Past its 16, each is answered 503 and closed at once.
    let mut refused = 0;
    for stream in held.iter_mut().skip(16) {
        let answer = closed_within(stream, Duration::from_secs(5))
            .await
            .expect("a connection past the address's cap is closed");
        assert!(
            answer.is_empty() || answer.starts_with("HTTP/1.1 503"),
            "{answer}"
        );
        refused += 1;
    }
    assert_eq!(refused, 84);
    healthz_answers(&server, "127.0.0.2").await;
}

#[tokio::test]
async fn the_last_slots_are_kept_for_new_clients() {
    // 32 slots, 16 per address: an eighth (4) are kept for addresses
    // holding fewer than 2.
    let server = start(
        "headroom",
        &[
            ("AICS_MAX_CONNECTIONS", "32"),
            ("AICS_MAX_CONNECTIONS_PER_ADDRESS", "16"),
        ],
    )
    .await;
    let mut first = Vec::new();
    for _ in 0..16 {
        first.push(connect_from(&server, "127.0.0.3").await);
    }
    let mut second = Vec::new();
    for _ in 0..16 {
        second.push(connect_from(&server, "127.0.0.4").await);
    }
    // The second address gets 12; its last 4 would have filled the server.
    for stream in second.iter_mut().skip(12) {
        assert!(
            closed_within(stream, Duration::from_secs(5))
                .await
                .is_some(),
            "the reserved slots are refused to an address holding many"
        );
    }
    healthz_answers(&server, "127.0.0.2").await;
    assert!(first.len() + second.len() == 32);
}

/// Starts a customer chat; its link token.
async fn customer_link(server: &Server, n: u32) -> String {
    let (status, link) = server
        .post(
            "/api/channel/start",
            json!({"name": format!("Customer {n}"), "email": format!("c{n}@example.com")}),
        )
        .await;
    assert_eq!(status, 201, "{link}");
    link["token"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn customer_streams_are_capped_per_client_address() {
    let server = start(
        "customer-streams",
        &[("AICS_CUSTOMER_STREAMS_PER_ADDRESS", "3")],
    )
    .await;
    let one = customer_link(&server, 1).await;
    let two = customer_link(&server, 2).await;
    let here = client_from("127.0.0.1");
    let open = |client: &reqwest::Client, token: &str| {
        client
            .get(server.url(&format!("/api/channel/{token}/events")))
            .send()
    };
    let a = open(&here, &one).await.unwrap();
    let b = open(&here, &one).await.unwrap();
    let c = open(&here, &two).await.unwrap();
    assert_eq!(
        (a.status(), b.status(), c.status()),
        (StatusCode::OK, StatusCode::OK, StatusCode::OK)
    );
    // A fresh link from the same address does not make room.
    let three = customer_link(&server, 3).await;
    let past = open(&here, &three).await.unwrap();
    assert_eq!(past.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(past.headers().contains_key("retry-after"));
    // Another client is not affected; a closed stream frees its place.
    let other = open(&client_from("127.0.0.2"), &three).await.unwrap();
    assert_eq!(other.status(), StatusCode::OK);
    // The server sees the close at once or at the next keep-alive (15 s).
    drop(a);
    let mut again = None;
    for _ in 0..200 {
        let answer = open(&here, &three).await.unwrap();
        if answer.status() == StatusCode::OK {
            again = Some(answer);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(again.is_some(), "a closed stream frees its place");
    drop((b, c, other));
}

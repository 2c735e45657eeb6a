//! The start-up probe against local servers on real TCP listeners (no
//! network), and base URLs shown without secrets.

use std::time::Duration;

use aics_openai::OpenAiConfig;
use aics_types::Reachability;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{probe, public_url};

/// A local server that answers every connection with `response`
/// (or, when `None`, reads and never answers).
async fn raw_server(response: Option<&'static str>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = socket.read(&mut buf).await;
                match response {
                    Some(r) => {
                        let _ = socket.write_all(r.as_bytes()).await;
                    }
                    None => tokio::time::sleep(Duration::from_secs(30)).await,
                }
            });
        }
    });
    format!("http://{addr}/v1")
}

#[tokio::test]
async fn a_refusal_and_a_silence_are_unreachable() {
    let refusing = raw_server(Some(
        "HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
    ))
    .await;
    let p = probe(&OpenAiConfig::new(refusing, "m"), Duration::from_secs(5)).await;
    assert_eq!(p.reachability, Reachability::Unreachable);
    assert_eq!(p.reason.as_deref(), Some("GET /models answered HTTP 401"));

    let silent = raw_server(None).await;
    let p = probe(&OpenAiConfig::new(silent, "m"), Duration::from_millis(200)).await;
    assert_eq!(p.reachability, Reachability::Unreachable);
    assert_eq!(p.reason.as_deref(), Some("no answer within 0.2 s"));
}

#[tokio::test]
async fn a_list_that_is_not_json_is_reachable_without_knowing_the_model() {
    let odd = raw_server(Some(
        "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok",
    ))
    .await;
    let p = probe(&OpenAiConfig::new(odd, "m"), Duration::from_secs(5)).await;
    assert_eq!(p.reachability, Reachability::Reachable);
    assert_eq!(p.model_listed, None);
}

#[test]
fn public_urls_carry_no_secret() {
    assert_eq!(
        public_url("https://user:sk-secret@gw.example.com/v1?key=sk-2#x"),
        "https://gw.example.com/v1"
    );
    assert_eq!(
        public_url("http://127.0.0.1:8000/v1"),
        "http://127.0.0.1:8000/v1"
    );
    assert_eq!(public_url("http://host"), "http://host");
    assert_eq!(public_url("nonsense"), "");
}

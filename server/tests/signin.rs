//! The sign-in throttle against a real `aics` process (issue 58): a burst
//! of parallel guesses checks no more passwords than the policy allows, and
//! a flood of sign-ins from one address is refused at once beyond a few.

#![allow(clippy::unwrap_used)]

mod common;

use common::{Server, Workdir};
use serde_json::json;

/// A server whose `[auth]` section is `auth`.
async fn server(name: &str, auth: &str) -> Server {
    let dir = Workdir::new("signin", name);
    let config = dir.join("aics.toml");
    std::fs::write(&config, format!("[auth]\n{auth}\n")).unwrap();
    Server::start(
        &format!("sqlite://{}/aics.db", dir.display()),
        &dir.join("server.log"),
        &[("AICS_CONFIG", config.to_str().unwrap())],
    )
    .await
    .owning(dir)
}

/// `POST /api/auth/login` answers to `n` sign-ins sent at once, the
/// `right_at`-th with the right password: (status, Retry-After, message).
async fn burst(
    server: &Server,
    username: impl Fn(usize) -> String,
    n: usize,
    right_at: Option<usize>,
) -> Vec<(u16, Option<u64>, String)> {
    let client = reqwest::Client::new();
    let tasks: Vec<_> = (0..n)
        .map(|i| {
            let request = client.post(server.url("/api/auth/login")).json(&json!({
                "username": username(i),
                "password": if right_at == Some(i) { "agent-pass".to_owned() } else { format!("guess {i}") },
            }));
            tokio::spawn(async move {
                let response = request.send().await.unwrap();
                let status = response.status().as_u16();
                let retry = response
                    .headers()
                    .get("retry-after")
                    .map(|v| v.to_str().unwrap().parse().unwrap());
                (status, retry, response.text().await.unwrap())
            })
        })
        .collect();
    let mut answers = Vec::new();
    for task in tasks {
        answers.push(task.await.unwrap());
    }
    answers
}

/// Issue 58, item 4: 50 parallel guesses from one address, the right one
/// among them, were all checked, and the right one signed in. Each attempt
/// is now counted before its hash: at most the lock's count are checked,
/// the rest answer 429 with a wait, unchecked.
#[tokio::test]
async fn fifty_parallel_guesses_check_at_most_the_limit() {
    let server = server(
        "parallel",
        "sign-in-free-failures = 3\nsign-in-lock-after = 5\nsign-ins-in-flight-per-address = 64",
    )
    .await;
    let answers = burst(&server, |_| "agent".into(), 50, Some(49)).await;
    let checked: Vec<_> = answers
        .iter()
        .filter(|(status, ..)| matches!(status, 200 | 401))
        .collect();
    assert!(checked.len() <= 5, "{} checked: {answers:?}", checked.len());
    for (status, retry, text) in &answers {
        assert!(matches!(status, 200 | 401 | 429), "{status} {text}");
        if *status == 429 {
            assert!(retry.is_some_and(|r| r >= 1), "{text}");
            assert!(text.contains("too_many_requests"), "{text}");
        }
    }
    if !answers.iter().any(|(status, ..)| *status == 200) {
        let after = burst(&server, |_| "agent".into(), 1, Some(0)).await;
        assert_eq!(after[0].0, 429, "{after:?}");
    }
}

/// Issue 58, item 8: a flood of unknown-user sign-ins from one address
/// gets 429 at once beyond the few it may have in flight, and a sign-in
/// from it goes through once the flood is over.
#[tokio::test]
async fn a_flood_from_one_address_is_refused_at_once_beyond_a_few() {
    let server = server(
        "flood",
        "address-free-failures = 1000\naddress-lock-after = 2000\nsign-ins-in-flight-per-address = 2",
    )
    .await;
    let answers = burst(&server, |i| format!("nobody-{i}"), 40, None).await;
    let at_once = answers
        .iter()
        .filter(|(status, _, text)| *status == 429 && text.contains("at once"))
        .count();
    assert!(at_once > 0, "{answers:?}");
    assert!(
        answers
            .iter()
            .all(|(status, ..)| matches!(status, 401 | 429)),
        "{answers:?}"
    );
    let after = burst(&server, |_| "agent".into(), 1, Some(0)).await;
    assert_eq!(after[0].0, 200, "{after:?}");
}

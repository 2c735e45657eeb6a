//! The sign-in throttle against the attacks of issue 58: parallel guesses
//! past the limit, a stranger locking out a name, a flood of sign-ins from
//! one address. On SQLite and on PostgreSQL (`DATABASE_URL`).
//!
//! Waits are long (tens of seconds) so that nothing here depends on how
//! fast the machine is: a test never waits one out.

#![allow(clippy::unwrap_used)]

#[macro_use]
mod common;

use std::net::IpAddr;
use std::time::Duration;

use aics_db::Database;
use aics_service::{AuditQuery, ClientAddr, Console, ConsoleConfig, ServiceError, ThrottlePolicy};
use common::{ready, supervisor};

/// Per name and address: 3 free attempts, a lock at the 4th; per name
/// across addresses: 4 free (as in production, no fewer than one address
/// gets before its lock), then waits of 20 s up to 40 s; per address:
/// plenty. No wait ends while a test runs.
fn policy() -> ThrottlePolicy {
    ThrottlePolicy {
        user_free: 3,
        user_lock_after: 4,
        addr_free: 1_000,
        addr_lock_after: 2_000,
        base_delay: Duration::from_secs(20),
        max_delay: Duration::from_secs(40),
        lock_for: Duration::from_secs(600),
        name_free: 4,
        name_max_delay: Duration::from_secs(40),
        ..ThrottlePolicy::default()
    }
}

fn config(policy: ThrottlePolicy) -> ConsoleConfig {
    ConsoleConfig {
        throttle: policy,
        ..ConsoleConfig::for_tests()
    }
}

fn addr(ip: &str) -> ClientAddr {
    ClientAddr(Some(ip.parse::<IpAddr>().unwrap()))
}

/// How a burst of sign-ins was answered.
#[derive(Debug, Default)]
struct Answers {
    signed_in: usize,
    wrong: usize,
    throttled: usize,
}

impl Answers {
    /// The attempts whose password was checked.
    fn checked(&self) -> usize {
        self.signed_in + self.wrong
    }

    fn add(&mut self, answer: Result<aics_service::SignedIn, ServiceError>) {
        match answer {
            Ok(_) => self.signed_in += 1,
            Err(ServiceError::Unauthorized) => self.wrong += 1,
            Err(ServiceError::TooManyRequests { .. }) => self.throttled += 1,
            Err(e) => panic!("unexpected {e:?}"),
        }
    }
}

/// `n` sign-ins as `username` from `client` at once, spread over
/// `consoles`; the one at `right_at` has the right password.
async fn burst(
    consoles: &[Console],
    username: &str,
    client: ClientAddr,
    n: usize,
    right_at: Option<(usize, &str)>,
) -> Answers {
    let tasks: Vec<_> = (0..n)
        .map(|i| {
            let console = consoles[i % consoles.len()].clone();
            let username = username.to_owned();
            let password = match right_at {
                Some((at, right)) if at == i => right.to_owned(),
                _ => format!("wrong guess {i}"),
            };
            tokio::spawn(async move { console.sign_in(&username, &password, client).await })
        })
        .collect();
    let mut answers = Answers::default();
    for task in tasks {
        answers.add(task.await.unwrap());
    }
    answers
}

on_both_databases!(
    parallel_guesses_check_at_most_the_limit,
    two_instances_check_at_most_the_limit_between_them,
    a_stranger_cannot_lock_out_a_known_address,
    failures_from_many_addresses_only_delay_a_name,
    a_good_sign_in_clears_its_count,
    a_supervisors_unlock_lifts_the_names_locks,
    sign_ins_in_flight_per_address_are_capped,
);

/// Issue 58, item 4: 50 parallel guesses from one address, the right
/// password among them. Each attempt is counted before its hash, so at
/// most the limit are checked and the rest are refused unchecked.
async fn parallel_guesses_check_at_most_the_limit(db: Database) {
    let p = ThrottlePolicy {
        addr_in_flight: 64,
        ..policy()
    };
    let console = Console::new(db, config(p)).await.unwrap();
    let client = addr("198.51.100.40");
    let answers = burst(
        std::slice::from_ref(&console),
        "agent",
        client,
        50,
        Some((25, "agent-pass")),
    )
    .await;
    assert!(
        answers.checked() <= p.user_lock_after as usize,
        "{answers:?}: more guesses were checked than the policy allows"
    );
    assert_eq!(answers.checked() + answers.throttled, 50);
    // The address is now refused for that name, the right password too.
    if answers.signed_in == 0 {
        let again = console.sign_in("agent", "agent-pass", client).await;
        assert!(
            matches!(again, Err(ServiceError::TooManyRequests { .. })),
            "{again:?}"
        );
    }
}

/// The count is the database's: two instances sharing it check no more
/// guesses between them than one would.
async fn two_instances_check_at_most_the_limit_between_them(db: Database) {
    let p = ThrottlePolicy {
        addr_in_flight: 64,
        ..policy()
    };
    let one = Console::new(db.clone(), config(p)).await.unwrap();
    let two = Console::new(db, config(p)).await.unwrap();
    let answers = burst(&[one, two], "supervisor", addr("198.51.100.41"), 40, None).await;
    assert!(
        answers.checked() <= p.user_lock_after as usize,
        "{answers:?}"
    );
    assert_eq!(answers.signed_in, 0);
}

/// Issue 58, item 5: wrong passwords from a stranger's address lock that
/// address out of the name, not the name's owner at an address it signed
/// in from before. The lock is audited.
async fn a_stranger_cannot_lock_out_a_known_address(db: Database) {
    let console = Console::new(db, config(policy())).await.unwrap();
    let office = addr("192.0.2.10");
    console
        .sign_in("supervisor", "supervisor-pass", office)
        .await
        .unwrap();
    let stranger = addr("203.0.113.66");
    for i in 0..12 {
        let answer = console
            .sign_in("supervisor", &format!("guess {i}"), stranger)
            .await;
        assert!(
            matches!(
                answer,
                Err(ServiceError::Unauthorized | ServiceError::TooManyRequests { .. })
            ),
            "{answer:?}"
        );
    }
    // The stranger is refused, even with the right password...
    let refused = console
        .sign_in("supervisor", "supervisor-pass", stranger)
        .await
        .unwrap_err();
    assert_eq!(refused.status_code(), 429, "{refused:?}");
    assert!(refused.to_string().contains("Too many failed sign-ins"));
    // ...the supervisor at the office is not.
    let signed_in = console
        .sign_in("supervisor", "supervisor-pass", office)
        .await
        .unwrap();
    assert_eq!(signed_in.user, supervisor());
    let audit = console
        .list_audit(
            &supervisor(),
            &AuditQuery {
                limit: 10,
                action_prefix: Some("sign_in.".into()),
                ..AuditQuery::default()
            },
        )
        .await
        .unwrap();
    assert!(
        audit
            .iter()
            .any(|e| e.action == "sign_in.lock" && e.subject == "supervisor"),
        "{audit:?}"
    );
}

/// Failures on one name from many addresses make a new address wait, a
/// wait that grows up to `name_max_delay` but never becomes the lock; an
/// address the name signed in from before does not wait at all.
async fn failures_from_many_addresses_only_delay_a_name(db: Database) {
    let p = policy();
    let console = Console::new(db, config(p)).await.unwrap();
    let home = addr("192.0.2.20");
    console.sign_in("agent", "agent-pass", home).await.unwrap();
    let mut waits = Vec::new();
    for i in 0..10 {
        match console
            .sign_in("agent", "guess", addr(&format!("203.0.113.{}", 100 + i)))
            .await
        {
            Err(ServiceError::Unauthorized) => {}
            Err(ServiceError::TooManyRequests { retry_after, .. }) => waits.push(retry_after),
            other => panic!("unexpected {other:?}"),
        }
    }
    assert!(
        !waits.is_empty(),
        "a name attacked from many addresses waits"
    );
    assert!(
        waits.iter().all(|w| *w <= p.name_max_delay),
        "a wait, not the lock: {waits:?}"
    );
    // A new address waits too (the right password as well), briefly.
    match console
        .sign_in("agent", "agent-pass", addr("198.51.100.77"))
        .await
    {
        Err(ServiceError::TooManyRequests { retry_after, .. }) => {
            assert!(retry_after <= p.name_max_delay, "{retry_after:?}")
        }
        other => panic!("unexpected {other:?}"),
    }
    // Home does not.
    console.sign_in("agent", "agent-pass", home).await.unwrap();
}

/// A good sign-in forgets its address's failures on that name: the free
/// failures are free again.
async fn a_good_sign_in_clears_its_count(db: Database) {
    let p = policy();
    let console = Console::new(db, config(p)).await.unwrap();
    let client = addr("192.0.2.30");
    for _ in 0..2 {
        for _ in 0..p.user_free {
            assert!(matches!(
                console.sign_in("agent", "typo", client).await,
                Err(ServiceError::Unauthorized)
            ));
        }
        console
            .sign_in("agent", "agent-pass", client)
            .await
            .unwrap();
    }
}

/// The lock of a name at one address is lifted by a supervisor's unlock,
/// as the name's lock was before.
async fn a_supervisors_unlock_lifts_the_names_locks(db: Database) {
    let p = policy();
    let console = Console::new(db, config(p)).await.unwrap();
    let client = addr("192.0.2.40");
    for _ in 0..p.user_lock_after {
        assert!(matches!(
            console.sign_in("agent", "typo", client).await,
            Err(ServiceError::Unauthorized)
        ));
    }
    let locked = console.sign_in("agent", "agent-pass", client).await;
    assert!(
        matches!(locked, Err(ServiceError::TooManyRequests { retry_after, .. })
            if retry_after > Duration::from_secs(500)),
        "{locked:?}"
    );
    console
        .unlock_account(&supervisor(), "agent")
        .await
        .unwrap();
    console
        .sign_in("agent", "agent-pass", client)
        .await
        .unwrap();
}

/// Issue 58, item 8: beyond `addr_in_flight` sign-ins at once from one
/// address, the next is refused at once, before it waits for a hash;
/// another address is not.
async fn sign_ins_in_flight_per_address_are_capped(db: Database) {
    let p = ThrottlePolicy {
        addr_in_flight: 2,
        ..policy()
    };
    let console = Console::new(db, config(p)).await.unwrap();
    let flood = addr("203.0.113.200");
    let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(25));
    let tasks: Vec<_> = (0..24)
        .map(|i| {
            let console = console.clone();
            let barrier = barrier.clone();
            tokio::spawn(async move {
                barrier.wait().await;
                console
                    .sign_in(&format!("nobody-{i}"), "guess", flood)
                    .await
            })
        })
        .collect();
    barrier.wait().await;
    let mut answers = Answers::default();
    let mut at_once = 0;
    for task in tasks {
        match task.await.unwrap() {
            Err(e @ ServiceError::TooManyRequests { .. }) => {
                assert!(e.to_string().contains("at once"), "{e}");
                at_once += 1;
                answers.throttled += 1;
            }
            other => answers.add(other),
        }
    }
    assert!(at_once > 0, "{answers:?}");
    assert!(answers.checked() >= 1, "{answers:?}");
    // Nothing is left held: the address may sign in again.
    console.sign_in("agent", "agent-pass", flood).await.unwrap();
}

//! Sign-in throttling, enumeration, named accounts, sessions, event-stream
//! caps and the audit log, on SQLite and on PostgreSQL (`DATABASE_URL`).

#![allow(clippy::unwrap_used)]

#[macro_use]
mod common;

use std::net::IpAddr;
use std::time::Duration;

use aics_db::Database;
use aics_service::{AuditQuery, ClientAddr, Console, ConsoleConfig, ServiceError, ThrottlePolicy};
use aics_types::{NewAccount, PasswordChange, Role, UserInfo};
use http::HeaderMap;

async fn ready(db: Database) -> Database {
    db.migrate().await.unwrap();
    db.seed().await.unwrap();
    db.ensure_default_accounts(Some("supervisor-pass"), Some("agent-pass"))
        .await
        .unwrap();
    db
}

/// A quick policy: 3 free failures, a lock at 5 for two seconds.
fn config() -> ConsoleConfig {
    ConsoleConfig {
        throttle: ThrottlePolicy {
            user_free: 3,
            user_lock_after: 5,
            addr_free: 8,
            addr_lock_after: 12,
            base_delay: Duration::from_millis(50),
            max_delay: Duration::from_millis(200),
            lock_for: Duration::from_secs(2),
            ..ThrottlePolicy::default()
        },
        ..ConsoleConfig::for_tests()
    }
}

fn supervisor() -> UserInfo {
    UserInfo {
        username: "supervisor".into(),
        role: Role::Supervisor,
    }
}

fn agent() -> UserInfo {
    UserInfo {
        username: "agent".into(),
        role: Role::Agent,
    }
}

fn addr(ip: &str) -> ClientAddr {
    ClientAddr(Some(ip.parse::<IpAddr>().unwrap()))
}

/// The request headers of a browser holding `set_cookie`'s session.
fn cookie_headers(set_cookie: &str) -> HeaderMap {
    let pair = set_cookie.split(';').next().unwrap();
    let mut headers = HeaderMap::new();
    headers.insert("cookie", pair.parse().unwrap());
    headers
}

on_both_databases!(
    throttle_locks_then_lets_in,
    two_instances_share_the_count,
    unknown_and_known_users_take_one_path,
    address_count_and_reset_on_success,
    accounts_are_managed_by_supervisors,
    changing_ones_own_password,
    sessions_idle_out_and_are_purged,
    stream_cap_and_revocation,
    audit_log_reads_and_exports,
);

async fn throttle_locks_then_lets_in(db: Database) {
    let console = Console::new(db, config()).await.unwrap();
    let client = addr("198.51.100.7");
    let mut saw_backoff = false;
    for _ in 0..5 {
        match console.sign_in("agent", "wrong password", client).await {
            Err(ServiceError::Unauthorized) => {}
            // The backoff of failures 4 and 5: wait it out and go on.
            Err(e @ ServiceError::TooManyRequests { .. }) => {
                saw_backoff = true;
                assert!(e.retry_after_secs().unwrap() >= 1);
                tokio::time::sleep(Duration::from_millis(250)).await;
                assert!(matches!(
                    console.sign_in("agent", "wrong password", client).await,
                    Err(ServiceError::Unauthorized)
                ));
            }
            Err(e) => panic!("unexpected {e:?}"),
            Ok(_) => panic!("a wrong password signed in"),
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let _ = saw_backoff;
    // Locked: the right password is refused too, with a wait and a message.
    let locked = console
        .sign_in("agent", "agent-pass", client)
        .await
        .unwrap_err();
    assert_eq!(locked.status_code(), 429);
    assert_eq!(locked.code(), "too_many_requests");
    let secs = locked.retry_after_secs().unwrap();
    assert!((1..=2).contains(&secs), "retry after {secs}");
    assert!(
        locked.to_string().contains("Too many failed sign-ins"),
        "{locked}"
    );
    // Supervisors see the failures.
    let accounts = console.list_accounts(&supervisor()).await.unwrap();
    let a = accounts.iter().find(|a| a.username == "agent").unwrap();
    assert_eq!(a.failed_sign_ins, 5);
    // The lock is that address's alone (issue 58): another one signs in.
    assert!(console
        .sign_in("agent", "agent-pass", addr("192.0.2.1"))
        .await
        .is_ok());

    tokio::time::sleep(Duration::from_millis(2100)).await;
    let signed_in = console
        .sign_in("agent", "agent-pass", client)
        .await
        .unwrap();
    assert_eq!(signed_in.user, agent());
    assert!(signed_in.set_cookie.contains("HttpOnly"));
    // The success cleared the username's count.
    let accounts = console.list_accounts(&supervisor()).await.unwrap();
    let a = accounts.iter().find(|a| a.username == "agent").unwrap();
    assert_eq!((a.failed_sign_ins, a.locked_until), (0, None));
    assert!(a.last_sign_in_at.is_some());
}

async fn two_instances_share_the_count(db: Database) {
    let one = Console::new(db.clone(), config()).await.unwrap();
    let two = Console::new(db, config()).await.unwrap();
    for (i, console) in [&one, &two, &one, &two, &one].into_iter().enumerate() {
        let answer = console
            .sign_in("supervisor", "wrong password", addr("203.0.113.1"))
            .await;
        if let Err(ServiceError::TooManyRequests { retry_after, .. }) = answer {
            tokio::time::sleep(retry_after + Duration::from_millis(20)).await;
            assert!(
                matches!(
                    console
                        .sign_in("supervisor", "wrong password", addr("203.0.113.1"))
                        .await,
                    Err(ServiceError::Unauthorized)
                ),
                "attempt {i}"
            );
        }
        tokio::time::sleep(Duration::from_millis(210)).await;
    }
    // Five failures across the two: both refuse the right password from
    // that address now.
    for console in [&one, &two] {
        assert_eq!(
            console
                .sign_in("supervisor", "supervisor-pass", addr("203.0.113.1"))
                .await
                .unwrap_err()
                .status_code(),
            429
        );
    }
}

async fn unknown_and_known_users_take_one_path(db: Database) {
    let console = Console::new(db, ConsoleConfig::for_tests()).await.unwrap();
    let before = aics_db::passwords::checks_done();
    let known = console
        .sign_in("agent", "wrong password", ClientAddr(None))
        .await;
    let after_known = aics_db::passwords::checks_done();
    let unknown = console
        .sign_in("nobody-here", "wrong password", ClientAddr(None))
        .await;
    let after_unknown = aics_db::passwords::checks_done();
    assert!(matches!(known, Err(ServiceError::Unauthorized)));
    assert!(matches!(unknown, Err(ServiceError::Unauthorized)));
    assert_eq!(
        known.unwrap_err().to_string(),
        unknown.unwrap_err().to_string()
    );
    // Both ran one argon2 check (other tests may run checks meanwhile, so
    // at least one each).
    assert!(after_known > before, "the known user was checked");
    assert!(
        after_unknown > after_known,
        "the unknown user was checked too"
    );
    // Both are counted: the unknown name can be throttled like a real one.
    let accounts = console.list_accounts(&supervisor()).await.unwrap();
    assert_eq!(
        accounts
            .iter()
            .find(|a| a.username == "agent")
            .unwrap()
            .failed_sign_ins,
        1
    );
    // Control characters are refused before any work.
    let nul = console
        .sign_in("agent\0", "x", ClientAddr(None))
        .await
        .unwrap_err();
    assert_eq!(nul.status_code(), 400);
}

async fn address_count_and_reset_on_success(db: Database) {
    let console = Console::new(db.clone(), config()).await.unwrap();
    db.create_user("carol", "carol password 1", Role::Agent)
        .await
        .unwrap();
    let client = addr("2001:db8::5");
    // Spread over many names, failures from one address add up.
    let mut throttled = false;
    for i in 0..12 {
        match console.sign_in(&format!("ghost{i}"), "guess", client).await {
            Err(ServiceError::Unauthorized) => {}
            Err(ServiceError::TooManyRequests { retry_after, .. }) => {
                throttled = true;
                tokio::time::sleep(retry_after + Duration::from_millis(20)).await;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert!(throttled, "the address was slowed down");
    // The address is now locked for everyone behind it.
    tokio::time::sleep(Duration::from_millis(250)).await;
    let _ = console.sign_in("ghost-last", "guess", client).await;
    assert_eq!(
        console
            .sign_in("carol", "carol password 1", client)
            .await
            .unwrap_err()
            .status_code(),
        429
    );
    // Another address is fine.
    assert!(console
        .sign_in("carol", "carol password 1", addr("2001:db8::6"))
        .await
        .is_ok());
}

async fn accounts_are_managed_by_supervisors(db: Database) {
    let console = Console::new(db, ConsoleConfig::for_tests()).await.unwrap();
    let new = NewAccount {
        username: "Dana".into(),
        role: Role::Agent,
    };
    // Agents may not.
    for denied in [
        console.create_account(&agent(), &new).await.map(|_| ()),
        console.list_accounts(&agent()).await.map(|_| ()),
        console
            .set_account_disabled(&agent(), "supervisor", true)
            .await
            .map(|_| ()),
        console
            .reset_password(&agent(), "supervisor")
            .await
            .map(|_| ()),
        console
            .unlock_account(&agent(), "supervisor")
            .await
            .map(|_| ()),
        console
            .list_audit(
                &agent(),
                &AuditQuery {
                    limit: 10,
                    ..AuditQuery::default()
                },
            )
            .await
            .map(|_| ()),
    ] {
        assert_eq!(denied.unwrap_err().status_code(), 403);
    }
    let issued = console.create_account(&supervisor(), &new).await.unwrap();
    assert_eq!(issued.username, "dana");
    assert!(
        !format!("{issued:?}").contains(&issued.password),
        "Debug redacts"
    );
    assert_eq!(
        console
            .create_account(&supervisor(), &new)
            .await
            .unwrap_err()
            .status_code(),
        409
    );
    for bad in ["x", "a b", "api", "nul\0"] {
        let bad = NewAccount {
            username: bad.into(),
            role: Role::Agent,
        };
        assert_eq!(
            console
                .create_account(&supervisor(), &bad)
                .await
                .unwrap_err()
                .status_code(),
            400,
            "{:?}",
            bad.username
        );
    }
    let signed_in = console
        .sign_in("dana", &issued.password, ClientAddr(None))
        .await
        .unwrap();
    assert!(signed_in.must_change_password);
    let dana = signed_in.user.clone();
    let headers = cookie_headers(&signed_in.set_cookie);
    assert_eq!(console.authenticate(&headers).await.unwrap(), dana);
    let mut stream = console.open_stream(&dana).unwrap();

    // Disabling ends the sessions and the streams; the password no longer works.
    let account = console
        .set_account_disabled(&supervisor(), "dana", true)
        .await
        .unwrap();
    assert!(account.disabled);
    assert_eq!(account.active_sessions, 0);
    assert!(matches!(
        console.authenticate(&headers).await,
        Err(ServiceError::Unauthorized)
    ));
    tokio::time::timeout(Duration::from_secs(1), stream.revoked())
        .await
        .unwrap();
    let refused = console
        .sign_in("dana", &issued.password, ClientAddr(None))
        .await
        .unwrap_err();
    assert_eq!(refused.status_code(), 403);
    assert!(refused.to_string().contains("disabled"));
    assert!(
        !console
            .set_account_disabled(&supervisor(), "dana", false)
            .await
            .unwrap()
            .disabled
    );

    // A reset: the old password stops working, the new one is shown once.
    let reset = console.reset_password(&supervisor(), "dana").await.unwrap();
    assert_ne!(reset.password, issued.password);
    assert!(matches!(
        console
            .sign_in("dana", &issued.password, ClientAddr(None))
            .await,
        Err(ServiceError::Unauthorized)
    ));
    assert!(console
        .sign_in("dana", &reset.password, ClientAddr(None))
        .await
        .is_ok());

    // Nobody disables themselves; the last supervisor stays.
    assert_eq!(
        console
            .set_account_disabled(&supervisor(), "supervisor", true)
            .await
            .unwrap_err()
            .status_code(),
        409
    );
    let boss = console
        .create_account(
            &supervisor(),
            &NewAccount {
                username: "boss".into(),
                role: Role::Supervisor,
            },
        )
        .await
        .unwrap();
    let boss_user = UserInfo {
        username: boss.username.clone(),
        role: Role::Supervisor,
    };
    assert!(console
        .set_account_disabled(&boss_user, "supervisor", true)
        .await
        .is_ok());
    assert_eq!(
        console
            .set_account_disabled(&supervisor(), "nobody", true)
            .await
            .unwrap_err()
            .status_code(),
        404
    );

    let actions: Vec<String> = console
        .list_audit(
            &boss_user,
            &AuditQuery {
                limit: 50,
                action_prefix: Some("account.".into()),
                ..AuditQuery::default()
            },
        )
        .await
        .unwrap()
        .into_iter()
        .map(|e| format!("{} {} {}", e.actor, e.action, e.subject))
        .collect();
    assert_eq!(
        actions,
        [
            "boss account.disable supervisor",
            "supervisor account.create boss",
            "supervisor account.password_reset dana",
            "supervisor account.enable dana",
            "supervisor account.disable dana",
            "supervisor account.create dana",
        ]
    );
}

async fn changing_ones_own_password(db: Database) {
    let console = Console::new(db, config()).await.unwrap();
    let here = console
        .sign_in("agent", "agent-pass", ClientAddr(None))
        .await
        .unwrap();
    let elsewhere = console
        .sign_in("agent", "agent-pass", ClientAddr(None))
        .await
        .unwrap();
    let here_headers = cookie_headers(&here.set_cookie);
    let change = |current: &str, new: &str| PasswordChange {
        current_password: current.into(),
        new_password: new.into(),
    };
    for (body, why) in [
        (change("agent-pass", "short"), "too short"),
        (change("agent-pass", "password1234"), "too common"),
        (
            change("agent-pass", "agent-agent-1"),
            "too close to the name",
        ),
        (
            change("wrong", "a fine new passphrase"),
            "wrong current password",
        ),
    ] {
        let e = console
            .change_own_password(&agent(), &here_headers, &body)
            .await
            .unwrap_err();
        assert_eq!(e.status_code(), 400, "{why}: {e}");
    }
    console
        .change_own_password(
            &agent(),
            &here_headers,
            &change("agent-pass", "a fine new passphrase"),
        )
        .await
        .unwrap();
    assert_eq!(
        console.authenticate(&here_headers).await.unwrap(),
        agent(),
        "this browser stays"
    );
    assert!(
        console
            .authenticate(&cookie_headers(&elsewhere.set_cookie))
            .await
            .is_err(),
        "other sessions end"
    );
    assert!(console
        .sign_in("agent", "a fine new passphrase", ClientAddr(None))
        .await
        .is_ok());
    let api = UserInfo {
        username: "api".into(),
        role: Role::Agent,
    };
    assert_eq!(
        console
            .change_own_password(
                &api,
                &HeaderMap::new(),
                &change("x", "a fine new passphrase 2")
            )
            .await
            .unwrap_err()
            .status_code(),
        403
    );
}

async fn sessions_idle_out_and_are_purged(db: Database) {
    let console = Console::new(
        db.clone(),
        ConsoleConfig {
            session_idle: Duration::from_secs(1),
            purge_every: Duration::from_millis(300),
            sessions_per_user: 2,
            ..ConsoleConfig::for_tests()
        },
    )
    .await
    .unwrap();
    let first = console
        .sign_in("agent", "agent-pass", ClientAddr(None))
        .await
        .unwrap();
    let second = console
        .sign_in("agent", "agent-pass", ClientAddr(None))
        .await
        .unwrap();
    let third = console
        .sign_in("agent", "agent-pass", ClientAddr(None))
        .await
        .unwrap();
    assert!(
        console
            .authenticate(&cookie_headers(&first.set_cookie))
            .await
            .is_err(),
        "the cap of two ended the oldest"
    );
    assert!(console
        .authenticate(&cookie_headers(&second.set_cookie))
        .await
        .is_ok());
    let headers = cookie_headers(&third.set_cookie);
    assert!(console.authenticate(&headers).await.is_ok());
    assert_eq!(db.session_count("agent").await.unwrap(), 2);
    tokio::time::sleep(Duration::from_millis(1300)).await;
    assert!(
        matches!(
            console.authenticate(&headers).await,
            Err(ServiceError::Unauthorized)
        ),
        "idle for longer than a second"
    );
    // The purge task deletes the idle rows.
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(db.session_count("agent").await.unwrap(), 0);

    // Sign out everywhere ends every session, this one too.
    let a = console
        .sign_in("agent", "agent-pass", ClientAddr(None))
        .await
        .unwrap();
    let b = console
        .sign_in("agent", "agent-pass", ClientAddr(None))
        .await
        .unwrap();
    let cleared = console.sign_out_everywhere(&agent()).await.unwrap();
    assert!(cleared.contains("Max-Age=0"));
    for s in [a, b] {
        assert!(console
            .authenticate(&cookie_headers(&s.set_cookie))
            .await
            .is_err());
    }
}

async fn stream_cap_and_revocation(db: Database) {
    let console = Console::new(
        db,
        ConsoleConfig {
            streams_per_user: 2,
            api_streams: 3,
            ..ConsoleConfig::for_tests()
        },
    )
    .await
    .unwrap();
    let one = console.open_stream(&agent()).unwrap();
    let _two = console.open_stream(&agent()).unwrap();
    let third = console.open_stream(&agent()).unwrap_err();
    assert_eq!(third.status_code(), 429);
    assert!(console.open_stream(&supervisor()).is_ok(), "per user");
    drop(one);
    let mut again = console.open_stream(&agent()).unwrap();
    console.sign_out_everywhere(&agent()).await.unwrap();
    tokio::time::timeout(Duration::from_secs(1), again.revoked())
        .await
        .unwrap();
    // After the revocation the user starts with a fresh count.
    let _a = console.open_stream(&agent()).unwrap();
    let _b = console.open_stream(&agent()).unwrap();
    // The API token's integration carries many customers' streams: its
    // own cap, not a person's.
    let api = UserInfo {
        username: "api".into(),
        role: Role::Supervisor,
    };
    let held: Vec<_> = (0..3).map(|_| console.open_stream(&api).unwrap()).collect();
    assert_eq!(console.open_stream(&api).unwrap_err().status_code(), 429);
    drop(held);
}

async fn audit_log_reads_and_exports(db: Database) {
    let console = Console::new(db, ConsoleConfig::for_tests()).await.unwrap();
    console
        .record_audit(
            "supervisor",
            "approval.decide",
            "call_9",
            "approved: refund, \"fine\"",
        )
        .await
        .unwrap();
    console
        .record_audit("agent", "turn.cancel", "c-1", "cancelled by the agent")
        .await
        .unwrap();
    let all = console
        .list_audit(
            &supervisor(),
            &AuditQuery {
                limit: 10,
                ..AuditQuery::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(all.len(), 2);
    assert_eq!(all[0].action, "turn.cancel");
    let csv = console
        .audit_csv(
            &supervisor(),
            &AuditQuery {
                limit: 10,
                ..AuditQuery::default()
            },
        )
        .await
        .unwrap();
    let lines: Vec<&str> = csv.trim_end().split("\r\n").collect();
    assert_eq!(lines[0], "id,at,actor,action,subject,detail");
    assert_eq!(lines.len(), 3);
    assert!(
        lines[2].ends_with(r#""approval.decide","call_9","approved: refund, ""fine""""#),
        "{}",
        lines[2]
    );
    assert_eq!(
        console
            .audit_csv(
                &agent(),
                &AuditQuery {
                    limit: 10,
                    ..AuditQuery::default()
                }
            )
            .await
            .unwrap_err()
            .status_code(),
        403
    );
}

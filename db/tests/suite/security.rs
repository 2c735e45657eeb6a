//! Accounts, sessions, the sign-in throttle and the audit log, on both
//! databases (run by `tests/db.rs`).

use aics_db::throttle::{addr_key, user_key};
use aics_db::{AuditQuery, CredentialCheck, Database, DbError};
use aics_types::Role;
use chrono::{Duration, Utc};

pub async fn accounts(db: Database) {
    let alice = db
        .create_user_with_issued_password("  Alice ", "first password 1", Role::Agent)
        .await
        .expect("create");
    assert_eq!(alice.username, "alice", "names are stored normalized");
    assert!(matches!(
        db.create_user("ALICE", "another password", Role::Agent)
            .await,
        Err(DbError::InvalidInput(_))
    ));
    assert!(matches!(
        db.create_user("nul\0name", "another password", Role::Agent)
            .await,
        Err(DbError::InvalidInput(_))
    ));
    assert!(db.must_change_password("alice").await.expect("flag"));
    assert_eq!(
        db.check_credentials("ALICE", "first password 1")
            .await
            .expect("check"),
        CredentialCheck::Valid(alice.clone())
    );
    assert_eq!(
        db.check_credentials("alice", "wrong").await.expect("check"),
        CredentialCheck::Invalid
    );
    assert_eq!(
        db.check_credentials("nobody", "first password 1")
            .await
            .expect("check"),
        CredentialCheck::Invalid
    );

    // Two sessions; disabling ends both and the right password no longer
    // signs in.
    let later = Utc::now() + Duration::hours(1);
    db.insert_session("h1", "alice", later, 10)
        .await
        .expect("s1");
    db.insert_session("h2", "alice", later, 10)
        .await
        .expect("s2");
    assert_eq!(db.session_count("alice").await.expect("count"), 2);
    assert!(db.set_user_disabled("alice", true).await.expect("disable"));
    assert_eq!(db.session_count("alice").await.expect("count"), 0);
    assert_eq!(
        db.check_credentials("alice", "first password 1")
            .await
            .expect("check"),
        CredentialCheck::Disabled(alice.clone())
    );
    assert_eq!(db.active_user("alice").await.expect("user"), None);
    assert!(db.user("alice").await.expect("user").is_some());
    assert!(!db.set_user_disabled("nobody", true).await.expect("none"));
    assert!(db.set_user_disabled("alice", false).await.expect("enable"));
    assert_eq!(
        db.active_user("alice").await.expect("user"),
        Some(alice.clone())
    );

    // A new password ends the other sessions, keeps the named one.
    db.insert_session("h3", "alice", later, 10)
        .await
        .expect("s3");
    db.insert_session("h4", "alice", later, 10)
        .await
        .expect("s4");
    assert!(db
        .set_password("alice", "second password 2", false, Some("h4"))
        .await
        .expect("set"));
    assert_eq!(db.session_user("h3").await.expect("s"), None);
    assert_eq!(
        db.session_user("h4").await.expect("s").as_deref(),
        Some("alice")
    );
    assert!(!db.must_change_password("alice").await.expect("flag"));
    assert_eq!(
        db.verify_password("alice", "second password 2")
            .await
            .expect("check"),
        Some(alice.clone())
    );

    db.record_sign_in("alice").await.expect("sign-in");
    db.record_sign_in_failure(&user_key("alice"), Utc::now() - Duration::minutes(15))
        .await
        .expect("failure");
    db.block_sign_in(&user_key("alice"), later)
        .await
        .expect("block");
    db.ensure_default_accounts(Some("supervisor-pass"), Some("agent-pass"))
        .await
        .expect("defaults");
    let accounts = db.list_accounts(Utc::now()).await.expect("list");
    let names: Vec<&str> = accounts.iter().map(|a| a.username.as_str()).collect();
    assert_eq!(names, ["agent", "alice", "supervisor"]);
    let a = &accounts[1];
    assert!(!a.disabled);
    assert!(a.last_sign_in_at.is_some());
    assert_eq!(a.failed_sign_ins, 1);
    assert!(a.locked_until.is_some());
    assert_eq!(a.active_sessions, 1);
    assert!(accounts[0].locked_until.is_none());
    assert_eq!(db.enabled_supervisors().await.expect("count"), 1);
}

pub async fn sessions_idle_cap_and_purge(db: Database) {
    db.create_user("bob", "bob password 1", Role::Agent)
        .await
        .expect("create");
    let later = Utc::now() + Duration::hours(1);
    for i in 0..4 {
        db.insert_session(&format!("b{i}"), "bob", later, 3)
            .await
            .expect("insert");
        // Distinct creation times, so "oldest" is well defined.
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    assert_eq!(
        db.session_count("bob").await.expect("count"),
        3,
        "capped at 3"
    );
    assert_eq!(
        db.session_user("b0").await.expect("s"),
        None,
        "the oldest ended"
    );

    // Idle: seen just now, so live for a cut-off in the past, ended for
    // one in the future.
    let past = Utc::now() - Duration::minutes(30);
    let live = db
        .live_session("b3", past)
        .await
        .expect("live")
        .expect("some");
    assert_eq!(live.username, "bob");
    let future = Utc::now() + Duration::seconds(1);
    assert_eq!(db.live_session("b3", future).await.expect("idle"), None);
    db.touch_session("b3").await.expect("touch");
    assert!(db.live_session("b3", past).await.expect("live").is_some());

    // Expired and idle sessions are purged; live ones stay.
    db.insert_session("expired", "bob", Utc::now() - Duration::seconds(1), 10)
        .await
        .expect("insert");
    let cut = Utc::now();
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    db.touch_session("b3").await.expect("touch");
    let purged = db.purge_sessions(cut).await.expect("purge");
    assert_eq!(purged, 3, "the expired one and the idle b1, b2");
    assert_eq!(db.session_user("expired").await.expect("s"), None);
    assert_eq!(
        db.session_user("b3").await.expect("s").as_deref(),
        Some("bob")
    );
    assert_eq!(db.delete_user_sessions("bob").await.expect("all"), 1);
    assert_eq!(db.session_count("bob").await.expect("count"), 0);
}

pub async fn sign_in_throttle(db: Database) {
    let key = user_key("carol");
    let quiet = Utc::now() - Duration::minutes(15);
    assert_eq!(db.record_sign_in_failure(&key, quiet).await.expect("1"), 1);
    assert_eq!(db.record_sign_in_failure(&key, quiet).await.expect("2"), 2);
    // A count that went quiet starts over.
    let now_quiet = Utc::now() + Duration::seconds(1);
    assert_eq!(
        db.record_sign_in_failure(&key, now_quiet).await.expect("3"),
        1
    );

    // Concurrent failures (as from several instances) all count.
    let addr = addr_key(&"203.0.113.9".parse().expect("ip"));
    let tasks: Vec<_> = (0..16)
        .map(|_| {
            let (db, addr) = (db.clone(), addr.clone());
            tokio::spawn(async move { db.record_sign_in_failure(&addr, quiet).await })
        })
        .collect();
    let mut counts = Vec::new();
    for t in tasks {
        counts.push(t.await.expect("join").expect("record"));
    }
    counts.sort_unstable();
    assert_eq!(counts, (1..=16).collect::<Vec<i64>>());

    let keys = [key.clone(), addr.clone()];
    assert_eq!(db.sign_in_blocked_until(&keys).await.expect("none"), None);
    let soon = Utc::now() + Duration::seconds(30);
    let later = Utc::now() + Duration::minutes(15);
    db.block_sign_in(&addr, later).await.expect("block");
    db.block_sign_in(&addr, soon)
        .await
        .expect("shorter is ignored");
    db.block_sign_in(&key, soon).await.expect("block");
    let until = db
        .sign_in_blocked_until(&keys)
        .await
        .expect("blocked")
        .expect("some");
    assert!(
        (until - later).num_milliseconds().abs() < 5,
        "the latest block wins"
    );

    assert!(db.clear_sign_in_failures(&addr).await.expect("clear"));
    assert!(!db.clear_sign_in_failures(&addr).await.expect("again"));
    let until = db
        .sign_in_blocked_until(&keys)
        .await
        .expect("blocked")
        .expect("some");
    assert!((until - soon).num_milliseconds().abs() < 5);

    // Purge keeps blocked keys, drops quiet unblocked ones.
    db.record_sign_in_failure(&user_key("dave"), quiet)
        .await
        .expect("d");
    let purged = db
        .purge_sign_in_failures(Utc::now() + Duration::seconds(1))
        .await
        .expect("purge");
    assert_eq!(purged, 1);
    assert!(db
        .sign_in_blocked_until(&keys)
        .await
        .expect("kept")
        .is_some());
}

pub async fn audit_log(db: Database) {
    let first = db
        .record_audit("supervisor", "account.create", "alice", "role agent")
        .await
        .expect("record");
    db.record_audit("supervisor", "account.disable", "alice", "")
        .await
        .expect("record");
    db.record_audit("bob", "approval.decide", "call_1", "approved\0 with\nnotes")
        .await
        .expect("record");
    let all = db
        .list_audit(&AuditQuery {
            limit: 10,
            ..AuditQuery::default()
        })
        .await
        .expect("list");
    assert_eq!(all.len(), 3);
    assert_eq!(all[0].action, "approval.decide", "newest first");
    assert_eq!(
        all[0].detail, "approved  with notes",
        "controls are replaced"
    );
    let accounts = db
        .list_audit(&AuditQuery {
            limit: 10,
            action_prefix: Some("account.".into()),
            ..AuditQuery::default()
        })
        .await
        .expect("list");
    assert_eq!(accounts.len(), 2);
    let by_bob = db
        .list_audit(&AuditQuery {
            limit: 10,
            actor: Some("bob".into()),
            ..AuditQuery::default()
        })
        .await
        .expect("list");
    assert_eq!(by_bob.len(), 1);
    let older = db
        .list_audit(&AuditQuery {
            limit: 10,
            before_id: Some(all[1].id),
            ..AuditQuery::default()
        })
        .await
        .expect("page");
    assert_eq!(older, vec![first.clone()]);
    // `_` and `%` in a prefix are literal.
    let none = db
        .list_audit(&AuditQuery {
            limit: 10,
            action_prefix: Some("account_".into()),
            ..AuditQuery::default()
        })
        .await
        .expect("list");
    assert!(none.is_empty());
    let long = db
        .record_audit("x", "y", "z", &"d".repeat(2000))
        .await
        .expect("long");
    assert_eq!(long.detail.chars().count(), 500);
}

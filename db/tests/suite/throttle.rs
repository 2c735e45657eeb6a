//! The sign-in throttle's store (issue 58): attempts counted before their
//! check, all keys or none, so parallel guesses cannot pass a limit; the
//! known addresses of good sign-ins.

use std::net::IpAddr;
use std::time::Duration;

use aics_db::throttle::{addr_key, pair_key, user_key, Reservation, KNOWN_FOR};
use aics_db::Database;
use chrono::Utc;

fn ip(text: &str) -> IpAddr {
    text.parse().expect("ip")
}

/// The wait of a rule with `free` free attempts and a long wait after.
fn rule(free: i64) -> impl Fn(usize, i64) -> Option<Duration> {
    move |_, n| (n > free).then_some(Duration::from_secs(600))
}

async fn count_of(db: &Database, key: &str) -> i64 {
    // One more attempt with no wait, taken back at once, shows the count.
    match db
        .reserve_sign_in(
            &[key.to_owned()],
            Utc::now() - chrono::Duration::hours(1),
            |_, _| None,
        )
        .await
        .expect("reserve")
    {
        Reservation::Counted(n) => {
            db.release_sign_in(&[key.to_owned()])
                .await
                .expect("release");
            n[0] - 1
        }
        Reservation::Blocked(until) => panic!("{key} is blocked until {until}"),
    }
}

/// 50 attempts at once under the same keys: the first three are free, the
/// fourth sets a wait, and every other one is refused, uncounted.
pub async fn parallel_reservations_pass_at_most_the_limit(db: Database) {
    let keys = vec![
        pair_key("alice", Some(&ip("203.0.113.5"))),
        addr_key(&ip("203.0.113.5")),
        user_key("alice"),
    ];
    let quiet = Utc::now() - chrono::Duration::minutes(15);
    let tasks: Vec<_> = (0..50)
        .map(|_| {
            let (db, keys) = (db.clone(), keys.clone());
            tokio::spawn(async move { db.reserve_sign_in(&keys, quiet, rule(3)).await })
        })
        .collect();
    let mut counted = Vec::new();
    let mut blocked = 0;
    for task in tasks {
        match task.await.expect("join").expect("reserve") {
            Reservation::Counted(counts) => counted.push(counts),
            Reservation::Blocked(until) => {
                assert!(until > Utc::now() + chrono::Duration::minutes(9));
                blocked += 1;
            }
        }
    }
    counted.sort();
    assert_eq!(
        counted,
        (1..=4).map(|n| vec![n, n, n]).collect::<Vec<_>>(),
        "each of the four counted once under every key"
    );
    assert_eq!(blocked, 46);
    let until = db
        .sign_in_blocked_until(&keys)
        .await
        .expect("read")
        .expect("blocked");
    assert!(until > Utc::now() + chrono::Duration::minutes(9));
}

/// A reservation that one blocked key refuses counts under none of the
/// others.
pub async fn a_blocked_key_counts_nothing(db: Database) {
    let free = user_key("bob");
    let blocked = addr_key(&ip("2001:db8::9"));
    let quiet = Utc::now() - chrono::Duration::minutes(15);
    assert_eq!(
        db.reserve_sign_in(std::slice::from_ref(&blocked), quiet, rule(0))
            .await
            .expect("reserve"),
        Reservation::Counted(vec![1])
    );
    for _ in 0..3 {
        let answer = db
            .reserve_sign_in(&[free.clone(), blocked.clone()], quiet, rule(0))
            .await
            .expect("reserve");
        assert!(matches!(answer, Reservation::Blocked(_)), "{answer:?}");
    }
    assert_eq!(count_of(&db, &free).await, 0);
}

/// A count quiet since `quiet_since` starts over; a release takes one
/// attempt back (never below zero); a good sign-in's clear forgets it.
pub async fn quiet_counts_start_over_and_releases_take_back(db: Database) {
    let key = pair_key("carol", None);
    let quiet = Utc::now() - chrono::Duration::minutes(15);
    for n in 1..=3 {
        assert_eq!(
            db.reserve_sign_in(std::slice::from_ref(&key), quiet, rule(10))
                .await
                .expect("reserve"),
            Reservation::Counted(vec![n])
        );
    }
    db.release_sign_in(std::slice::from_ref(&key))
        .await
        .expect("release");
    assert_eq!(count_of(&db, &key).await, 2);
    let now_quiet = Utc::now() + chrono::Duration::seconds(1);
    assert_eq!(
        db.reserve_sign_in(std::slice::from_ref(&key), now_quiet, rule(10))
            .await
            .expect("reserve"),
        Reservation::Counted(vec![1]),
        "a quiet count starts over"
    );
    for _ in 0..3 {
        db.release_sign_in(std::slice::from_ref(&key))
            .await
            .expect("release");
    }
    assert_eq!(count_of(&db, &key).await, 0);
    assert!(db.clear_sign_in_failures(&key).await.expect("clear"));
}

/// Known addresses are per name; clearing a user's counts takes its
/// counts from everywhere and from each address, and no other name's.
pub async fn known_addresses_and_a_users_counts(db: Database) {
    let home = ip("192.0.2.7");
    assert!(!db.is_known_sign_in_address("dana", &home).await.expect("k"));
    db.remember_sign_in_address("dana", &home)
        .await
        .expect("remember");
    db.remember_sign_in_address("dana", &home)
        .await
        .expect("again");
    assert!(db.is_known_sign_in_address("dana", &home).await.expect("k"));
    assert!(!db
        .is_known_sign_in_address("dana", &ip("192.0.2.8"))
        .await
        .expect("k"));
    assert!(!db
        .is_known_sign_in_address("dana_b", &home)
        .await
        .expect("k"));

    let quiet = Utc::now() - chrono::Duration::minutes(15);
    let dana = [
        user_key("dana"),
        pair_key("dana", Some(&home)),
        pair_key("dana", None),
    ];
    let others = [
        user_key("dana_b"),
        pair_key("danax", Some(&home)),
        pair_key("dana_b", Some(&home)),
        addr_key(&home),
    ];
    for key in dana.iter().chain(&others) {
        db.reserve_sign_in(std::slice::from_ref(key), quiet, rule(0))
            .await
            .expect("reserve");
    }
    assert!(db.clear_user_sign_in_failures("dana").await.expect("clear"));
    assert!(!db.clear_user_sign_in_failures("dana").await.expect("none"));
    assert_eq!(db.sign_in_blocked_until(&dana).await.expect("read"), None);
    for key in &others {
        assert!(
            db.sign_in_blocked_until(std::slice::from_ref(key))
                .await
                .expect("read")
                .is_some(),
            "{key} is another name's"
        );
    }

    // The purge keeps an address signed in from within KNOWN_FOR.
    db.purge_sign_in_failures(Utc::now() - chrono::Duration::hours(1))
        .await
        .expect("purge");
    assert!(db.is_known_sign_in_address("dana", &home).await.expect("k"));
    assert!(KNOWN_FOR >= chrono::Duration::days(30));
}

//! Human takeover on both databases: the table of transitions, replies and
//! notes, and the races decided by the database (a turn beginning while an
//! agent takes over; two agents taking the same conversation).

use std::time::Duration;

use aics_db::runs::{Begin, WhenHeld};
use aics_db::{Database, DbError};
use aics_types::{HandlingAction, HandlingState, MessageRole};

const LEASE: Duration = Duration::from_secs(30);

async fn begin(db: &Database, run: &str, session: &str, when_held: WhenHeld) -> Begin {
    db.begin_turn(run, session, "me", LEASE, "hello?", "hello?", 20, when_held)
        .await
        .expect("begin")
}

/// Take over, reply, note, hand back, resolve, reopen; every change a line.
pub async fn takeover_holds_the_conversation_from_the_ai(db: Database) {
    db.ensure_conversation("s-t", None, "Help")
        .await
        .expect("create");
    let taken = db
        .change_handling("s-t", HandlingAction::TakeOver, "alice")
        .await
        .expect("take over");
    assert_eq!(taken.summary.handling, HandlingState::Human);
    assert_eq!(taken.summary.assignee.as_deref(), Some("alice"));
    assert_eq!(taken.line.role, MessageRole::System);

    // The customer writes: the message is kept, no run begins.
    match begin(&db, "g-1", "s-t", WhenHeld::Keep).await {
        Begin::Held { assignee, kept } => {
            assert_eq!(assignee.as_deref(), Some("alice"));
            let kept = kept.expect("kept");
            assert_eq!(kept.message.role, MessageRole::Customer);
            assert!(kept.event_epoch > 0, "announced under a fresh epoch");
        }
        other => panic!("expected held, got {other:?}"),
    }
    assert!(db.run("g-1").await.expect("read").is_none());
    // A call that wants the AI's answer writes nothing.
    let before = db.list_messages("s-t").await.expect("messages").len();
    assert!(matches!(
        begin(&db, "g-2", "s-t", WhenHeld::Refuse).await,
        Begin::Held { kept: None, .. }
    ));
    assert_eq!(
        db.list_messages("s-t").await.expect("messages").len(),
        before
    );

    // Only the holder replies; anyone writes notes; nobody takes it twice.
    assert!(matches!(
        db.change_handling("s-t", HandlingAction::TakeOver, "bob")
            .await,
        Err(DbError::Conflict(_))
    ));
    assert!(matches!(
        db.append_agent_reply("s-t", "bob", "hi").await,
        Err(DbError::Conflict(_))
    ));
    let reply = db
        .append_agent_reply("s-t", "alice", "Hello, Alice here.")
        .await
        .expect("reply");
    assert_eq!(reply.role, MessageRole::Agent);
    assert_eq!(reply.author.as_deref(), Some("alice"));
    let note = db
        .append_note("s-t", "bob", "VIP, be nice")
        .await
        .expect("note");
    assert_eq!(note.role, MessageRole::Note);

    // Handed back, the AI answers again.
    let back = db
        .change_handling("s-t", HandlingAction::HandBack, "alice")
        .await
        .expect("hand back");
    assert_eq!(back.summary.handling, HandlingState::Ai);
    assert_eq!(back.summary.assignee, None);
    assert!(matches!(
        db.append_agent_reply("s-t", "alice", "late").await,
        Err(DbError::Conflict(_))
    ));
    let Begin::Started(turn) = begin(&db, "g-3", "s-t", WhenHeld::Keep).await else {
        panic!("the AI should answer again");
    };
    let roles: Vec<MessageRole> = turn.earlier.iter().map(|m| m.role).collect();
    assert!(roles.contains(&MessageRole::Agent) && roles.contains(&MessageRole::Note));

    // Not while the run holds it; resolve and reopen once it ended.
    assert!(matches!(
        db.change_handling("s-t", HandlingAction::TakeOver, "alice")
            .await,
        Err(DbError::Conflict(_))
    ));
    let trace = aics_types::ChatTurnTraceResult {
        graph_execution_id: "g-3".into(),
        session_id: "s-t".into(),
        ..Default::default()
    };
    super::finish_with_reply(&db, &trace, "hi!").await;
    let closed = db
        .change_handling("s-t", HandlingAction::Resolve, "alice")
        .await
        .expect("resolve");
    assert_eq!(closed.summary.handling, HandlingState::Closed);
    assert!(matches!(
        db.change_handling("s-t", HandlingAction::HandBack, "alice")
            .await,
        Err(DbError::Conflict(_))
    ));
    let reopened = db
        .change_handling("s-t", HandlingAction::Reopen, "bob")
        .await
        .expect("reopen");
    assert_eq!(reopened.summary.handling, HandlingState::Ai);
    let lines: Vec<String> = db
        .list_messages("s-t")
        .await
        .expect("messages")
        .into_iter()
        .filter(|m| m.role == MessageRole::System)
        .map(|m| format!("{}|{}", m.author.unwrap_or_default(), m.content))
        .collect();
    assert_eq!(lines.len(), 4, "{lines:?}");
    assert!(lines[0].starts_with("alice|alice took over"), "{lines:?}");
    assert!(lines[3].starts_with("bob|bob reopened"), "{lines:?}");
}

/// A turn beginning just as an agent takes over: never both. Each round is
/// a fresh conversation where both start at the same moment.
pub async fn a_turn_and_a_takeover_never_both_win(db: Database) {
    let mut turns = 0;
    let mut takeovers = 0;
    for round in 0..24 {
        let session = format!("s-race-{round}");
        db.ensure_conversation(&session, None, "Race")
            .await
            .expect("create");
        let run = format!("g-race-{round}");
        let (began, taken) = tokio::join!(
            begin(&db, &run, &session, WhenHeld::Keep),
            db.change_handling(&session, HandlingAction::TakeOver, "alice"),
        );
        let started = matches!(began, Begin::Started(_));
        match &taken {
            Ok(_) | Err(DbError::Conflict(_)) => {}
            Err(e) => panic!("take over failed: {e}"),
        }
        assert!(
            started != taken.is_ok(),
            "round {round}: exactly one of the turn ({began:?}) and the takeover ({taken:?}) wins"
        );
        let summary = db
            .conversation(&session)
            .await
            .expect("read")
            .expect("some");
        let active = db.active_run(&session).await.expect("run").is_some();
        assert_eq!(active, started);
        assert_eq!(summary.handling == HandlingState::Human, !started);
        turns += usize::from(started);
        takeovers += usize::from(!started);
    }
    assert_eq!(turns + takeovers, 24);
}

/// Two agents take the same waiting conversation: one wins, one is told.
pub async fn two_agents_taking_one_conversation_one_wins(db: Database) {
    for round in 0..12 {
        let session = format!("s-two-{round}");
        db.ensure_conversation(&session, None, "Queue")
            .await
            .expect("create");
        db.change_handling(&session, HandlingAction::Escalate, "The AI")
            .await
            .expect("escalate");
        assert!(db.waiting_for_human_count().await.expect("count") >= 1);
        let (a, b) = tokio::join!(
            db.change_handling(&session, HandlingAction::TakeOver, "alice"),
            db.change_handling(&session, HandlingAction::TakeOver, "bob"),
        );
        assert!(a.is_ok() != b.is_ok(), "round {round}: {a:?} / {b:?}");
        let loser = if a.is_ok() { b } else { a };
        assert!(matches!(loser, Err(DbError::Conflict(_))), "{loser:?}");
        let summary = db
            .conversation(&session)
            .await
            .expect("read")
            .expect("some");
        assert_eq!(summary.handling, HandlingState::Human);
    }
    assert_eq!(db.waiting_for_human_count().await.expect("count"), 0);
}

/// The inbox finds a conversation by a piece of a word from the middle of
/// a message, in English and in Chinese, and filters by handling.
pub async fn inbox_search_in_both_languages(db: Database) {
    use aics_types::InboxQuery;
    for (sid, text) in [
        ("s-en", "Hello, where is my parcel to Berlin? It is late."),
        ("s-zh", "你好，我的订单一直没有收到，请帮我查一下"),
        ("s-other", "Thanks for the quick refund"),
    ] {
        db.ensure_conversation(sid, None, "x")
            .await
            .expect("create");
        db.append_message(sid, MessageRole::Customer, text, None)
            .await
            .expect("message");
    }
    db.append_note("s-other", "alice", "customer prefers 100% email")
        .await
        .expect("note");
    let find = |q: &str| InboxQuery {
        q: Some(q.into()),
        ..InboxQuery::default()
    };
    let ids = |list: Vec<aics_types::ConversationSummary>| {
        list.into_iter().map(|c| c.session_id).collect::<Vec<_>>()
    };
    assert_eq!(
        ids(db
            .search_conversations(&find("ARCEL"), 50)
            .await
            .expect("en")),
        ["s-en"]
    );
    assert_eq!(
        ids(db
            .search_conversations(&find("一直没有"), 50)
            .await
            .expect("zh")),
        ["s-zh"]
    );
    assert_eq!(
        ids(db
            .search_conversations(&find("100%"), 50)
            .await
            .expect("note")),
        ["s-other"]
    );
    assert!(db
        .search_conversations(&find("%_"), 50)
        .await
        .expect("escaped")
        .is_empty());
    db.change_handling("s-zh", HandlingAction::TakeOver, "alice")
        .await
        .expect("take");
    let held = InboxQuery {
        handling: Some(HandlingState::Human),
        assignee: Some("alice".into()),
        ..InboxQuery::default()
    };
    assert_eq!(
        ids(db.search_conversations(&held, 50).await.expect("filter")),
        ["s-zh"]
    );
}

//! Customers on conversations (SQLite and PostgreSQL): memory is per
//! customer across conversations and never crosses to another customer;
//! forgetting is audited; an order id proposes its customer.

#![allow(clippy::unwrap_used)]

mod common;

use common::{agent, ready};

use aics_db::{AuditQuery, Database};
use aics_service::{Console, ConsoleConfig, ServiceError};

async fn console(db: Database) -> Console {
    Console::new(ready(db).await, ConsoleConfig::for_tests())
        .await
        .unwrap()
}

async fn customers_flow(console: Console) {
    let me = agent();
    // Unknown customers are refused, nothing created.
    let before = console.list_conversations(200).await.unwrap().len();
    assert!(matches!(
        console
            .create_conversation_for(&me, Some("nobody@example.com"))
            .await,
        Err(ServiceError::NotFound(_))
    ));
    assert_eq!(console.list_conversations(200).await.unwrap().len(), before);

    // CUST-001 asks the AI to remember something in one conversation …
    let first = console
        .create_conversation_for(&me, Some("CUST-001"))
        .await
        .unwrap();
    assert_eq!(first.customer_id.as_deref(), Some("CUST-001"));
    console
        .chat(
            &me,
            &first.session_id,
            "Please remember that I prefer email",
        )
        .await
        .unwrap();
    // … and it is there in their next conversation (named by email).
    console
        .send_message_from(&me, "second-conv", "hello", Some("li.wei@example.com"))
        .await
        .unwrap();
    let panel = console.customer_panel("second-conv").await.unwrap();
    let profile = panel.profile.expect("a customer");
    assert_eq!(profile.customer.id, "CUST-001");
    assert_eq!(profile.memories.len(), 1, "{:?}", profile.memories);
    let fact = &profile.memories[0];
    assert!(fact.text.contains("email"), "{fact:?}");
    assert_eq!(fact.created_by.as_deref(), Some("ai"));
    assert!(profile.orders.iter().any(|o| o.id == "ORD-123"));
    assert!(profile
        .conversations
        .iter()
        .any(|c| c.session_id == first.session_id));

    // Another customer sees none of it.
    let other = console
        .create_conversation_for(&me, Some("CUST-002"))
        .await
        .unwrap();
    let panel = console.customer_panel(&other.session_id).await.unwrap();
    assert!(panel.profile.unwrap().memories.is_empty());

    // Forget: gone, audited, and a second forget is a 404.
    console
        .forget_memory(&me, "CUST-001", fact.id)
        .await
        .unwrap();
    assert!(console
        .customer_panel("second-conv")
        .await
        .unwrap()
        .profile
        .unwrap()
        .memories
        .is_empty());
    assert!(matches!(
        console.forget_memory(&me, "CUST-001", fact.id).await,
        Err(ServiceError::NotFound(_))
    ));
    let audit = console
        .db()
        .list_audit(&AuditQuery {
            limit: 10,
            before_id: None,
            actor: None,
            action_prefix: Some("customer.".into()),
        })
        .await
        .unwrap();
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0].action, "customer.forget");

    // A conversation without a customer that mentions ORD-123 proposes its
    // owner; setting it makes the profile.
    console
        .chat(&me, "anon", "Where is my order ord-123?")
        .await
        .unwrap();
    let panel = console.customer_panel("anon").await.unwrap();
    assert!(panel.profile.is_none());
    assert_eq!(panel.proposed.unwrap().id, "CUST-001");
    let panel = console.set_customer(&me, "anon", "CUST-001").await.unwrap();
    assert_eq!(panel.profile.unwrap().customer.id, "CUST-001");
}

#[sqlx::test(migrations = false)]
async fn customers_on_sqlite(pool: sqlx::SqlitePool) {
    customers_flow(console(Database::from(pool)).await).await;
}

#[sqlx::test(migrations = false)]
async fn customers_on_postgres(pool: sqlx::PgPool) {
    customers_flow(console(Database::Postgres(pool)).await).await;
}

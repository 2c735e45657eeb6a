//! What the service's integration tests share: a migrated, seeded database
//! with the two first-start accounts, the two users, an approval.
#![allow(dead_code, unused_macros, clippy::unwrap_used)]

use aics_db::Database;
use aics_types::{ApprovalDecision, Role, UserInfo};

/// The complaint about the late order ORD-123 that pauses for approval.
pub const CHAIN: &str = "订单ORD-123一直没收到，帮我查一下并创建投诉工单";

/// A migrated and seeded database with `supervisor` and `agent`.
pub async fn ready(db: Database) -> Database {
    db.migrate().await.unwrap();
    db.seed().await.unwrap();
    db.ensure_default_accounts(Some("supervisor-pass"), Some("agent-pass"))
        .await
        .unwrap();
    db
}

pub fn supervisor() -> UserInfo {
    UserInfo {
        username: "supervisor".into(),
        role: Role::Supervisor,
    }
}

pub fn agent() -> UserInfo {
    UserInfo {
        username: "agent".into(),
        role: Role::Agent,
    }
}

/// Approve as proposed.
pub fn approve() -> ApprovalDecision {
    ApprovalDecision {
        approve: true,
        reason: None,
        args: None,
        token: None,
    }
}

/// Declares each test `name(db)` of the file once per database, on the
/// file's own `ready` (`sqlite::name`, `postgres::name`).
macro_rules! on_both_databases {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[sqlx::test(migrations = false)]
                async fn $name(pool: sqlx::SqlitePool) {
                    super::$name(super::ready(aics_db::Database::from(pool)).await).await;
                }
            )*
        }
        mod postgres {
            $(
                #[sqlx::test(migrations = false)]
                async fn $name(pool: sqlx::PgPool) {
                    super::$name(super::ready(aics_db::Database::Postgres(pool)).await).await;
                }
            )*
        }
    };
}

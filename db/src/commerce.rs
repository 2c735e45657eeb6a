//! The demo company's business data, as the support tools read and write it:
//! customers, orders with their items and logistics events, tickets and
//! knowledge articles.

use aics_types::Timestamp;
use serde::Serialize;

use crate::{now, search, Database, DbError};

/// A customer, as an order shows it.
#[derive(Debug, Clone, PartialEq, Serialize, sqlx::FromRow)]
pub struct Customer {
    pub id: String,
    pub name: String,
    pub email: String,
    pub lang: String,
    pub tier: String,
}

/// One line of an order.
#[derive(Debug, Clone, PartialEq, Serialize, sqlx::FromRow)]
pub struct OrderItem {
    pub sku: String,
    pub name: String,
    pub quantity: i64,
    pub unit_price_cents: i64,
}

/// One scan or status change of a parcel.
#[derive(Debug, Clone, PartialEq, Serialize, sqlx::FromRow)]
pub struct LogisticsEvent {
    pub at: Timestamp,
    pub location: String,
    pub status: String,
    pub description: String,
    pub is_anomaly: bool,
}

/// An order row.
#[derive(Debug, Clone, PartialEq, Serialize, sqlx::FromRow)]
pub struct Order {
    pub id: String,
    pub customer_id: String,
    pub status: String,
    pub total_cents: i64,
    pub currency: String,
    pub carrier: Option<String>,
    pub tracking_number: Option<String>,
    pub shipping_address: String,
    pub placed_at: Timestamp,
    pub promised_by: Option<Timestamp>,
    pub delivered_at: Option<Timestamp>,
    pub anomaly: Option<String>,
}

/// An order with everything the tools show about it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OrderDetail {
    pub order: Order,
    pub customer: Customer,
    pub items: Vec<OrderItem>,
    /// Oldest first.
    pub events: Vec<LogisticsEvent>,
}

/// A support ticket.
#[derive(Debug, Clone, PartialEq, Serialize, sqlx::FromRow)]
pub struct Ticket {
    pub id: String,
    pub idempotency_key: String,
    pub order_id: Option<String>,
    pub customer_id: Option<String>,
    pub session_id: Option<String>,
    pub category: String,
    pub priority: String,
    pub status: String,
    pub summary: String,
    pub created_at: Timestamp,
}

/// What a new ticket says; `idempotency_key` is the tool-call id.
#[derive(Debug, Clone, PartialEq)]
pub struct NewTicket {
    pub idempotency_key: String,
    pub order_id: Option<String>,
    pub customer_id: Option<String>,
    pub session_id: Option<String>,
    pub category: String,
    pub priority: String,
    pub summary: String,
}

/// A knowledge article found by a search.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ArticleHit {
    pub id: i64,
    pub slug: String,
    pub title: String,
    pub lang: String,
    pub category: String,
    pub snippet: String,
}

#[derive(sqlx::FromRow)]
struct ArticleRow {
    id: i64,
    slug: String,
    title: String,
    lang: String,
    category: String,
    body: String,
}

const ORDER_COLUMNS: &str = "id, customer_id, status, total_cents, currency, carrier, \
     tracking_number, shipping_address, placed_at, promised_by, delivered_at, anomaly";

const TICKET_COLUMNS: &str = "id, idempotency_key, order_id, customer_id, session_id, category, \
     priority, status, summary, created_at";

impl Database {
    /// An order with its customer, items and logistics events.
    #[tracing::instrument(skip_all, fields(order_id))]
    pub async fn order_detail(&self, order_id: &str) -> Result<Option<OrderDetail>, DbError> {
        tracing::Span::current().record("order_id", order_id);
        let order_sql = format!("SELECT {ORDER_COLUMNS} FROM orders WHERE id = $1");
        let customer_sql = "SELECT id, name, email, lang, tier FROM customers WHERE id = $1";
        let items_sql = "SELECT sku, name, quantity, unit_price_cents FROM order_items \
                         WHERE order_id = $1 ORDER BY id";
        let events_sql = "SELECT at, location, status, description, is_anomaly \
                          FROM logistics_events WHERE order_id = $1 ORDER BY at, id";
        with_pool!(self, pool => {
            let Some(order) = sqlx::query_as::<_, Order>(&order_sql)
                .bind(order_id)
                .fetch_optional(pool)
                .await?
            else {
                return Ok(None);
            };
            let customer = sqlx::query_as::<_, Customer>(customer_sql)
                .bind(&order.customer_id)
                .fetch_one(pool)
                .await?;
            let items = sqlx::query_as::<_, OrderItem>(items_sql)
                .bind(order_id)
                .fetch_all(pool)
                .await?;
            let events = sqlx::query_as::<_, LogisticsEvent>(events_sql)
                .bind(order_id)
                .fetch_all(pool)
                .await?;
            Ok(Some(OrderDetail { order, customer, items, events }))
        })
    }

    /// One customer by id.
    #[tracing::instrument(skip_all, fields(customer_id))]
    pub async fn customer(&self, customer_id: &str) -> Result<Option<Customer>, DbError> {
        tracing::Span::current().record("customer_id", customer_id);
        Ok(with_pool!(self, pool => sqlx::query_as::<_, Customer>(
            "SELECT id, name, email, lang, tier FROM customers WHERE id = $1",
        )
        .bind(customer_id)
        .fetch_optional(pool)
        .await?))
    }

    /// Every customer, by id (the console's customer picker).
    #[tracing::instrument(skip_all)]
    pub async fn list_customers(&self) -> Result<Vec<Customer>, DbError> {
        Ok(with_pool!(self, pool => sqlx::query_as::<_, Customer>(
            "SELECT id, name, email, lang, tier FROM customers ORDER BY id",
        )
        .fetch_all(pool)
        .await?))
    }

    /// The orders of a customer, newest first.
    #[tracing::instrument(skip_all, fields(customer_id))]
    pub async fn orders_of_customer(&self, customer_id: &str) -> Result<Vec<Order>, DbError> {
        tracing::Span::current().record("customer_id", customer_id);
        let sql = format!(
            "SELECT {ORDER_COLUMNS} FROM orders WHERE customer_id = $1 ORDER BY placed_at DESC"
        );
        Ok(with_pool!(self, pool => sqlx::query_as::<_, Order>(&sql)
            .bind(customer_id)
            .fetch_all(pool)
            .await?))
    }

    /// Creates a ticket once per idempotency key: a second call with the same
    /// key returns the first ticket and writes nothing.
    #[tracing::instrument(skip_all, fields(key = %new.idempotency_key, category = %new.category))]
    pub async fn create_ticket(&self, new: &NewTicket) -> Result<Ticket, DbError> {
        if new.idempotency_key.is_empty() {
            return Err(DbError::InvalidInput(
                "a ticket needs an idempotency key".into(),
            ));
        }
        let id = format!(
            "TCK-{}",
            &uuid::Uuid::new_v4().simple().to_string()[..8].to_uppercase()
        );
        // ON CONFLICT DO NOTHING makes the insert and the check one atomic
        // step: two racing calls with the same key still make one row.
        let insert =
            "INSERT INTO tickets (id, idempotency_key, order_id, customer_id, session_id, \
                      category, priority, status, summary, created_at) \
                      VALUES ($1, $2, $3, $4, $5, $6, $7, 'open', $8, $9) \
                      ON CONFLICT (idempotency_key) DO NOTHING";
        let select = format!("SELECT {TICKET_COLUMNS} FROM tickets WHERE idempotency_key = $1");
        with_pool!(self, pool => {
            sqlx::query(insert)
                .bind(&id)
                .bind(&new.idempotency_key)
                .bind(&new.order_id)
                .bind(&new.customer_id)
                .bind(&new.session_id)
                .bind(&new.category)
                .bind(&new.priority)
                .bind(&new.summary)
                .bind(now())
                .execute(pool)
                .await?;
            Ok(sqlx::query_as::<_, Ticket>(&select)
                .bind(&new.idempotency_key)
                .fetch_one(pool)
                .await?)
        })
    }

    /// One ticket by its `TCK-…` id.
    #[tracing::instrument(skip_all, fields(ticket_id))]
    pub async fn ticket(&self, ticket_id: &str) -> Result<Option<Ticket>, DbError> {
        tracing::Span::current().record("ticket_id", ticket_id);
        let sql = format!("SELECT {TICKET_COLUMNS} FROM tickets WHERE id = $1");
        Ok(with_pool!(self, pool => sqlx::query_as::<_, Ticket>(&sql)
            .bind(ticket_id)
            .fetch_optional(pool)
            .await?))
    }

    /// Every ticket, newest first, optionally of one order.
    #[tracing::instrument(skip_all)]
    pub async fn list_tickets(&self, order_id: Option<&str>) -> Result<Vec<Ticket>, DbError> {
        let sql = format!(
            "SELECT {TICKET_COLUMNS} FROM tickets WHERE ($1 IS NULL OR order_id = $1) \
             ORDER BY created_at DESC, id"
        );
        Ok(with_pool!(self, pool => sqlx::query_as::<_, Ticket>(&sql)
            .bind(order_id)
            .fetch_all(pool)
            .await?))
    }

    /// Full-text search of the knowledge articles, best match first, in
    /// English or Chinese (see [`crate::search`]).
    #[tracing::instrument(skip_all, fields(backend = self.backend(), limit))]
    pub async fn search_knowledge(
        &self,
        query: &str,
        limit: u32,
    ) -> Result<Vec<ArticleHit>, DbError> {
        let terms = search::query_terms(query);
        if terms.is_empty() {
            return Ok(Vec::new());
        }
        let limit = i64::from(limit.clamp(1, 20));
        let rows: Vec<ArticleRow> = match self {
            Self::Sqlite(pool) => {
                // Terms hold only letters and digits, so quoting each one is
                // enough to keep FTS5 syntax out of the query.
                let fts_query = terms
                    .iter()
                    .map(|t| format!("\"{t}\""))
                    .collect::<Vec<_>>()
                    .join(" OR ");
                sqlx::query_as::<_, ArticleRow>(
                    "SELECT a.id, a.slug, a.title, a.lang, a.category, a.body \
                     FROM knowledge_fts f JOIN knowledge_articles a ON a.id = f.rowid \
                     WHERE knowledge_fts MATCH $1 ORDER BY bm25(knowledge_fts), a.id LIMIT $2",
                )
                .bind(fts_query)
                .bind(limit)
                .fetch_all(pool)
                .await?
            }
            Self::Postgres(pool) => {
                let ts_query = terms.join(" | ");
                sqlx::query_as::<_, ArticleRow>(
                    "SELECT id, slug, title, lang, category, body FROM knowledge_articles, \
                     to_tsquery('simple', $1) AS q WHERE search_tsv @@ q \
                     ORDER BY ts_rank(search_tsv, q) DESC, id LIMIT $2",
                )
                .bind(ts_query)
                .bind(limit)
                .fetch_all(pool)
                .await?
            }
        };
        Ok(rows
            .into_iter()
            .map(|r| ArticleHit {
                snippet: search::snippet(&r.body, &terms),
                id: r.id,
                slug: r.slug,
                title: r.title,
                lang: r.lang,
                category: r.category,
            })
            .collect())
    }
}

//! The demo company's business data, as the support tools read and write it:
//! customers, orders with their items and logistics events, tickets and
//! knowledge articles.

use aics_agent::tools::NewTicket;
use aics_types::{
    ArticleHit, Customer, LogisticsEvent, Order, OrderDetail, OrderItem, Ticket, Timestamp,
};

use crate::direct::{all, first, read_ts};
use crate::{now, search, Database, DbError};

// Rows as sqlx reads them, mapped to the shared types (which never derive
// sqlx traits).

#[derive(sqlx::FromRow)]
struct CustomerRow {
    id: String,
    name: String,
    email: String,
    lang: String,
    tier: String,
}

impl CustomerRow {
    /// A row of [`CUSTOMER_BY_ID`] on SQLite's direct connection.
    fn direct(row: &rusqlite::Row<'_>) -> Result<Self, DbError> {
        Ok(Self {
            id: row.get(0)?,
            name: row.get(1)?,
            email: row.get(2)?,
            lang: row.get(3)?,
            tier: row.get(4)?,
        })
    }
}

impl From<CustomerRow> for Customer {
    fn from(r: CustomerRow) -> Self {
        Self {
            id: r.id,
            name: r.name,
            email: r.email,
            lang: r.lang,
            tier: r.tier,
        }
    }
}

#[derive(sqlx::FromRow)]
struct OrderItemRow {
    sku: String,
    name: String,
    quantity: i64,
    unit_price_cents: i64,
}

impl OrderItemRow {
    fn direct(row: &rusqlite::Row<'_>) -> Result<Self, DbError> {
        Ok(Self {
            sku: row.get(0)?,
            name: row.get(1)?,
            quantity: row.get(2)?,
            unit_price_cents: row.get(3)?,
        })
    }
}

impl From<OrderItemRow> for OrderItem {
    fn from(r: OrderItemRow) -> Self {
        Self {
            sku: r.sku,
            name: r.name,
            quantity: r.quantity,
            unit_price_cents: r.unit_price_cents,
        }
    }
}

#[derive(sqlx::FromRow)]
struct LogisticsEventRow {
    at: Timestamp,
    location: String,
    status: String,
    description: String,
    is_anomaly: bool,
}

impl LogisticsEventRow {
    fn direct(row: &rusqlite::Row<'_>) -> Result<Self, DbError> {
        Ok(Self {
            at: read_ts(&row.get::<_, String>(0)?)?,
            location: row.get(1)?,
            status: row.get(2)?,
            description: row.get(3)?,
            is_anomaly: row.get(4)?,
        })
    }
}

impl From<LogisticsEventRow> for LogisticsEvent {
    fn from(r: LogisticsEventRow) -> Self {
        Self {
            at: r.at,
            location: r.location,
            status: r.status,
            description: r.description,
            is_anomaly: r.is_anomaly,
        }
    }
}

#[derive(sqlx::FromRow)]
struct OrderRow {
    id: String,
    customer_id: String,
    status: String,
    total_cents: i64,
    currency: String,
    carrier: Option<String>,
    tracking_number: Option<String>,
    shipping_address: String,
    placed_at: Timestamp,
    promised_by: Option<Timestamp>,
    delivered_at: Option<Timestamp>,
    anomaly: Option<String>,
}

impl OrderRow {
    /// A row of [`ORDER_BY_ID`] on SQLite's direct connection.
    fn direct(row: &rusqlite::Row<'_>) -> Result<Self, DbError> {
        let time = |i: usize| -> Result<Option<Timestamp>, DbError> {
            row.get::<_, Option<String>>(i)?
                .map(|t| read_ts(&t))
                .transpose()
        };
        Ok(Self {
            id: row.get(0)?,
            customer_id: row.get(1)?,
            status: row.get(2)?,
            total_cents: row.get(3)?,
            currency: row.get(4)?,
            carrier: row.get(5)?,
            tracking_number: row.get(6)?,
            shipping_address: row.get(7)?,
            placed_at: read_ts(&row.get::<_, String>(8)?)?,
            promised_by: time(9)?,
            delivered_at: time(10)?,
            anomaly: row.get(11)?,
        })
    }
}

impl From<OrderRow> for Order {
    fn from(r: OrderRow) -> Self {
        Self {
            id: r.id,
            customer_id: r.customer_id,
            status: r.status,
            total_cents: r.total_cents,
            currency: r.currency,
            carrier: r.carrier,
            tracking_number: r.tracking_number,
            shipping_address: r.shipping_address,
            placed_at: r.placed_at,
            promised_by: r.promised_by,
            delivered_at: r.delivered_at,
            anomaly: r.anomaly,
        }
    }
}

#[derive(sqlx::FromRow)]
pub(crate) struct TicketRow {
    id: String,
    idempotency_key: String,
    order_id: Option<String>,
    customer_id: Option<String>,
    session_id: Option<String>,
    category: String,
    priority: String,
    status: String,
    summary: String,
    created_at: Timestamp,
}

impl From<TicketRow> for Ticket {
    fn from(r: TicketRow) -> Self {
        Self {
            id: r.id,
            idempotency_key: r.idempotency_key,
            order_id: r.order_id,
            customer_id: r.customer_id,
            session_id: r.session_id,
            category: r.category,
            priority: r.priority,
            status: r.status,
            summary: r.summary,
            created_at: r.created_at,
        }
    }
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

/// An order's columns, in the order [`OrderRow::direct`] reads them (a
/// literal, so that the statements below are written from it once).
macro_rules! order_columns {
    () => {
        "id, customer_id, status, total_cents, currency, carrier, \
         tracking_number, shipping_address, placed_at, promised_by, delivered_at, anomaly"
    };
}
const ORDER_COLUMNS: &str = order_columns!();

const ORDER_BY_ID: &str = concat!("SELECT ", order_columns!(), " FROM orders WHERE id = $1");
const CUSTOMER_BY_ID: &str = "SELECT id, name, email, lang, tier FROM customers WHERE id = $1";
const ITEMS_OF_ORDER: &str = "SELECT sku, name, quantity, unit_price_cents FROM order_items \
     WHERE order_id = $1 ORDER BY id";
const EVENTS_OF_ORDER: &str = "SELECT at, location, status, description, is_anomaly \
     FROM logistics_events WHERE order_id = $1 ORDER BY at, id";

pub(crate) const TICKET_COLUMNS: &str =
    "id, idempotency_key, order_id, customer_id, session_id, category, \
     priority, status, summary, created_at";

impl Database {
    /// An order with its customer, items and logistics events.
    #[tracing::instrument(skip_all, fields(order_id))]
    pub async fn order_detail(&self, order_id: &str) -> Result<Option<OrderDetail>, DbError> {
        tracing::Span::current().record("order_id", order_id);
        match self {
            Self::Sqlite(sqlite) => {
                sqlite
                    .direct()?
                    .read(|tx| order_detail_direct(tx, order_id))
                    .await
            }
            Self::Postgres(pool) => {
                let Some(order) = sqlx::query_as::<_, OrderRow>(ORDER_BY_ID)
                    .bind(order_id)
                    .fetch_optional(pool)
                    .await?
                else {
                    return Ok(None);
                };
                let customer = sqlx::query_as::<_, CustomerRow>(CUSTOMER_BY_ID)
                    .bind(&order.customer_id)
                    .fetch_one(pool)
                    .await?;
                let items = sqlx::query_as::<_, OrderItemRow>(ITEMS_OF_ORDER)
                    .bind(order_id)
                    .fetch_all(pool)
                    .await?;
                let events = sqlx::query_as::<_, LogisticsEventRow>(EVENTS_OF_ORDER)
                    .bind(order_id)
                    .fetch_all(pool)
                    .await?;
                Ok(Some(OrderDetail {
                    order: order.into(),
                    customer: customer.into(),
                    items: items.into_iter().map(Into::into).collect(),
                    events: events.into_iter().map(Into::into).collect(),
                }))
            }
        }
    }

    /// One customer by id.
    #[tracing::instrument(skip_all, fields(customer_id))]
    pub async fn customer(&self, customer_id: &str) -> Result<Option<Customer>, DbError> {
        tracing::Span::current().record("customer_id", customer_id);
        let row = with_pool!(self, pool => sqlx::query_as::<_, CustomerRow>(CUSTOMER_BY_ID)
        .bind(customer_id)
        .fetch_optional(pool)
        .await?);
        Ok(row.map(Into::into))
    }

    /// Every customer, by id (the console's customer picker).
    #[tracing::instrument(skip_all)]
    pub async fn list_customers(&self) -> Result<Vec<Customer>, DbError> {
        let rows = with_pool!(self, pool => sqlx::query_as::<_, CustomerRow>(
            "SELECT id, name, email, lang, tier FROM customers ORDER BY id",
        )
        .fetch_all(pool)
        .await?);
        Ok(rows.into_iter().map(Into::into).collect())
    }

    /// The orders of a customer, newest first.
    #[tracing::instrument(skip_all, fields(customer_id))]
    pub async fn orders_of_customer(&self, customer_id: &str) -> Result<Vec<Order>, DbError> {
        tracing::Span::current().record("customer_id", customer_id);
        let sql = format!(
            "SELECT {ORDER_COLUMNS} FROM orders WHERE customer_id = $1 ORDER BY placed_at DESC"
        );
        let rows = with_pool!(self, pool => sqlx::query_as::<_, OrderRow>(&sql)
            .bind(customer_id)
            .fetch_all(pool)
            .await?);
        Ok(rows.into_iter().map(Into::into).collect())
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
            Ok(sqlx::query_as::<_, TicketRow>(&select)
                .bind(&new.idempotency_key)
                .fetch_one(pool)
                .await?
                .into())
        })
    }

    /// One ticket by its `TCK-…` id.
    #[tracing::instrument(skip_all, fields(ticket_id))]
    pub async fn ticket(&self, ticket_id: &str) -> Result<Option<Ticket>, DbError> {
        tracing::Span::current().record("ticket_id", ticket_id);
        let sql = format!("SELECT {TICKET_COLUMNS} FROM tickets WHERE id = $1");
        let row = with_pool!(self, pool => sqlx::query_as::<_, TicketRow>(&sql)
            .bind(ticket_id)
            .fetch_optional(pool)
            .await?);
        Ok(row.map(Into::into))
    }

    /// Every ticket, newest first, optionally of one order.
    #[tracing::instrument(skip_all)]
    pub async fn list_tickets(&self, order_id: Option<&str>) -> Result<Vec<Ticket>, DbError> {
        let sql = format!(
            "SELECT {TICKET_COLUMNS} FROM tickets WHERE ($1 IS NULL OR order_id = $1) \
             ORDER BY created_at DESC, id"
        );
        let rows = with_pool!(self, pool => sqlx::query_as::<_, TicketRow>(&sql)
            .bind(order_id)
            .fetch_all(pool)
            .await?);
        Ok(rows.into_iter().map(Into::into).collect())
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
            Self::Sqlite(sqlite) => {
                let pool = sqlite.pool();
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

/// [`Database::order_detail`] on SQLite's direct connection.
fn order_detail_direct(
    tx: &crate::direct::Tx<'_>,
    order_id: &str,
) -> Result<Option<OrderDetail>, DbError> {
    let Some(order) = first(tx, ORDER_BY_ID, [order_id], OrderRow::direct)? else {
        return Ok(None);
    };
    let customer = first(
        tx,
        CUSTOMER_BY_ID,
        [&order.customer_id],
        CustomerRow::direct,
    )?
    .ok_or_else(|| DbError::Corrupt(format!("order {order_id} names no known customer")))?;
    let items = all(tx, ITEMS_OF_ORDER, [order_id], |row| {
        OrderItemRow::direct(row).map(Into::into)
    })?;
    let events = all(tx, EVENTS_OF_ORDER, [order_id], |row| {
        LogisticsEventRow::direct(row).map(Into::into)
    })?;
    Ok(Some(OrderDetail {
        order: order.into(),
        customer: customer.into(),
        items,
        events,
    }))
}

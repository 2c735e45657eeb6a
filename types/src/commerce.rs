//! The demo company's business data as the support tools read and write it,
//! and as the console shows it: customers, orders with their items and
//! logistics events, tickets, knowledge articles.

use serde::{Deserialize, Serialize};

use crate::Timestamp;

/// A customer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Customer {
    pub id: String,
    pub name: String,
    pub email: String,
    /// Preferred language: `en` or `zh`.
    pub lang: String,
    pub tier: String,
}

/// One line of an order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OrderItem {
    pub sku: String,
    pub name: String,
    pub quantity: i64,
    pub unit_price_cents: i64,
}

/// One scan or status change of a parcel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LogisticsEvent {
    #[serde(deserialize_with = "crate::timestamp::deserialize")]
    pub at: Timestamp,
    pub location: String,
    /// `picked_up`, `in_transit`, `at_sorting_center`, `out_for_delivery`,
    /// `delivered`, `exception` or `returned`.
    pub status: String,
    pub description: String,
    pub is_anomaly: bool,
}

/// An amount in cents as a decimal string with two places: 12999 →
/// "129.99", -5 → "-0.05". Written from integers: no float formatting.
pub fn money(cents: i64) -> String {
    let sign = if cents < 0 { "-" } else { "" };
    let cents = cents.unsigned_abs();
    format!("{sign}{}.{:02}", cents / 100, cents % 100)
}

/// An order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Order {
    pub id: String,
    pub customer_id: String,
    /// `processing`, `shipped`, `in_transit`, `delayed`, `delivered`,
    /// `lost`, `refunded` or `cancelled`.
    pub status: String,
    pub total_cents: i64,
    pub currency: String,
    pub carrier: Option<String>,
    pub tracking_number: Option<String>,
    pub shipping_address: String,
    #[serde(deserialize_with = "crate::timestamp::deserialize")]
    pub placed_at: Timestamp,
    #[serde(default, deserialize_with = "crate::timestamp::option")]
    pub promised_by: Option<Timestamp>,
    #[serde(default, deserialize_with = "crate::timestamp::option")]
    pub delivered_at: Option<Timestamp>,
    /// A logistics anomaly in words, when one was recorded.
    pub anomaly: Option<String>,
}

/// An order with everything the tools show about it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OrderDetail {
    pub order: Order,
    pub customer: Customer,
    pub items: Vec<OrderItem>,
    /// Oldest first.
    pub events: Vec<LogisticsEvent>,
}

/// A support ticket.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Ticket {
    /// `TCK-…`.
    pub id: String,
    /// The tool-call id that created it: a re-run step finds the same ticket.
    pub idempotency_key: String,
    pub order_id: Option<String>,
    pub customer_id: Option<String>,
    pub session_id: Option<String>,
    /// `complaint`, `refund`, `inquiry` or `other`.
    pub category: String,
    /// `high` or `normal`.
    pub priority: String,
    pub status: String,
    pub summary: String,
    #[serde(deserialize_with = "crate::timestamp::deserialize")]
    pub created_at: Timestamp,
}

/// A knowledge article found by a search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ArticleHit {
    pub id: i64,
    pub slug: String,
    pub title: String,
    pub lang: String,
    pub category: String,
    /// The sentences around the best match.
    pub snippet: String,
}

#[cfg(test)]
mod tests {
    use super::money;

    #[test]
    fn money_has_two_decimals_and_its_sign() {
        assert_eq!(money(12999), "129.99");
        assert_eq!(money(5), "0.05");
        assert_eq!(money(0), "0.00");
        assert_eq!(money(-5), "-0.05");
        assert_eq!(money(-12999), "-129.99");
        assert_eq!(money(i64::MIN), "-92233720368547758.08");
    }
}

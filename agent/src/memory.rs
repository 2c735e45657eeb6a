//! Long-term memory: what a customer asked the agent to remember.
//!
//! The `memory_trigger` node stores memory instructions through a
//! [`MemoryStore`]; the `agent` node renders a customer's memories into the
//! system prompt of later turns.

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;

/// What can go wrong in a memory store.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    #[error("memory store failed: {0}")]
    Store(String),
}

/// Stores and recalls a customer's memories.
#[async_trait]
pub trait MemoryStore: Send + Sync {
    /// Stores one memory; storing the same text twice keeps one.
    async fn remember(&self, customer_id: &str, text: &str) -> Result<(), MemoryError>;

    /// The customer's memories, oldest first.
    async fn recall(&self, customer_id: &str) -> Result<Vec<String>, MemoryError>;
}

/// Memories in memory, for tests and benchmarks.
#[derive(Debug, Default)]
pub struct InMemoryMemoryStore {
    by_customer: Mutex<HashMap<String, Vec<String>>>,
}

#[async_trait]
impl MemoryStore for InMemoryMemoryStore {
    async fn remember(&self, customer_id: &str, text: &str) -> Result<(), MemoryError> {
        let mut map = self.by_customer.lock().unwrap_or_else(|e| e.into_inner());
        let list = map.entry(customer_id.to_owned()).or_default();
        if !list.iter().any(|t| t == text) {
            list.push(text.to_owned());
        }
        Ok(())
    }

    async fn recall(&self, customer_id: &str) -> Result<Vec<String>, MemoryError> {
        let map = self.by_customer.lock().unwrap_or_else(|e| e.into_inner());
        Ok(map.get(customer_id).cloned().unwrap_or_default())
    }
}

//! [`StepReads`]: what the calls of one `tools` step read, shared by them.
//!
//! Models often ask about one order with several tools in one step
//! (`order_query` and `logistics_track` together, or an order and a ticket
//! about it). Each used to read the order from the store: four queries for
//! the order, its customer, its items and its events, the same rows twice
//! (5 % of a chat turn's CPU, BENCHMARKS.md round 37). The `tools` node
//! makes one `StepReads` per step and hands it to every call of the step
//! in its [`crate::tool::ToolContext`]: the first call that reads an order
//! keeps it, the others of the step take the same one, so they also agree
//! on what they saw. The next step reads afresh; nothing is kept across
//! steps or turns, where the order may have changed.

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use aics_types::OrderDetail;

use super::backend::{BackendError, SupportBackend};

/// The orders one step's calls have read (see the module's docs). Cheap to
/// clone: clones share what was read.
#[derive(Clone, Default)]
pub struct StepReads {
    orders: Arc<Mutex<Kept>>,
}

/// Each order read, under the id it was asked for.
type Kept = Vec<(String, Arc<OrderDetail>)>;

impl StepReads {
    /// The order `order_id` (normalised, e.g. `ORD-123`) as this step first
    /// read it, else read from `backend` now and kept for the step's other
    /// calls. Calls that run at the same time may each miss and read it;
    /// one order without a row (`None`) or a failed read is not kept.
    pub async fn order(
        &self,
        backend: &dyn SupportBackend,
        order_id: &str,
    ) -> Result<Option<Arc<OrderDetail>>, BackendError> {
        if let Some(kept) = self.kept(order_id) {
            return Ok(Some(kept));
        }
        let Some(detail) = backend.order(order_id).await? else {
            return Ok(None);
        };
        let detail = Arc::new(detail);
        if self.kept(order_id).is_none() {
            self.lock().push((order_id.to_owned(), Arc::clone(&detail)));
        }
        Ok(Some(detail))
    }

    fn kept(&self, order_id: &str) -> Option<Arc<OrderDetail>> {
        let orders = self.lock();
        orders
            .iter()
            .find(|(id, _)| id == order_id)
            .map(|(_, detail)| Arc::clone(detail))
    }

    fn lock(&self) -> MutexGuard<'_, Kept> {
        self.orders.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Who and what a call is for does not depend on what its step read: two
/// contexts compare equal whatever their reads hold.
impl PartialEq for StepReads {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for StepReads {}

impl fmt::Debug for StepReads {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StepReads")
            .field("orders", &self.lock().len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::FakeBackend;

    #[tokio::test]
    async fn a_step_reads_an_order_once_and_the_next_step_afresh() {
        let store = FakeBackend::default();
        let step = StepReads::default();
        let first = step.order(&store, "ORD-123").await.unwrap().unwrap();
        // Another call of the step, through its own clone of the context.
        let second = step
            .clone()
            .order(&store, "ORD-123")
            .await
            .unwrap()
            .unwrap();
        assert!(
            Arc::ptr_eq(&first, &second),
            "the step's calls share one read"
        );
        assert_eq!(store.order_reads(), 1);
        step.order(&store, "ORD-456").await.unwrap().unwrap();
        assert_eq!(store.order_reads(), 2, "another order is read");

        let next = StepReads::default();
        next.order(&store, "ORD-123").await.unwrap().unwrap();
        assert_eq!(store.order_reads(), 3, "a new step reads again");
    }

    #[tokio::test]
    async fn an_order_without_a_row_is_read_each_time() {
        let store = FakeBackend::default();
        let step = StepReads::default();
        assert!(step.order(&store, "ORD-2").await.unwrap().is_none());
        assert!(step.order(&store, "ORD-2").await.unwrap().is_none());
        assert_eq!(store.order_reads(), 2);
    }

    #[tokio::test]
    async fn reads_do_not_make_contexts_differ() {
        let full = StepReads::default();
        full.order(&FakeBackend::default(), "ORD-123")
            .await
            .unwrap();
        assert_eq!(full, StepReads::default());
        assert_eq!(format!("{full:?}"), "StepReads { orders: 1 }");
    }
}

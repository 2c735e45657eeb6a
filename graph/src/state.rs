//! What a graph's state type declares.

use serde::de::DeserializeOwned;
use serde::Serialize;

/// The state a graph runs over. It is checkpointed as JSON after every node,
/// so it is `Serialize + DeserializeOwned`; every field added later needs a
/// default so that old checkpoints still read.
///
/// ```
/// use aics_graph::State;
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize)]
/// struct Review { text: String, verdict: Option<bool> }
///
/// impl State for Review {
///     /// A person's answer to an interrupt: approve or not.
///     type Resume = bool;
///     /// Nothing is reported while nodes run.
///     type Progress = ();
/// }
/// ```
pub trait State: Serialize + DeserializeOwned + Send + Sync + 'static {
    /// What a paused node receives, per interrupt id, when the run resumes.
    type Resume: Serialize + DeserializeOwned + Clone + Send + Sync + 'static;
    /// What nodes report while they run ([`crate::NodeContext::progress`]):
    /// streamed tokens, tool calls starting and ending, …
    type Progress: Send + 'static;
}

//! Tools: what the `tools` node runs for the model.
//!
//! A tool is anything that implements [`Tool`]. Most tools are written as a
//! [`TypedTool`], whose argument type derives `Deserialize` and
//! `JsonSchema`: the schema the model sees is derived from it, and the
//! arguments are validated by deserialising into it before the tool runs.
//! [`ToolRegistry`] holds the tools a graph may call.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::model::ToolSpec;
use crate::tools::StepReads;

/// The text of a tool's result as the model reads it: a string as it is,
/// anything else as JSON. sonic-rs writes the text serde_json writes (a
/// test below holds it to that) but finds the characters to escape with
/// SIMD: a result is mostly strings, and writing it was the costliest part
/// of a tool call after the tool itself.
pub fn result_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        // A `Value` always serialises.
        other => sonic_rs::to_string(other).unwrap_or_default(),
    }
}

/// Who and what a tool call is for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolContext {
    pub session_id: String,
    /// The customer of the conversation, when known.
    pub customer_id: Option<String>,
    /// Where the turn's message came from: on the customer channel the
    /// order tools answer only for `customer_id`'s orders, without personal data.
    pub channel: crate::support::Channel,
    pub graph_execution_id: String,
    /// The tool-call id: tools with side effects use it as their idempotency
    /// key, because a step resumed after an interrupt may run again.
    pub tool_call_id: String,
    /// What the calls of this step read, shared by them (an order asked
    /// about by two tools is read once); each step makes its own.
    pub reads: StepReads,
}

/// What can go wrong in a tool call. The `tools` node turns every variant
/// into an error result that the model sees; none of them ends the turn.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ToolError {
    /// The arguments do not match the tool's schema.
    #[error("invalid arguments: {0}")]
    InvalidArguments(String),
    /// The thing asked for does not exist (an unknown order id, say).
    #[error("not found: {0}")]
    NotFound(String),
    /// The model asked for a tool that is not registered.
    #[error("unknown tool: {0}")]
    UnknownTool(String),
    /// The tool did not finish in time.
    #[error("the tool timed out after {0} ms")]
    Timeout(u64),
    /// The tool failed (its store was unreachable, say).
    #[error("the tool failed: {0}")]
    Failed(String),
}

/// A tool the model can call.
#[async_trait]
pub trait Tool: Send + Sync {
    /// The name the model calls it by, e.g. `order_query`.
    fn name(&self) -> &str;

    /// What it does, for the model.
    fn description(&self) -> &str;

    /// A JSON schema of its arguments object.
    fn parameters(&self) -> Value;

    /// Runs the call.
    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<Value, ToolError>;

    /// The tool as the model is told of it.
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.name().to_owned(),
            description: self.description().to_owned(),
            parameters: self.parameters(),
        }
    }
}

/// A tool with a typed argument struct; implements [`Tool`] for you.
///
/// ```
/// use aics_agent::tool::{Tool, ToolContext, ToolError, TypedTool};
/// use async_trait::async_trait;
/// use schemars::JsonSchema;
/// use serde::Deserialize;
/// use serde_json::{json, Value};
///
/// #[derive(Deserialize, JsonSchema)]
/// struct Args { order_id: String }
///
/// struct OrderQuery;
///
/// #[async_trait]
/// impl TypedTool for OrderQuery {
///     type Args = Args;
///     const NAME: &'static str = "order_query";
///     const DESCRIPTION: &'static str = "Look up an order by id.";
///     async fn run(&self, _ctx: &ToolContext, args: Args) -> Result<Value, ToolError> {
///         Ok(json!({ "order_id": args.order_id, "status": "delayed" }))
///     }
/// }
///
/// # futures::executor::block_on(async {
/// let ctx = ToolContext::default();
/// let ok = OrderQuery.call(&ctx, json!({"order_id": "ORD-123"})).await.unwrap();
/// assert_eq!(ok["status"], "delayed");
/// let bad = OrderQuery.call(&ctx, json!({"id": 1})).await;
/// assert!(matches!(bad, Err(ToolError::InvalidArguments(_))));
/// assert_eq!(OrderQuery.parameters()["properties"]["order_id"]["type"], "string");
/// # });
/// ```
#[async_trait]
pub trait TypedTool: Send + Sync {
    type Args: DeserializeOwned + JsonSchema + Send;
    const NAME: &'static str;
    const DESCRIPTION: &'static str;

    async fn run(&self, ctx: &ToolContext, args: Self::Args) -> Result<Value, ToolError>;
}

/// Parses arguments into a tool's argument type, with a clear error.
pub fn parse_args<A: DeserializeOwned>(args: Value) -> Result<A, ToolError> {
    serde_json::from_value(args).map_err(|e| ToolError::InvalidArguments(e.to_string()))
}

/// The JSON schema of an argument type, as models expect it.
pub fn schema_of<A: JsonSchema>() -> Value {
    let mut schema = serde_json::to_value(schemars::schema_for!(A)).unwrap_or(Value::Null);
    if let Some(obj) = schema.as_object_mut() {
        obj.remove("$schema");
        obj.remove("title");
    }
    schema
}

#[async_trait]
impl<T: TypedTool> Tool for T {
    fn name(&self) -> &str {
        T::NAME
    }

    fn description(&self) -> &str {
        T::DESCRIPTION
    }

    fn parameters(&self) -> Value {
        schema_of::<T::Args>()
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<Value, ToolError> {
        let args = parse_args::<T::Args>(args)?;
        self.run(ctx, args).await
    }
}

/// The tools a graph may call, by name.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: BTreeMap<String, Arc<dyn Tool>>,
    /// Their specs, made when a tool is registered: a typed tool's schema
    /// is generated by schemars, which cost more than the rest of a demo
    /// model's call when it was done for every call. Shared by every
    /// request made with them: copying the schemas for each model call was
    /// 1.5 % of the server's CPU under load (BENCHMARKS.md, round 27).
    specs: Arc<[ToolSpec]>,
}

impl ToolRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a tool, replacing one of the same name.
    pub fn register(&mut self, tool: Arc<dyn Tool>) -> &mut Self {
        self.tools.insert(tool.name().to_owned(), tool);
        self.specs = self.tools.values().map(|t| t.spec()).collect();
        self
    }

    /// Adds a tool; for building a registry in one expression.
    pub fn with(mut self, tool: impl Tool + 'static) -> Self {
        self.register(Arc::new(tool));
        self
    }

    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.get(name)
    }

    /// The specs of every tool, sorted by name.
    pub fn specs(&self) -> Arc<[ToolSpec]> {
        Arc::clone(&self.specs)
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.keys().map(String::as_str)
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.tools.keys()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A result reads as serde_json writes it: escapes, control and
    /// non-ASCII characters, nesting, numbers at the edges; a string as
    /// it is.
    #[test]
    fn a_result_is_written_as_serde_json_writes_it() {
        let result = json!({
            "order": {"id": "ORD-1", "note": "a \"quoted\"\\ path\n\t\u{1}\u{7f}é😀</script>"},
            "items": [{"sku": "S", "quantity": 2, "price": "59.00"}],
            "numbers": [0, -1, 1.5, 1e300, u64::MAX, i64::MIN, 0.1],
            "nothing": null,
            "yes": true,
        });
        assert_eq!(
            result_text(&result),
            serde_json::to_string(&result).expect("serde_json")
        );
        assert_eq!(result_text(&json!("plain \"text\"")), "plain \"text\"");
    }
}

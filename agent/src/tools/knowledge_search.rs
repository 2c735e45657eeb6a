//! `knowledge_search`: full-text search of the FAQ and policy articles, in
//! English and Chinese.

use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::backend::SupportBackend;
use super::check_text;
use crate::tool::{ToolContext, ToolError, TypedTool};

/// How many articles a search returns.
const SEARCH_LIMIT: u32 = 5;

/// `knowledge_search`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    /// What to look for, in English or Chinese, e.g. "refund policy" or "退货".
    pub query: String,
}

/// Searches the knowledge base.
pub struct KnowledgeSearch(pub Arc<dyn SupportBackend>);

#[async_trait]
impl TypedTool for KnowledgeSearch {
    type Args = SearchArgs;
    const NAME: &'static str = "knowledge_search";
    const DESCRIPTION: &'static str =
        "Search the FAQ and policy articles (shipping, returns, refunds, \
         complaints, escalation) in English or Chinese; returns the best matches with a snippet.";

    async fn run(&self, _ctx: &ToolContext, args: SearchArgs) -> Result<Value, ToolError> {
        let query = check_text("query", &args.query)?;
        let hits = self.0.search_knowledge(&query, SEARCH_LIMIT).await?;
        Ok(json!({
            "query": query,
            "articles": hits.iter().map(|h| json!({
                "id": h.slug,
                "title": h.title,
                "snippet": h.snippet,
                "lang": h.lang,
                "category": h.category,
            })).collect::<Vec<_>>(),
        }))
    }
}

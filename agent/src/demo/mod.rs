//! The demo model: deterministic, offline, the default provider.
//!
//! [`DemoModel`] reads the conversation and plans like a competent support
//! agent of the demo company: it looks up the orders the customer names, or
//! the one "it" meant earlier in the conversation, tracks the parcel when
//! asked where it is, opens a complaint or refund ticket (both wait for a
//! supervisor), searches the help center for policy questions, and hands
//! over to a person on request. It answers only from the tool results it
//! received, in the customer's language, asks one clarifying question when
//! an order is unknown or "it" could be several, and streams its answer word
//! by word (Chinese: two characters at a time) with a configurable delay.
//!
//! It speaks both planning protocols: native tool calls when tools are
//! bound, and the JSON plan as text when the system prompt asks for one
//! ([`crate::support::prompt::PLAN_MARKER`]).
//!
//! # Layout
//! - this file: [`DemoModel`], [`DemoConfig`], the [`ChatModel`] impl.
//! - [`read`]: what the request says — the customer's message and language,
//!   the order or ticket named earlier, this turn's tool results, memories.
//! - [`plan`]: which tools to call next.
//! - [`reply`]: what to answer, with one voice per language (`reply/en.rs`,
//!   `reply/zh.rs`, and `reply/carrier_zh.rs` for the carriers' English).
//! - [`faults`]: [`DemoFaults`], the injected failures (`[fault:…]` markers).
//! - [`stream`]: the answer as stream tokens, and the token usage.

mod faults;
mod plan;
mod read;
mod reply;
mod stream;

use std::time::Duration;

use async_trait::async_trait;
use futures::stream::{self as futures_stream, StreamExt};
use serde_json::{json, Value};

pub use faults::DemoFaults;
pub use stream::tokenize;

use crate::model::{ChatModel, FinishReason, ModelChunk, ModelError, ModelRequest, ModelStream};
use read::Reading;
use reply::Company;

/// How the demo model behaves.
#[derive(Debug, Clone, PartialEq)]
pub struct DemoConfig {
    /// The pause between streamed tokens (about 20 ms reads naturally in
    /// the UI; 0 for benchmarks and tests).
    pub token_delay: Duration,
    /// Faults injected into every call.
    pub faults: DemoFaults,
    /// Whether `[fault:…]` markers in a message inject faults.
    pub message_faults: bool,
    /// How long the timeout fault stays silent before it reports a timeout
    /// (short, so end-to-end tests through the UI do not wait a minute).
    pub stall: Duration,
    /// The company name used in English greetings.
    pub company: String,
    /// The company name used in Chinese greetings.
    pub company_zh: String,
}

impl Default for DemoConfig {
    fn default() -> Self {
        Self {
            token_delay: Duration::from_millis(20),
            faults: DemoFaults::default(),
            message_faults: false,
            stall: Duration::from_secs(3),
            company: "Northwind Gadgets".into(),
            company_zh: "北风数码".into(),
        }
    }
}

/// The deterministic offline model.
#[derive(Debug, Clone, Default)]
pub struct DemoModel {
    config: DemoConfig,
}

impl DemoModel {
    pub fn new(config: DemoConfig) -> Self {
        Self { config }
    }

    /// The demo model without token delay (tests, benchmarks).
    pub fn instant() -> Self {
        Self::new(DemoConfig {
            token_delay: Duration::ZERO,
            ..DemoConfig::default()
        })
    }

    pub fn config(&self) -> &DemoConfig {
        &self.config
    }

    /// The chunks of one response, without pacing or faults after planning.
    fn respond(&self, r: &Reading, faults: DemoFaults) -> (Vec<ModelChunk>, FinishReason) {
        let calls = plan::next_calls(r, faults);
        let answer = || {
            let company = Company {
                en: &self.config.company,
                zh: &self.config.company_zh,
            };
            reply::compose(r, company)
        };
        match (calls.first(), r.plan_mode) {
            (Some(_), false) => {
                let chunks = calls
                    .into_iter()
                    .enumerate()
                    .map(|(index, call)| ModelChunk::ToolCallDelta {
                        index,
                        id: Some(format!("call_{}", uuid::Uuid::new_v4().simple())),
                        name: Some(call.name),
                        arguments: call.arguments,
                    })
                    .collect();
                (chunks, FinishReason::ToolCalls)
            }
            (Some(call), true) => {
                // The JSON plan names one tool per step: the first one.
                let input: Value = serde_json::from_str(&call.arguments)
                    .unwrap_or_else(|_| Value::String(call.arguments.clone()));
                let plan =
                    json!({"action": "call_tool", "toolName": call.name, "toolInput": input})
                        .to_string();
                let chunks = tokenize(&plan).into_iter().map(ModelChunk::Text).collect();
                (chunks, FinishReason::Stop)
            }
            (None, true) => {
                let plan = r#"{"action":"respond","toolName":"","toolInput":""}"#;
                (vec![ModelChunk::Text(plan.into())], FinishReason::Stop)
            }
            (None, _) => {
                let chunks = tokenize(&answer())
                    .into_iter()
                    .map(ModelChunk::Text)
                    .collect();
                (chunks, FinishReason::Stop)
            }
        }
    }
}

#[async_trait]
impl ChatModel for DemoModel {
    fn name(&self) -> String {
        "demo".into()
    }

    async fn stream(&self, request: ModelRequest) -> Result<ModelStream, ModelError> {
        let r = Reading::new(&request);
        let mut faults = self.config.faults;
        if self.config.message_faults {
            faults = faults.or(DemoFaults::from_message(&r.message));
        }
        if faults.timeout {
            return Ok(faults::stall(self.config.stall));
        }
        let (chunks, finish) = self.respond(&r, faults);
        let items: Vec<Result<ModelChunk, ModelError>> = if faults.error {
            faults::fail_midway(chunks)
        } else {
            let usage = stream::usage(&request, chunks.len());
            chunks
                .into_iter()
                .chain([ModelChunk::Usage(usage), ModelChunk::Finish(finish)])
                .map(Ok)
                .collect()
        };
        let delay = self.config.token_delay;
        if delay.is_zero() {
            return Ok(futures_stream::iter(items).boxed());
        }
        Ok(futures_stream::iter(items)
            .then(move |item| async move {
                if matches!(item, Ok(ModelChunk::Text(_))) {
                    tokio::time::sleep(delay).await;
                }
                item
            })
            .boxed())
    }
}

#[cfg(test)]
mod tests;

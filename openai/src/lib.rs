//! aics's real LLM provider: any OpenAI-compatible chat-completions endpoint
//! (OpenAI, DeepSeek, Qwen's compatible mode, Ollama, vLLM, llama.cpp's
//! server), streamed, as an [`aics_agent::model::ChatModel`].
//!
//! The engine hands [`OpenAiCompatible`] a [`aics_agent::model::ModelRequest`]
//! and reads back [`aics_agent::model::ModelChunk`]s: text, reasoning,
//! tool-call deltas by index, usage and the finish reason. The provider is
//! lenient about what these servers vary on, strict about time (connect,
//! first-token, idle and total timeouts), retries only what is safe to retry
//! (connection errors, 429 and 5xx before anything was streamed), and never
//! lets its API key reach a log, an error or the browser.
//!
//! # Layout
//! - [`config`]: [`OpenAiConfig`] (endpoint, key, model, timeouts, retries,
//!   tool protocol, price), [`ProviderConfig`] (`kind = "demo" | "openai"`)
//!   and [`ProvidersConfig`] (several named providers, one active), all
//!   deserializable from TOML.
//! - [`provider`]: [`OpenAiCompatible`], the HTTP call with its retries and
//!   timeouts and the stream of chunks.
//! - `request`: the JSON body of a call in OpenAI's shape.
//! - `decode`: lenient parsing of one streamed chunk into model chunks.
//! - [`error`]: [`OpenAiError`], why a provider could not be built, and the
//!   summary of a server's error body.
//! - [`redact`]: what of a provider may be shown: [`redact_url`] (no
//!   userinfo, query or fragment) and the masking of its secrets, which
//!   every error, log line and trace of this crate passes through.
#![forbid(unsafe_code)]

pub mod config;
mod decode;
pub mod error;
pub mod provider;
pub mod redact;
mod request;

pub use config::{OpenAiConfig, Price, ProviderConfig, ProvidersConfig, RetryPolicy, Timeouts};
pub use error::OpenAiError;
pub use provider::OpenAiCompatible;
pub use redact::{redact_url, redact_urls};

//! The provider registry: every configured model provider, built once at
//! start-up (name → model, kind, model name, protocol, price), one of them
//! the default that answers live turns (`llm.provider`); `demo` is always
//! there. Forks may run on any of them (`service/src/studio.rs`).
//!
//! Each OpenAI-compatible provider is probed once, in the background, after
//! start-up: `GET {base}/models` with a short timeout. The outcome
//! (reachable, and whether the configured model is listed, or unreachable
//! and why) is logged and kept for `GET /api/providers`. Nothing here
//! holds or prints a secret: the API key is sent only with the probe and
//! base URLs are shown without user info or query.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use aics_agent::demo::{DemoConfig, DemoModel};
use aics_agent::model::ChatModel;
use aics_openai::{OpenAiCompatible, OpenAiConfig, ProviderConfig};
use aics_types::{ChatTurnTraceResult, ModelPrice, ProviderInfo, Reachability, Timestamp};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, AUTHORIZATION};

use crate::{ConsoleConfig, ServiceError};

/// How long the start-up probe of one provider may take.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// One configured provider and its built model.
pub(crate) struct Provider {
    pub(crate) name: String,
    pub(crate) config: ProviderConfig,
    pub(crate) model: Arc<dyn ChatModel>,
    probe: RwLock<Probe>,
}

/// What the start-up probe found.
#[derive(Debug, Clone, PartialEq)]
pub struct Probe {
    pub reachability: Reachability,
    pub reason: Option<String>,
    pub model_listed: Option<bool>,
    pub checked_at: Option<Timestamp>,
}

impl Probe {
    fn unknown() -> Self {
        Self {
            reachability: Reachability::Unknown,
            reason: None,
            model_listed: None,
            checked_at: None,
        }
    }

    fn unreachable(reason: String) -> Self {
        Self {
            reachability: Reachability::Unreachable,
            reason: Some(reason),
            model_listed: None,
            checked_at: Some(chrono::Utc::now()),
        }
    }
}

impl Provider {
    /// `demo` or `openai`.
    pub(crate) fn kind(&self) -> &'static str {
        match self.config {
            ProviderConfig::Demo => "demo",
            ProviderConfig::Openai(_) => "openai",
        }
    }

    /// Prices the trace and each of its LLM calls with this provider's
    /// price table (none when the price is unknown).
    pub(crate) fn price(&self, trace: &mut ChatTurnTraceResult) {
        trace.cost_usd = self.config.cost_usd(&trace.usage);
        for call in &mut trace.llm_call_records {
            call.cost_usd = self.config.cost_usd(&call.usage);
        }
    }

    fn info(&self, is_default: bool) -> ProviderInfo {
        let probe = match &self.config {
            ProviderConfig::Demo => Probe {
                reachability: Reachability::Demo,
                ..Probe::unknown()
            },
            ProviderConfig::Openai(_) => self
                .probe
                .read()
                .map(|p| p.clone())
                .unwrap_or_else(|_| Probe::unknown()),
        };
        let (base_url, price) = match &self.config {
            ProviderConfig::Demo => (
                None,
                Some(ModelPrice {
                    prompt_per_1k: 0.0,
                    completion_per_1k: 0.0,
                }),
            ),
            ProviderConfig::Openai(c) => (
                Some(public_url(&c.base_url)),
                c.price.map(|p| ModelPrice {
                    prompt_per_1k: p.prompt_per_1k,
                    completion_per_1k: p.completion_per_1k,
                }),
            ),
        };
        ProviderInfo {
            name: self.name.clone(),
            kind: self.kind().into(),
            model: self.model.name(),
            is_default,
            protocol: self.config.protocol().as_str().into(),
            base_url,
            price,
            reachability: probe.reachability,
            reason: probe.reason,
            model_listed: probe.model_listed,
            checked_at: probe.checked_at,
        }
    }
}

/// Every configured provider by name, and the default's name.
pub(crate) struct Providers {
    default: Arc<Provider>,
    by_name: BTreeMap<String, Arc<Provider>>,
}

impl Providers {
    /// Builds every provider of `config`: the default (`provider_name`,
    /// `provider`), each of `providers`, and `demo` when none is named so.
    pub(crate) fn build(config: &ConsoleConfig) -> Result<Self, ServiceError> {
        let mut configs = config.providers.clone();
        configs.insert(config.provider_name.clone(), config.provider.clone());
        configs.entry("demo".into()).or_insert(ProviderConfig::Demo);
        let mut by_name = BTreeMap::new();
        for (name, provider) in configs {
            let model = build_model(config, &name, &provider)?;
            by_name.insert(
                name.clone(),
                Arc::new(Provider {
                    name,
                    config: provider,
                    model,
                    probe: RwLock::new(Probe::unknown()),
                }),
            );
        }
        let default = by_name
            .get(&config.provider_name)
            .cloned()
            .ok_or_else(|| ServiceError::Internal("the default provider was not built".into()))?;
        Ok(Self { default, by_name })
    }

    /// The provider of live turns.
    pub(crate) fn default_provider(&self) -> &Arc<Provider> {
        &self.default
    }

    /// The provider named `name`; 400 naming the configured ones otherwise.
    pub(crate) fn named(&self, name: &str) -> Result<&Arc<Provider>, ServiceError> {
        self.by_name.get(name).ok_or_else(|| {
            let known: Vec<&str> = self.by_name.keys().map(String::as_str).collect();
            ServiceError::Invalid(format!(
                "there is no provider named {name:?} (configured: {})",
                known.join(", ")
            ))
        })
    }

    /// The provider whose model is `model` (as traces record it), the
    /// default first; the default when none is.
    pub(crate) fn answering(&self, model: &str) -> &Arc<Provider> {
        if self.default.model.name() == model {
            return &self.default;
        }
        self.by_name
            .values()
            .find(|p| p.model.name() == model)
            .unwrap_or(&self.default)
    }

    /// Prices a fork's trace call by call: each LLM call at the price of
    /// the provider whose model made it (the calls a fork inherited from
    /// its source turn were the turn's model's), none when no configured
    /// provider has that model; the trace's cost is their sum, known when
    /// every call's is. A trace with no call is priced by `ran_on`.
    pub(crate) fn price_fork(&self, ran_on: &Provider, trace: &mut ChatTurnTraceResult) {
        if trace.llm_call_records.is_empty() {
            ran_on.price(trace);
            return;
        }
        for call in &mut trace.llm_call_records {
            let by = if ran_on.model.name() == call.model {
                Some(ran_on)
            } else {
                self.by_name
                    .values()
                    .find(|p| p.model.name() == call.model)
                    .map(Arc::as_ref)
            };
            call.cost_usd = by.and_then(|p| p.config.cost_usd(&call.usage));
        }
        trace.cost_usd = trace.llm_call_records.iter().map(|c| c.cost_usd).sum();
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &Arc<Provider>> {
        self.by_name.values()
    }

    /// Every provider, by name, with its probe's outcome.
    pub(crate) fn infos(&self) -> Vec<ProviderInfo> {
        self.by_name
            .values()
            .map(|p| p.info(Arc::ptr_eq(p, &self.default)))
            .collect()
    }

    /// Probes every OpenAI-compatible provider once, each in a task of its
    /// own, so start-up does not wait for a slow or dead server.
    pub(crate) fn start_probes(&self) {
        for provider in self.by_name.values() {
            let ProviderConfig::Openai(config) = &provider.config else {
                continue;
            };
            let provider = provider.clone();
            let config = config.clone();
            tokio::spawn(async move {
                let probe = probe(&config, PROBE_TIMEOUT).await;
                match probe.reachability {
                    Reachability::Reachable => tracing::info!(
                        provider = %provider.name,
                        model = %config.model,
                        model_listed = ?probe.model_listed,
                        "provider reachable"
                    ),
                    _ => tracing::warn!(
                        provider = %provider.name,
                        base_url = %public_url(&config.base_url),
                        reason = probe.reason.as_deref().unwrap_or(""),
                        "provider unreachable"
                    ),
                }
                if let Ok(mut slot) = provider.probe.write() {
                    *slot = probe;
                }
            });
        }
    }
}

/// The model of one provider: the demo model with the console's demo
/// settings, or the OpenAI-compatible client.
fn build_model(
    config: &ConsoleConfig,
    name: &str,
    provider: &ProviderConfig,
) -> Result<Arc<dyn ChatModel>, ServiceError> {
    Ok(match provider {
        ProviderConfig::Demo => Arc::new(DemoModel::new(DemoConfig {
            token_delay: config.demo_token_delay,
            message_faults: config.demo_faults,
            ..DemoConfig::default()
        })),
        ProviderConfig::Openai(openai) => {
            Arc::new(OpenAiCompatible::new(openai.clone()).map_err(|e| {
                ServiceError::Invalid(format!("the OpenAI-compatible provider {name:?}: {e}"))
            })?)
        }
    })
}

/// `GET {base}/models` within `timeout`, with the provider's key and extra
/// headers: reachable on 2xx (and whether the listed ids name the
/// configured model), unreachable with a short reason otherwise.
pub async fn probe(config: &OpenAiConfig, timeout: Duration) -> Probe {
    let url = format!("{}/models", config.base_url.trim_end_matches('/'));
    let mut headers = HeaderMap::new();
    for (name, value) in &config.headers {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            headers.insert(name, value);
        }
    }
    if let Some(key) = config.resolved_api_key() {
        if let Ok(mut value) = HeaderValue::from_str(&format!("Bearer {key}")) {
            value.set_sensitive(true);
            headers.insert(AUTHORIZATION, value);
        }
    }
    let client = match reqwest::Client::builder().timeout(timeout).build() {
        Ok(c) => c,
        Err(e) => return Probe::unreachable(format!("no HTTP client: {}", e.without_url())),
    };
    let response = match client.get(&url).headers(headers).send().await {
        Ok(r) => r,
        Err(e) if e.is_timeout() => {
            return Probe::unreachable(format!("no answer within {} s", timeout.as_secs_f32()))
        }
        Err(e) if e.is_connect() => return Probe::unreachable("could not connect".into()),
        Err(e) => return Probe::unreachable(e.without_url().to_string()),
    };
    let status = response.status();
    if !status.is_success() {
        return Probe::unreachable(format!("GET /models answered HTTP {}", status.as_u16()));
    }
    let listed = response
        .json::<serde_json::Value>()
        .await
        .ok()
        .and_then(|body| {
            body.get("data")?.as_array().map(|models| {
                models
                    .iter()
                    .any(|m| m.get("id").and_then(|id| id.as_str()) == Some(config.model.as_str()))
            })
        });
    Probe {
        reachability: Reachability::Reachable,
        reason: None,
        model_listed: listed,
        checked_at: Some(chrono::Utc::now()),
    }
}

/// `url` without user info, query or fragment (what may be shown).
fn public_url(url: &str) -> String {
    let url = url.split(['?', '#']).next().unwrap_or(url);
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            let host = authority.rsplit('@').next().unwrap_or(authority);
            format!("{scheme}://{host}{path}")
        }
        None => String::new(),
    }
}

#[cfg(test)]
mod tests;

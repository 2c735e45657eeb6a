//! The provider config as a server reads it from TOML, its defaults, the
//! cost helper, and what must never be printed or serialized.

use std::time::Duration;

use aics_agent::PlanProtocol;
use aics_openai::{
    OpenAiCompatible, OpenAiConfig, Price, ProviderConfig, ProvidersConfig, RetryPolicy, Timeouts,
};
use aics_types::TokenUsage;

const PROVIDERS: &str = r#"
active = "local"

[providers.demo]
kind = "demo"

[providers.local]
kind = "openai"
base_url = "http://127.0.0.1:8000/v1"
model = "smollm2-135m"
protocol = "json_plan"
temperature = 0.2
max_tokens = 256

[providers.local.timeouts]
connect_secs = 2
first_token_secs = 120
idle_secs = 15.5

[providers.deepseek]
kind = "openai"
base_url = "https://api.deepseek.com"
model = "deepseek-chat"
api_key_env = "AICS_TEST_DEEPSEEK_KEY_UNSET"
headers = { "X-Tenant" = "acme" }
retries = { max_retries = 4, base_backoff_secs = 0.25 }
price = { prompt_per_1k = 0.00027, completion_per_1k = 0.0011 }
"#;

#[test]
fn several_named_providers_from_toml() {
    let config: ProvidersConfig = toml::from_str(PROVIDERS).expect("valid TOML");
    assert_eq!(config.providers.len(), 3);
    assert_eq!(config.providers["demo"], ProviderConfig::Demo);

    let Some(ProviderConfig::Openai(local)) = config.active() else {
        panic!("the active provider is local");
    };
    assert_eq!(local.model, "smollm2-135m");
    assert_eq!(local.protocol, PlanProtocol::JsonPlan);
    assert_eq!(local.temperature, Some(0.2));
    assert_eq!(local.max_tokens, Some(256));
    assert_eq!(
        local.timeouts,
        Timeouts {
            connect: Duration::from_secs(2),
            first_token: Duration::from_secs(120),
            idle: Duration::from_millis(15_500),
            // Unset fields keep their defaults.
            total: Timeouts::default().total,
        }
    );
    assert_eq!(local.retries, RetryPolicy::default());
    assert_eq!(local.api_key, None);
    assert_eq!(
        config.active().map(|p| p.model_name()),
        Some("openai:smollm2-135m".into())
    );
    assert_eq!(
        config.active().map(|p| p.protocol()),
        Some(PlanProtocol::JsonPlan)
    );

    let ProviderConfig::Openai(deepseek) = &config.providers["deepseek"] else {
        panic!("deepseek is an openai provider");
    };
    assert_eq!(deepseek.retries.max_retries, 4);
    assert_eq!(deepseek.retries.base_backoff, Duration::from_millis(250));
    assert_eq!(deepseek.headers["X-Tenant"], "acme");
    assert_eq!(deepseek.protocol, PlanProtocol::Native);
    // The variable is unset: no key, and that is not an error (local servers need none).
    assert_eq!(deepseek.resolved_api_key(), None);
    let model = OpenAiCompatible::new(deepseek.clone()).expect("builds");
    assert_eq!(
        model.endpoint().as_str(),
        "https://api.deepseek.com/chat/completions"
    );
}

#[test]
fn defaults_are_the_demo_model_offline() {
    let config: ProvidersConfig = toml::from_str("").expect("empty is fine");
    assert_eq!(config, ProvidersConfig::default());
    assert_eq!(config.active(), Some(&ProviderConfig::Demo));
    assert_eq!(ProviderConfig::Demo.model_name(), "demo");

    let openai = OpenAiConfig::default();
    assert_eq!(openai.base_url, "https://api.openai.com/v1");
    assert_eq!(openai.timeouts.first_token, Duration::from_secs(60));
    assert_eq!(openai.retries.max_retries, 2);
    assert_eq!(openai.protocol, PlanProtocol::Native);
    assert_eq!(openai.price, None);
}

#[test]
fn unknown_kinds_and_negative_durations_are_rejected() {
    assert!(toml::from_str::<ProviderConfig>(r#"kind = "anthropic""#).is_err());
    assert!(
        toml::from_str::<ProviderConfig>("kind = \"openai\"\n[timeouts]\nidle_secs = -1").is_err()
    );
}

#[test]
fn cost_of_a_turn_from_the_price_table() {
    let usage = TokenUsage {
        prompt_tokens: 2_000,
        completion_tokens: 500,
        total_tokens: 2_500,
    };
    let config = OpenAiConfig {
        price: Some(Price {
            prompt_per_1k: 0.15,
            completion_per_1k: 0.6,
        }),
        ..OpenAiConfig::default()
    };
    let cost = config.cost_usd(&usage).expect("priced");
    assert!((cost - 0.6).abs() < 1e-12, "{cost}");
    assert_eq!(OpenAiConfig::default().cost_usd(&usage), None);
    assert_eq!(ProviderConfig::Demo.cost_usd(&usage), Some(0.0));
    assert_eq!(ProviderConfig::Openai(config).cost_usd(&usage), Some(cost));
}

#[test]
fn the_key_and_header_values_are_never_printed_nor_serialized() {
    let config = OpenAiConfig {
        api_key: Some("sk-super-secret".into()),
        headers: [("X-Gateway-Key".to_string(), "gw-secret".to_string())].into(),
        ..OpenAiConfig::default()
    };
    let debug = format!("{config:?}");
    assert!(debug.contains("[redacted]"), "{debug}");
    assert!(!debug.contains("sk-super-secret") && !debug.contains("gw-secret"));

    let provider = ProviderConfig::Openai(config.clone());
    let json = serde_json::to_string(&provider).expect("serializes");
    assert!(
        !json.contains("sk-super-secret") && !json.contains("gw-secret"),
        "{json}"
    );
    assert!(json.contains("\"kind\":\"openai\""), "{json}");
    let toml = toml::to_string(&ProvidersConfig {
        active: "x".into(),
        providers: [("x".to_string(), provider)].into(),
    })
    .expect("serializes");
    assert!(!toml.contains("sk-super-secret"), "{toml}");
}

#[test]
fn the_key_comes_from_the_environment_when_named() {
    // Setting a variable would race with the other tests reading the
    // environment (glibc's setenv is not thread-safe): read one that is set.
    let var = "PATH";
    let expected = std::env::var(var).expect("PATH is set");
    let config = OpenAiConfig {
        api_key_env: Some(var.into()),
        ..OpenAiConfig::default()
    };
    assert_eq!(config.resolved_api_key(), Some(expected));
    // An explicit key wins; an empty one counts as none.
    let explicit = OpenAiConfig {
        api_key: Some("sk-explicit".into()),
        ..config.clone()
    };
    assert_eq!(explicit.resolved_api_key().as_deref(), Some("sk-explicit"));
    let empty = OpenAiConfig {
        api_key: Some(String::new()),
        ..config
    };
    assert_eq!(empty.resolved_api_key(), None);
}

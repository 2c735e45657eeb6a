//! The operator's configuration: defaults without a file, the TOML file,
//! `AICS_*` variables on top, and errors that name the key.

#![allow(clippy::unwrap_used)]

use std::collections::HashMap;

use aics::config::{merge_env, ConfigError, Settings};
use aics_agent::EngineKind;
use aics_openai::ProviderConfig;
use aics_types::Role;
use figment::providers::{Format, Toml};
use figment::Figment;

fn load(toml: &str, env: &[(&str, &str)]) -> Result<Settings, ConfigError> {
    let env: HashMap<String, String> = env
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    Settings::from_figment(merge_env(Figment::from(Toml::string(toml)), |k| {
        env.get(k).cloned()
    }))
}

fn error_of(toml: &str, env: &[(&str, &str)]) -> String {
    load(toml, env).unwrap_err().to_string()
}

#[test]
fn defaults_run_with_no_file_at_all() {
    let s = load("", &[]).unwrap();
    assert_eq!(s.database_url, "sqlite://data/aics.db");
    assert_eq!(s.listen_addr().unwrap(), None);
    assert_eq!(s.log, "info");
    let c = s.console_config().unwrap();
    assert_eq!(c.provider, ProviderConfig::Demo);
    assert_eq!(c.engine, EngineKind::Graph);
    assert_eq!(c.max_tool_loops, 5);
    assert!(c.api_token.is_none());
    assert!(!c.demo_faults);
    assert_eq!(c.durability, aics_agent::Durability::Sync);
    assert_eq!(s.http.body_limit, 64 * 1024);
}

#[test]
fn durability_comes_from_the_file_or_the_environment() {
    let file = load("[orchestration]\ndurability = \"exit\"\n", &[]).unwrap();
    assert_eq!(
        file.console_config().unwrap().durability,
        aics_agent::Durability::Exit
    );
    let env = load(
        "[orchestration]\ndurability = \"exit\"\n",
        &[("AICS_DURABILITY", "async")],
    )
    .unwrap();
    assert_eq!(
        env.console_config().unwrap().durability,
        aics_agent::Durability::Async
    );
}

#[test]
fn environment_variables_override_the_file() {
    let toml = r#"
        database-url = "sqlite://file.db"
        [orchestration]
        engine = "graph"
        [orchestration.graph]
        max-tool-loops = 3
    "#;
    let s = load(
        toml,
        &[
            ("AICS_ADDR", "127.0.0.1:3400"),
            ("AICS_DATABASE_URL", "postgres://u:p@localhost/aics"),
            ("AICS_ENGINE", "linear"),
            ("AICS_SUPERVISOR_PASSWORD", "00012345"),
            ("AICS_AGENT_PASSWORD", "[not-an-array"),
            ("AICS_API_TOKEN", "0123456789abcdef0123"),
            ("AICS_API_TOKEN_ROLE", "supervisor"),
            ("AICS_DEMO_FAULTS", "1"),
            ("AICS_DEMO_TOKEN_DELAY_MS", "25"),
            ("AICS_LOG", "aics=debug,info"),
            ("AICS_CONFIG", "ignored.toml"),
        ],
    )
    .unwrap();
    assert_eq!(s.listen_addr().unwrap().unwrap().port(), 3400);
    assert_eq!(s.database_url, "postgres://u:p@localhost/aics");
    // Passwords are taken as written, never parsed as numbers or arrays.
    let secret = |v: &Option<secrecy::SecretString>| {
        v.as_ref()
            .map(|s| secrecy::ExposeSecret::expose_secret(s).to_owned())
    };
    assert_eq!(
        secret(&s.auth.supervisor_password).as_deref(),
        Some("00012345")
    );
    assert_eq!(
        secret(&s.auth.agent_password).as_deref(),
        Some("[not-an-array")
    );
    // Debug shows none of the secrets.
    let debug = format!("{s:?}");
    for hidden in ["00012345", "[not-an-array", ":p@"] {
        assert!(!debug.contains(hidden), "{hidden} in {debug}");
    }
    let c = s.console_config().unwrap();
    assert_eq!(c.engine, EngineKind::Linear);
    assert_eq!(c.max_tool_loops, 3);
    assert_eq!(c.api_token_role, Role::Supervisor);
    assert!(c.demo_faults);
    assert_eq!(c.demo_token_delay.as_millis(), 25);
}

#[test]
fn seed_004_orchestration_keys() {
    let s = load(
        "[orchestration]\nengine = \"graph\"\n[orchestration.graph]\nreact-enabled = false\nmax-tool-loops = 1\n",
        &[],
    )
    .unwrap();
    let c = s.console_config().unwrap();
    assert_eq!(
        c.engine,
        EngineKind::Linear,
        "react-enabled = false runs the linear engine"
    );
    assert_eq!(c.max_tool_loops, 1);
    let flat = load(
        "[orchestration]\nmax-tool-loops = 7\n",
        &[("AICS_MAX_TOOL_LOOPS", "9")],
    )
    .unwrap();
    assert_eq!(flat.console_config().unwrap().max_tool_loops, 9);
}

#[test]
fn named_providers_and_the_active_one() {
    let toml = r#"
        [llm]
        provider = "local"
        [llm.providers.local]
        kind = "openai"
        base_url = "http://127.0.0.1:8000/v1"
        model = "smollm2-135m"
        protocol = "json_plan"
        [llm.providers.demo]
        kind = "demo"
    "#;
    let c = load(toml, &[]).unwrap().console_config().unwrap();
    assert_eq!(c.provider_name, "local");
    assert_eq!(c.provider.model_name(), "openai:smollm2-135m");
    let c = load(toml, &[("AICS_LLM_PROVIDER", "demo")])
        .unwrap()
        .console_config()
        .unwrap();
    assert_eq!(c.provider, ProviderConfig::Demo);
    let c = load(
        "",
        &[
            ("AICS_LLM_PROVIDER", "openai"),
            ("AICS_LLM_BASE_URL", "http://127.0.0.1:11434/v1"),
            ("AICS_LLM_MODEL", "qwen2.5"),
            ("AICS_LLM_API_KEY", "sk-test"),
        ],
    )
    .unwrap()
    .console_config()
    .unwrap();
    match c.provider {
        ProviderConfig::Openai(cfg) => {
            assert_eq!(cfg.base_url, "http://127.0.0.1:11434/v1");
            assert_eq!(cfg.model, "qwen2.5");
            assert_eq!(cfg.api_key.as_deref(), Some("sk-test"));
        }
        other => panic!("expected openai, got {other:?}"),
    }
}

#[test]
fn several_providers_are_all_configured_and_one_is_the_default() {
    let toml = r#"
        [llm]
        provider = "local"
        model = "qwen2.5-7b"
        [llm.providers.local]
        kind = "openai"
        base_url = "http://127.0.0.1:8000/v1"
        model = "smollm2-135m"
        protocol = "json_plan"
        [llm.providers.cloud]
        kind = "openai"
        base_url = "https://api.openai.com/v1"
        model = "gpt-4o-mini"
        api_key = "sk-cloud-secret"
        price = { prompt_per_1k = 0.00015, completion_per_1k = 0.0006 }
        [llm.providers.offline]
        kind = "demo"
    "#;
    let c = load(toml, &[]).unwrap().console_config().unwrap();
    assert_eq!(c.provider_name, "local");
    // The overrides of `[llm]` apply to the default only.
    assert_eq!(c.provider.model_name(), "openai:qwen2.5-7b");
    let names: Vec<&str> = c.providers.keys().map(String::as_str).collect();
    assert_eq!(names, ["cloud", "local", "offline"]);
    match &c.providers["cloud"] {
        ProviderConfig::Openai(cfg) => {
            assert_eq!(cfg.model, "gpt-4o-mini");
            assert_eq!(cfg.price.unwrap().completion_per_1k, 0.0006);
            assert_eq!(cfg.api_key.as_deref(), Some("sk-cloud-secret"));
        }
        other => panic!("expected openai, got {other:?}"),
    }
    assert_eq!(c.providers["offline"], ProviderConfig::Demo);
    // No secret in the configuration's Debug.
    let printed = format!("{c:?}");
    assert!(!printed.contains("sk-cloud-secret"), "{printed}");
    // Another default, the same providers.
    let c = load(toml, &[("AICS_LLM_PROVIDER", "cloud")])
        .unwrap()
        .console_config()
        .unwrap();
    assert_eq!(c.provider_name, "cloud");
    assert_eq!(c.providers.len(), 3);
    // With no file, none besides the default demo.
    assert!(load("", &[])
        .unwrap()
        .console_config()
        .unwrap()
        .providers
        .is_empty());
}

#[test]
fn invalid_settings_name_their_key() {
    for (toml, env, key) in [
        ("", vec![("AICS_ENGINE", "loop")], "orchestration.engine"),
        ("", vec![("AICS_MAX_TOOL_LOOPS", "many")], "max-tool-loops"),
        ("", vec![("AICS_MAX_TOOL_LOOPS", "0")], "max-tool-loops"),
        ("", vec![("AICS_ADDR", "localhost")], "AICS_ADDR"),
        (
            "",
            vec![("AICS_DATABASE_URL", "mysql://x")],
            "AICS_DATABASE_URL",
        ),
        ("", vec![("AICS_LLM_PROVIDER", "nope")], "AICS_LLM_PROVIDER"),
        (
            "",
            vec![
                ("AICS_LLM_PROVIDER", "openai"),
                ("AICS_LLM_BASE_URL", "ftp://x"),
            ],
            "AICS_LLM_BASE_URL",
        ),
        ("", vec![("AICS_API_TOKEN", "short")], "AICS_API_TOKEN"),
        (
            "",
            vec![("AICS_API_TOKEN_ROLE", "admin")],
            "AICS_API_TOKEN_ROLE",
        ),
        ("", vec![("AICS_DEMO_FAULTS", "maybe")], "faults"),
        (
            "",
            vec![("AICS_DEMO_TOKEN_DELAY_MS", "-5")],
            "token-delay-ms",
        ),
        ("", vec![("AICS_LOG_FORMAT", "xml")], "AICS_LOG_FORMAT"),
        ("", vec![("AICS_DURABILITY", "never")], "AICS_DURABILITY"),
        ("unknown-key = 1", vec![], "unknown-key"),
        (
            "[orchestration]\nmax-tool-loops = \"five\"",
            vec![],
            "max-tool-loops",
        ),
        ("[llm.providers.x]\nkind = \"nope\"", vec![], "kind"),
        (
            "[llm.providers.x]\nkind = \"openai\"\nbase_url = \"ftp://x\"\nmodel = \"m\"",
            vec![],
            "llm.providers",
        ),
        (
            "[llm.providers.x]\nkind = \"openai\"\nmodel = \" \"",
            vec![],
            "llm.providers",
        ),
        (
            "[llm.providers.\"a b\"]\nkind = \"demo\"",
            vec![],
            "llm.providers",
        ),
    ] {
        let message = error_of(toml, &env);
        assert!(message.contains(key), "{key:?} not named in: {message}");
    }
}

#[test]
fn max_tokens_defaults_to_1024_and_the_environment_overrides_it() {
    let openai = |env: &[(&str, &str)]| {
        let mut all = vec![
            ("AICS_LLM_PROVIDER", "openai"),
            ("AICS_LLM_BASE_URL", "http://127.0.0.1:8000/v1"),
            ("AICS_LLM_MODEL", "smollm2-135m"),
        ];
        all.extend_from_slice(env);
        match load("", &all).unwrap().console_config().unwrap().provider {
            ProviderConfig::Openai(cfg) => cfg.max_tokens,
            other => panic!("expected openai, got {other:?}"),
        }
    };
    assert_eq!(openai(&[]), Some(1024));
    assert_eq!(openai(&[("AICS_LLM_MAX_TOKENS", "256")]), Some(256));
    assert_eq!(openai(&[("AICS_LLM_MAX_TOKENS", "0")]), Some(0));
}

#[test]
fn the_approval_policy_comes_from_the_file_and_its_errors_name_the_key() {
    let s = load(
        r#"
[approvals]
webhook-url = "http://127.0.0.1:9/hook"

[approvals.tools]
escalate_to_human = "never"

[[approvals.rules]]
name = "refunds"
tool = "ticket_create"
when = "category == refund"
timeout = "15m"
on-timeout = "handover"
"#,
        &[("AICS_PUBLIC_URL", "https://console.example.com")],
    )
    .unwrap();
    let c = s.console_config().unwrap();
    assert_eq!(
        c.approvals.rules.len(),
        1,
        "writing rules replaces the defaults"
    );
    assert_eq!(
        c.approvals.public_url.as_deref(),
        Some("https://console.example.com")
    );
    let policy = c.approvals.compile().unwrap();
    assert!(policy.rule("refunds").unwrap().deadline.is_some());

    let e = error_of(
        "[[approvals.rules]]\ntool = \"ticket_create\"\nwhen = \"category = refund\"\n",
        &[],
    );
    assert!(e.contains("approvals.rules[0].when"), "{e}");
    let e = error_of("[approvals.tools]\norder_query = \"sometimes\"\n", &[]);
    assert!(e.contains("approvals.tools.order_query"), "{e}");
    let e = error_of("[approvals]\nrulez = []\n", &[]);
    assert!(e.contains("rulez"), "{e}");
    // No file: today's rules.
    let d = load("", &[]).unwrap().console_config().unwrap();
    assert_eq!(d.approvals, aics_agent::policy::ApprovalsConfig::default());
}

#[test]
fn the_example_file_documents_the_default_approval_rules() {
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../aics.example.toml"))
            .unwrap();
    let s = load(&text, &[]).unwrap();
    assert_eq!(
        s.approvals.compile().unwrap(),
        aics_agent::policy::ApprovalsConfig::default()
            .compile()
            .unwrap()
    );
}

/// A SQLite file is the server's alone unless `sqlite-shared` says other
/// programs may open it too; the variable overrides the file.
#[test]
fn the_sqlite_file_is_the_servers_alone_unless_shared() {
    use aics_db::SqliteAccess;
    let default = load("", &[]).unwrap();
    assert_eq!(default.sqlite_access(), SqliteAccess::Process);
    let shared = load("sqlite-shared = true", &[]).unwrap();
    assert_eq!(shared.sqlite_access(), SqliteAccess::Shared);
    let back = load("sqlite-shared = true", &[("AICS_SQLITE_SHARED", "false")]).unwrap();
    assert_eq!(back.sqlite_access(), SqliteAccess::Process);
    for yes in ["true", "1", "yes", "ON"] {
        let by_env = load("", &[("AICS_SQLITE_SHARED", yes)]).unwrap();
        assert_eq!(by_env.sqlite_access(), SqliteAccess::Shared, "{yes}");
    }
    let error = error_of("", &[("AICS_SQLITE_SHARED", "maybe")]);
    assert!(error.contains("sqlite-shared"), "{error}");
}

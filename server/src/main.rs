//! The aics binary: configuration → telemetry → database → accounts →
//! console → router → serve, with a graceful shutdown (turns, then the
//! OpenTelemetry export's last spans, then the database).
#![forbid(unsafe_code)]

use std::net::SocketAddr;
use std::time::Duration;

use aics::config::Settings;
use aics::state::{AppState, Shared};
use aics::telemetry;
use aics_db::Database;
use aics_service::Console;
use anyhow::Context;
use leptos::config::get_configuration;
use secrecy::ExposeSecret;
use tokio::sync::watch;

/// mimalloc, as the engine benchmark measures the engine: see server/Cargo.toml.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> anyhow::Result<()> {
    runtime()
        .context("starting the async runtime")?
        .block_on(run())
}

/// tokio's multi-threaded runtime, as `#[tokio::main]` builds it, except
/// for the LIFO slot when the build has tokio's unstable options
/// (`--cfg tokio_unstable`, which `.cargo/config.toml` sets).
///
/// A task that wakes another on the same worker puts it in that worker's
/// LIFO slot, ahead of every task queued there, and the other worker cannot
/// steal it from there. A turn wakes its next step that way at every
/// commit, tool and token; at 64 turns at once the favoured ones ran ahead
/// while the rest waited longer, and a core sat idle more often. Without the
/// slot, tasks run in the order they were woken: the chat API's p99 came
/// out lower in 13 of 16 pairs of one build with and without it, and from
/// 8 turns at once on every measure was better; one turn at a time pays a
/// little, its steps hopping between the cores (BENCHMARKS.md, round 36).
/// A build without the option (a `RUSTFLAGS` of one's own replaces the
/// config's) keeps tokio's default, and works the same.
fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.enable_all();
    #[cfg(tokio_unstable)]
    builder.disable_lifo_slot();
    builder.build()
}

async fn run() -> anyhow::Result<()> {
    let settings = Settings::load()?;
    telemetry::init_logs(&settings)?;
    let conf = get_configuration(None).context("reading the Leptos configuration")?;
    let mut leptos_options = conf.leptos_options;
    leptos_options.hash_files = aics::assets::hashed_bundle(&leptos_options);
    let addr: SocketAddr = settings.listen_addr()?.unwrap_or(leptos_options.site_addr);
    let console_config = settings.console_config_at(addr)?;
    let mut web = settings.web_config(addr)?;
    // `cargo leptos watch` reloads pages over a WebSocket; allow it then.
    if std::env::var_os("LEPTOS_WATCH").is_some() {
        web.reload_port = Some(leptos_options.reload_port as u16);
    }
    if web.hosts == aics::web::HostRule::Any {
        tracing::warn!(
            %addr,
            "serving a non-loopback address with no http.allowed-origins or http.allowed-hosts: \
             any Host header is answered (set them to refuse DNS-rebinding requests)"
        );
    }

    let db = Database::connect_with(&settings.database_url, settings.sqlite_access())
        .await
        .context("connecting to the database (AICS_DATABASE_URL)")?;
    db.migrate().await.context("migrating the database")?;
    db.seed().await.context("seeding the demo data")?;
    let created = db
        .ensure_default_accounts(
            settings
                .auth
                .supervisor_password
                .as_ref()
                .map(ExposeSecret::expose_secret),
            settings
                .auth
                .agent_password
                .as_ref()
                .map(ExposeSecret::expose_secret),
        )
        .await
        .context("creating the first-start accounts")?;
    for account in created {
        // Printed once to the terminal that started the server, never to
        // the log.
        match account.generated_password {
            Some(password) => println!(
                "created the {} account {:?} with the generated password: {password}",
                account.role.as_str(),
                account.username
            ),
            None => tracing::info!(username = %account.username, "created the first-start account"),
        }
    }

    // The recorder first: the console sets gauges as it starts.
    let metrics = telemetry::metrics_handle();
    let otel = telemetry::Otel::from_env()?;
    let console = match otel.observer() {
        Some(observer) => Console::with_observer(db.clone(), console_config, observer).await,
        None => Console::new(db.clone(), console_config).await,
    }
    .context("starting the console")?;
    let (shutdown_tx, shutdown_rx) = watch::channel(false);
    let state = AppState::new(Shared {
        leptos_options,
        console: console.clone(),
        metrics,
        shutdown: shutdown_rx,
    });
    let router = aics::app(state, web);

    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("binding {addr} (AICS_ADDR)"))?;
    let model = console.model_info();
    tracing::info!(
        %addr,
        provider = %model.provider,
        model = %model.model,
        engine = %model.engine,
        max_tool_loops = model.max_tool_loops,
        database = %db.backend(),
        secure_cookie = console.config().cookie_secure,
        "aics serves"
    );
    println!("aics is running: open http://{addr} in a browser");
    aics::serve::serve(listener, router, settings.serve_limits(), async move {
        shutdown_signal().await;
        tracing::info!("shutting down: finishing requests and running turns");
        // Ends the open event streams, which would otherwise keep the
        // server waiting.
        let _ = shutdown_tx.send(true);
    })
    .await
    .context("serving")?;
    console
        .shutdown(Duration::from_secs(settings.http.shutdown_grace_secs))
        .await;
    otel.shutdown().await;
    db.close().await;
    tracing::info!("stopped");
    Ok(())
}

/// Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
}

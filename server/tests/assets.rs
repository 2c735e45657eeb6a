//! The client bundle on the wire (server/src/assets.rs): the precompressed
//! copy the browser accepts, immutable caching of content-hashed names only,
//! a missing file not cached, and on-the-fly compression of pages and JSON
//! but never of an event stream; nothing under a dot name (the build's
//! `.client-inputs` stamp) is served. SQLite.

#![allow(clippy::unwrap_used)]

use std::io::Read;
use std::net::SocketAddr;

use aics::state::{AppState, Shared};
use aics::web::WebConfig;
use aics_db::Database;
use aics_service::{Console, ConsoleConfig};
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{header, HeaderMap, Request, StatusCode};
use axum::Router;
use leptos::config::LeptosOptions;
use sqlx::SqlitePool;
use tokio::sync::watch;
use tower::ServiceExt;

const API_TOKEN: &str = "test-api-token-0123456789";
const WASM: &[u8] = b"\0asm the bundle itself, long enough to be worth compressing";

struct App {
    router: Router,
    _shutdown: watch::Sender<bool>,
    _site: tempdir::Site,
}

mod tempdir {
    /// A site root of its own under the system temp folder, removed on drop.
    pub struct Site(pub std::path::PathBuf);
    impl Drop for Site {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// A site root as `cargo leptos build --release --precompress` leaves it:
/// hashed names, each with a `.br` and a `.gz` copy (their bytes marked so
/// the test sees which one was sent).
fn site() -> tempdir::Site {
    let root = std::env::temp_dir().join(format!("aics-assets-{}", uuid::Uuid::new_v4()));
    let pkg = root.join("pkg");
    std::fs::create_dir_all(&pkg).unwrap();
    let write = |name: &str, bytes: &[u8]| std::fs::write(pkg.join(name), bytes).unwrap();
    write("aics.0123abcd.wasm", WASM);
    write("aics.0123abcd.wasm.br", b"brotli copy");
    write("aics.0123abcd.wasm.gz", b"gzip copy");
    write("aics.0123abcd.css", b"body{margin:0}");
    // What `--split` adds (app/src/lazy_pages.rs): a lazy route's chunk, a
    // chunk two of them share, the loader and its manifest, each hashed and
    // precompressed by the same build.
    for name in [
        "split___turn_route_view_1366.7wNxPQ8Y4XUz9G.wasm",
        "chunk_19.ajJOL8ZnX_fwr7On.wasm",
        "__wasm_split.SGkE7RB7tuSh8V.js",
        "__wasm_split_manifest.hrCsxkZ9RaIC_U.json",
    ] {
        write(name, WASM);
        write(&format!("{name}.br"), b"brotli copy");
        write(&format!("{name}.gz"), b"gzip copy");
    }
    // What the release build leaves at the site root beside the bundle
    // (scripts/build-release.sh), and dot names a deployment may add.
    std::fs::write(root.join(".client-inputs"), b"0123456789abcdef").unwrap();
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::write(root.join(".git").join("config"), b"[core]").unwrap();
    write(".hidden.js", b"secret");
    std::fs::write(root.join("robots.txt"), b"User-agent: *").unwrap();
    tempdir::Site(root)
}

async fn app(pool: SqlitePool, hashed: bool) -> App {
    let db = Database::from(pool);
    db.migrate().await.unwrap();
    db.seed().await.unwrap();
    let console = Console::new(
        db,
        ConsoleConfig {
            api_token: Some(API_TOKEN.into()),
            ..ConsoleConfig::for_tests()
        },
    )
    .await
    .unwrap();
    let site = site();
    let mut options = LeptosOptions::builder()
        .output_name("aics")
        .site_root(site.0.to_string_lossy().to_string())
        .build();
    options.hash_files = hashed;
    let (tx, rx) = watch::channel(false);
    let state = AppState::new(Shared {
        leptos_options: options,
        console,
        metrics: aics::telemetry::metrics_handle(),
        shutdown: rx,
    });
    App {
        router: aics::app(state, WebConfig::default()),
        _shutdown: tx,
        _site: site,
    }
}

async fn get(
    app: &App,
    path: &str,
    accept_encoding: Option<&str>,
) -> (StatusCode, HeaderMap, Vec<u8>) {
    let peer: SocketAddr = "127.0.0.1:40000".parse().unwrap();
    let mut request = Request::get(path)
        .header(header::HOST, "127.0.0.1:3000")
        .header(header::AUTHORIZATION, format!("Bearer {API_TOKEN}"))
        .extension(ConnectInfo(peer));
    if let Some(encoding) = accept_encoding {
        request = request.header(header::ACCEPT_ENCODING, encoding);
    }
    let response = app
        .router
        .clone()
        .oneshot(request.body(Body::empty()).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let body = axum::body::to_bytes(response.into_body(), 1 << 22)
        .await
        .unwrap()
        .to_vec();
    (status, headers, body)
}

fn header(headers: &HeaderMap, name: header::HeaderName) -> &str {
    headers.get(name).map(|v| v.to_str().unwrap()).unwrap_or("")
}

#[sqlx::test(migrations = false)]
async fn the_bundle_goes_out_precompressed_and_cached_for_good(pool: SqlitePool) {
    let app = app(pool, true).await;
    let wasm = "/pkg/aics.0123abcd.wasm";

    let (status, headers, body) = get(&app, wasm, Some("gzip, deflate, br")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(header(&headers, header::CONTENT_ENCODING), "br");
    assert_eq!(body, b"brotli copy");
    assert_eq!(header(&headers, header::CONTENT_TYPE), "application/wasm");
    assert_eq!(
        header(&headers, header::CACHE_CONTROL),
        aics::assets::IMMUTABLE
    );
    assert!(header(&headers, header::VARY)
        .to_ascii_lowercase()
        .contains("accept-encoding"));

    let (_, headers, body) = get(&app, wasm, Some("gzip")).await;
    assert_eq!(header(&headers, header::CONTENT_ENCODING), "gzip");
    assert_eq!(body, b"gzip copy");

    // A client that accepts nothing gets the file itself, with no copy left
    // to compress it again on the fly.
    let (_, headers, body) = get(&app, wasm, None).await;
    assert_eq!(header(&headers, header::CONTENT_ENCODING), "");
    assert_eq!(body, WASM);

    // A file without copies is still served (and may be compressed on the fly).
    let (status, headers, _) = get(&app, "/pkg/aics.0123abcd.css", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        header(&headers, header::CACHE_CONTROL),
        aics::assets::IMMUTABLE
    );
}

#[sqlx::test(migrations = false)]
async fn the_lazy_routes_chunks_go_out_like_the_main_bundle(pool: SqlitePool) {
    let app = app(pool, true).await;
    for (name, content_type) in [
        (
            "split___turn_route_view_1366.7wNxPQ8Y4XUz9G.wasm",
            "application/wasm",
        ),
        ("chunk_19.ajJOL8ZnX_fwr7On.wasm", "application/wasm"),
        ("__wasm_split.SGkE7RB7tuSh8V.js", "text/javascript"),
        (
            "__wasm_split_manifest.hrCsxkZ9RaIC_U.json",
            "application/json",
        ),
    ] {
        let path = format!("/pkg/{name}");
        let (status, headers, body) = get(&app, &path, Some("gzip, deflate, br")).await;
        assert_eq!(status, StatusCode::OK, "{name}");
        assert_eq!(header(&headers, header::CONTENT_ENCODING), "br", "{name}");
        assert_eq!(body, b"brotli copy", "{name}");
        assert_eq!(
            header(&headers, header::CONTENT_TYPE),
            content_type,
            "{name}"
        );
        assert_eq!(
            header(&headers, header::CACHE_CONTROL),
            aics::assets::IMMUTABLE,
            "{name}"
        );
        let (_, headers, body) = get(&app, &path, Some("gzip")).await;
        assert_eq!(header(&headers, header::CONTENT_ENCODING), "gzip", "{name}");
        assert_eq!(body, b"gzip copy", "{name}");
    }
}

#[sqlx::test(migrations = false)]
async fn a_missing_bundle_file_is_not_cached(pool: SqlitePool) {
    let app = app(pool, true).await;
    let (status, headers, _) = get(&app, "/pkg/aics.ffffffff.wasm", Some("br")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(header(&headers, header::CACHE_CONTROL), "no-store");
    // Nor is a path out of the folder answered.
    let (status, _, _) = get(&app, "/pkg/../Cargo.toml", None).await;
    assert_ne!(status, StatusCode::OK);
}

/// Dotfiles and dot-directories of the site root (and of the bundle's
/// folder) are not served, however the name is spelled; the root's other
/// files still are.
#[sqlx::test(migrations = false)]
async fn dotfiles_are_not_served(pool: SqlitePool) {
    let app = app(pool, true).await;
    for path in [
        "/.client-inputs",
        "/%2eclient-inputs",
        "/%2Eclient-inputs",
        "/.git/config",
        "/.git/",
        "/pkg/.hidden.js",
    ] {
        let (status, headers, body) = get(&app, path, None).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
        assert_eq!(
            header(&headers, header::CACHE_CONTROL),
            "no-store",
            "{path}"
        );
        let body = String::from_utf8_lossy(&body);
        assert!(
            !body.contains("0123456789abcdef") && !body.contains("secret"),
            "{path}: {body}"
        );
    }
    let (status, _, body) = get(&app, "/robots.txt", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body, b"User-agent: *");
}

#[sqlx::test(migrations = false)]
async fn names_without_hashes_are_revalidated(pool: SqlitePool) {
    let app = app(pool, false).await;
    let (status, headers, _) = get(&app, "/pkg/aics.0123abcd.wasm", Some("br")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        header(&headers, header::CACHE_CONTROL),
        aics::assets::REVALIDATE
    );
}

#[sqlx::test(migrations = false)]
async fn json_is_compressed_on_the_fly_and_event_streams_never(pool: SqlitePool) {
    let app = app(pool, true).await;
    let (status, headers, body) = get(&app, "/api/config", Some("gzip")).await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    assert_eq!(header(&headers, header::CONTENT_ENCODING), "gzip");
    assert_eq!(header(&headers, header::CACHE_CONTROL), "no-store");
    let mut json = String::new();
    flate2::read::GzDecoder::new(body.as_slice())
        .read_to_string(&mut json)
        .unwrap();
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert!(value.is_array() || value.is_object());

    // Event streams go out as written: a compressor would hold tokens back.
    let (_, headers, _) = get_stream_head(&app, "/api/approvals/events").await;
    assert_eq!(header(&headers, header::CONTENT_ENCODING), "");
}

/// The head of a streaming answer (its body never ends by itself).
async fn get_stream_head(app: &App, path: &str) -> (StatusCode, HeaderMap, ()) {
    let peer: SocketAddr = "127.0.0.1:40000".parse().unwrap();
    let request = Request::get(path)
        .header(header::HOST, "127.0.0.1:3000")
        .header(header::AUTHORIZATION, format!("Bearer {API_TOKEN}"))
        .header(header::ACCEPT_ENCODING, "gzip, br")
        .extension(ConnectInfo(peer))
        .body(Body::empty())
        .unwrap();
    let response = app.router.clone().oneshot(request).await.unwrap();
    let headers = response.headers().clone();
    assert_eq!(header(&headers, header::CONTENT_TYPE), "text/event-stream");
    (response.status(), headers, ())
}

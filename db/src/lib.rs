//! aics persistence: migrations, seed data, the stores, the SQL checkpointer,
//! the memory store and the support tools, on SQLite or PostgreSQL via sqlx.
//!
//! One [`Database`] handle serves both databases. It is an enum of the two
//! native pools rather than sqlx's `Any` driver, because `Any` cannot carry
//! timestamps or JSON; every query is written once, with `$1` placeholders
//! (which SQLite accepts too), and run on whichever pool is open. Rows are
//! read into private row structs and mapped to the shared `aics-types`, which
//! never derive sqlx traits.
//!
//! ```no_run
//! # async fn demo() -> Result<(), aics_db::DbError> {
//! let db = aics_db::Database::connect("sqlite://data/aics.db").await?;
//! db.migrate().await?;
//! db.seed().await?;
//! let tools = aics_db::support_tools(&db);
//! assert!(tools.get("order_query").is_some());
//! # Ok(()) }
//! ```
//!
//! # Layout
//! - `lib.rs` (this file): [`Database`], connecting, migrating, [`DbError`].
//! - [`conversations`]: conversations (with their handling state), messages
//!   and the stored turn traces.
//! - [`approvals`]: sensitive tool calls held for a supervisor; tokens are
//!   stored as SHA-256 hashes and are single use; the row is the audit record.
//! - [`users`]: accounts with argon2id password hashes, a role, whether
//!   they are disabled and when they last signed in.
//! - [`passwords`]: argon2id hashing off the async workers, a few at a
//!   time; unknown users are checked against a dummy hash.
//! - [`throttle`]: failed sign-ins per username and per client address,
//!   counted here so that every instance shares them.
//! - [`audit`]: the audit log of account changes, decisions and
//!   cancellations.
//! - [`overview`]: the supervisors' overview (turns, tools, approvals,
//!   latency, tokens and cost per day), counted by SQL.
//! - [`memories`]: long-term memory per customer and [`SqlMemoryStore`].
//! - [`checkpoints`]: every node of every run and [`SqlCheckpointer`].
//! - [`group_commit`]: the one writer that runs the checkpoint writes of
//!   all concurrent runs in shared transactions.
//! - [`commerce`]: orders, logistics events, tickets and knowledge articles,
//!   read and written by the tools.
//! - [`sessions`]: sign-in sessions, stored by the hash of their token,
//!   with an absolute expiry, an idle limit and a cap per user.
//! - [`studio`]: the trace studio's forks of a turn (`studio_runs`).
//! - [`replays`]: replay sets of turns (by id or by a filter) and their
//!   replay runs, one fork per turn, leased to the process that runs them.
//! - [`tokens`]: secret tokens and their stored (hashed) form.
//! - [`runs`]: every graph run's durable state and lease; at most one active
//!   run per conversation, across instances; the transactions that begin
//!   (`runs/begin.rs`), end (`runs/end.rs`), pause and cancel a run.
//! - `direct`: two rusqlite connections to a SQLite file beside the pool,
//!   used in the caller's thread for a turn's own statements (its start,
//!   its checkpoints, its end) and the reads every turn makes; its
//!   `writer` combines the writes queued at one moment into one
//!   transaction (each in a savepoint of its own when one of them fails
//!   or rolls back).
//! - `packed`: how SQLite stores the two large JSON columns a turn writes
//!   (checkpoint states, turn traces): LZ4-compressed when that is smaller,
//!   a checkpoint's state on its parent's when the writer has it; and the
//!   one decoder of both columns on either database.
//! - `parents`: which parent each checkpoint's state is stored on, and the
//!   group-commit writer's memory of each run's last committed state (and,
//!   on SQLite, of its thread's number).
//! - [`relay`]: `LISTEN`/`NOTIFY` and the spool that carry live events
//!   between instances on PostgreSQL.
//! - [`tools`]: the support tools' backend on SQL, and [`support_tools`].
//! - [`search`]: how text is cut into full-text search terms (English words
//!   and Chinese character pairs).
//! - [`seed`]: the demo company, inserted once on first start.
//! - `migrations/sqlite`, `migrations/postgres`: the schema, embedded with
//!   `sqlx::migrate!`; never edited once landed.
//!
//! # Durability
//! - **SQLite** runs in WAL mode with `synchronous = NORMAL`. In WAL mode
//!   NORMAL never corrupts the database and loses nothing when the process
//!   crashes; only an OS crash or power cut may roll back the last few
//!   commits. That is the trade a chat console wants: a checkpoint is written
//!   after every node, and FULL would add an fsync to each of them. (LangGraph's
//!   SQLite checkpointer is benchmarked at the same setting.) Foreign keys
//!   are on. Every connection this crate opens to a file (sqlx's and the
//!   direct ones) writes the log through `aics_sqlite_vfs`, which hands a
//!   commit's frames to the kernel in one write instead of two per page,
//!   before SQLite publishes the commit: what a crash keeps is unchanged.
//! - **Who opens a SQLite file.** [`Database::connect`] opens it for this
//!   process alone ([`SqliteAccess::Process`], SQLite's "unix-excl"): one
//!   exclusive lock on the file, taken at the first connection and held
//!   until the last one closes, and the connections of the process
//!   coordinate in memory. Each commit is then spared the `fcntl` calls
//!   that lock the shared wal-index — six a commit, a quarter of a `sync`
//!   turn (BENCHMARKS.md, round 26) — and a second server on the same file
//!   stops at start with [`DbError::InUse`] instead of sharing it. What a
//!   crash keeps is the same: the wal-index is rebuilt from the log when
//!   the file is next opened. Another program (`sqlite3`, a backup) can
//!   open the file only while no server has it, unless every program that
//!   opens it shares it ([`SqliteAccess::Shared`], `Database::connect_with`;
//!   the server's `sqlite-shared`, and pools made elsewhere, as tests make
//!   theirs). `busy_timeout` is 5 s: a connection waits that long for a
//!   lock another one holds rather than fails (another process's, when the
//!   file is shared; a server's that is stopping, when it is not).
//! - **Pool sizes**: SQLite gets one pooled connection, and two direct
//!   connections (`direct`), one for a turn's own writes and one for its
//!   reads: sqlx runs each SQLite statement on its connection's thread, a
//!   hop there and back per statement; the direct ones run it where the
//!   turn is, behind async locks, and the writer takes the write lock with
//!   `BEGIN IMMEDIATE` and an async back-off (its busy timeout is 0, so no
//!   worker thread ever sleeps in SQLite). SQLite
//!   takes one writer at a time, and a connection that finds the write lock
//!   taken sleeps in SQLite's busy handler (1, 2, 5, 10… ms) before it
//!   tries again; with
//!   several connections and many turns in flight those sleeps, not the
//!   work, set the pace (measured: 190 turns/s over HTTP with four
//!   connections, most of the time asleep). One connection queues every
//!   statement in the pool's fair queue instead, and the statements are
//!   microseconds each; concurrent runs share commits through the
//!   checkpoint writer ([`group_commit`]), and on SQLite the starts, ends
//!   and checkpoints of the turns in flight share them through the direct
//!   writer. A long read (the overview's pass over the window's turns)
//!   opens a connection of its own for its duration, on a blocking
//!   thread (`direct::Direct::read_apart`), two at most at a time, so
//!   that it holds none of these. PostgreSQL gets 5 (about 2 × cores + 1,
//!   the usual rule for a small server, leaving the database room for
//!   other instances).
//! - **PostgreSQL** keeps its default `synchronous_commit = on` for
//!   everything a person acts on (approvals, tickets, turns, users): several
//!   instances share it, so such a commit is durable once acknowledged.
//!   Checkpoint writes alone commit with `synchronous_commit = off` (see
//!   [`Database::put_checkpoint`]): they are visible to every instance at
//!   once and survive an application crash; only a database-server or OS
//!   crash can lose the last fraction of a second of them, which is the
//!   guarantee SQLite's WAL + NORMAL gives. A flush per checkpoint would
//!   otherwise cap a turn (8 checkpoints) at a few dozen per second on one
//!   small machine; `examples/checkpoint_throughput.rs` and `aics-bench
//!   --variant postgres` measure it.
//! - **WAL checkpoints** of a SQLite file run in a task of their own, not
//!   inside a commit ([`wal`]).
#![forbid(unsafe_code)]

use std::str::FromStr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

/// Runs `$body` with `$pool` bound to whichever pool the database has. The
/// body is compiled once per backend, so the same query text and row struct
/// serve both.
macro_rules! with_pool {
    ($db:expr, $pool:ident => $body:expr) => {
        match $db {
            $crate::Database::Sqlite(sqlite) => {
                let $pool = sqlite.pool();
                $body
            }
            $crate::Database::Postgres($pool) => $body,
        }
    };
}

// The two modules whose statement macros `runs` reuses inside its
// transactions come first.
#[macro_use]
pub mod approvals;
#[macro_use]
pub mod conversations;
pub mod audit;
pub mod channel;
pub mod checkpoints;
pub mod commerce;
pub mod customers;
mod direct;
pub mod group_commit;
pub mod handling;
pub mod memories;
pub mod overview;
mod packed;
mod parents;
pub mod passwords;
pub mod relay;
pub mod replays;
pub mod runs;
pub mod search;
pub mod seed;
pub mod sessions;
pub mod studio;
pub mod throttle;
pub mod tokens;
pub mod tools;
pub mod users;
mod wal;

pub use aics_agent::tools::normalize_order_id;
pub use aics_sqlite_vfs::Access as SqliteAccess;
pub use approvals::{ExpiredApproval, NewApproval};
pub use audit::AuditQuery;
pub use checkpoints::SqlCheckpointer;
pub use group_commit::WriterStats;
pub use memories::SqlMemoryStore;
pub use relay::EventListener;
pub use replays::{NewReplayRun, ReplayRunItem};
pub use sessions::LiveSession;
pub use studio::NewStudioRun;
pub use tools::support_tools;
pub use users::{CredentialCheck, DefaultAccount};

/// The SQLite pool size; see the crate docs on durability.
pub const SQLITE_MAX_CONNECTIONS: u32 = 1;
/// The PostgreSQL pool size; see the crate docs on durability.
pub const POSTGRES_MAX_CONNECTIONS: u32 = 5;

/// What can go wrong in the persistence layer. The doc line of each variant
/// says which HTTP status the server should answer with.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// The database failed or is unreachable (500, logged, never echoed).
    #[error("database error: {0}")]
    Sqlx(#[from] sqlx::Error),
    /// The direct SQLite connection failed ([`direct`]; 500, logged, never
    /// echoed).
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// Applying the migrations failed (startup error).
    #[error("migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// The database URL is neither `sqlite:` nor `postgres:` (startup error).
    #[error("unsupported database URL {0:?}: expected sqlite://… or postgres://…")]
    UnsupportedUrl(String),
    /// The SQLite file is held by another process: the server opens its
    /// file alone ([`SqliteAccess::Process`]; startup error).
    #[error(
        "the SQLite file {0} is open in another process (another aics server?): stop it, \
         or set sqlite-shared (AICS_SQLITE_SHARED=true) on every server that opens it"
    )]
    InUse(String),
    /// The SQLite file's folder could not be created (startup error).
    #[error("cannot create the database folder: {0}")]
    Io(#[from] std::io::Error),
    /// The thing asked for does not exist (404).
    #[error("not found: {0}")]
    NotFound(String),
    /// The input breaks a rule, e.g. a rejection without a reason (400).
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// The run is no longer this instance's (it was cancelled, or another
    /// instance took it over after the lease expired): nothing was written.
    #[error("run {0} is no longer held by this instance")]
    LeaseLost(String),
    /// An approval was already decided; decisions happen exactly once (409).
    #[error("approval {id} was already decided ({status})")]
    AlreadyDecided {
        /// The approval (tool-call) id.
        id: String,
        /// What it was decided as: `approved` or `rejected`.
        status: String,
    },
    /// The change conflicts with the current state, e.g. a conversation
    /// another agent took already (409); nothing was written.
    #[error("{0}")]
    Conflict(String),
    /// The approval token is wrong or was already used (403).
    #[error("the approval token is invalid or was already used")]
    InvalidToken,
    /// A stored value could not be read back (500).
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
    /// Hashing or checking a password failed (500).
    #[error("password hashing failed: {0}")]
    Password(String),
    /// Too many sign-ins wait for a password check already (503).
    #[error("too many sign-ins are being checked; try again in a moment")]
    Busy,
}

/// The database: SQLite (one file, WAL) or PostgreSQL. Cloning is cheap; the
/// clones share one pool.
#[derive(Debug, Clone)]
pub enum Database {
    Sqlite(Sqlite),
    Postgres(PgPool),
}

/// A SQLite database: sqlx's pool, and the direct connection that a turn's
/// own statements take ([`direct`]).
#[derive(Debug, Clone)]
pub struct Sqlite {
    pool: SqlitePool,
    /// Opened on first use (or by [`Database::connect`], to fail early).
    direct: Arc<OnceLock<direct::Direct>>,
    /// Who else may open the file meanwhile: the pool's VFS, which the
    /// direct connections share ([`SqliteAccess`]).
    access: SqliteAccess,
}

impl Sqlite {
    /// The sqlx pool.
    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    /// The direct connection to the pool's database, opened when first
    /// asked for.
    pub(crate) fn direct(&self) -> Result<&direct::Direct, DbError> {
        if let Some(direct) = self.direct.get() {
            return Ok(direct);
        }
        let opened = direct::Direct::open(self.pool.connect_options().get_filename(), self.access)?;
        // Two first callers may both open one: one is kept.
        Ok(self.direct.get_or_init(|| opened))
    }
}

impl From<SqlitePool> for Database {
    /// The pool's database (tests make theirs with `#[sqlx::test]`). Such a
    /// pool opens the file through the platform's VFS, shared with other
    /// processes, and so do the direct connections beside it.
    fn from(pool: SqlitePool) -> Self {
        Self::sqlite(pool, SqliteAccess::Shared)
    }
}

impl Database {
    fn sqlite(pool: SqlitePool, access: SqliteAccess) -> Self {
        Self::Sqlite(Sqlite {
            pool,
            direct: Arc::default(),
            access,
        })
    }

    /// Opens a pool on `sqlite://path` (the file and its folder are created
    /// when missing) or `postgres://user:pass@host/db`. A SQLite file is
    /// this process's alone while it is open ([`SqliteAccess::Process`]).
    pub async fn connect(url: &str) -> Result<Self, DbError> {
        Self::connect_with(url, SqliteAccess::Process).await
    }

    /// [`Database::connect`], a SQLite file opened with `access` (crate
    /// docs, "Durability"; PostgreSQL ignores it).
    #[tracing::instrument(skip_all, fields(backend))]
    pub async fn connect_with(url: &str, access: SqliteAccess) -> Result<Self, DbError> {
        if url.starts_with("sqlite:") {
            tracing::Span::current().record("backend", "sqlite");
            let options = SqliteConnectOptions::from_str(url)?;
            let in_memory = url.contains(":memory:") || url.contains("mode=memory");
            if !in_memory {
                if let Some(dir) = options.get_filename().parent() {
                    if !dir.as_os_str().is_empty() {
                        std::fs::create_dir_all(dir)?;
                    }
                }
            }
            let options = sqlite_options(options);
            // A file's log is checkpointed by a task of its own (`wal`), and
            // written a commit at a time (aics-sqlite-vfs), as the direct
            // connections write it.
            let pool_options = if in_memory {
                options.clone()
            } else {
                options
                    .clone()
                    .vfs(aics_sqlite_vfs::register(access)?)
                    .pragma("wal_autocheckpoint", wal::AUTOCHECKPOINT_PAGES.to_string())
            };
            let pool = SqlitePoolOptions::new()
                // An in-memory database must have exactly one connection
                // anyway: each would otherwise see its own empty database.
                .max_connections(SQLITE_MAX_CONNECTIONS)
                .min_connections(1)
                .acquire_timeout(Duration::from_secs(10))
                // A connection to a local file cannot go stale the way a
                // socket can; sqlx's ping before each use was a round trip
                // to the connection's thread for every query.
                .test_before_acquire(false)
                // An in-memory database lives as long as its connection.
                .idle_timeout(if in_memory {
                    None
                } else {
                    Some(Duration::from_secs(600))
                })
                .max_lifetime(if in_memory {
                    None
                } else {
                    Some(Duration::from_secs(1800))
                })
                .connect_with(pool_options)
                .await
                .map_err(|e| match e {
                    e if access == SqliteAccess::Process && is_busy(&e) => {
                        DbError::InUse(options.get_filename().display().to_string())
                    }
                    e => DbError::from(e),
                })?;
            let db = Self::sqlite(pool, access);
            if let Self::Sqlite(sqlite) = &db {
                sqlite.direct()?;
                if !in_memory {
                    wal::start(options, sqlite.clone());
                }
            }
            Ok(db)
        } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            tracing::Span::current().record("backend", "postgres");
            let options = PgConnectOptions::from_str(url)?;
            let pool = PgPoolOptions::new()
                .max_connections(POSTGRES_MAX_CONNECTIONS)
                .acquire_timeout(Duration::from_secs(10))
                .connect_with(options)
                .await?;
            Ok(Self::Postgres(pool))
        } else {
            Err(DbError::UnsupportedUrl(redact(url)))
        }
    }

    /// `sqlite` or `postgres`.
    pub fn backend(&self) -> &'static str {
        match self {
            Self::Sqlite(_) => "sqlite",
            Self::Postgres(_) => "postgres",
        }
    }

    /// Applies the pending migrations of this backend.
    #[tracing::instrument(skip_all, fields(backend = self.backend()))]
    pub async fn migrate(&self) -> Result<(), DbError> {
        match self {
            Self::Sqlite(sqlite) => {
                sqlx::migrate!("./migrations/sqlite")
                    .run(sqlite.pool())
                    .await?;
                // Opened now, before anyone holds a lock (it sets WAL on a
                // pool made elsewhere).
                sqlite.direct()?;
            }
            Self::Postgres(pool) => sqlx::migrate!("./migrations/postgres").run(pool).await?,
        }
        Ok(())
    }

    /// Inserts the demo company's data unless it is already there.
    pub async fn seed(&self) -> Result<seed::SeedReport, DbError> {
        seed::seed(self).await
    }

    /// Checks that the database answers.
    #[tracing::instrument(skip_all, fields(backend = self.backend()))]
    pub async fn ping(&self) -> Result<(), DbError> {
        with_pool!(self, pool => sqlx::query("SELECT 1").execute(pool).await?.rows_affected());
        Ok(())
    }

    /// Fails with a clear message when the server's tables are missing: the
    /// migrations are embedded at compile time, and a build of this crate
    /// older than a migration file does not carry it.
    pub async fn check_schema(&self) -> Result<(), DbError> {
        let probe = with_pool!(self, pool => sqlx::query(
            "SELECT (SELECT COUNT(*) FROM sessions) + (SELECT COUNT(*) FROM runs) \
             + (SELECT COUNT(*) FROM event_spool)",
        )
        .execute(pool)
        .await
        .map(|_| ()));
        probe.map_err(|e| {
            DbError::Corrupt(format!(
                "the database lacks the server tables ({e}); aics-db was compiled before its \
                 migration files changed: run `touch db/src/lib.rs` (or `cargo clean -p aics-db`) \
                 and build again"
            ))
        })
    }

    /// Closes the pool, waiting for connections in use to come back.
    pub async fn close(&self) {
        if let Self::Sqlite(Sqlite { direct, .. }) = self {
            if let Some(direct) = direct.get() {
                direct.close().await;
            }
        }
        with_pool!(self, pool => pool.close().await);
    }
}

/// The SQLite settings of the crate docs' durability section.
fn sqlite_options(options: SqliteConnectOptions) -> SqliteConnectOptions {
    options
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Normal)
        .busy_timeout(Duration::from_secs(5))
        .foreign_keys(true)
}

/// Applies aics's SQLite settings to options built elsewhere (tests get
/// theirs from `#[sqlx::test]`).
pub fn sqlite_connect_options(options: SqliteConnectOptions) -> SqliteConnectOptions {
    sqlite_options(options)
}

/// Whether `e` is SQLite's "database is locked" (`SQLITE_BUSY`, with any
/// extended code).
fn is_busy(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Database(e) => e
            .code()
            .and_then(|code| code.parse::<i32>().ok())
            .is_some_and(|code| code & 0xff == 5),
        _ => false,
    }
}

/// A URL without its password, for error messages.
fn redact(url: &str) -> String {
    match (url.find("://"), url.find('@')) {
        (Some(scheme), Some(at)) if at > scheme => format!("{}://…{}", &url[..scheme], &url[at..]),
        _ => url.to_owned(),
    }
}

/// Reads a stored enum name back, or says the row is corrupt.
pub(crate) fn parse_stored<T>(
    what: &str,
    value: &str,
    parse: fn(&str) -> Option<T>,
) -> Result<T, DbError> {
    parse(value).ok_or_else(|| DbError::Corrupt(format!("unknown {what} {value:?}")))
}

/// The current time, the one clock every store writes with.
pub(crate) fn now() -> aics_types::Timestamp {
    chrono::Utc::now()
}

//! What a [`crate::Console`] is built with. The server fills it from its
//! TOML file and environment; tests build it directly.

use std::collections::BTreeMap;
use std::time::Duration;

use aics_agent::policy::ApprovalsConfig;
use aics_agent::support::{DEFAULT_MAX_TOOL_LOOPS, DEFAULT_TOOL_TIMEOUT};
use aics_agent::{Durability, EngineKind};
use aics_openai::ProviderConfig;
use aics_types::Role;
use secrecy::SecretString;

/// How the console behaves. Secrets (the API token) print as redacted.
#[derive(Debug, Clone)]
pub struct ConsoleConfig {
    /// The name of the active provider (the key in `[llm.providers]`).
    pub provider_name: String,
    /// The active provider: the demo model or an OpenAI-compatible endpoint.
    pub provider: ProviderConfig,
    /// Every configured provider by name (`[llm.providers]`), which forks
    /// may run on. The default (`provider_name`, `provider`) is added, or
    /// replaces the entry of its name; `demo` is always there.
    pub providers: BTreeMap<String, ProviderConfig>,
    /// `graph` (the ReAct loop) or `linear` (one routed tool, then respond).
    pub engine: EngineKind,
    /// Tool steps per turn before the model must answer.
    pub max_tool_loops: u32,
    /// How long one tool call may take.
    pub tool_timeout: Duration,
    /// The demo model's pause between tokens (0 in tests).
    pub demo_token_delay: Duration,
    /// Whether `[fault:…]` markers in a message make the demo model fail.
    pub demo_faults: bool,
    /// The bearer token scripts send; none means the API needs a session.
    pub api_token: Option<SecretString>,
    /// The role the API token acts with.
    pub api_token_role: Role,
    /// How long a sign-in lasts at most.
    pub session_ttl: Duration,
    /// A session unused this long ends.
    pub session_idle: Duration,
    /// Signed-in browsers per user; signing in on one more ends the oldest.
    pub sessions_per_user: u32,
    /// Whether the session cookie is `Secure` with the `__Host-` prefix
    /// (served over HTTPS). The server decides; see server/README.md.
    pub cookie_secure: bool,
    /// How failed sign-ins slow down and lock.
    pub throttle: ThrottlePolicy,
    /// Open event streams per person (on this instance).
    pub streams_per_user: u32,
    /// Open event streams of the API token's integration (on this
    /// instance): one client carrying many customers' turns, bounded by
    /// the connection limit rather than by a person's tab count.
    pub api_streams: u32,
    /// Open customer event streams per client address (on this instance),
    /// across all of its chat links.
    pub customer_streams_per_address: u32,
    /// How often ended sessions and quiet sign-in counts are deleted.
    pub purge_every: Duration,
    /// How many earlier messages a turn sees.
    pub history_messages: u32,
    /// How long a run's lease lasts; its owner renews it every third of
    /// that while the run lives. A run whose lease ran out (its process
    /// died) is taken over by the recovery sweep of any instance.
    pub lease: Duration,
    /// How often every instance sweeps for runs to recover.
    pub sweep_interval: Duration,
    /// How many times a run is started (1 + recoveries) before it is given
    /// up as failed: a turn that crashes its process must not loop for ever.
    pub max_attempts: u32,
    /// When a turn's checkpoints are written: `sync` (before each next
    /// node), `async` (beside it) or `exit` (in one batch when the turn
    /// ends or pauses); docs/ARCHITECTURE.md, "Durability", says what a
    /// crash can lose in each.
    pub durability: Durability,
    /// Test hook: each support tool call waits this long first, so a fault
    /// test can kill the process while a tool call runs (0 in production).
    pub tool_delay: Duration,
    /// `[approvals]`: the approval policy (compiled by `Console::new`), its
    /// deadlines and the webhook for new approvals.
    pub approvals: ApprovalsConfig,
}

impl Default for ConsoleConfig {
    fn default() -> Self {
        Self {
            provider_name: "demo".into(),
            provider: ProviderConfig::Demo,
            providers: BTreeMap::new(),
            engine: EngineKind::Graph,
            max_tool_loops: DEFAULT_MAX_TOOL_LOOPS,
            tool_timeout: DEFAULT_TOOL_TIMEOUT,
            demo_token_delay: Duration::from_millis(20),
            demo_faults: false,
            api_token: None,
            api_token_role: Role::Agent,
            session_ttl: Duration::from_secs(12 * 3600),
            session_idle: Duration::from_secs(30 * 60),
            sessions_per_user: 10,
            cookie_secure: false,
            throttle: ThrottlePolicy::default(),
            streams_per_user: 16,
            api_streams: 1024,
            customer_streams_per_address: 32,
            purge_every: Duration::from_secs(600),
            history_messages: 20,
            lease: Duration::from_secs(30),
            sweep_interval: Duration::from_secs(10),
            max_attempts: 3,
            durability: Durability::default(),
            tool_delay: Duration::ZERO,
            approvals: ApprovalsConfig::default(),
        }
    }
}

impl ConsoleConfig {
    /// The defaults with the demo model answering instantly (tests).
    pub fn for_tests() -> Self {
        Self {
            demo_token_delay: Duration::ZERO,
            demo_faults: true,
            ..Self::default()
        }
    }
}

/// How sign-in attempts are throttled (docs/API.md, "Auth"). Each attempt
/// is counted before its password is checked, under three counts:
/// - a name from one address (`user_free`, `user_lock_after`): the first
///   `user_free` attempts are free, each further one doubles a wait (from
///   `base_delay` up to `max_delay`), and the `user_lock_after`-th locks
///   that address out of that name for `lock_for`;
/// - an address, whatever the names (`addr_free`, `addr_lock_after`), alike;
/// - a name from everywhere (`name_free`, `name_max_delay`): only doubling
///   waits, up to `name_max_delay`, never a lock, and not for an address
///   the name signed in from before.
///
/// A count quiet for `lock_for` starts over; a good sign-in clears its
/// name's counts. At most `addr_in_flight` sign-ins of one address run at
/// once on an instance; the next is refused at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThrottlePolicy {
    pub user_free: u32,
    pub user_lock_after: u32,
    pub addr_free: u32,
    pub addr_lock_after: u32,
    pub base_delay: Duration,
    pub max_delay: Duration,
    pub lock_for: Duration,
    pub name_free: u32,
    pub name_max_delay: Duration,
    pub addr_in_flight: u32,
}

impl Default for ThrottlePolicy {
    fn default() -> Self {
        Self {
            user_free: 5,
            user_lock_after: 10,
            // An office behind one address shares this count.
            addr_free: 20,
            addr_lock_after: 100,
            base_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(60),
            lock_for: Duration::from_secs(15 * 60),
            // As many as one address may try before its lock.
            name_free: 10,
            name_max_delay: Duration::from_secs(5 * 60),
            addr_in_flight: 4,
        }
    }
}

impl ThrottlePolicy {
    /// How long a key is blocked after its `failures`-th failure.
    pub fn block_after(&self, failures: i64, free: u32, lock_after: u32) -> Option<Duration> {
        if failures >= i64::from(lock_after) {
            return Some(self.lock_for);
        }
        self.doubling(failures, free, self.max_delay)
    }

    /// The wait after the `attempts`-th attempt on a name from one address.
    pub fn pair_wait(&self, attempts: i64) -> Option<Duration> {
        self.block_after(attempts, self.user_free, self.user_lock_after)
    }

    /// The wait after the `attempts`-th attempt from one address.
    pub fn addr_wait(&self, attempts: i64) -> Option<Duration> {
        self.block_after(attempts, self.addr_free, self.addr_lock_after)
    }

    /// The wait after the `attempts`-th attempt on a name from addresses
    /// it never signed in from: it grows, but never locks.
    pub fn name_wait(&self, attempts: i64) -> Option<Duration> {
        self.doubling(attempts, self.name_free, self.name_max_delay)
    }

    /// `base_delay` doubled for each attempt past the `free` ones, up to `max`.
    fn doubling(&self, attempts: i64, free: u32, max: Duration) -> Option<Duration> {
        let over = attempts - i64::from(free);
        if over <= 0 {
            return None;
        }
        let factor = 1u32
            .checked_shl((over - 1).min(30) as u32)
            .unwrap_or(u32::MAX);
        Some(self.base_delay.saturating_mul(factor).min(max))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_then_locks() {
        let p = ThrottlePolicy::default();
        let at = |n| p.block_after(n, p.user_free, p.user_lock_after);
        assert_eq!(at(1), None);
        assert_eq!(at(5), None);
        assert_eq!(at(6), Some(Duration::from_secs(1)));
        assert_eq!(at(7), Some(Duration::from_secs(2)));
        assert_eq!(at(9), Some(Duration::from_secs(8)));
        assert_eq!(at(10), Some(Duration::from_secs(900)));
        assert_eq!(at(500), Some(Duration::from_secs(900)));
        let a = |n| p.block_after(n, p.addr_free, p.addr_lock_after);
        assert_eq!(a(20), None);
        assert_eq!(a(60), Some(Duration::from_secs(60)), "capped");
        assert_eq!(a(100), Some(Duration::from_secs(900)));
        assert_eq!((p.pair_wait(9), p.pair_wait(10)), (at(9), at(10)));
        assert_eq!(p.addr_wait(60), a(60));
    }

    #[test]
    fn a_name_from_everywhere_only_waits() {
        let p = ThrottlePolicy::default();
        assert_eq!(p.name_wait(10), None);
        assert_eq!(p.name_wait(11), Some(Duration::from_secs(1)));
        assert_eq!(p.name_wait(13), Some(Duration::from_secs(4)));
        assert_eq!(p.name_wait(19), Some(Duration::from_secs(256)));
        for n in [20, 100, i64::MAX] {
            assert_eq!(p.name_wait(n), Some(Duration::from_secs(300)), "capped");
        }
    }
}

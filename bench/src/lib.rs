//! What the two benchmark binaries share: nearest-rank percentiles (the
//! rounding of LangGraph's `bench.py`), a process's resident memory and
//! the CPU time and writes it has used, and how much of the machine's CPU
//! time was idle.
//!
//! # Layout
//! - this file: [`pct`], [`rss_mb`], [`Usage`], [`Cores`].
//! - `main.rs` (`aics-bench`): the engine benchmark, beside LangGraph.
//! - `bin/aics-load/` (`aics-load`): the HTTP load generator of
//!   `scripts/bench-http`.
#![forbid(unsafe_code)]

/// Nearest-rank percentile of sorted values, as bench.py computes it (Python
/// rounds half to even); NaN when there are none.
pub fn pct(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (p / 100.0 * sorted.len() as f64 + 0.5).round_ties_even() as i64 - 1;
    sorted[rank.clamp(0, sorted.len() as i64 - 1) as usize]
}

/// Resident memory of process `pid` (`self` for this one) in MiB: the
/// current (`VmRSS`) and the peak (`VmHWM`, what `getrusage` reports as
/// `ru_maxrss` on Linux); NaN when `/proc` does not say.
pub fn rss_mb(pid: &str) -> (f64, f64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            .map_or(f64::NAN, |kib| kib / 1024.0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// What a process has used so far, from `/proc`: read it before and after
/// a phase and divide the difference by the phase's turns. On a shared
/// machine the CPU time a turn costs moves far less than turns per second
/// do (another process's load slows a turn without making it cost more),
/// and the bytes and calls it writes do not move at all.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Usage {
    /// User and system CPU time, in seconds.
    pub cpu_seconds: f64,
    /// Bytes handed to `write`-like calls (`wchar`: files and sockets).
    pub write_bytes: u64,
    /// `write`-like calls made (`syscw`).
    pub write_calls: u64,
}

/// `/proc/PID/stat` counts CPU time in `USER_HZ` ticks: 100 a second on
/// x86-64 and arm64 whatever the kernel's own `HZ` (it is the interface's
/// unit, not the scheduler's).
const USER_HZ: f64 = 100.0;

impl Usage {
    /// Process `pid`'s usage so far; `None` when `/proc` does not say (no
    /// such process, or not ours to read).
    pub fn of(pid: &str) -> Option<Self> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let io = std::fs::read_to_string(format!("/proc/{pid}/io")).ok()?;
        Self::parse(&stat, &io)
    }

    fn parse(stat: &str, io: &str) -> Option<Self> {
        // The command name (field 2) may hold spaces and parentheses: the
        // fields are counted from the last `)`. utime and stime are fields
        // 14 and 15, the 12th and 13th after it.
        let mut after = stat.get(stat.rfind(')')? + 1..)?.split_whitespace();
        let utime: u64 = after.nth(11)?.parse().ok()?;
        let stime: u64 = after.next()?.parse().ok()?;
        let field = |name: &str| {
            io.lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.trim().parse::<u64>().ok())
        };
        Some(Self {
            cpu_seconds: (utime + stime) as f64 / USER_HZ,
            write_bytes: field("wchar:")?,
            write_calls: field("syscw:")?,
        })
    }

    /// CPU milliseconds used between `earlier` and `self`, per one of `n`
    /// turns.
    pub fn cpu_ms_per_turn(&self, earlier: &Self, n: usize) -> f64 {
        (self.cpu_seconds - earlier.cpu_seconds) * 1000.0 / n.max(1) as f64
    }

    /// What was used between `earlier` and `self`, per one of `n` turns:
    /// ` cpu_ms_per_turn=… write_kb_per_turn=… writes_per_turn=…` after
    /// `prefix`, for a result line.
    pub fn per_turn(&self, earlier: &Self, n: usize, prefix: &str) -> String {
        let cpu = self.cpu_ms_per_turn(earlier, n);
        let n = n.max(1) as f64;
        format!(
            " {prefix}cpu_ms_per_turn={cpu:.3} {prefix}write_kb_per_turn={:.1} {prefix}writes_per_turn={:.1}",
            self.write_bytes.saturating_sub(earlier.write_bytes) as f64 / 1024.0 / n,
            self.write_calls.saturating_sub(earlier.write_calls) as f64 / n,
        )
    }
}

/// The whole machine's CPU time so far, from the first line of
/// `/proc/stat`, in `USER_HZ` ticks summed over its cores: read it before
/// and after a phase to see how much of the machine sat idle meanwhile.
/// Cores idle while every turn of a load is in flight mean the turns wait
/// for something other than the CPU (round 31 of BENCHMARKS.md: the
/// writer's batch).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Cores {
    /// Every tick counted, idle or not.
    pub total: u64,
    /// Idle with nothing to run.
    pub idle: u64,
    /// Idle while waiting for the disk.
    pub iowait: u64,
    /// Taken by the hypervisor for another guest.
    pub steal: u64,
}

impl Cores {
    /// The machine's CPU time so far; `None` when `/proc/stat` does not say.
    pub fn now() -> Option<Self> {
        Self::parse(&std::fs::read_to_string("/proc/stat").ok()?)
    }

    fn parse(stat: &str) -> Option<Self> {
        // `cpu  user nice system idle iowait irq softirq steal guest
        // guest_nice`; guest time is already counted in user and nice.
        let ticks: Vec<u64> = stat
            .lines()
            .next()?
            .strip_prefix("cpu ")?
            .split_whitespace()
            .take(8)
            .map(str::parse)
            .collect::<Result<_, _>>()
            .ok()?;
        let [_user, _nice, _system, idle, iowait, _irq, _softirq, steal] = ticks[..] else {
            return None;
        };
        Some(Self {
            total: ticks.iter().sum(),
            idle,
            iowait,
            steal,
        })
    }

    /// The shares of the time between `earlier` and `self`, in percent:
    /// ` machine_idle_pct=… machine_iowait_pct=… machine_steal_pct=…`, for
    /// a result line.
    pub fn shares(&self, earlier: &Self) -> String {
        let total = self.total.saturating_sub(earlier.total).max(1) as f64;
        let pct = |now: u64, then: u64| now.saturating_sub(then) as f64 * 100.0 / total;
        format!(
            " machine_idle_pct={:.1} machine_iowait_pct={:.1} machine_steal_pct={:.1}",
            pct(self.idle, earlier.idle),
            pct(self.iowait, earlier.iowait),
            pct(self.steal, earlier.steal),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cores_read_proc_stat_and_share_the_time() {
        let before = "cpu  100 0 50 800 10 0 0 40 0 0\ncpu0 50 0 25 400 5 0 0 20 0 0\n";
        let after = "cpu  290 5 95 920 30 0 0 60 7 0\ncpu0 1 1 1 1 1 1 1 1 1 1\n";
        let (before, after) = (Cores::parse(before), Cores::parse(after));
        assert_eq!(
            before,
            Some(Cores {
                total: 1000,
                idle: 800,
                iowait: 10,
                steal: 40
            })
        );
        let (Some(before), Some(after)) = (before, after) else {
            unreachable!("both parsed")
        };
        // 400 ticks between them: 120 idle, 20 waiting, 20 stolen.
        assert_eq!(
            after.shares(&before),
            " machine_idle_pct=30.0 machine_iowait_pct=5.0 machine_steal_pct=5.0"
        );
        assert!(Cores::parse("intr 1 2 3").is_none());
        assert!(Cores::parse("cpu  1 2 3").is_none());
        assert!(Cores::now().is_some_and(|c| c.total >= c.idle));
    }

    #[test]
    fn usage_reads_proc_and_divides_per_turn() {
        let stat = "4242 (aics (x) 1) S 1 2 3 4 5 6 7 8 9 10 250 50 0 0 20 0 4 0 100";
        let io = "rchar: 10\nwchar: 409600\nsyscr: 3\nsyscw: 200\nread_bytes: 0\n";
        let u = Usage::parse(stat, io).expect("parsed");
        assert_eq!(
            u,
            Usage {
                cpu_seconds: 3.0,
                write_bytes: 409_600,
                write_calls: 200
            }
        );
        assert_eq!(
            u.per_turn(&Usage::default(), 100, "server_"),
            " server_cpu_ms_per_turn=30.000 server_write_kb_per_turn=4.0 server_writes_per_turn=2.0"
        );
        assert!(Usage::parse("garbage", io).is_none());
        assert!(Usage::of("self").is_some_and(|u| u.cpu_seconds >= 0.0));
    }

    #[test]
    fn percentiles_match_bench_py() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(pct(&v, 50.0), 50.0);
        // round(99.5) is 100 in Python (half to even): index 99.
        assert_eq!(pct(&v, 99.0), 100.0);
        assert_eq!(pct(&[1.0, 2.0, 3.0], 50.0), 2.0);
        assert!(pct(&[], 50.0).is_nan());
    }

    #[test]
    fn this_process_has_a_resident_size() {
        let (now, peak) = rss_mb("self");
        assert!(now > 0.0 && peak >= now, "{now} {peak}");
    }
}

//! What the two benchmark binaries share: nearest-rank percentiles (the
//! rounding of LangGraph's `bench.py`) and a process's resident memory.
//!
//! # Layout
//! - this file: [`pct`], [`rss_mb`].
//! - `main.rs` (`aics-bench`): the engine benchmark, beside LangGraph.
//! - `bin/aics-load.rs` (`aics-load`): the HTTP load generator of
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

#[cfg(test)]
mod tests {
    use super::*;

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

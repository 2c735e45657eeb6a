//! Times as the pages show them (always UTC), written from the date's
//! parts: `chrono`'s `format` would bring its strftime parser and
//! formatter into the browser for these few shapes (4 KB of the main wasm,
//! brotli; BENCHMARKS.md "Client bundle").

use aics_types::Timestamp;
use chrono::{Datelike, Timelike};

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// `2026-12-01` (`%Y-%m-%d`).
pub fn date(t: &Timestamp) -> String {
    format!("{:04}-{:02}-{:02}", t.year(), t.month(), t.day())
}

/// `14:05` (`%H:%M`).
pub fn hm(t: &Timestamp) -> String {
    format!("{:02}:{:02}", t.hour(), t.minute())
}

/// `14:05:09` (`%H:%M:%S`).
pub fn hms(t: &Timestamp) -> String {
    format!("{:02}:{:02}:{:02}", t.hour(), t.minute(), t.second())
}

/// `14:05:09.042` (`%H:%M:%S%.3f`).
pub fn hms_millis(t: &Timestamp) -> String {
    // A leap second's nanoseconds run past 10⁹; `%.3f` shows them modulo.
    let millis = t.nanosecond() % 1_000_000_000 / 1_000_000;
    format!("{}.{millis:03}", hms(t))
}

/// `Dec 1, 14:05` (`%b %-d, %H:%M`).
pub fn month_day_hm(t: &Timestamp) -> String {
    format!("{} {}, {}", month(t), t.day(), hm(t))
}

/// `1 Dec 14:05` (`%-d %b %H:%M`).
pub fn day_month_hm(t: &Timestamp) -> String {
    format!("{} {} {}", t.day(), month(t), hm(t))
}

/// `2026-12-01 14:05` (`%Y-%m-%d %H:%M`).
pub fn date_hm(t: &Timestamp) -> String {
    format!("{} {}", date(t), hm(t))
}

/// `2026-12-01 14:05:09` (`%Y-%m-%d %H:%M:%S`).
pub fn date_hms(t: &Timestamp) -> String {
    format!("{} {}", date(t), hms(t))
}

/// `2026-12-01T14:05:09.042Z`: RFC 3339 to the millisecond, for a
/// `<time datetime>` or a `data-` attribute a script reads.
pub fn rfc3339(t: &Timestamp) -> String {
    format!("{}T{}Z", date(t), hms_millis(t))
}

fn month(t: &Timestamp) -> &'static str {
    MONTHS[t.month0() as usize]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shape_reads_as_strftime_would_write_it() {
        let times = [
            "2026-12-01T09:05:03.042Z",
            "2027-01-31T23:59:59.999999Z",
            "0999-02-03T00:00:00Z",
        ];
        for text in times {
            let t: Timestamp = text.parse().unwrap();
            assert_eq!(date(&t), t.format("%Y-%m-%d").to_string());
            assert_eq!(hm(&t), t.format("%H:%M").to_string());
            assert_eq!(hms(&t), t.format("%H:%M:%S").to_string());
            assert_eq!(hms_millis(&t), t.format("%H:%M:%S%.3f").to_string());
            assert_eq!(month_day_hm(&t), t.format("%b %-d, %H:%M").to_string());
            assert_eq!(day_month_hm(&t), t.format("%-d %b %H:%M").to_string());
            assert_eq!(date_hm(&t), t.format("%Y-%m-%d %H:%M").to_string());
            assert_eq!(date_hms(&t), t.format("%Y-%m-%d %H:%M:%S").to_string());
            assert_eq!(rfc3339(&t), t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string());
            assert_eq!(
                rfc3339(&t).parse::<Timestamp>().ok(),
                Some(
                    t.with_nanosecond(t.nanosecond() / 1_000_000 * 1_000_000)
                        .unwrap()
                )
            );
        }
        let t: Timestamp = "2026-12-01T09:05:03.042Z".parse().unwrap();
        assert_eq!(month_day_hm(&t), "Dec 1, 09:05");
        assert_eq!(hms_millis(&t), "09:05:03.042");
    }
}

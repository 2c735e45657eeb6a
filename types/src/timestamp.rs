//! How a [`Timestamp`] is read back from JSON.
//!
//! Every `Timestamp` field is written by chrono's own `Serialize` (RFC 3339:
//! `2026-12-03T07:44:34.123456789Z`, 0, 3, 6 or 9 digits of fraction) and
//! read with `#[serde(deserialize_with = "crate::timestamp::deserialize")]`
//! (or [`option`] for an `Option<Timestamp>`), which reads that shape —
//! date, `T` (or `t`, or a space), time, an optional fraction of up to nine
//! digits, then `Z` or a `±hh:mm` offset — from its digits.
//!
//! chrono's `Deserialize` goes through its generic format parser (the
//! RFC 3339 and RFC 2822 item tables and the `Parsed` resolver): 14 KB of
//! the console's main wasm for strings that always have this one shape
//! (BENCHMARKS.md "Client bundle"). The server still accepts the other
//! spellings chrono's relaxed parser takes (an API client's `+0000`,
//! spaces between the parts, a year with a sign): what the fast reading
//! refuses, it hands to chrono's parser. The browser only ever reads what
//! the server wrote, so it has no such fallback.

use std::fmt;

use chrono::{NaiveDate, NaiveTime, TimeDelta};
use serde::de::{self, Deserialize, Deserializer, Unexpected, Visitor};

use crate::Timestamp;

/// Reads a `Timestamp` field (`deserialize_with`).
pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Timestamp, D::Error> {
    Read::deserialize(d).map(|read| read.0)
}

/// Reads an `Option<Timestamp>` field (`deserialize_with`; give the field
/// `#[serde(default)]` too, so that a missing field is `None` as before).
pub fn option<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Timestamp>, D::Error> {
    Option::<Read>::deserialize(d).map(|read| read.map(|read| read.0))
}

/// The text of an RFC 3339 timestamp as UTC, or `None` when it is not one.
pub fn parse(text: &str) -> Option<Timestamp> {
    let parsed = parse_canonical(text);
    #[cfg(not(target_arch = "wasm32"))]
    let parsed = parsed.or_else(|| text.parse().ok());
    parsed
}

/// An `Option<Timestamp>` read as [`option`] reads it, for the decoders
/// written by hand (`event::decode`).
pub(crate) struct OptionalTimestamp(pub(crate) Option<Timestamp>);

impl<'de> Deserialize<'de> for OptionalTimestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        option(d).map(Self)
    }
}

struct Read(Timestamp);

impl<'de> Deserialize<'de> for Read {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(Rfc3339).map(Read)
    }
}

struct Rfc3339;

impl Visitor<'_> for Rfc3339 {
    type Value = Timestamp;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an RFC 3339 date and time")
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Timestamp, E> {
        parse(text).ok_or_else(|| E::invalid_value(Unexpected::Str(text), &self))
    }
}

/// `YYYY-MM-DD(T|t| )hh:mm:ss[.f{1,9}](Z|z|±hh:mm)`, nothing around it.
fn parse_canonical(text: &str) -> Option<Timestamp> {
    let b = text.as_bytes();
    let number = |from: usize, to: usize| -> Option<u32> {
        b.get(from..to)?.iter().try_fold(0u32, |n, &c| {
            c.is_ascii_digit().then(|| n * 10 + u32::from(c - b'0'))
        })
    };
    let at = |i: usize, c: u8| b.get(i) == Some(&c);
    if !(at(4, b'-') && at(7, b'-') && at(13, b':') && at(16, b':')) {
        return None;
    }
    if !matches!(b.get(10), Some(b'T' | b't' | b' ')) {
        return None;
    }
    let (year, month, day) = (number(0, 4)?, number(5, 7)?, number(8, 10)?);
    let (hour, minute, second) = (number(11, 13)?, number(14, 16)?, number(17, 19)?);

    let mut i = 19;
    let mut nanos = 0;
    if at(i, b'.') {
        let start = i + 1;
        i = start;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        let digits = i - start;
        if !(1..=9).contains(&digits) {
            return None;
        }
        nanos = number(start, i)? * 10u32.pow(9 - digits as u32);
    }

    let offset_seconds = match b.get(i)? {
        b'Z' | b'z' if b.len() == i + 1 => 0,
        sign @ (b'+' | b'-') if b.len() == i + 6 && at(i + 3, b':') => {
            let (hours, minutes) = (number(i + 1, i + 3)?, number(i + 4, i + 6)?);
            if hours > 23 || minutes > 59 {
                return None;
            }
            let seconds = i64::from(hours * 3600 + minutes * 60);
            if *sign == b'-' {
                -seconds
            } else {
                seconds
            }
        }
        _ => return None,
    };

    let date = NaiveDate::from_ymd_opt(year as i32, month, day)?;
    // A leap second (`:60`) is chrono's second 59 with a nanosecond
    // count past 10⁹, as its own parser makes it.
    let (second, nanos) = if second == 60 {
        (59, nanos + 1_000_000_000)
    } else {
        (second, nanos)
    };
    let time = NaiveTime::from_hms_nano_opt(hour, minute, second, nanos)?;
    let utc = date
        .and_time(time)
        .checked_sub_signed(TimeDelta::try_seconds(offset_seconds)?)?;
    Some(utc.and_utc())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// chrono's own reading of `text`, the reference.
    fn chrono(text: &str) -> Option<Timestamp> {
        chrono::DateTime::parse_from_rfc3339(text)
            .ok()
            .map(|t| t.to_utc())
    }

    #[test]
    fn reads_what_chrono_writes_as_chrono_reads_it() {
        let times = [
            "2026-12-03T07:44:34Z",
            "2026-12-03T07:44:34.1Z",
            "2026-12-03T07:44:34.123Z",
            "2026-12-03T07:44:34.123456Z",
            "2026-12-03T07:44:34.123456789Z",
            "2026-12-03t07:44:34.5z",
            "2026-12-03 07:44:34+00:00",
            "2026-12-03T07:44:34.25+05:30",
            "2026-12-03T01:02:03-08:00",
            "2024-02-29T23:59:59.999999999-23:59",
            "0001-01-01T00:00:00+00:01",
            "9999-12-31T23:59:59.999999999Z",
            "1970-01-01T00:00:00Z",
            "2016-12-31T23:59:60.5Z",
        ];
        for text in times {
            let ours = parse_canonical(text);
            assert!(ours.is_some(), "{text}");
            assert_eq!(ours, chrono(text), "{text}");
        }
        // Every instant round-trips through chrono's writer.
        for t in [
            Timestamp::default(),
            chrono::DateTime::from_timestamp(1_764_747_874, 123_000_000).expect("valid"),
            chrono::DateTime::from_timestamp(1_764_747_874, 123_456_789).expect("valid"),
            chrono::DateTime::from_timestamp(253_402_300_799, 0).expect("valid"),
        ] {
            let json = serde_json::to_string(&t).expect("valid");
            let text: String = serde_json::from_str(&json).expect("valid");
            assert_eq!(parse_canonical(&text), Some(t), "{text}");
        }
    }

    #[test]
    fn refuses_what_is_not_a_time() {
        let bad = [
            "",
            "2026-12-03",
            "2026-12-03T07:44:34",
            "2026-12-03T07:44:34.Z",
            "2026-12-03T07:44:34.1234567891Z",
            "2026-13-03T07:44:34Z",
            "2026-02-30T07:44:34Z",
            "2026-12-03T24:00:00Z",
            "2026-12-03T07:60:00Z",
            "2026-12-03T07:44:34+24:00",
            "2026-12-03T07:44:34+05:60",
            "2026-12-03T07:44:34Zjunk",
            "2026-12-03X07:44:34Z",
            "2026-1a-03T07:44:34Z",
            "２026-12-03T07:44:34Z",
        ];
        for text in bad {
            assert_eq!(parse_canonical(text), None, "{text}");
        }
    }

    #[test]
    fn the_server_still_takes_chronos_other_spellings() {
        for text in ["2026-12-03T07:44:34+0530", "2026-12-03T07:44:34 UTC"] {
            assert_eq!(parse_canonical(text), None, "{text}");
            let relaxed: Timestamp = text.parse().expect("valid");
            assert_eq!(parse(text), Some(relaxed), "{text}");
        }
    }

    #[test]
    fn fields_read_through_serde() {
        #[derive(Debug, serde::Deserialize)]
        struct Row {
            #[serde(deserialize_with = "deserialize")]
            at: Timestamp,
            #[serde(default, deserialize_with = "option")]
            until: Option<Timestamp>,
        }
        let row: Row = serde_json::from_str(r#"{"at":"2026-12-03T07:44:34Z"}"#).expect("valid");
        assert_eq!(row.at, chrono("2026-12-03T07:44:34Z").expect("valid"));
        assert_eq!(row.until, None);
        let row: Row =
            serde_json::from_str(r#"{"at":"2026-12-03T07:44:34Z","until":null}"#).expect("valid");
        assert_eq!(row.until, None);
        let row: Row = serde_json::from_str(
            r#"{"at":"2026-12-03T07:44:34Z","until":"2026-12-03T08:00:00.5+01:00"}"#,
        )
        .expect("valid");
        assert_eq!(row.until, chrono("2026-12-03T08:00:00.5+01:00"));
        let err = serde_json::from_str::<Row>(r#"{"at":"yesterday"}"#)
            .expect_err("not a time")
            .to_string();
        assert!(err.contains("an RFC 3339 date and time"), "{err}");
        assert!(serde_json::from_str::<Row>(r#"{"at":17}"#).is_err());
    }
}

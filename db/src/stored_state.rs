//! How a checkpoint's state is stored: the format of the
//! `checkpoints.state` column, and the one decoder of it on both databases.
//!
//! - **PostgreSQL** stores the JSON as `jsonb` (bound as `Json` by the
//!   group-commit writer), which the server itself compresses once a value
//!   passes about 2 KB (TOAST).
//! - **SQLite** stores it compressed: LZ4 (`lz4_flex`, pure Rust) in a
//!   `BLOB` of [`TAG`], the text's length (4 bytes, little-endian) and the
//!   LZ4 block. A turn writes its state after every node, and on SQLite
//!   every byte is written twice (the log, then the database) while the
//!   writer holds the one write lock: the support state's JSON repeats
//!   itself (a model call's record holds the messages it was sent), and
//!   compressed it takes about half the bytes (BENCHMARKS.md, "Round 7").
//!   A state that would not get smaller is stored as its `TEXT`, as
//!   every state was before this format; both kinds are read back, so old
//!   databases need no migration. SQLite keeps a `BLOB` as it is in the
//!   column declared `TEXT` (type affinity converts only numbers).
//!
//! The state read back is always checked to be JSON: a blob that does not
//! decompress, or text that does not parse, is a corrupt row
//! ([`crate::DbError::Corrupt`] through sqlx's column-decode error), never
//! a panic.

use aics_graph::StateJson;
use rusqlite::types::{ToSql, ToSqlOutput, ValueRef};
use serde_json::value::RawValue;
use sqlx::error::BoxDynError;
use sqlx::postgres::{PgTypeInfo, PgValueRef};
use sqlx::sqlite::{SqliteTypeInfo, SqliteValueRef};
use sqlx::types::Json;
use sqlx::{Decode, Postgres, Sqlite, Type};

/// The first byte of a compressed state. A JSON state begins with `{`
/// (or whitespace), never with a control character.
const TAG: u8 = 0x01;
/// Tag and length.
const HEADER: usize = 5;
/// States shorter than this are stored as text: LZ4 finds little to
/// share in a few hundred bytes, and the text stays readable with the
/// `sqlite3` shell.
const MIN_COMPRESSED: usize = 256;

/// A state as SQLite stores it: its text, or its compressed bytes.
#[derive(Debug)]
pub(crate) enum SqliteState<'a> {
    Text(&'a str),
    Lz4(Vec<u8>),
}

impl<'a> SqliteState<'a> {
    /// The stored form of `state`: compressed when that makes it smaller.
    pub(crate) fn encode(state: &'a StateJson) -> Self {
        let text = state.get();
        if text.len() < MIN_COMPRESSED {
            return Self::Text(text);
        }
        let Ok(len) = u32::try_from(text.len()) else {
            // Past 4 GiB: nothing a turn makes; stored as it is.
            return Self::Text(text);
        };
        let mut out = vec![0; HEADER + lz4_flex::block::get_maximum_output_size(text.len())];
        out[0] = TAG;
        out[1..HEADER].copy_from_slice(&len.to_le_bytes());
        match lz4_flex::block::compress_into(text.as_bytes(), &mut out[HEADER..]) {
            Ok(n) if HEADER + n < text.len() => {
                out.truncate(HEADER + n);
                Self::Lz4(out)
            }
            // Incompressible (or, impossibly, a buffer too small): text.
            _ => Self::Text(text),
        }
    }

    /// Bytes in the row.
    #[cfg(test)]
    fn stored_len(&self) -> usize {
        match self {
            Self::Text(t) => t.len(),
            Self::Lz4(b) => b.len(),
        }
    }
}

impl ToSql for SqliteState<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(match self {
            Self::Text(t) => ValueRef::Text(t.as_bytes()),
            Self::Lz4(b) => ValueRef::Blob(b),
        }))
    }
}

/// The state of a checkpoint row, as either database stores it.
#[derive(Debug)]
pub(crate) struct StoredState(pub(crate) StateJson);

/// Reads what [`SqliteState`] wrote (or any JSON text).
fn decode_sqlite(bytes: &[u8]) -> Result<StateJson, BoxDynError> {
    let text = match bytes.split_first() {
        Some((&TAG, rest)) => {
            let (len, block) = rest
                .split_first_chunk::<4>()
                .ok_or("a compressed checkpoint state without its length")?;
            let len = u32::from_le_bytes(*len) as usize;
            // LZ4 expands at most 255-fold: a larger length is damage,
            // not a reason to allocate it.
            if len > block.len().saturating_mul(255) {
                return Err(format!("a compressed checkpoint state claims {len} bytes").into());
            }
            let mut out = vec![0; len];
            let n = lz4_flex::block::decompress_into(block, &mut out)?;
            if n != len {
                return Err(
                    format!("a compressed checkpoint state of {n} bytes, not {len}").into(),
                );
            }
            String::from_utf8(out)?
        }
        _ => std::str::from_utf8(bytes)?.to_owned(),
    };
    Ok(StateJson::from(RawValue::from_string(text)?))
}

impl Type<Sqlite> for StoredState {
    fn type_info() -> SqliteTypeInfo {
        <&[u8] as Type<Sqlite>>::type_info()
    }
    /// `TEXT` or `BLOB`.
    fn compatible(ty: &SqliteTypeInfo) -> bool {
        <&[u8] as Type<Sqlite>>::compatible(ty)
    }
}

impl<'r> Decode<'r, Sqlite> for StoredState {
    fn decode(value: SqliteValueRef<'r>) -> Result<Self, BoxDynError> {
        decode_sqlite(<&[u8] as Decode<Sqlite>>::decode(value)?).map(Self)
    }
}

impl Type<Postgres> for StoredState {
    fn type_info() -> PgTypeInfo {
        <Json<Box<RawValue>> as Type<Postgres>>::type_info()
    }
    fn compatible(ty: &PgTypeInfo) -> bool {
        <Json<Box<RawValue>> as Type<Postgres>>::compatible(ty)
    }
}

impl<'r> Decode<'r, Postgres> for StoredState {
    fn decode(value: PgValueRef<'r>) -> Result<Self, BoxDynError> {
        let Json(raw) = <Json<Box<RawValue>> as Decode<Postgres>>::decode(value)?;
        Ok(Self(StateJson::from(raw)))
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;
    use serde_json::json;

    fn state(v: serde_json::Value) -> StateJson {
        StateJson::from(&v)
    }

    fn round_trip(s: &StateJson) -> StateJson {
        let bytes: Cow<[u8]> = match SqliteState::encode(s) {
            SqliteState::Text(t) => Cow::Borrowed(t.as_bytes()),
            SqliteState::Lz4(b) => Cow::Owned(b),
        };
        decode_sqlite(&bytes).expect("decodes")
    }

    #[test]
    fn a_small_state_stays_text() {
        let s = state(json!({"messages": ["hello"], "current_step": 1}));
        assert!(matches!(SqliteState::encode(&s), SqliteState::Text(_)));
        assert_eq!(round_trip(&s), s);
    }

    #[test]
    fn a_large_state_is_compressed_and_reads_back_the_same() {
        let message =
            json!({"role": "tool", "content": "订单 ORD-2024-001 已发货，顺丰 SF1234567890"});
        let s = state(json!({
            "messages": vec![message.clone(); 40],
            "llm_calls": [{"sent": vec![message; 30]}],
        }));
        let stored = SqliteState::encode(&s);
        assert!(matches!(stored, SqliteState::Lz4(_)));
        assert!(
            stored.stored_len() * 4 < s.get().len(),
            "{} of {} bytes",
            stored.stored_len(),
            s.get().len()
        );
        assert_eq!(round_trip(&s).get(), s.get());
    }

    #[test]
    fn an_incompressible_state_stays_text() {
        // 600 characters with no repeated run of 4 bytes.
        let noise: String = (0..600u32)
            .map(|i| char::from_u32(0x4E00 + (i * 7919) % 20_000).unwrap_or('x'))
            .collect();
        let s = state(json!({ "n": noise }));
        assert!(matches!(SqliteState::encode(&s), SqliteState::Text(_)));
        assert_eq!(round_trip(&s), s);
    }

    #[test]
    fn a_damaged_row_is_an_error_not_a_panic() {
        for bytes in [
            &[TAG][..],
            &[TAG, 9, 0, 0, 0, 0xff, 0xff][..],
            &[TAG, 0xff, 0xff, 0xff, 0x7f, 0x10][..],
            b"{\"messages\": [",
            &[0xc3, 0x28][..],
        ] {
            assert!(decode_sqlite(bytes).is_err(), "{bytes:?}");
        }
    }
}

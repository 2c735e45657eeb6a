//! How a checkpoint's state is read back: [`StoredState`], the one decoder
//! of the `checkpoints.state` column on both databases.
//!
//! - **PostgreSQL** stores the JSON as `jsonb` (bound as `Json` by the
//!   group-commit writer), which the server itself compresses once a value
//!   passes about 2 KB (TOAST).
//! - **SQLite** stores it as [`crate::packed`] says (the group-commit
//!   writer encodes it): LZ4-compressed when that makes it smaller, as
//!   text otherwise. Both are read back.
//!
//! The state read back is always checked to be JSON: a blob that does not
//! decompress, or text that does not parse, is a corrupt row
//! ([`crate::DbError::Corrupt`] through sqlx's column-decode error), never
//! a panic.

use aics_graph::StateJson;
use serde_json::value::RawValue;
use sqlx::error::BoxDynError;
use sqlx::postgres::{PgTypeInfo, PgValueRef};
use sqlx::sqlite::{SqliteTypeInfo, SqliteValueRef};
use sqlx::types::Json;
use sqlx::{Decode, Postgres, Sqlite, Type};

use crate::packed::unpack;

/// The state of a checkpoint row, as either database stores it.
#[derive(Debug)]
pub(crate) struct StoredState(pub(crate) StateJson);

/// Reads what [`crate::packed::Packed`] wrote (or any JSON text).
fn decode_sqlite(bytes: &[u8]) -> Result<StateJson, BoxDynError> {
    Ok(StateJson::from(RawValue::from_string(unpack(bytes)?)?))
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
    use super::*;
    use crate::packed::Packed;
    use serde_json::json;

    fn state(v: serde_json::Value) -> StateJson {
        StateJson::from(&v)
    }

    #[test]
    fn a_large_state_is_compressed_and_reads_back_the_same() {
        let message =
            json!({"role": "tool", "content": "订单 ORD-2024-001 已发货，顺丰 SF1234567890"});
        let s = state(json!({
            "messages": vec![message.clone(); 40],
            "llm_calls": [{"sent": vec![message; 30]}],
        }));
        let stored = Packed::of(s.get());
        assert!(matches!(stored, Packed::Lz4(_)));
        assert_eq!(
            decode_sqlite(stored.bytes()).expect("decodes").get(),
            s.get()
        );
    }

    #[test]
    fn a_damaged_row_is_an_error_not_a_panic() {
        for bytes in [&[0x01][..], b"{\"messages\": [", &[0xc3, 0x28][..]] {
            assert!(decode_sqlite(bytes).is_err(), "{bytes:?}");
        }
    }
}

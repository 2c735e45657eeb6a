//! `turns.trace`, a turn's trace as either database stores it: `jsonb` on
//! PostgreSQL, [`crate::packed`]'s compressed JSON on SQLite (about a
//! third of the ~9 KB of text a support turn's trace takes; BENCHMARKS.md
//! "Round 9"). [`TraceColumn`] is what every write binds — the sqlx
//! statements (`save_turn!`) and the direct connection alike — and
//! [`StoredTrace`] what every read decodes, so the column has one format
//! whichever path wrote it.

use aics_types::ChatTurnTraceResult;
use rusqlite::types::{ToSqlOutput, Value};
use sqlx::encode::IsNull;
use sqlx::error::BoxDynError;
use sqlx::postgres::{PgArgumentBuffer, PgTypeInfo, PgValueRef};
use sqlx::sqlite::{SqliteArgumentValue, SqliteTypeInfo, SqliteValueRef};
use sqlx::types::Json;
use sqlx::{Decode, Encode, Postgres, Sqlite, Type};

use crate::packed::{unpack, Packed};

/// A trace to store (see the module's docs).
#[derive(Debug, Clone, Copy)]
pub(crate) struct TraceColumn<'a>(pub(crate) &'a ChatTurnTraceResult);

impl TraceColumn<'_> {
    /// The bytes SQLite stores: the trace's JSON, packed.
    fn sqlite_value(&self) -> Result<Value, serde_json::Error> {
        let text = serde_json::to_string(self.0)?;
        Ok(match Packed::of(&text) {
            Packed::Text(_) => Value::Text(text),
            Packed::Lz4(bytes) => Value::Blob(bytes),
        })
    }
}

impl rusqlite::ToSql for TraceColumn<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        self.sqlite_value()
            .map(ToSqlOutput::Owned)
            .map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))
    }
}

impl Type<Sqlite> for TraceColumn<'_> {
    fn type_info() -> SqliteTypeInfo {
        <&[u8] as Type<Sqlite>>::type_info()
    }
}

impl<'q> Encode<'q, Sqlite> for TraceColumn<'_> {
    fn encode_by_ref(
        &self,
        args: &mut Vec<SqliteArgumentValue<'q>>,
    ) -> Result<IsNull, BoxDynError> {
        match self.sqlite_value()? {
            Value::Blob(bytes) => <Vec<u8> as Encode<Sqlite>>::encode(bytes, args),
            Value::Text(text) => <String as Encode<Sqlite>>::encode(text, args),
            _ => Err("a trace is text or bytes".into()),
        }
    }
}

impl Type<Postgres> for TraceColumn<'_> {
    fn type_info() -> PgTypeInfo {
        <Json<&ChatTurnTraceResult> as Type<Postgres>>::type_info()
    }
}

impl Encode<'_, Postgres> for TraceColumn<'_> {
    fn encode_by_ref(&self, buf: &mut PgArgumentBuffer) -> Result<IsNull, BoxDynError> {
        <Json<&ChatTurnTraceResult> as Encode<Postgres>>::encode_by_ref(&Json(self.0), buf)
    }
}

/// A trace read back from either database.
#[derive(Debug)]
pub(crate) struct StoredTrace(pub(crate) ChatTurnTraceResult);

impl Type<Sqlite> for StoredTrace {
    fn type_info() -> SqliteTypeInfo {
        <&[u8] as Type<Sqlite>>::type_info()
    }
    /// `TEXT` (a trace stored before it was packed, or too short to pack)
    /// or `BLOB`.
    fn compatible(ty: &SqliteTypeInfo) -> bool {
        <&[u8] as Type<Sqlite>>::compatible(ty)
    }
}

impl<'r> Decode<'r, Sqlite> for StoredTrace {
    fn decode(value: SqliteValueRef<'r>) -> Result<Self, BoxDynError> {
        let text = unpack(<&[u8] as Decode<Sqlite>>::decode(value)?)?;
        Ok(Self(serde_json::from_str(&text)?))
    }
}

impl Type<Postgres> for StoredTrace {
    fn type_info() -> PgTypeInfo {
        <Json<ChatTurnTraceResult> as Type<Postgres>>::type_info()
    }
    fn compatible(ty: &PgTypeInfo) -> bool {
        <Json<ChatTurnTraceResult> as Type<Postgres>>::compatible(ty)
    }
}

impl<'r> Decode<'r, Postgres> for StoredTrace {
    fn decode(value: PgValueRef<'r>) -> Result<Self, BoxDynError> {
        let Json(trace) = <Json<ChatTurnTraceResult> as Decode<Postgres>>::decode(value)?;
        Ok(Self(trace))
    }
}

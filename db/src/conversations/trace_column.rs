//! `turns.trace`, a turn's trace as either database stores it: `jsonb` on
//! PostgreSQL, [`crate::packed`]'s compressed JSON on SQLite (about a
//! third of the ~9 KB of text a support turn's trace takes; BENCHMARKS.md
//! "Round 9"). [`TraceColumn`] is what every write binds — the sqlx
//! statements (`save_turn!`) and the direct connection alike — so the
//! column has one format whichever path wrote it; every read decodes it
//! as [`crate::packed::Unpacked`].

use aics_types::ChatTurnTraceResult;
use rusqlite::types::Value;
use sqlx::encode::IsNull;
use sqlx::error::BoxDynError;
use sqlx::postgres::{PgArgumentBuffer, PgTypeInfo};
use sqlx::sqlite::{SqliteArgumentValue, SqliteTypeInfo};
use sqlx::types::Json;
use sqlx::{Encode, Postgres, Sqlite, Type};

use crate::packed::Packed;
use crate::DbError;

/// A trace to store (see the module's docs).
#[derive(Debug, Clone, Copy)]
pub(crate) struct TraceColumn<'a>(pub(crate) &'a ChatTurnTraceResult);

impl TraceColumn<'_> {
    /// What SQLite stores: the trace's JSON, packed. The direct
    /// connection's writes make it before their transaction begins.
    pub(crate) fn sqlite(&self) -> Result<Value, DbError> {
        let text = serde_json::to_string(self.0)
            .map_err(|e| DbError::Corrupt(format!("unserialisable trace: {e}")))?;
        Ok(match Packed::of(&text) {
            // The text itself, not a copy of it.
            Packed::Text(_) => Value::Text(text),
            packed => packed.into_value(),
        })
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
        match self.sqlite()? {
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

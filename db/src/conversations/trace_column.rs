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
    ///
    /// Written by sonic-rs (the same JSON as serde_json's, read back by
    /// serde_json): escaping the trace's strings, its tool results' JSON
    /// text among them, byte by byte was most of this column's cost.
    pub(crate) fn sqlite(&self) -> Result<Value, DbError> {
        Ok(self.sqlite_and_json(false)?.0)
    }

    /// [`TraceColumn::sqlite`], and with `keep_json` the JSON text it
    /// packed, for a caller that answers with the trace too (a run's end:
    /// `POST /api/chat` sends these bytes rather than writing them again).
    pub(crate) fn sqlite_and_json(
        &self,
        keep_json: bool,
    ) -> Result<(Value, Option<String>), DbError> {
        let text = sonic_rs::to_string(self.0)
            .map_err(|e| DbError::Corrupt(format!("unserialisable trace: {e}")))?;
        Ok(match Packed::of(&text) {
            // Too short to compress (no support turn's trace is).
            Packed::Text(_) if keep_json => (Value::Text(text.clone()), Some(text)),
            // The text itself, not a copy of it.
            Packed::Text(_) => (Value::Text(text), None),
            packed => (packed.into_value(), keep_json.then_some(text)),
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

#[cfg(test)]
mod tests {
    use aics_types::{ToolCallRecord, ToolCallStatus};
    use serde_json::json;

    use super::*;

    /// sonic-rs writes the column's JSON as serde_json would, byte for
    /// byte: escapes, non-ASCII text, numbers of every kind.
    #[test]
    fn the_column_is_serde_json_s_text() {
        let at = "2026-11-30T05:00:00.123456Z".parse().expect("timestamp");
        let awkward = "引号\"反斜杠\\ tab\t newline\n nul\u{0} bell\u{7} del\u{7f} 😀 </script>";
        let value = json!({
            "text": awkward,
            "numbers": [0, -1, u64::MAX, i64::MIN, 0.1, 1e-7, 12345.678, 2.5e300, -0.0],
            "nested": {"b": [true, false, null], "a": {"z": "", "y": []}},
        });
        let trace = ChatTurnTraceResult {
            graph_execution_id: "g-1".into(),
            reply: awkward.into(),
            tool_calls: vec![ToolCallRecord {
                id: "call_1".into(),
                name: "order_query".into(),
                input: value.clone().into(),
                output: value.into(),
                status: ToolCallStatus::Ok,
                timestamp: at,
                duration_ms: Some(u64::MAX),
            }],
            tool_result: Some(r#"{"ok":"yes \"quoted\""}"#.into()),
            cost_usd: Some(0.000_123_4),
            error: Some(awkward.into()),
            started_at: at,
            ..ChatTurnTraceResult::default()
        };
        let sonic = sonic_rs::to_string(&trace).expect("sonic-rs");
        assert_eq!(sonic, serde_json::to_string(&trace).expect("serde_json"));
        let back: ChatTurnTraceResult = serde_json::from_str(&sonic).expect("read back");
        assert_eq!(back, trace);
    }

    /// The JSON a run's end hands back is serde_json's text of the trace,
    /// and what the column holds (compressed) reads back as that trace.
    #[test]
    fn the_json_handed_back_is_what_the_column_holds() {
        let trace = ChatTurnTraceResult {
            graph_execution_id: "g-long".into(),
            reply: "Your order ORD-123 is on its way. ".repeat(40),
            ..ChatTurnTraceResult::default()
        };
        let (value, json) = TraceColumn(&trace).sqlite_and_json(true).expect("stored");
        let json = json.expect("the JSON kept");
        assert_eq!(json, serde_json::to_string(&trace).expect("serde_json"));
        assert_eq!(value, TraceColumn(&trace).sqlite().expect("stored"));
        let Value::Blob(bytes) = &value else {
            panic!("a trace this long is stored compressed, not as {value:?}");
        };
        let read: ChatTurnTraceResult =
            crate::packed::unpacked_direct(rusqlite::types::ValueRef::Blob(bytes))
                .expect("read back");
        assert_eq!(read, trace);
    }
}

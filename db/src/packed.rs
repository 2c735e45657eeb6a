//! How SQLite stores the two large JSON columns a turn writes — each
//! checkpoint's state (`checkpoints.state`, written by the group-commit
//! writer) and the turn's trace (`turns.trace`,
//! `conversations::trace_column`): the JSON text compressed with LZ4
//! (`lz4_flex`, pure Rust) in a `BLOB` of [`TAG`], the text's length
//! (4 bytes, little-endian) and the LZ4 block; and [`Unpacked`], the one
//! decoder of both columns on both databases.
//!
//! On SQLite every byte a turn writes goes to the log, then to the
//! database, while the writer holds the one write lock; both columns'
//! JSON repeats itself (a model call's record holds the messages it was
//! sent, a tool's record its output), and compressed they take a third to
//! a half of the bytes (BENCHMARKS.md, "Round 7" and "Round 9"). Text that
//! would not get smaller is stored as it is, as every row was before this
//! format; both kinds are read back, so old databases need no migration.
//! SQLite keeps a `BLOB` as it is in a column declared `TEXT` (type
//! affinity converts only numbers). SQL that reads into these columns
//! (`json_extract`) must therefore not be written: the figures SQL needs
//! have columns of their own (`turns.tools`, `turns.cost_usd`, …).
//!
//! PostgreSQL stores both as `jsonb`, which the server compresses itself
//! once a value passes about 2 KB (TOAST).
//!
//! A checkpoint's state is usually its parent's plus a little: a node
//! appends a message or a tool's record. So the group-commit writer
//! compresses it with its parent's state as LZ4's dictionary when it has
//! that text at hand ([`Packed::on_parent`], tag [`TAG_ON_PARENT`]): the
//! row then holds little more than what the node changed, a quarter of
//! the bytes of the state compressed alone (BENCHMARKS.md, round 16). Such
//! a row is read with its parent's state ([`unpack_on_parent`]), which may
//! itself be stored on its own parent: `crate::checkpoints` reads the
//! chain, which the writer keeps short.
//!
//! Reading back is checked: a blob that does not decompress, bytes that
//! are not UTF-8, or text that is not the JSON expected is a corrupt row
//! ([`crate::DbError::Corrupt`], through sqlx's column-decode error or
//! [`unpacked_direct`]), never a panic.

use rusqlite::types::{ToSql, ToSqlOutput, ValueRef};
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use sqlx::error::BoxDynError;
use sqlx::postgres::{PgTypeInfo, PgValueRef};
use sqlx::sqlite::{SqliteTypeInfo, SqliteValueRef};
use sqlx::types::Json;
use sqlx::{Decode, Postgres, Sqlite, Type};

use crate::DbError;

/// The first byte of compressed text. JSON begins with `{`, `[` or
/// whitespace, never with a control character.
const TAG: u8 = 0x01;
/// The first byte of a state compressed with its parent's as dictionary.
pub(crate) const TAG_ON_PARENT: u8 = 0x02;
/// Text shorter than this stays text: LZ4 finds little to share in a few
/// hundred bytes, and the text stays readable with the `sqlite3` shell.
const MIN_COMPRESSED: usize = 256;

/// JSON text as SQLite stores it: the text itself, or its compressed bytes.
#[derive(Debug)]
pub(crate) enum Packed<'a> {
    Text(&'a str),
    Lz4(Vec<u8>),
}

impl<'a> Packed<'a> {
    /// The stored form of `text`: compressed when that makes it smaller.
    pub(crate) fn of(text: &'a str) -> Self {
        if text.len() < MIN_COMPRESSED {
            return Self::Text(text);
        }
        let Ok(len) = u32::try_from(text.len()) else {
            // Past 4 GiB: nothing a turn makes; stored as it is.
            return Self::Text(text);
        };
        let [a, b, c, d] = len.to_le_bytes();
        match lz4_block(&[TAG, a, b, c, d], text.as_bytes(), b"", text.len()) {
            Some(bytes) => Self::Lz4(bytes),
            // Incompressible (or, impossibly, a buffer too small): text.
            None => Self::Text(text),
        }
    }

    /// The stored form of `text` given `parent`, the text it grew from:
    /// the length of the start they share, and the rest compressed with
    /// `parent` as dictionary (of which LZ4 sees the last 64 KB: a long
    /// state changes near its end, past a start it shares). Read back with
    /// [`unpack_on_parent`] and that same parent. Text that gains nothing
    /// is stored as [`Packed::of`] would.
    pub(crate) fn on_parent(text: &'a str, parent: &str) -> Self {
        let (Ok(len), Ok(shared)) = (
            u32::try_from(text.len()),
            u32::try_from(shared_start(text.as_bytes(), parent.as_bytes())),
        ) else {
            return Self::Text(text);
        };
        let [a, b, c, d] = len.to_le_bytes();
        let [e, f, g, h] = shared.to_le_bytes();
        let header = [TAG_ON_PARENT, a, b, c, d, e, f, g, h];
        let rest = &text.as_bytes()[shared as usize..];
        match lz4_block(&header, rest, parent.as_bytes(), text.len()) {
            Some(bytes) => Self::Lz4(bytes),
            None => Self::of(text),
        }
    }

    /// Whether this is a state stored on its parent's.
    pub(crate) fn is_on_parent(&self) -> bool {
        matches!(self, Self::Lz4(bytes) if needs_parent(bytes))
    }

    /// The value, owned (for a write that may run after its caller's
    /// borrow ends: crate::direct's writer).
    pub(crate) fn into_value(self) -> rusqlite::types::Value {
        match self {
            Self::Text(t) => rusqlite::types::Value::Text(t.to_owned()),
            Self::Lz4(b) => rusqlite::types::Value::Blob(b),
        }
    }

    /// The bytes in the row.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> &[u8] {
        match self {
            Self::Text(t) => t.as_bytes(),
            Self::Lz4(b) => b,
        }
    }
}

impl ToSql for Packed<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(match self {
            Self::Text(t) => ValueRef::Text(t.as_bytes()),
            Self::Lz4(b) => ValueRef::Blob(b),
        }))
    }
}

/// `header`, then `input` as an LZ4 block on `dict` (none when empty),
/// if the whole is shorter than `smaller_than` bytes.
///
/// LZ4 writes into a buffer this thread keeps, as large as the worst case,
/// and the block is copied out at its size: a fresh buffer would be zeroed
/// at the worst case's size first, each time (about 1 % of an `exit` turn,
/// BENCHMARKS.md round 26).
fn lz4_block(header: &[u8], input: &[u8], dict: &[u8], smaller_than: usize) -> Option<Vec<u8>> {
    /// A buffer grown past this is not kept.
    const KEPT: usize = 1024 * 1024;
    thread_local! {
        static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    let most = lz4_flex::block::get_maximum_output_size(input.len());
    let mut scratch = SCRATCH.take();
    if scratch.len() < most {
        scratch.resize(most, 0);
    }
    let block = &mut scratch[..most];
    let n = if dict.is_empty() {
        lz4_flex::block::compress_into(input, block)
    } else {
        lz4_flex::block::compress_into_with_dict(input, block, dict)
    };
    let out = n.ok().filter(|n| header.len() + n < smaller_than).map(|n| {
        let mut out = Vec::with_capacity(header.len() + n);
        out.extend_from_slice(header);
        out.extend_from_slice(&scratch[..n]);
        out
    });
    if scratch.len() <= KEPT {
        SCRATCH.set(scratch);
    }
    out
}

/// The text of what [`Packed`] stored (or of any UTF-8 text), except a
/// state stored on its parent's ([`needs_parent`]).
pub(crate) fn unpack(bytes: &[u8]) -> Result<String, BoxDynError> {
    match bytes.split_first() {
        Some((&TAG, rest)) => {
            let (len, block) = rest
                .split_first_chunk::<4>()
                .ok_or("compressed JSON without its length")?;
            String::from_utf8(decompress(
                u32::from_le_bytes(*len) as usize,
                b"",
                block,
                b"",
            )?)
            .map_err(Into::into)
        }
        Some((&TAG_ON_PARENT, _)) => Err("a state stored on its parent's, read alone".into()),
        _ => Ok(std::str::from_utf8(bytes)?.to_owned()),
    }
}

/// Whether `bytes` are a state stored on its parent's
/// ([`Packed::on_parent`]).
pub(crate) fn needs_parent(bytes: &[u8]) -> bool {
    bytes.first() == Some(&TAG_ON_PARENT)
}

/// The text of a state [`Packed::on_parent`] stored, given its parent's.
pub(crate) fn unpack_on_parent(bytes: &[u8], parent: &str) -> Result<String, BoxDynError> {
    let Some((&TAG_ON_PARENT, rest)) = bytes.split_first() else {
        return unpack(bytes);
    };
    let (len, rest) = rest
        .split_first_chunk::<4>()
        .ok_or("a state on its parent's without its length")?;
    let (shared, block) = rest
        .split_first_chunk::<4>()
        .ok_or("a state on its parent's without its shared start")?;
    let (len, shared) = (
        u32::from_le_bytes(*len) as usize,
        u32::from_le_bytes(*shared) as usize,
    );
    let parent = parent.as_bytes();
    if shared > len || shared > parent.len() {
        return Err(format!("a state on its parent's shares {shared} bytes of {len}").into());
    }
    let text = decompress(len, &parent[..shared], block, parent)?;
    Ok(String::from_utf8(text)?)
}

/// `start` followed by the LZ4 `block` decompressed on `dict`: `len`
/// bytes, checked.
fn decompress(len: usize, start: &[u8], block: &[u8], dict: &[u8]) -> Result<Vec<u8>, BoxDynError> {
    let rest = len - start.len();
    // LZ4 expands at most 255-fold (also when it copies from a
    // dictionary): a larger length is damage, not a reason to allocate it.
    if rest > block.len().saturating_mul(255) {
        return Err(format!("compressed JSON claims {len} bytes").into());
    }
    let mut out = vec![0; len];
    out[..start.len()].copy_from_slice(start);
    let n = lz4_flex::block::decompress_into_with_dict(block, &mut out[start.len()..], dict)?;
    if n != rest {
        return Err(format!("compressed JSON of {n} bytes, not {rest}").into());
    }
    Ok(out)
}

/// How many bytes `a` and `b` begin with in common.
fn shared_start(a: &[u8], b: &[u8]) -> usize {
    // A block at a time (each compared by one `memcmp`), then byte by byte
    // in the first block that differs.
    const BLOCK: usize = 256;
    let blocks = a.chunks_exact(BLOCK).zip(b.chunks_exact(BLOCK));
    let same = blocks.take_while(|(x, y)| x == y).count() * BLOCK;
    same + a[same..]
        .iter()
        .zip(&b[same..])
        .take_while(|(x, y)| x == y)
        .count()
}

/// A JSON column read back from either database as a `T`: on SQLite
/// what [`Packed`] wrote (or any JSON text), on PostgreSQL `jsonb`.
#[derive(Debug)]
pub(crate) struct Unpacked<T>(pub(crate) T);

/// The `T` of what [`Packed`] wrote to SQLite.
fn from_sqlite<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, BoxDynError> {
    Ok(serde_json::from_str(&unpack(bytes)?)?)
}

/// [`Unpacked`] on SQLite's direct connection: the `T` of a column
/// [`Packed`] wrote, `TEXT` or `BLOB`.
pub(crate) fn unpacked_direct<T: DeserializeOwned>(value: ValueRef<'_>) -> Result<T, DbError> {
    let bytes = value
        .as_bytes()
        .map_err(|e| DbError::Corrupt(format!("a packed column: {e}")))?;
    from_sqlite(bytes).map_err(|e| DbError::Corrupt(format!("a packed column: {e}")))
}

impl<T> Type<Sqlite> for Unpacked<T> {
    fn type_info() -> SqliteTypeInfo {
        <&[u8] as Type<Sqlite>>::type_info()
    }
    /// `TEXT` (a row stored before this format, or too short to pack) or
    /// `BLOB`.
    fn compatible(ty: &SqliteTypeInfo) -> bool {
        <&[u8] as Type<Sqlite>>::compatible(ty)
    }
}

impl<'r, T: DeserializeOwned> Decode<'r, Sqlite> for Unpacked<T> {
    fn decode(value: SqliteValueRef<'r>) -> Result<Self, BoxDynError> {
        from_sqlite(<&[u8] as Decode<Sqlite>>::decode(value)?).map(Self)
    }
}

impl<T> Type<Postgres> for Unpacked<T> {
    fn type_info() -> PgTypeInfo {
        <Json<T> as Type<Postgres>>::type_info()
    }
    fn compatible(ty: &PgTypeInfo) -> bool {
        <Json<T> as Type<Postgres>>::compatible(ty)
    }
}

impl<'r, T: DeserializeOwned> Decode<'r, Postgres> for Unpacked<T> {
    fn decode(value: PgValueRef<'r>) -> Result<Self, BoxDynError> {
        let Json(value) = <Json<T> as Decode<Postgres>>::decode(value)?;
        Ok(Self(value))
    }
}

/// A checkpoint's `state` as read from either database: whole (every
/// PostgreSQL row; on SQLite, what [`Packed::of`] wrote), or stored on its
/// parent's state ([`Packed::on_parent`]), to be read with it
/// ([`StateColumn::with_parent`]).
#[derive(Debug)]
pub(crate) enum StateColumn {
    Whole(Box<RawValue>),
    OnParent(Vec<u8>),
}

impl StateColumn {
    /// The state's JSON, given its parent's when it was stored on it.
    pub(crate) fn with_parent(self, parent: Option<&str>) -> Result<Box<RawValue>, BoxDynError> {
        match self {
            Self::Whole(state) => Ok(state),
            Self::OnParent(bytes) => Ok(RawValue::from_string(match parent {
                Some(parent) => unpack_on_parent(&bytes, parent)?,
                // `unpack` says what is missing.
                None => unpack(&bytes)?,
            })?),
        }
    }
}

impl Type<Sqlite> for StateColumn {
    fn type_info() -> SqliteTypeInfo {
        <&[u8] as Type<Sqlite>>::type_info()
    }
    fn compatible(ty: &SqliteTypeInfo) -> bool {
        <&[u8] as Type<Sqlite>>::compatible(ty)
    }
}

impl<'r> Decode<'r, Sqlite> for StateColumn {
    fn decode(value: SqliteValueRef<'r>) -> Result<Self, BoxDynError> {
        let bytes = <&[u8] as Decode<Sqlite>>::decode(value)?;
        if needs_parent(bytes) {
            Ok(Self::OnParent(bytes.to_vec()))
        } else {
            from_sqlite(bytes).map(Self::Whole)
        }
    }
}

impl Type<Postgres> for StateColumn {
    fn type_info() -> PgTypeInfo {
        <Json<Box<RawValue>> as Type<Postgres>>::type_info()
    }
    fn compatible(ty: &PgTypeInfo) -> bool {
        <Json<Box<RawValue>> as Type<Postgres>>::compatible(ty)
    }
}

impl<'r> Decode<'r, Postgres> for StateColumn {
    fn decode(value: PgValueRef<'r>) -> Result<Self, BoxDynError> {
        let Json(value) = <Json<Box<RawValue>> as Decode<Postgres>>::decode(value)?;
        Ok(Self::Whole(value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(text: &str) -> String {
        unpack(Packed::of(text).bytes()).expect("unpacks")
    }

    #[test]
    fn short_text_stays_text() {
        let text = r#"{"messages":["hello"],"current_step":1}"#;
        assert!(matches!(Packed::of(text), Packed::Text(_)));
        assert_eq!(round_trip(text), text);
    }

    #[test]
    fn long_repetitive_text_is_compressed_and_reads_back_the_same() {
        let text = r#"{"role":"tool","content":"订单 ORD-2024-001 已发货，顺丰 SF1234567890"},"#
            .repeat(40);
        let packed = Packed::of(&text);
        assert!(matches!(packed, Packed::Lz4(_)));
        assert!(
            packed.bytes().len() * 4 < text.len(),
            "{} of {} bytes",
            packed.bytes().len(),
            text.len()
        );
        assert_eq!(round_trip(&text), text);
    }

    #[test]
    fn incompressible_text_stays_text() {
        // 600 characters with no repeated run of 4 bytes.
        let noise: String = (0..600u32)
            .map(|i| char::from_u32(0x4E00 + (i * 7919) % 20_000).unwrap_or('x'))
            .collect();
        assert!(matches!(Packed::of(&noise), Packed::Text(_)));
        assert_eq!(round_trip(&noise), noise);
    }

    /// A checkpoint's state, as `checkpoints` reads it back.
    #[test]
    fn a_large_state_is_compressed_and_reads_back_the_same() {
        let message = serde_json::json!({"role": "tool", "content": "订单 ORD-2024-001 已发货，顺丰 SF1234567890"});
        let state = serde_json::json!({
            "messages": vec![message.clone(); 40],
            "llm_calls": [{"sent": vec![message; 30]}],
        })
        .to_string();
        let stored = Packed::of(&state);
        assert!(matches!(stored, Packed::Lz4(_)));
        let back: Box<RawValue> = from_sqlite(stored.bytes()).expect("decodes");
        assert_eq!(back.get(), state);
    }

    #[test]
    fn a_damaged_row_is_an_error_not_a_panic() {
        for bytes in [&[0x01][..], b"{\"messages\": [", &[0xc3, 0x28][..]] {
            assert!(from_sqlite::<Box<RawValue>>(bytes).is_err(), "{bytes:?}");
        }
    }

    /// A state stored on its parent's reads back with that parent, also
    /// when the parent passes LZ4's 64 KB window, and not without it.
    #[test]
    fn a_state_on_its_parents_reads_back_with_it() {
        for messages in [3, 2_000] {
            let parent: String = (0..messages)
                .map(|i| format!(r#"{{"role":"tool","content":"订单 ORD-{i:04} 已发货"}},"#))
                .collect();
            let text = format!("{parent}{}", r#"{"role":"assistant","content":"好的"}"#);
            let stored = Packed::on_parent(&text, &parent);
            assert!(stored.is_on_parent(), "{messages} messages");
            assert!(stored.bytes().len() < 64, "{} bytes", stored.bytes().len());
            assert_eq!(
                unpack_on_parent(stored.bytes(), &parent).expect("unpacks"),
                text
            );
            assert!(unpack(stored.bytes()).is_err(), "read without its parent");
        }
    }

    #[test]
    fn the_shared_start_is_counted_to_the_byte() {
        let a: Vec<u8> = (0..1000u32).map(|i| (i % 251) as u8).collect();
        for cut in [0, 1, 255, 256, 257, 511, 999] {
            let mut b = a.clone();
            b[cut] ^= 1;
            assert_eq!(shared_start(&a, &b), cut);
            assert_eq!(shared_start(&a[..cut], &b), cut);
        }
        assert_eq!(shared_start(&a, &a), a.len());
        assert_eq!(shared_start(&a[..300], &a), 300);
    }

    /// Text that shares nothing with its parent is stored as it would be
    /// alone.
    #[test]
    fn a_state_unlike_its_parent_is_stored_alone() {
        let short = r#"{"current_step":1}"#;
        assert!(matches!(Packed::on_parent(short, "[]"), Packed::Text(_)));
        let text = r#"{"role":"tool","content":"订单 ORD-2024-001 已发货"},"#.repeat(20);
        let stored = Packed::on_parent(&text, "nothing alike");
        assert_eq!(
            unpack_on_parent(stored.bytes(), "nothing alike").expect("unpacks"),
            text
        );
    }

    /// The kept output buffer leaks nothing from an earlier, longer block
    /// into a later one: each is the bytes LZ4 writes for it alone.
    #[test]
    fn each_block_is_written_as_if_alone() {
        let long = r#"{"role":"tool","content":"订单 ORD-2024-001 已发货，顺丰 SF1234567890"},"#
            .repeat(200);
        let short = r#"{"role":"assistant","content":"好的，订单已发货"},"#.repeat(12);
        let alone = |text: &str| {
            let mut bytes = vec![TAG];
            bytes.extend_from_slice(&(text.len() as u32).to_le_bytes());
            bytes.extend(lz4_flex::block::compress(text.as_bytes()));
            bytes
        };
        for text in [&long, &short, &long, &short] {
            assert_eq!(Packed::of(text).bytes(), alone(text));
            assert_eq!(round_trip(text), *text);
        }
        let parent = short.clone();
        let child = format!("{short}{}", r#"{"role":"user","content":"谢谢"}"#);
        let first = Packed::on_parent(&child, &parent).bytes().to_vec();
        let _ = Packed::of(&long);
        assert_eq!(Packed::on_parent(&child, &parent).bytes(), first);
        assert_eq!(unpack_on_parent(&first, &parent).expect("unpacks"), child);
    }

    #[test]
    fn damaged_bytes_are_an_error_not_a_panic() {
        for bytes in [
            &[TAG][..],
            &[TAG, 9, 0, 0, 0, 0xff, 0xff][..],
            &[TAG, 0xff, 0xff, 0xff, 0x7f, 0x10][..],
            &[0xc3, 0x28][..],
            &[TAG_ON_PARENT, 9, 0, 0, 0, 0x90][..],
            &[TAG_ON_PARENT, 9, 0, 0, 0, 4, 0, 0, 0, 0x90][..],
            &[TAG_ON_PARENT, 1, 0, 0, 0, 4, 0, 0, 0, 0x10, b'x'][..],
        ] {
            assert!(unpack(bytes).is_err(), "{bytes:?}");
            assert!(unpack_on_parent(bytes, "{}").is_err(), "{bytes:?}");
        }
    }
}

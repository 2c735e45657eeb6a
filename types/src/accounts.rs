//! Named accounts as supervisors manage them, the audit log, and the rules
//! for usernames, passwords and free text that the server enforces and the
//! browser checks as a person types (one definition for both).

use serde::{Deserialize, Serialize};

use crate::{Role, Timestamp};

/// An account as the supervisors' accounts page shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Account {
    pub username: String,
    pub role: Role,
    /// A disabled account cannot sign in and has no sessions.
    pub disabled: bool,
    #[serde(deserialize_with = "crate::timestamp::deserialize")]
    pub created_at: Timestamp,
    #[serde(default)]
    #[serde(deserialize_with = "crate::timestamp::option")]
    pub last_sign_in_at: Option<Timestamp>,
    /// Set while failed sign-ins keep the account from signing in.
    #[serde(default)]
    #[serde(deserialize_with = "crate::timestamp::option")]
    pub locked_until: Option<Timestamp>,
    /// Failed sign-ins counted against the account right now.
    #[serde(default)]
    pub failed_sign_ins: u32,
    /// Signed-in browsers.
    #[serde(default)]
    pub active_sessions: u32,
    /// The password was set by a supervisor and should be changed.
    #[serde(default)]
    pub must_change_password: bool,
}

/// The body of "create an account".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NewAccount {
    pub username: String,
    pub role: Role,
}

/// A password made by the server for someone else (a new account or a
/// reset), shown to the supervisor exactly once and stored only as a hash.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IssuedPassword {
    pub username: String,
    pub password: String,
}

impl std::fmt::Debug for IssuedPassword {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IssuedPassword")
            .field("username", &self.username)
            .field("password", &"[redacted]")
            .finish()
    }
}

/// The body of "change my password".
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PasswordChange {
    pub current_password: String,
    pub new_password: String,
}

impl std::fmt::Debug for PasswordChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PasswordChange { .. }")
    }
}

/// One line of the audit log: who did what to whom, and when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditEntry {
    pub id: i64,
    #[serde(deserialize_with = "crate::timestamp::deserialize")]
    pub at: Timestamp,
    /// The signed-in user (or `api`, or `system`).
    pub actor: String,
    /// A dotted name such as `account.create` or `approval.decide`.
    pub action: String,
    /// What it was done to: a username, an approval id, a conversation.
    pub subject: String,
    /// A short sentence with the particulars.
    #[serde(default)]
    pub detail: String,
}

/// The longest username, in characters.
pub const MAX_USERNAME_CHARS: usize = 64;
/// The shortest password a person may choose in the console.
pub const MIN_NEW_PASSWORD_CHARS: usize = 12;
/// The longest password accepted anywhere (argon2 hashes any length; this
/// bounds the work one request can ask for).
pub const MAX_PASSWORD_CHARS: usize = 1024;

/// Names the server keeps for itself (the API token's user, the system).
pub const RESERVED_USERNAMES: &[&str] = &["api", "system", "root", "admin"];

/// A username as stored and compared: trimmed and lower-case, so `Alice`
/// and `alice` are one account (and one sign-in throttle).
pub fn normalize_username(name: &str) -> String {
    name.trim().to_lowercase()
}

/// Checks a new account's name: 2 to 64 of `a-z 0-9 . _ - @`, starting
/// with a letter or digit, not reserved. (Names are normalized first.)
pub fn validate_username(name: &str) -> Result<(), String> {
    let count = name.chars().count();
    if !(2..=MAX_USERNAME_CHARS).contains(&count) {
        return Err(format!(
            "a username has 2 to {MAX_USERNAME_CHARS} characters"
        ));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-' | '@'))
    {
        return Err("a username may contain only lower-case letters, digits and . _ - @".into());
    }
    if !name.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        return Err("a username starts with a letter or a digit".into());
    }
    if RESERVED_USERNAMES.contains(&name) {
        return Err(format!("the username {name:?} is reserved"));
    }
    Ok(())
}

/// Passwords too common to allow: the top of the public breach lists and
/// the obvious words of this product. Compared case-insensitively, and
/// also with trailing digits and punctuation removed.
const COMMON_PASSWORDS: &[&str] = &[
    "password",
    "password1",
    "passw0rd",
    "p@ssw0rd",
    "p@ssword",
    "123456",
    "12345678",
    "123456789",
    "1234567890",
    "12345678910",
    "123123123",
    "111111111111",
    "000000000000",
    "123456789012",
    "qwerty",
    "qwertyuiop",
    "qwerty123",
    "qwertyuiop123",
    "asdfghjkl",
    "asdfghjkl123",
    "zxcvbnm",
    "1q2w3e4r5t6y",
    "1qaz2wsx3edc",
    "qazwsxedc",
    "iloveyou",
    "letmein",
    "welcome",
    "welcome1",
    "admin",
    "administrator",
    "changeme",
    "changeit",
    "default",
    "secret",
    "trustno1",
    "monkey",
    "dragon",
    "football",
    "baseball",
    "sunshine",
    "princess",
    "superman",
    "batman",
    "starwars",
    "master",
    "shadow",
    "michael",
    "jennifer",
    "whatever",
    "freedom",
    "abc123",
    "abcdef",
    "abcdefgh",
    "abcdefghijkl",
    "aaaaaaaaaaaa",
    "passwordpassword",
    "supervisor",
    "agent",
    "support",
    "customer",
    "customersupport",
    "helpdesk",
    "servicedesk",
    "aics",
    "console",
    "company",
    "summer",
    "winter",
    "spring",
    "autumn",
    "correcthorsebatterystaple",
    "letmeinplease",
    "opensesame",
    "youshallnotpass",
    "mypassword",
    "newpassword",
    "temppassword",
    "temporary",
    "password123",
    "admin123",
    "root",
    "toor",
    "guest",
    "test",
    "testtest",
    "testing",
    "qwe123",
    "1qaz2wsx",
];

/// Checks a password a person chooses: [`MIN_NEW_PASSWORD_CHARS`] to
/// [`MAX_PASSWORD_CHARS`] characters, not a common password, not the
/// username, not one repeated character, no control characters.
pub fn check_new_password(password: &str, username: &str) -> Result<(), String> {
    let count = password.chars().count();
    if count < MIN_NEW_PASSWORD_CHARS {
        return Err(format!(
            "a password has at least {MIN_NEW_PASSWORD_CHARS} characters"
        ));
    }
    if count > MAX_PASSWORD_CHARS {
        return Err(format!(
            "a password has at most {MAX_PASSWORD_CHARS} characters"
        ));
    }
    if password.chars().any(char::is_control) {
        return Err("a password may not contain control characters".into());
    }
    let lower = password.to_lowercase();
    let stem = lower.trim_end_matches(|c: char| c.is_ascii_digit() || c.is_ascii_punctuation());
    let name = normalize_username(username);
    if COMMON_PASSWORDS.contains(&lower.as_str())
        || COMMON_PASSWORDS.contains(&stem)
        || (!name.is_empty() && lower.replace(&name, "").chars().count() < 8)
    {
        return Err(
            "this password is too common or too close to the username; choose another".into(),
        );
    }
    let mut chars = lower.chars();
    if let Some(first) = chars.next() {
        if chars.all(|c| c == first) {
            return Err("a password of one repeated character is too easy to guess".into());
        }
    }
    Ok(())
}

/// The first control character in `text` other than tab, line feed and
/// carriage return (C0, DEL and C1), if any. PostgreSQL cannot store NUL,
/// and the others are never typed by a person.
pub fn find_control_char(text: &str) -> Option<char> {
    text.chars()
        .find(|c| c.is_control() && !matches!(c, '\t' | '\n' | '\r'))
}

/// Refuses text carrying control characters (see [`find_control_char`]);
/// `field` names it in the message.
pub fn validate_text(field: &str, text: &str) -> Result<(), String> {
    match find_control_char(text) {
        Some(c) => Err(format!(
            "{field} contains a control character (U+{:04X}); remove it",
            u32::from(c)
        )),
        None => Ok(()),
    }
}

/// Whether `c` reorders or hides what a reader sees: a bidirectional
/// control (the embeddings and overrides U+202A–U+202E, the isolates
/// U+2066–U+2069, the marks U+200E, U+200F and U+061C) or a zero-width
/// character (U+200B–U+200D, U+2060, U+FEFF). In a name or a title they make
/// `invoice` U+202E `fdp.exe` read as `invoiceexe.pdf`, or two names look
/// the same.
pub fn is_invisible_char(c: char) -> bool {
    matches!(
        c,
        '\u{202A}'..='\u{202E}'
            | '\u{2066}'..='\u{2069}'
            | '\u{200E}'
            | '\u{200F}'
            | '\u{061C}'
            | '\u{200B}'..='\u{200D}'
            | '\u{2060}'
            | '\u{FEFF}'
    )
}

/// `text` without the characters [`is_invisible_char`] names (borrowed
/// when it has none). For titles made from what someone wrote, where a
/// refusal would refuse the message itself.
pub fn strip_invisible(text: &str) -> std::borrow::Cow<'_, str> {
    if text.chars().any(is_invisible_char) {
        std::borrow::Cow::Owned(text.chars().filter(|c| !is_invisible_char(*c)).collect())
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

/// Refuses a name (a visitor's on the start page, a display name) with a
/// control character ([`validate_text`]) or a character that reorders or
/// hides what staff read ([`is_invisible_char`]). Free text — messages,
/// notes — keeps them: emoji sequences join with U+200D, and right-to-left
/// writing uses the marks.
pub fn validate_name(field: &str, text: &str) -> Result<(), String> {
    validate_text(field, text)?;
    match text.chars().find(|c| is_invisible_char(*c)) {
        Some(c) => Err(format!(
            "{field} contains an invisible or text-direction character (U+{:04X}); remove it",
            u32::from(c)
        )),
        None => Ok(()),
    }
}

/// Refuses a JSON text with a control character in any string or key
/// (escaped ones too: `"\u0000"` is a NUL). The text is checked as it is
/// parsed, without building its value. Text that is not JSON passes: what
/// reads it answers for that.
pub fn validate_json_text(field: &str, json: &[u8]) -> Result<(), String> {
    let found = std::cell::Cell::new(None);
    let mut parser = serde_json::Deserializer::from_slice(json);
    let parsed = serde::de::DeserializeSeed::deserialize(json_text::Strings(&found), &mut parser)
        .and_then(|()| parser.end());
    match (parsed, found.get()) {
        (Ok(()), Some(c)) => validate_text(field, c.encode_utf8(&mut [0; 4])),
        _ => Ok(()),
    }
}

/// The parse [`validate_json_text`] runs.
mod json_text {
    use std::cell::Cell;
    use std::fmt;

    use serde::de::{DeserializeSeed, Deserializer, Error, MapAccess, SeqAccess, Visitor};

    /// Visits every string and key of a JSON value, keeping the first
    /// control character found.
    #[derive(Clone, Copy)]
    pub(super) struct Strings<'a>(pub(super) &'a Cell<Option<char>>);

    impl<'de> DeserializeSeed<'de> for Strings<'_> {
        type Value = ();

        fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
            deserializer.deserialize_any(self)
        }
    }

    impl<'de> Visitor<'de> for Strings<'_> {
        type Value = ();

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a JSON value")
        }

        fn visit_str<E: Error>(self, text: &str) -> Result<(), E> {
            if self.0.get().is_none() {
                self.0.set(super::find_control_char(text));
            }
            Ok(())
        }

        fn visit_bool<E: Error>(self, _: bool) -> Result<(), E> {
            Ok(())
        }

        fn visit_i64<E: Error>(self, _: i64) -> Result<(), E> {
            Ok(())
        }

        fn visit_u64<E: Error>(self, _: u64) -> Result<(), E> {
            Ok(())
        }

        fn visit_f64<E: Error>(self, _: f64) -> Result<(), E> {
            Ok(())
        }

        fn visit_unit<E: Error>(self) -> Result<(), E> {
            Ok(())
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<(), A::Error> {
            while items.next_element_seed(self)?.is_some() {}
            Ok(())
        }

        fn visit_map<A: MapAccess<'de>>(self, mut entries: A) -> Result<(), A::Error> {
            while entries.next_key_seed(self)?.is_some() {
                entries.next_value_seed(self)?;
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usernames() {
        assert!(validate_username("alice").is_ok());
        assert!(validate_username("a.b-c_d@x").is_ok());
        assert!(validate_username("a").is_err());
        assert!(validate_username("Alice").is_err(), "normalized first");
        assert!(validate_username("-x").is_err());
        assert!(validate_username("a b").is_err());
        assert!(validate_username("api").is_err());
        assert_eq!(normalize_username("  Alice "), "alice");
    }

    #[test]
    fn passwords() {
        assert!(check_new_password("a long enough phrase", "alice").is_ok());
        assert!(check_new_password("short", "alice").is_err());
        assert!(check_new_password("Password123!", "alice").is_err());
        assert!(check_new_password("qwertyuiop123", "alice").is_err());
        assert!(check_new_password("supervisor2026", "bob").is_err());
        assert!(check_new_password("alice-alice1", "alice").is_err());
        assert!(check_new_password("xxxxxxxxxxxxxxxx", "alice").is_err());
        assert!(check_new_password("nul\0in the password", "alice").is_err());
        assert!(check_new_password(&"x".repeat(2000), "alice").is_err());
    }

    #[test]
    fn control_characters() {
        assert_eq!(find_control_char("line\nnext\ttab\r"), None);
        assert_eq!(find_control_char("nul\0"), Some('\0'));
        assert_eq!(find_control_char("bell\u{7}"), Some('\u{7}'));
        assert_eq!(find_control_char("del\u{7f}"), Some('\u{7f}'));
        assert_eq!(find_control_char("c1\u{85}"), Some('\u{85}'));
        assert!(validate_text("reason", "ok 订单").is_ok());
        assert!(validate_text("reason", "x\u{1b}[31m").is_err());
        let json = |text: &str| validate_json_text("the body", text.as_bytes());
        assert!(json(r#"{"a": [1, -2, 2.5, true, null, {"b": "x\u0000y"}]}"#).is_err());
        assert!(json(r#"{"a\u0000": 1}"#).is_err(), "keys too");
        assert!(json(r#"["ok", "\u001b[31m"]"#).is_err(), "escaped");
        assert!(json("\"raw \u{7f} del\"").is_err(), "unescaped");
        assert_eq!(
            json(r#"{"message": "\u0007"}"#),
            validate_text("the body", "\u{7}"),
            "the same message as for plain text"
        );
        assert!(json(r#"{"a": "b\n\t", "c": [1e300, -0, "订单"]}"#).is_ok());
        assert!(
            json(r#"{"a": "\u0000"} trailing"#).is_ok(),
            "not JSON: not ours to refuse"
        );
        assert!(json("{\"a\": ").is_ok(), "not JSON");
    }

    #[test]
    fn invisible_and_direction_characters() {
        // An override that makes "exe.pdf" of "fdp.exe", and the rest.
        for c in [
            '\u{202A}', '\u{202E}', '\u{2066}', '\u{2069}', '\u{200E}', '\u{200F}', '\u{061C}',
            '\u{200B}', '\u{200C}', '\u{200D}', '\u{2060}', '\u{FEFF}',
        ] {
            assert!(is_invisible_char(c), "U+{:04X}", u32::from(c));
            let name = format!("Bob{c}Smith");
            let refused = validate_name("name", &name).err().unwrap_or_default();
            assert!(
                refused.contains(&format!("U+{:04X}", u32::from(c))),
                "{refused}"
            );
            assert_eq!(strip_invisible(&name), "BobSmith");
        }
        assert!(!is_invisible_char('\u{2028}') && !is_invisible_char('a'));
        assert!(validate_name("name", "Zhang Wei 张伟 Zoë O'Brien").is_ok());
        assert!(validate_name("name", "x\u{7}").is_err(), "controls too");
        assert!(matches!(
            strip_invisible("plain 订单"),
            std::borrow::Cow::Borrowed(_)
        ));
        // Free text keeps them: an emoji family is three joined by U+200D.
        assert!(validate_text("message", "👨\u{200D}👩\u{200D}👧").is_ok());
    }
}

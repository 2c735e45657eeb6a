//! [`Name`]: a node's name or a thread's id as the checkpoints of a run
//! carry them.

use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// A shared, immutable name: a node's, or a thread's id. Every checkpoint
/// names its thread, its node, the next node and the whole path so far;
/// sharing the text makes those a reference count each instead of a copy
/// (the path alone would be a copy of every name before it, at every
/// step). Reads and compares like a `&str`; serialises as a string.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Name(Arc<str>);

impl Name {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Deref for Name {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Name {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// Lets a map keyed by names be searched with a `&str`.
impl Borrow<str> for Name {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl From<&str> for Name {
    fn from(s: &str) -> Self {
        Self(s.into())
    }
}

impl From<String> for Name {
    fn from(s: String) -> Self {
        Self(s.into())
    }
}

impl From<Name> for String {
    fn from(n: Name) -> Self {
        n.0.as_ref().to_owned()
    }
}

impl PartialEq<str> for Name {
    fn eq(&self, other: &str) -> bool {
        &*self.0 == other
    }
}

impl PartialEq<&str> for Name {
    fn eq(&self, other: &&str) -> bool {
        &*self.0 == *other
    }
}

impl PartialEq<String> for Name {
    fn eq(&self, other: &String) -> bool {
        &*self.0 == other.as_str()
    }
}

impl PartialEq<Name> for str {
    fn eq(&self, other: &Name) -> bool {
        self == &*other.0
    }
}

impl PartialEq<Name> for &str {
    fn eq(&self, other: &Name) -> bool {
        *self == &*other.0
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_compares_and_serialises_as_its_text() {
        let name = Name::from("agent");
        let copy = name.clone();
        assert!(Arc::ptr_eq(&name.0, &copy.0), "a clone shares the text");
        assert_eq!(name, "agent");
        assert_eq!("agent", name);
        assert_eq!(name.len(), 5);
        assert_eq!(format!("{name} {name:?}"), "agent \"agent\"");
        assert_eq!(serde_json::to_string(&name).unwrap(), "\"agent\"");
        let back: Name = serde_json::from_str("\"agent\"").unwrap();
        assert_eq!(back, name);
        let map: std::collections::HashMap<Name, u8> = [(name, 1)].into();
        assert_eq!(map.get("agent"), Some(&1));
    }
}

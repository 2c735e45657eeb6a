//! Secret tokens: made here, stored only as their SHA-256 (session cookies,
//! approval tokens, the scripts' API token).

use rand::RngCore;
use sha2::{Digest, Sha256};

/// A fresh unguessable token: 256 random bits from a CSPRNG, as 64 hex digits.
pub fn new_token() -> String {
    let mut bytes = [0u8; 32];
    rand::thread_rng().fill_bytes(&mut bytes);
    hex::encode(bytes)
}

/// The stored form of a token: its SHA-256, hex. Comparing digests of
/// equal length says nothing about the token through timing.
pub fn hash_token(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_64_hex_digits_and_differ() {
        let (a, b) = (new_token(), new_token());
        assert_eq!(a.len(), 64);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
        assert_eq!(hash_token("x"), hash_token("x"));
        assert_ne!(hash_token(&a), a);
    }
}

//! How the server functions' answers (and their errors) travel: JSON, as
//! Leptos's own `Json` sends it, but decoded in the browser with
//! `serde_json::from_str`.
//!
//! Why not Leptos's `Json`: it decodes with `serde_json::from_slice`, while
//! the data a resource hydrates from and every event stream ([`crate::sse`])
//! are decoded with `from_str`. serde monomorphises a type's decoder once per
//! reader, so a type that arrives both ways (a conversation: hydrated, then
//! reloaded) was in the wasm twice. With one reader everywhere it is there
//! once (BENCHMARKS.md "Client bundle"). The bytes on the wire are the same.
//!
//! Every server function answers with [`JsonStr`]: `#[server(prefix = "/fn",
//! output = JsonStr)]`.

use leptos::server_fn::codec::Post;
use leptos::server_fn::{Bytes, ContentType, Decodes, Encodes, Format, FormatType};
use serde::de::{DeserializeOwned, Error as _};
use serde::Serialize;

/// JSON, decoded from text (see the module's doc).
pub struct JsonStrEncoding;

/// The answer of a server function as JSON in a `POST` response's body.
pub type JsonStr = Post<JsonStrEncoding>;

impl ContentType for JsonStrEncoding {
    const CONTENT_TYPE: &'static str = "application/json";
}

impl FormatType for JsonStrEncoding {
    const FORMAT_TYPE: Format = Format::Text;
}

impl<T: Serialize> Encodes<T> for JsonStrEncoding {
    type Error = serde_json::Error;

    fn encode(output: &T) -> Result<Bytes, Self::Error> {
        serde_json::to_vec(output).map(Bytes::from)
    }
}

impl<T: DeserializeOwned> Decodes<T> for JsonStrEncoding {
    type Error = serde_json::Error;

    fn decode(bytes: Bytes) -> Result<T, Self::Error> {
        let text = std::str::from_utf8(&bytes).map_err(serde_json::Error::custom)?;
        serde_json::from_str(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_what_it_encodes() {
        let bytes =
            <JsonStrEncoding as Encodes<Vec<String>>>::encode(&vec!["é".into()]).expect("encode");
        assert_eq!(&bytes[..], "[\"é\"]".as_bytes());
        let back: Vec<String> = JsonStrEncoding::decode(bytes).expect("decode");
        assert_eq!(back, vec!["é".to_string()]);
        let broken: Result<Vec<String>, _> = JsonStrEncoding::decode(Bytes::from_static(b"\xff"));
        assert!(broken.is_err());
    }
}

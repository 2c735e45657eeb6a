//! How JSON from the server reaches the browser's types: the server
//! functions' answers (and their errors) and the data resources hydrate
//! from, both read with [`aics_types::json::from_str`], as the event
//! streams are ([`crate::sse`]).
//!
//! One reader for every payload: serde monomorphises a type's decoder once
//! per reader, so a type that arrived two ways (a conversation: hydrated,
//! then reloaded) would be in the wasm twice. Leptos's own `Json` decodes
//! with `serde_json::from_slice` and its resources with
//! `serde_json::from_str`; here both read through `aics_types::json`, which
//! also compiles each struct's decoder for objects only (BENCHMARKS.md
//! "Client bundle"). The bytes on the wire are the same.
//!
//! Every server function answers with [`JsonStr`] (its protocol,
//! [`crate::remote::Remote`], says so); every resource is a [`Resource`],
//! made with [`resource`], and a `Suspend` awaits it with [`ready`].

use std::future::Future;

use leptos::server::codee::{Decoder, Encoder};
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
        aics_types::json::from_str(text)
    }
}

/// The encoding of the data a resource carries from the server's render to
/// the browser's hydration: JSON text, read with the same reader.
pub struct JsonText;

impl<T: Serialize> Encoder<T> for JsonText {
    type Error = serde_json::Error;
    type Encoded = String;

    fn encode(value: &T) -> Result<String, Self::Error> {
        serde_json::to_string(value)
    }
}

impl<T: DeserializeOwned> Decoder<T> for JsonText {
    type Error = serde_json::Error;
    type Encoded = str;

    fn decode(text: &str) -> Result<T, Self::Error> {
        aics_types::json::from_str(text)
    }
}

/// A resource whose data hydrates through [`JsonText`].
pub type Resource<T> = leptos::prelude::Resource<T, JsonText>;

/// `Resource::new`, with the data read through [`JsonText`].
#[track_caller]
pub fn resource<T, S, Fut>(
    source: impl Fn() -> S + Send + Sync + 'static,
    fetcher: impl Fn(S) -> Fut + Send + Sync + 'static,
) -> Resource<T>
where
    T: Serialize + DeserializeOwned + Send + Sync + 'static,
    S: Send + Sync + Clone + PartialEq + 'static,
    Fut: Future<Output = T> + Send + 'static,
{
    Resource::new_with_options(source, fetcher, false)
}

/// A resource's value, as a `Suspend` awaits it before it builds the view
/// that shows it.
///
/// On the server a view is built once, for its render. Leptos's `Suspense`
/// walks its children before it renders them, and again each time its
/// loads settle (`dry_resolve`), calling its children's closure anew each
/// time and polling the `Suspend` it returns once; a `Suspend` that is
/// ready at that poll builds its view in the walk, only to drop it. Each
/// build costs a render of the view, and any resource the view makes
/// starts another load, sent to the browser twice (a conversation's page
/// loaded its inbox and its conversation twice in most renders, and `/`
/// made two conversations for a user who had none). So on the server this
/// answers at its second poll: the walks see it pending, and only the
/// render builds the view (`yield_now` is pending at its first poll and
/// ready at the next). In the browser it is the resource's value.
pub async fn ready<T>(resource: Resource<T>) -> T
where
    T: Clone + Send + Sync + 'static,
{
    let value = resource.await;
    #[cfg(feature = "ssr")]
    tokio::task::yield_now().await;
    value
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

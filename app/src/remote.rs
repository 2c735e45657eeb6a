//! [`Remote`]: the protocol every server function speaks —
//! `#[server(prefix = "/fn", protocol = UrlArgs)]`, or [`JsonArgs`] for
//! arguments sent as JSON.
//!
//! On the wire it is server_fn's `Http<In, JsonStr>`: a `POST` of the
//! arguments in the input encoding `In`, the answer as JSON
//! ([`crate::wire`]), an error status read as the function's error, a
//! redirect handed to the router's hook. The server half is `Http`'s own.
//! The client half does the same as `Http`'s, split in two: what depends
//! on the server function — encoding its arguments, decoding its answer —
//! and [`exchange`], which does not, and so is compiled once for all of
//! them instead of once for each call site of each function (BENCHMARKS.md
//! "Client bundle").

use std::future::Future;
use std::marker::PhantomData;

use http::Method;
use leptos::server_fn::client::Client;
use leptos::server_fn::codec::{Encoding, IntoReq, Json, PostUrl};
use leptos::server_fn::error::{FromServerFnError, IntoAppError, ServerFnErrorErr};
use leptos::server_fn::redirect::call_redirect_hook;
use leptos::server_fn::response::ClientRes;
use leptos::server_fn::server::Server;
use leptos::server_fn::{Bytes, ContentType, Decodes, Http, Protocol};

use crate::wire::{JsonStr, JsonStrEncoding};

/// A server function's protocol: its arguments in the encoding `In`, its
/// answer as [`JsonStr`] (see the module's docs).
pub struct Remote<In>(PhantomData<In>);

/// Arguments URL-encoded, as a `<form>` posts them (server_fn's default).
pub type UrlArgs = Remote<PostUrl>;

/// Arguments as JSON.
pub type JsonArgs = Remote<Json>;

impl<In, Input, Output, C, S, E> Protocol<Input, Output, C, S, E> for Remote<In>
where
    Http<In, JsonStr>: Protocol<Input, Output, C, S, E>,
    In: Encoding,
    Input: IntoReq<In, C::Request, E>,
    JsonStrEncoding: Decodes<Output>,
    C: Client<E>,
    S: Server<E>,
    E: FromServerFnError + Send,
{
    const METHOD: Method = In::METHOD;

    fn run_server<F, Fut>(
        request: S::Request,
        server_fn: F,
    ) -> impl Future<Output = Result<S::Response, E>> + Send
    where
        F: Fn(Input) -> Fut + Send,
        Fut: Future<Output = Result<Output, E>> + Send,
    {
        <Http<In, JsonStr> as Protocol<Input, Output, C, S, E>>::run_server(request, server_fn)
    }

    fn run_client(path: &str, input: Input) -> impl Future<Output = Result<Output, E>> + Send {
        let request = input.into_req(path, JsonStrEncoding::CONTENT_TYPE);
        async move {
            let (body, redirect) = exchange::<C, E>(request?).await?;
            let output = JsonStrEncoding::decode(body).map_err(|error| {
                ServerFnErrorErr::Deserialization(error.to_string()).into_app_error()
            })?;
            if let Some(location) = redirect {
                call_redirect_hook(&location);
            }
            Ok(output)
        }
    }
}

/// Sends `request` and reads its response: the body of a success, with
/// where it redirects to if it does; the error in the body of a `4xx` or
/// `5xx`, or the failure to get a response at all.
async fn exchange<C, E>(request: C::Request) -> Result<(Bytes, Option<String>), E>
where
    C: Client<E>,
    E: FromServerFnError,
{
    let response = C::send(request).await?;
    let status = response.status();
    let location = response.location();
    let redirects = (300..=399).contains(&status) || response.has_redirect();
    let body = response.try_into_bytes().await?;
    if (400..=599).contains(&status) {
        return Err(E::de(body));
    }
    Ok((body, redirects.then_some(location)))
}

#[cfg(test)]
mod tests;

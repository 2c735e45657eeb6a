//! The client half's reading of a response, against a client whose
//! responses the test writes.

use std::future::{ready, Future};
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use futures::{sink, stream, Sink, Stream};
use http::Method;
use leptos::server_fn::client::Client;
use leptos::server_fn::request::ClientReq;
use leptos::server_fn::response::ClientRes;
use leptos::server_fn::Bytes;

use super::exchange;
use crate::error::AppError;

/// What the fake server answers.
#[derive(Clone)]
struct Canned {
    status: u16,
    body: &'static str,
    location: &'static str,
    redirect_header: bool,
}

/// A request that carries its own answer (`None`: the network failed).
struct Request(Option<Canned>);

struct Fake;

fn unused<T>() -> Result<T, AppError> {
    unreachable!("the tests build their requests themselves")
}

impl ClientReq<AppError> for Request {
    type FormData = ();

    fn try_new_req_query(_: &str, _: &str, _: &str, _: &str, _: Method) -> Result<Self, AppError> {
        unused()
    }

    fn try_new_req_text(_: &str, _: &str, _: &str, _: String, _: Method) -> Result<Self, AppError> {
        unused()
    }

    fn try_new_req_bytes(_: &str, _: &str, _: &str, _: Bytes, _: Method) -> Result<Self, AppError> {
        unused()
    }

    fn try_new_req_form_data(
        _: &str,
        _: &str,
        _: &str,
        _: (),
        _: Method,
    ) -> Result<Self, AppError> {
        unused()
    }

    fn try_new_req_multipart(_: &str, _: &str, _: (), _: Method) -> Result<Self, AppError> {
        unused()
    }

    fn try_new_req_streaming(
        _: &str,
        _: &str,
        _: &str,
        _: impl Stream<Item = Bytes> + Send + 'static,
        _: Method,
    ) -> Result<Self, AppError> {
        unused()
    }
}

impl ClientRes<AppError> for Canned {
    fn try_into_string(self) -> impl Future<Output = Result<String, AppError>> + Send {
        ready(Ok(self.body.to_string()))
    }

    fn try_into_bytes(self) -> impl Future<Output = Result<Bytes, AppError>> + Send {
        ready(Ok(Bytes::from_static(self.body.as_bytes())))
    }

    fn try_into_stream(
        self,
    ) -> Result<impl Stream<Item = Result<Bytes, Bytes>> + Send + Sync + 'static, AppError> {
        Ok(stream::empty())
    }

    fn status(&self) -> u16 {
        self.status
    }

    fn status_text(&self) -> String {
        String::new()
    }

    fn location(&self) -> String {
        self.location.to_string()
    }

    fn has_redirect(&self) -> bool {
        self.redirect_header
    }
}

impl Client<AppError> for Fake {
    type Request = Request;
    type Response = Canned;

    fn send(request: Request) -> impl Future<Output = Result<Canned, AppError>> + Send {
        ready(request.0.ok_or_else(|| AppError {
            code: "request".into(),
            message: "the network failed".into(),
        }))
    }

    #[allow(clippy::type_complexity)]
    fn open_websocket(
        _: &str,
    ) -> impl Future<
        Output = Result<
            (
                impl Stream<Item = Result<Bytes, Bytes>> + Send + 'static,
                impl Sink<Bytes> + Send + 'static,
            ),
            AppError,
        >,
    > + Send {
        ready(Ok((stream::empty(), sink::drain())))
    }

    fn spawn(_: impl Future<Output = ()> + Send + 'static) {}
}

/// Runs a future that never waits (the fake client's never do).
fn now<F: Future>(future: F) -> F::Output {
    match pin!(future).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(output) => output,
        Poll::Pending => panic!("the fake client never waits"),
    }
}

fn answer(status: u16, body: &'static str) -> Canned {
    Canned {
        status,
        body,
        location: "",
        redirect_header: false,
    }
}

#[test]
fn a_success_is_its_body_and_no_redirect() {
    let (body, redirect) = now(exchange::<Fake, AppError>(Request(Some(answer(
        200, "[1]",
    )))))
    .unwrap();
    assert_eq!(&body[..], b"[1]");
    assert_eq!(redirect, None);
}

#[test]
fn a_redirect_by_status_or_by_header_says_where_to() {
    for (status, redirect_header) in [(303, false), (200, true)] {
        let canned = Canned {
            location: "/c/abc",
            redirect_header,
            ..answer(status, "{}")
        };
        let (_, redirect) = now(exchange::<Fake, AppError>(Request(Some(canned)))).unwrap();
        assert_eq!(redirect.as_deref(), Some("/c/abc"), "status {status}");
    }
}

#[test]
fn an_error_status_is_the_function_s_error_read_from_the_body() {
    for status in [400, 403, 500, 599] {
        let body = r#"{"code":"forbidden","message":"Supervisors only."}"#;
        let error = now(exchange::<Fake, AppError>(Request(Some(answer(
            status, body,
        )))))
        .unwrap_err();
        assert_eq!(error.code, "forbidden", "status {status}");
        assert_eq!(error.message, "Supervisors only.");
    }
    // An error body that is not the function's error still fails the call.
    let error = now(exchange::<Fake, AppError>(Request(Some(answer(
        502, "<html>",
    )))))
    .unwrap_err();
    assert_eq!(error.code, "internal");
}

#[test]
fn no_response_at_all_is_the_client_s_error() {
    let error = now(exchange::<Fake, AppError>(Request(None))).unwrap_err();
    assert_eq!(error.code, "request");
}

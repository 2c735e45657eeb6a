//! One worker's keep-alive HTTP/1.1 connection to the server, for the
//! `chat` mode: hyper's client connection itself, with no pool, and the
//! headers every request repeats made once.
//!
//! The load generator runs on the server's two cores, so what it spends
//! a turn is taken from the server's throughput. A `reqwest` client
//! parsed the URL, checked a connection out of its shared pool and built
//! a header map for every request, with the system allocator: 0.065–0.077
//! ms of CPU a turn, a tenth of the server's own (BENCHMARKS.md, round
//! 34). This is the shape of `wrk`, which the goal was first measured
//! with: one connection a client, nothing shared between them.

use bytes::Bytes;
use http::header::{AUTHORIZATION, CONTENT_TYPE, HOST};
use http::{HeaderValue, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;

use crate::LoadError;

pub(crate) struct Conn {
    /// `host:port`, where the connection goes.
    addr: String,
    host: HeaderValue,
    bearer: HeaderValue,
    /// The open connection: `None` before the first request and after one
    /// failed (the next request connects again).
    sender: Option<SendRequest<Full<Bytes>>>,
}

impl Conn {
    /// A connection to `base` (`http://host:port`, no path) with `token`
    /// as its bearer; it connects at its first request.
    pub(crate) fn new(base: &str, token: &str) -> Result<Self, LoadError> {
        let addr = base
            .strip_prefix("http://")
            .filter(|a| !a.is_empty() && !a.contains('/'))
            .ok_or_else(|| {
                LoadError::Usage(format!(
                    "the chat mode needs --base http://HOST:PORT, not {base}"
                ))
            })?;
        let header = |v: String| {
            HeaderValue::try_from(v).map_err(|e| LoadError::Usage(format!("bad header: {e}")))
        };
        Ok(Self {
            addr: addr.to_owned(),
            host: header(addr.to_owned())?,
            bearer: header(format!("Bearer {token}"))?,
            sender: None,
        })
    }

    /// `POST path` with a JSON `body`: the status and the whole answer.
    pub(crate) async fn post_json(
        &mut self,
        path: &'static str,
        body: Vec<u8>,
    ) -> Result<(StatusCode, Bytes), LoadError> {
        let request = Request::post(path)
            .header(HOST, self.host.clone())
            .header(AUTHORIZATION, self.bearer.clone())
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| LoadError::Usage(format!("bad request: {e}")))?;
        let sender = match &mut self.sender {
            Some(sender) if !sender.is_closed() => sender,
            _ => self.sender.insert(self.connect().await?),
        };
        let answered = async {
            sender.ready().await?;
            let response = sender.send_request(request).await?;
            let status = response.status();
            Ok::<_, hyper::Error>((status, response.into_body().collect().await?.to_bytes()))
        }
        .await;
        if answered.is_err() {
            self.sender = None;
        }
        Ok(answered?)
    }

    async fn connect(&self) -> Result<SendRequest<Full<Bytes>>, LoadError> {
        let stream = tokio::net::TcpStream::connect(&self.addr).await?;
        stream.set_nodelay(true)?;
        let (sender, connection) =
            hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
        // Drives the connection until its sender is dropped or it fails.
        tokio::spawn(connection);
        Ok(sender)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_goes_to_host_and_port_over_plain_http() {
        let conn = Conn::new("http://127.0.0.1:3450", "t0ken").expect("a base");
        assert_eq!(conn.addr, "127.0.0.1:3450");
        assert_eq!(conn.host, "127.0.0.1:3450");
        assert_eq!(conn.bearer, "Bearer t0ken");
        for base in [
            "https://127.0.0.1:3450",
            "http://127.0.0.1:3450/api",
            "http://",
            "127.0.0.1:3450",
        ] {
            assert!(
                matches!(Conn::new(base, "t"), Err(LoadError::Usage(_))),
                "{base}"
            );
        }
    }
}

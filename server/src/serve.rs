//! Serving connections with the limits `axum::serve` does not set:
//!
//! - a cap on open connections (past it, new ones wait in the kernel's
//!   backlog);
//! - per client address (an IPv6 client by its /64) at most
//!   `max_connections_per_address`, and headroom: once fewer than an eighth
//!   of the slots are free, an address that already holds an eighth of its
//!   own cap gets no more, so new clients still get in. The trusted proxies
//!   are exempt (each carries many clients). A refused connection gets a
//!   503 and is closed;
//! - a first-byte timeout: hyper runs no timer before a connection's first
//!   bytes (its HTTP/1-or-2 detection waits for them), so a silent
//!   connection would hold its slot until the idle timeout;
//! - the first request's head within the header-read timeout of its first
//!   byte, and on HTTP/1 each next one's (slowloris; this also ends a
//!   kept-alive connection that sends no next request);
//! - an idle timeout for connections on which nothing moves either way (a
//!   client that stops reading), and a graceful shutdown.
//!
//! Each request carries `ConnectInfo<SocketAddr>`. Event streams are not
//! idle: they send a keep-alive comment every 15 s, so a 5-minute model
//! stream is never cut.

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use aics_service::streams::address_key;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::Watcher;
use hyper_util::service::TowerToHyperService;
use ipnet::IpNet;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, OwnedSemaphorePermit, Semaphore};
use tower::ServiceExt;

/// The connection limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServeLimits {
    pub max_connections: usize,
    /// Open connections per client address (an IPv6 client by its /64).
    pub max_connections_per_address: usize,
    /// Peers the per-address cap and the headroom do not apply to: the
    /// trusted proxies, whose connections carry many clients.
    pub unlimited_peers: Vec<IpNet>,
    /// How long a new connection may stay silent.
    pub first_byte_timeout: Duration,
    pub header_read_timeout: Duration,
    pub idle_timeout: Duration,
    /// How long a shutdown waits for open connections.
    pub shutdown_grace: Duration,
}

impl Default for ServeLimits {
    fn default() -> Self {
        Self {
            max_connections: 1024,
            max_connections_per_address: 64,
            unlimited_peers: Vec::new(),
            first_byte_timeout: Duration::from_secs(10),
            header_read_timeout: Duration::from_secs(15),
            idle_timeout: Duration::from_secs(120),
            shutdown_grace: Duration::from_secs(30),
        }
    }
}

/// What every connection is served with.
struct Serving {
    router: Router,
    builder: auto::Builder<TokioExecutor>,
    first_byte: Duration,
    header_read: Duration,
    idle: Duration,
}

/// Serves `router` on `listener` until `shutdown` resolves, then waits up
/// to `shutdown_grace` for the open connections to finish.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: ServeLimits,
    shutdown: impl Future<Output = ()> + Send,
) -> io::Result<()> {
    let permits = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let addresses = Arc::new(Addresses::new(&limits));
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    // Tells connections still waiting for their first byte, which the
    // graceful shutdown would otherwise wait for.
    let (stopping, stopped) = watch::channel(false);
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(Some(Duration::from_secs(20)));
    let serving = Arc::new(Serving {
        router,
        builder,
        first_byte: limits.first_byte_timeout,
        header_read: limits.header_read_timeout,
        idle: limits.idle_timeout,
    });
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            permit = permits.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
            () = &mut shutdown => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // EMFILE and friends: wait a moment rather than spin.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let slot = match addresses.admit(peer.ip(), permits.available_permits()) {
            Ok(slot) => slot,
            Err(refusal) => {
                refuse(&stream, peer, refusal);
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        tokio::spawn(serve_connection(
            stream,
            peer,
            serving.clone(),
            graceful.watcher(),
            stopped.clone(),
            (permit, slot),
        ));
    }
    drop(listener);
    let _ = stopping.send(true);
    if tokio::time::timeout(limits.shutdown_grace, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("connections still open after the shutdown grace; closing them");
    }
    Ok(())
}

/// One connection, from its first byte to its end; `_held` (its places
/// among the connections) is released when it ends.
async fn serve_connection(
    stream: TcpStream,
    peer: SocketAddr,
    serving: Arc<Serving>,
    watcher: Watcher,
    mut stopped: watch::Receiver<bool>,
    _held: (OwnedSemaphorePermit, Option<AddressSlot>),
) {
    let mut first = [0u8; 1];
    let first_byte = tokio::select! {
        peeked = tokio::time::timeout(serving.first_byte, stream.peek(&mut first)) => peeked,
        _ = stopped.wait_for(|s| *s) => return,
    };
    match first_byte {
        Ok(Ok(n)) if n > 0 => {}
        // Closed (or failed) before saying anything.
        Ok(_) => return,
        Err(_) => {
            metrics::counter!("aics_connections_closed_total", "reason" => "silent").increment(1);
            tracing::debug!(%peer, "silent connection closed");
            return;
        }
    }
    let started = Instant::now();
    let activity = Arc::new(AtomicU64::new(elapsed_ms(started)));
    let requested = Arc::new(AtomicBool::new(false));
    let io = TokioIo::new(ActivityIo {
        inner: stream,
        activity: activity.clone(),
        started,
    });
    let asked = requested.clone();
    let service =
        serving
            .router
            .clone()
            .map_request(move |mut request: hyper::Request<Incoming>| {
                asked.store(true, Ordering::Relaxed);
                request.extensions_mut().insert(ConnectInfo(peer));
                request.map(Body::new)
            });
    let connection = serving
        .builder
        .serve_connection_with_upgrades(io, TowerToHyperService::new(service))
        .into_owned();
    let connection = watcher.watch(connection);
    tokio::pin!(connection);
    // The first request's head is due within the header-read timeout: the
    // protocol detection and HTTP/2 have no such timer of their own.
    let head_due = tokio::time::sleep(serving.header_read);
    tokio::pin!(head_due);
    let mut head_pending = true;
    let idle = serving.idle;
    let mut check = tokio::time::interval((idle / 4).max(Duration::from_millis(100)));
    loop {
        tokio::select! {
            result = &mut connection => {
                if let Err(e) = result {
                    tracing::debug!(error = %e, %peer, "connection ended with an error");
                }
                break;
            }
            () = &mut head_due, if head_pending => {
                if !requested.load(Ordering::Relaxed) {
                    metrics::counter!("aics_connections_closed_total", "reason" => "no_request")
                        .increment(1);
                    tracing::debug!(%peer, "no request in time; connection closed");
                    break;
                }
                head_pending = false;
            }
            _ = check.tick() => {
                let quiet = elapsed_ms(started).saturating_sub(activity.load(Ordering::Relaxed));
                if Duration::from_millis(quiet) > idle {
                    tracing::info!(%peer, quiet_ms = quiet, "idle connection closed");
                    break;
                }
            }
        }
    }
}

/// Why a connection was not admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refusal {
    /// Its address holds `max_connections_per_address` already.
    PerAddress,
    /// Few slots are free and its address holds its share of them.
    Headroom,
}

/// Answers 503 and closes, never waiting on the client (a new socket's
/// send buffer is empty, so the write goes at once or not at all).
fn refuse(stream: &TcpStream, peer: SocketAddr, refusal: Refusal) {
    let _ = stream.try_write(
        b"HTTP/1.1 503 Service Unavailable\r\nretry-after: 1\r\n\
          content-length: 0\r\nconnection: close\r\n\r\n",
    );
    let reason = match refusal {
        Refusal::PerAddress => "per_address",
        Refusal::Headroom => "headroom",
    };
    metrics::counter!("aics_connections_refused_total", "reason" => reason).increment(1);
    tracing::debug!(%peer, reason, "connection refused");
}

/// Open connections per client address.
#[derive(Debug)]
struct Addresses {
    open: Mutex<HashMap<IpAddr, usize>>,
    per_address: usize,
    /// Fewer free slots than this: only addresses holding fewer than
    /// `reserve_share` connections get one.
    reserved: usize,
    reserve_share: usize,
    unlimited: Vec<IpNet>,
}

/// One connection of an address; dropping it frees the place.
#[derive(Debug)]
struct AddressSlot {
    addresses: Arc<Addresses>,
    key: IpAddr,
}

impl Addresses {
    fn new(limits: &ServeLimits) -> Self {
        let per_address = limits.max_connections_per_address.max(1);
        Self {
            open: Mutex::default(),
            per_address,
            reserved: (limits.max_connections / 8).max(1),
            reserve_share: (per_address / 8).max(1),
            unlimited: limits.unlimited_peers.clone(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<IpAddr, usize>> {
        // Each change is one statement: a poisoned map is still right.
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A place for one more connection from `ip` when `free` slots are
    /// left besides its own; none needed for an unlimited peer.
    fn admit(self: &Arc<Self>, ip: IpAddr, free: usize) -> Result<Option<AddressSlot>, Refusal> {
        let ip = ip.to_canonical();
        if self.unlimited.iter().any(|net| net.contains(&ip)) {
            return Ok(None);
        }
        let key = address_key(ip);
        let mut open = self.lock();
        let held = open.get(&key).copied().unwrap_or(0);
        if held >= self.per_address {
            return Err(Refusal::PerAddress);
        }
        if free < self.reserved && held >= self.reserve_share {
            return Err(Refusal::Headroom);
        }
        *open.entry(key).or_insert(0) += 1;
        Ok(Some(AddressSlot {
            addresses: self.clone(),
            key,
        }))
    }
}

impl Drop for AddressSlot {
    fn drop(&mut self) {
        let mut open = self.addresses.lock();
        if let Some(n) = open.get_mut(&self.key) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                open.remove(&self.key);
            }
        }
    }
}

fn elapsed_ms(since: Instant) -> u64 {
    since.elapsed().as_millis().try_into().unwrap_or(u64::MAX)
}

/// A TCP stream that notes when bytes last moved.
struct ActivityIo {
    inner: TcpStream,
    activity: Arc<AtomicU64>,
    started: Instant,
}

impl ActivityIo {
    fn moved(&self) {
        self.activity
            .store(elapsed_ms(self.started), Ordering::Relaxed);
    }
}

impl AsyncRead for ActivityIo {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let result = Pin::new(&mut this.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            this.moved();
        }
        result
    }
}

impl AsyncWrite for ActivityIo {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let result = Pin::new(&mut this.inner).poll_write(cx, data);
        if matches!(result, Poll::Ready(Ok(n)) if n > 0) {
            this.moved();
        }
        result
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let result = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        if matches!(result, Poll::Ready(Ok(n)) if n > 0) {
            this.moved();
        }
        result
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addresses(max: usize, per_address: usize, unlimited: &[&str]) -> Arc<Addresses> {
        Arc::new(Addresses::new(&ServeLimits {
            max_connections: max,
            max_connections_per_address: per_address,
            unlimited_peers: unlimited.iter().map(|n| n.parse().unwrap()).collect(),
            ..ServeLimits::default()
        }))
    }

    #[test]
    fn an_address_is_capped_and_leaves_headroom() {
        let table = addresses(32, 16, &["10.0.0.1/32"]);
        let (a, b, c): (IpAddr, IpAddr, IpAddr) = (
            "192.0.2.1".parse().unwrap(),
            "192.0.2.2".parse().unwrap(),
            "192.0.2.3".parse().unwrap(),
        );
        let mut from_a: Vec<_> = (0..16).map(|i| table.admit(a, 31 - i).unwrap()).collect();
        assert_eq!(table.admit(a, 15).unwrap_err(), Refusal::PerAddress);
        // Under 4 free (an eighth of 32): b, holding 2 (an eighth of 16),
        // is refused.
        let _from_b = [table.admit(b, 10).unwrap(), table.admit(b, 9).unwrap()];
        assert_eq!(table.admit(b, 3).unwrap_err(), Refusal::Headroom);
        // A new client still gets in; a trusted proxy is not counted.
        assert!(table.admit(c, 3).unwrap().is_some());
        assert!(table
            .admit("10.0.0.1".parse().unwrap(), 0)
            .unwrap()
            .is_none());
        // Closing frees the address's place.
        from_a.pop();
        assert!(table.admit(a, 10).is_ok());
    }
}

// Copyright 2026 litep2p developers
//
// Permission is hereby granted, free of charge, to any person obtaining a
// copy of this software and associated documentation files (the "Software"),
// to deal in the Software without restriction, including without limitation
// the rights to use, copy, modify, merge, publish, distribute, sublicense,
// and/or sell copies of the Software, and to permit persons to whom the
// Software is furnished to do so, subject to the following conditions:
//
// The above copyright notice and this permission notice shall be included in
// all copies or substantial portions of the Software.
//
// THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS
// OR IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
// FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
// AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
// LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING
// FROM, OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER
// DEALINGS IN THE SOFTWARE.

//! Bounds on accepted connections, and a listener that outlives accept errors
//! (statement-store).
//!
//! A connection takes a file descriptor from the moment it is accepted, long before its
//! handshake tells who is on the other end, and the transport manager's
//! [`ConnectionLimitsConfig`](super::ConnectionLimitsConfig) only counts connections once they
//! are established. Idle sockets from one address could therefore take every descriptor of
//! the process. [`InboundLimits`] counts accepted connections from accept to close, at every
//! stage, by remote IP address and in total; a connection past either bound is closed as soon
//! as it is accepted. One `InboundLimits` can be shared by several transports.
//!
//! When `accept` fails (no descriptor left, no memory), the listener used to end for good.
//! Now the transport logs it, counts it in [`InboundLimits::accept_errors`] and tries again
//! after a pause that grows from [`FIRST_PAUSE`] to [`LONGEST_PAUSE`].

use parking_lot::Mutex;

use std::{
    collections::HashMap,
    future::Future,
    net::IpAddr,
    pin::Pin,
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc,
    },
    task::{Context, Poll},
    time::{Duration, Instant},
};

/// The first pause after a failed accept.
pub const FIRST_PAUSE: Duration = Duration::from_millis(50);

/// The longest pause after failed accepts in a row.
pub const LONGEST_PAUSE: Duration = Duration::from_secs(1);

/// Logging target for the file.
const LOG_TARGET: &str = "litep2p::inbound";

/// How often a failing listener is logged at warning level.
const WARN_EVERY: Duration = Duration::from_secs(10);

/// Bounds on accepted connections by remote address and in total, and what they refused.
#[derive(Debug)]
pub struct InboundLimits {
    per_address: usize,
    total: usize,
    open: Mutex<Open>,
    refused_per_address: AtomicU64,
    refused_total: AtomicU64,
    accept_errors: AtomicU64,
}

#[derive(Debug, Default)]
struct Open {
    by_address: HashMap<IpAddr, usize>,
    total: usize,
}

impl InboundLimits {
    /// At most `per_address` accepted connections from one IPv4 address (or IPv6 /64) and
    /// `total` in all, at once (both at least 1).
    pub fn new(per_address: usize, total: usize) -> Arc<Self> {
        Arc::new(Self {
            per_address: per_address.max(1),
            total: total.max(1),
            open: Mutex::new(Open::default()),
            refused_per_address: AtomicU64::new(0),
            refused_total: AtomicU64::new(0),
            accept_errors: AtomicU64::new(0),
        })
    }

    /// No bound; accept errors are still counted.
    pub fn unbounded() -> Arc<Self> {
        Self::new(usize::MAX, usize::MAX)
    }

    /// The bound per remote IP address.
    pub fn per_address(&self) -> usize {
        self.per_address
    }

    /// The bound on all accepted connections together.
    pub fn total(&self) -> usize {
        self.total
    }

    /// Accepted connections open now, at any stage.
    pub fn open(&self) -> usize {
        self.open.lock().total
    }

    /// Connections closed on accept because their address had its share.
    pub fn refused_per_address(&self) -> u64 {
        self.refused_per_address.load(Ordering::Relaxed)
    }

    /// Connections closed on accept because all the slots were taken.
    pub fn refused_total(&self) -> u64 {
        self.refused_total.load(Ordering::Relaxed)
    }

    /// Failed `accept` calls (after each, the listener pauses and tries again).
    pub fn accept_errors(&self) -> u64 {
        self.accept_errors.load(Ordering::Relaxed)
    }

    /// A permit for a connection just accepted from `address`, or `None` if it must be
    /// closed. The slot is given back when the permit drops.
    pub(crate) fn admit(self: &Arc<Self>, address: IpAddr) -> Option<InboundPermit> {
        let address = address_key(address);
        let mut open = self.open.lock();
        if open.total >= self.total {
            self.refused_total.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        let from_address = open.by_address.entry(address).or_insert(0);
        if *from_address >= self.per_address {
            self.refused_per_address.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        *from_address += 1;
        open.total += 1;
        Some(InboundPermit { limits: self.clone(), address })
    }
}

/// What connections are counted by: an IPv4 address, or the /64 an IPv6 address is in (one
/// host usually has a whole /64). IPv4-mapped IPv6 addresses count as their IPv4 address.
fn address_key(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V4(_) => address,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let mut segments = v6.segments();
                segments[4..].fill(0);
                IpAddr::V6(segments.into())
            }
        },
    }
}

/// One accepted connection's slot in [`InboundLimits`], held until the connection closes.
#[derive(Debug)]
pub(crate) struct InboundPermit {
    limits: Arc<InboundLimits>,
    address: IpAddr,
}

impl Drop for InboundPermit {
    fn drop(&mut self) {
        let mut open = self.limits.open.lock();
        open.total -= 1;
        if let Some(from_address) = open.by_address.get_mut(&self.address) {
            *from_address -= 1;
            if *from_address == 0 {
                open.by_address.remove(&self.address);
            }
        }
    }
}

/// What a transport keeps to pause its listener after a failed accept.
#[derive(Default)]
pub(crate) struct ListenerPause {
    sleep: Option<Pin<Box<tokio::time::Sleep>>>,
    next: Option<Duration>,
    last_warning: Option<Instant>,
    since_warning: u64,
}

impl ListenerPause {
    /// Whether the listener may be polled now; if not, the waker is registered with the
    /// pause's timer.
    pub(crate) fn ready(&mut self, cx: &mut Context<'_>) -> bool {
        match self.sleep.as_mut() {
            None => true,
            Some(sleep) => match sleep.as_mut().poll(cx) {
                Poll::Pending => false,
                Poll::Ready(()) => {
                    self.sleep = None;
                    true
                }
            },
        }
    }

    /// A connection was accepted: the next failure pauses for [`FIRST_PAUSE`] again.
    pub(crate) fn accepted(&mut self) {
        self.next = None;
    }

    /// `accept` failed: count it, log it and pause the listener.
    pub(crate) fn failed(
        &mut self,
        error: &std::io::Error,
        limits: Option<&InboundLimits>,
        transport: &'static str,
    ) {
        if let Some(limits) = limits {
            limits.accept_errors.fetch_add(1, Ordering::Relaxed);
        }
        let pause = self.next.unwrap_or(FIRST_PAUSE);
        self.next = Some((pause * 2).min(LONGEST_PAUSE));
        self.since_warning += 1;
        let now = Instant::now();
        if self.last_warning.map_or(true, |at| now.duration_since(at) >= WARN_EVERY) {
            tracing::warn!(
                target: LOG_TARGET,
                transport,
                ?error,
                failures = self.since_warning,
                ?pause,
                "accepting a connection failed; the listener pauses and tries again",
            );
            self.last_warning = Some(now);
            self.since_warning = 0;
        }
        self.sleep = Some(Box::pin(tokio::time::sleep(pause)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permits_bound_each_address_and_the_total_and_come_back_on_drop() {
        let limits = InboundLimits::new(2, 3);
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        let first = limits.admit(a).unwrap();
        let _second = limits.admit(a).unwrap();
        assert!(limits.admit(a).is_none());
        assert_eq!(limits.refused_per_address(), 1);
        let _third = limits.admit(b).unwrap();
        assert!(limits.admit(b).is_none());
        assert_eq!(limits.refused_total(), 1);
        drop(first);
        assert_eq!(limits.open(), 2);
        let _again = limits.admit(a).unwrap();
        assert_eq!(limits.open(), 3);
    }

    #[test]
    fn an_ipv6_slash_64_counts_as_one_address() {
        let limits = InboundLimits::new(1, 10);
        let _one = limits.admit("2001:db8:1:2::1".parse().unwrap()).unwrap();
        assert!(limits.admit("2001:db8:1:2:ffff::9".parse().unwrap()).is_none());
        let _other = limits.admit("2001:db8:1:3::1".parse().unwrap()).unwrap();
        let _v4 = limits.admit("10.0.0.1".parse().unwrap()).unwrap();
        assert!(limits.admit("::ffff:10.0.0.1".parse().unwrap()).is_none());
    }
}

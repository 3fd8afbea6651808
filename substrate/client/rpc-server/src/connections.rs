//! Who holds the RPC server's connection slots, and which connection gives its slot up.
//!
//! A connection holds one of `--rpc-max-connections` slots from accept until its socket
//! closes. At any moment it is in one of three states:
//! - *waiting*: its client owes the server something: the headers and body of an HTTP
//!   request, reading the response to it, the next request on a kept-alive HTTP connection,
//!   or the first message on a freshly upgraded WebSocket;
//! - *busy*: a JSON-RPC call it sent is running;
//! - *session*: a WebSocket that has sent at least one request (it may hold subscriptions).
//!
//! Two rules keep slow or idle clients from holding every slot:
//! - **Deadline.** A connection waiting longer than the request timeout is closed.
//! - **Eviction.** When every slot is taken, a new connection takes the slot of the connection
//!   that has been waiting longest. Only when none is waiting (all are busy or sessions) is the
//!   new connection refused, with HTTP 429.
//!
//! So a slow-body sender or an idle upgrade keeps its slot only until the timeout, or until
//! `max` newer connections have arrived, and a client that sends its request promptly is served
//! however many such connections are open. Busy connections and sessions are never evicted;
//! the server's WebSocket pings close sessions whose peer is gone. What this does not stop: a
//! client that sends one request on each of many WebSockets holds those slots (a per-address
//! limit would be the next step).
//!
//! Closing is done through [`TrackedStream`], the socket every connection is served over: once
//! its connection is closed it reads as end-of-stream and refuses writes, which ends the HTTP
//! connection or the WebSocket task above it, and dropping it frees the slot.

use crate::metrics::ServerMetrics;
use std::{
	collections::HashMap,
	io,
	pin::Pin,
	sync::{
		atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering},
		Arc, Mutex, MutexGuard, PoisonError,
	},
	task::{Context, Poll, Waker},
	time::{Duration, Instant},
};
use tokio::{
	io::{AsyncRead, AsyncWrite, ReadBuf},
	net::TcpStream,
};

/// The server's table of open connections.
#[derive(Clone)]
pub struct Connections {
	shared: Arc<Shared>,
}

struct Shared {
	max: usize,
	timeout: Duration,
	epoch: Instant,
	next_id: AtomicU64,
	open: Mutex<HashMap<u64, Arc<Conn>>>,
	metrics: ServerMetrics,
}

/// What the table knows about one connection.
pub struct Conn {
	id: u64,
	epoch: Instant,
	/// JSON-RPC calls running.
	calls: AtomicU32,
	/// Upgraded to a WebSocket.
	upgraded: AtomicBool,
	/// Milliseconds after `epoch` at which it was upgraded.
	upgraded_at: AtomicU64,
	/// Where the WebSocket session is counted.
	metrics: ServerMetrics,
	/// A WebSocket that has sent a request.
	session: AtomicBool,
	/// Milliseconds after `epoch` at which the connection last began to wait for its client.
	waiting_since: AtomicU64,
	closing: AtomicBool,
	/// Tasks to wake when the connection is closed: the reader and the writer.
	wakers: Mutex<[Option<Waker>; 2]>,
}

/// A slot in the table, given back when dropped.
pub struct Slot {
	conn: Arc<Conn>,
	shared: Arc<Shared>,
}

/// Marks a connection busy while a call runs; dropping it ends the call.
pub struct Busy(Arc<Conn>);

const READER: usize = 0;
const WRITER: usize = 1;

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
	// Nothing held under these locks is left half-updated by a panic.
	mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Connections {
	/// A table of at most `max` connections that closes any left waiting past `timeout`,
	/// counting WebSocket sessions in `metrics`.
	pub fn new(max: usize, timeout: Duration, metrics: ServerMetrics) -> Self {
		Connections {
			shared: Arc::new(Shared {
				max: max.max(1),
				timeout,
				epoch: Instant::now(),
				next_id: AtomicU64::new(0),
				open: Mutex::new(HashMap::new()),
				metrics,
			}),
		}
	}

	/// A slot for a new connection, closing the longest-waiting connection if every slot is
	/// taken; `None` if every slot is busy or a session.
	pub fn admit(&self) -> Option<Slot> {
		let mut open = lock(&self.shared.open);
		let taken = open.values().filter(|conn| !conn.is_closing()).count();
		if taken >= self.shared.max {
			let victim = open
				.values()
				.filter(|conn| conn.is_waiting())
				.min_by_key(|conn| conn.waiting_since.load(Ordering::Relaxed))?;
			log::debug!("RPC connections full: closing connection {} to make room", victim.id);
			victim.close();
		}
		let conn = Arc::new(Conn {
			id: self.shared.next_id.fetch_add(1, Ordering::Relaxed),
			epoch: self.shared.epoch,
			calls: AtomicU32::new(0),
			upgraded: AtomicBool::new(false),
			upgraded_at: AtomicU64::new(0),
			metrics: self.shared.metrics.clone(),
			session: AtomicBool::new(false),
			waiting_since: AtomicU64::new(0),
			closing: AtomicBool::new(false),
			wakers: Mutex::new([None, None]),
		});
		conn.start_waiting();
		open.insert(conn.id, conn.clone());
		Some(Slot { conn, shared: self.shared.clone() })
	}

	/// Close every connection that has waited longer than the timeout.
	pub fn close_overdue(&self) {
		let now = self.shared.epoch.elapsed();
		let timeout = self.shared.timeout;
		for conn in lock(&self.shared.open).values() {
			let since = Duration::from_millis(conn.waiting_since.load(Ordering::Relaxed));
			if conn.is_waiting() && now.saturating_sub(since) > timeout {
				log::debug!("RPC connection {} sent no complete request in {timeout:?}", conn.id);
				conn.close();
			}
		}
	}

	/// Close every waiting connection, for shutdown: busy ones finish their calls first, and
	/// sessions close themselves when the server stops.
	pub fn close_waiting(&self) {
		lock(&self.shared.open)
			.values()
			.filter(|conn| conn.is_waiting())
			.for_each(|conn| conn.close());
	}

	/// How often [`Connections::close_overdue`] should run: often enough that a connection
	/// overstays the timeout by at most a quarter of it, or a second.
	pub fn check_period(&self) -> Duration {
		(self.shared.timeout / 4).clamp(Duration::from_millis(50), Duration::from_secs(1))
	}
}

impl Conn {
	fn is_closing(&self) -> bool {
		self.closing.load(Ordering::Acquire)
	}

	fn is_waiting(&self) -> bool {
		self.calls.load(Ordering::Acquire) == 0
			&& !self.session.load(Ordering::Acquire)
			&& !self.is_closing()
	}

	fn now_ms(&self) -> u64 {
		u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
	}

	fn start_waiting(&self) {
		self.waiting_since.store(self.now_ms(), Ordering::Relaxed);
	}

	/// A request's headers are in: the client now has a full timeout for the body.
	pub fn request_arrived(&self) {
		self.start_waiting();
	}

	/// The connection became a WebSocket: it has a full timeout for its first message.
	pub fn upgraded(&self) {
		self.upgraded_at.store(self.now_ms(), Ordering::Relaxed);
		if !self.upgraded.swap(true, Ordering::AcqRel) {
			self.metrics.session_opened();
		}
		self.start_waiting();
	}

	/// A JSON-RPC call begins; the connection is busy until the returned guard drops.
	pub fn call_started(self: &Arc<Self>) -> Busy {
		self.calls.fetch_add(1, Ordering::AcqRel);
		if self.upgraded.load(Ordering::Acquire) {
			self.session.store(true, Ordering::Release);
		}
		Busy(self.clone())
	}

	/// Make the connection's socket read as closed and refuse writes.
	fn close(&self) {
		self.closing.store(true, Ordering::Release);
		for waker in lock(&self.wakers).iter_mut().filter_map(Option::take) {
			waker.wake();
		}
	}

	/// Whether the connection is closed; if not, `cx` is woken when it is.
	fn closed_or_register(&self, slot: usize, cx: &Context<'_>) -> bool {
		let mut wakers = lock(&self.wakers);
		// Checked under the lock that `close` takes after setting the flag, so a close is
		// either seen here or wakes the waker stored here.
		if self.is_closing() {
			return true;
		}
		match &mut wakers[slot] {
			Some(waker) if waker.will_wake(cx.waker()) => {}
			other => *other = Some(cx.waker().clone()),
		}
		false
	}
}

impl Drop for Busy {
	fn drop(&mut self) {
		if self.0.calls.fetch_sub(1, Ordering::AcqRel) == 1 {
			self.0.start_waiting();
		}
	}
}

impl Slot {
	/// The connection this slot belongs to.
	pub fn conn(&self) -> &Arc<Conn> {
		&self.conn
	}
}

impl Drop for Slot {
	fn drop(&mut self) {
		lock(&self.shared.open).remove(&self.conn.id);
		// The socket is gone: a WebSocket session ends here.
		let conn = &self.conn;
		if conn.upgraded.load(Ordering::Acquire) {
			let lasted = conn.now_ms().saturating_sub(conn.upgraded_at.load(Ordering::Relaxed));
			conn.metrics.session_closed(Duration::from_millis(lasted));
		}
	}
}

/// A connection's socket, which the table can close from outside and which gives the slot
/// back when dropped.
pub struct TrackedStream {
	inner: TcpStream,
	slot: Slot,
}

impl TrackedStream {
	/// `inner`, holding `slot` for as long as it is open.
	pub fn new(inner: TcpStream, slot: Slot) -> Self {
		TrackedStream { inner, slot }
	}

	fn refuse_write(&self, cx: &Context<'_>) -> Option<io::Error> {
		self.slot.conn.closed_or_register(WRITER, cx).then(|| {
			io::Error::new(io::ErrorKind::ConnectionAborted, "connection closed by the server")
		})
	}
}

impl AsyncRead for TrackedStream {
	fn poll_read(
		self: Pin<&mut Self>,
		cx: &mut Context<'_>,
		buf: &mut ReadBuf<'_>,
	) -> Poll<io::Result<()>> {
		let this = self.get_mut();
		if this.slot.conn.closed_or_register(READER, cx) {
			// End of stream: nothing more is read from a closed connection.
			return Poll::Ready(Ok(()));
		}
		Pin::new(&mut this.inner).poll_read(cx, buf)
	}
}

impl AsyncWrite for TrackedStream {
	fn poll_write(
		self: Pin<&mut Self>,
		cx: &mut Context<'_>,
		buf: &[u8],
	) -> Poll<io::Result<usize>> {
		let this = self.get_mut();
		if let Some(err) = this.refuse_write(cx) {
			return Poll::Ready(Err(err));
		}
		Pin::new(&mut this.inner).poll_write(cx, buf)
	}

	fn poll_write_vectored(
		self: Pin<&mut Self>,
		cx: &mut Context<'_>,
		bufs: &[io::IoSlice<'_>],
	) -> Poll<io::Result<usize>> {
		let this = self.get_mut();
		if let Some(err) = this.refuse_write(cx) {
			return Poll::Ready(Err(err));
		}
		Pin::new(&mut this.inner).poll_write_vectored(cx, bufs)
	}

	fn is_write_vectored(&self) -> bool {
		self.inner.is_write_vectored()
	}

	fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
		Pin::new(&mut self.get_mut().inner).poll_flush(cx)
	}

	fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
		Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	fn table(max: usize) -> Connections {
		Connections::new(max, Duration::from_secs(60), ServerMetrics::default())
	}

	#[test]
	fn a_full_table_closes_the_longest_waiting_connection_for_a_new_one() {
		let table = table(2);
		let first = table.admit().unwrap();
		std::thread::sleep(Duration::from_millis(5));
		let second = table.admit().unwrap();
		let third = table.admit().unwrap();
		assert!(first.conn().is_closing());
		assert!(!second.conn().is_closing() && !third.conn().is_closing());
	}

	#[test]
	fn busy_connections_and_sessions_keep_their_slots_and_the_newcomer_is_refused() {
		let table = table(2);
		let busy = table.admit().unwrap();
		let _call = busy.conn().call_started();
		let session = table.admit().unwrap();
		session.conn().upgraded();
		drop(session.conn().call_started());
		assert!(table.admit().is_none());
		assert!(!busy.conn().is_closing() && !session.conn().is_closing());
	}

	#[test]
	fn a_closed_slot_is_free_once_dropped() {
		let table = table(1);
		let first = table.admit().unwrap();
		let _call = first.conn().call_started();
		assert!(table.admit().is_none());
		drop(first);
		assert!(table.admit().is_some());
	}

	#[test]
	fn only_connections_waiting_past_the_timeout_are_closed() {
		let table = Connections::new(4, Duration::from_millis(20), ServerMetrics::default());
		let waiting = table.admit().unwrap();
		let busy = table.admit().unwrap();
		let _call = busy.conn().call_started();
		std::thread::sleep(Duration::from_millis(40));
		let fresh = table.admit().unwrap();
		table.close_overdue();
		assert!(waiting.conn().is_closing());
		assert!(!busy.conn().is_closing() && !fresh.conn().is_closing());
	}
}

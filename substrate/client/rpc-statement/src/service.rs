//! What the statement methods work on: the store, behind the primitives' trait (this crate
//! never sees a concrete store or its database), the server's limits, and the state
//! subscriptions share (the pump, the readers, those being opened).

use crate::{
	error::ensure_unsafe_allowed,
	limits::{
		DEFAULT_MAX_RESPONSE_BYTES, DEFAULT_SUBSCRIPTIONS_PER_CONNECTION,
		MIN_SUBSCRIPTIONS_PER_CONNECTION, SUBSCRIPTION_READERS,
	},
	metrics::RpcMetrics,
	pump::Pump,
};
use jsonrpsee::types::error::ErrorObjectOwned;
use statement_primitives::{StatementStore, Topic, TopicFilter, DEFAULT_SUBSCRIBER_QUEUE_BYTES};
use std::sync::{atomic::AtomicUsize, Arc};

/// Called with each subscription's filter as it opens; what it returns is kept for as long as
/// the subscription lives, and dropped when it ends. A light node uses it to ask its peers for
/// the subscription's topics.
pub type SubscriptionHook =
	Arc<dyn Fn(&TopicFilter) -> Box<dyn std::any::Any + Send> + Send + Sync>;

/// Called before a one-shot query (`statement_broadcasts`, `statement_posted` ...) is
/// answered, with its topics; the query is answered from the store once the future ends. A
/// node with topic-routed storage fetches the topics from their holders into its store.
pub type QueryHook = Arc<
	dyn Fn(Vec<Topic>) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>
		+ Send
		+ Sync,
>;

/// What the RPC methods work on.
#[derive(Clone)]
pub struct StatementRpc {
	pub(crate) store: Arc<dyn StatementStore>,
	allow_unsafe: bool,
	pub(crate) max_response_bytes: u32,
	pub(crate) queue_bytes: usize,
	pub(crate) on_subscribe: Option<SubscriptionHook>,
	pub(crate) before_query: Option<QueryHook>,
	pub(crate) pump: Pump,
	/// Permits to read for subscriptions (subscribe, replay pages) off the async threads.
	pub(crate) readers: Arc<tokio::sync::Semaphore>,
	/// Subscriptions accepted for opening and not yet open (or refused).
	pub(crate) starting: Arc<AtomicUsize>,
	/// Spec-v2 subscriptions one connection may hold.
	pub(crate) v2_per_connection: usize,
	/// What the methods count.
	pub(crate) metrics: RpcMetrics,
	/// Submissions being handled, and when the last one was, which spec-v2 replays give
	/// way to.
	pub(crate) submissions: Arc<crate::submissions::Submissions>,
}

impl StatementRpc {
	/// Methods over `store`; `allow_unsafe` enables `statement_dump`, `statement_dumpPage`
	/// and `statement_remove`.
	pub fn new(store: Arc<dyn StatementStore>, allow_unsafe: bool) -> Self {
		StatementRpc {
			store,
			allow_unsafe,
			max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
			queue_bytes: DEFAULT_SUBSCRIBER_QUEUE_BYTES,
			on_subscribe: None,
			before_query: None,
			pump: Pump::default(),
			readers: Arc::new(tokio::sync::Semaphore::new(SUBSCRIPTION_READERS)),
			starting: Arc::default(),
			submissions: Arc::default(),
			v2_per_connection: DEFAULT_SUBSCRIPTIONS_PER_CONNECTION,
			metrics: RpcMetrics::default(),
		}
	}

	/// Spec-v2 subscriptions one connection may hold: `most`, and never fewer than
	/// [`MIN_SUBSCRIPTIONS_PER_CONNECTION`].
	pub fn with_v2_subscriptions_per_connection(mut self, most: usize) -> Self {
		self.v2_per_connection = most.max(MIN_SUBSCRIPTIONS_PER_CONNECTION);
		self
	}

	/// Count into `metrics` (shared with whoever renders them).
	pub fn with_metrics(mut self, metrics: RpcMetrics) -> Self {
		self.metrics = metrics;
		self
	}

	/// Call `hook` as each subscription opens (see [`SubscriptionHook`]).
	pub fn with_subscription_hook(mut self, hook: SubscriptionHook) -> Self {
		self.on_subscribe = Some(hook);
		self
	}

	/// Await `hook` before each one-shot query is answered (see [`QueryHook`]).
	pub fn with_query_hook(mut self, hook: QueryHook) -> Self {
		self.before_query = Some(hook);
		self
	}

	/// The server's response limit, so that dumps that would pass it say so clearly.
	pub fn with_max_response_bytes(mut self, bytes: u32) -> Self {
		self.max_response_bytes = bytes;
		self
	}

	/// Bytes of new statements a subscriber may fall behind before it is dropped.
	pub fn with_subscriber_queue_bytes(mut self, bytes: usize) -> Self {
		self.queue_bytes = bytes;
		self
	}

	/// Encoded bytes one answer may carry: its hex takes twice as many, plus the envelope.
	pub(crate) fn max_answer_bytes(&self) -> usize {
		(self.max_response_bytes as usize).saturating_sub(64 * 1024) / 2
	}

	pub(crate) fn ensure_unsafe_allowed(&self) -> Result<(), ErrorObjectOwned> {
		ensure_unsafe_allowed(self.allow_unsafe)
	}
}

//! The soak's load, each part a task of its own until [`Load::stop`]:
//! - submits at a steady rate into node 0 over HTTP, each statement signed when it is due and
//!   expiring `lifetime` later, so that the store's content turns over (expiry churn);
//! - one legacy subscription on node 1 that reads every statement, the delivery check;
//! - subscriptions that open, read for a while and close, legacy and spec-v2 in turn;
//! - queries (`statement_broadcastsStatement`) on the soak topic.
//!
//! The ledger pairs a statement's submit with its notification by the sequence number in its
//! data; both instants are on this process's monotonic clock.

use jsonrpsee::{
	core::{
		client::{ClientT, Subscription, SubscriptionClientT, SubscriptionKind},
		params::BatchRequestBuilder,
	},
	http_client::{HttpClient, HttpClientBuilder},
	rpc_params,
	ws_client::{WsClient, WsClientBuilder},
};
use parking_lot::Mutex;
use serde_json::{json, Value};
use sp_core::{sr25519, Pair};
use statement_primitives::{
	dev::{self, DEV_ACCOUNTS},
	testing::TestStatement,
	Statement, Topic,
};
use statement_store_benches::fixture::topic;
use statement_test_support::hex;
use std::{
	sync::{
		atomic::{AtomicBool, AtomicU64, Ordering},
		Arc,
	},
	time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};
use tokio::task::JoinHandle;

/// Bytes of data per statement; the sequence number is the first eight.
const DATA_BYTES: usize = 256;
/// How often the submitter sends what has fallen due (one batch).
const SUBMIT_TICK: Duration = Duration::from_millis(100);
/// How long one request may take; only a stuck node reaches it.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// Notifications a subscription's client may buffer.
const SUBSCRIBER_BUFFER: usize = 1 << 16;

/// The soak's one topic.
pub fn soak_topic() -> Topic {
	topic(0x50a4_0001)
}

/// What the load does, from the command line.
#[derive(Clone, Debug)]
pub struct Plan {
	/// Statements submitted a second.
	pub rate: f64,
	/// How long each statement lives before it expires.
	pub lifetime: Duration,
	/// A churning subscription opens this often.
	pub churn_every: Duration,
	/// How long a churning subscription reads before it closes.
	pub churn_hold: Duration,
	/// A query runs this often.
	pub query_every: Duration,
}

/// Latencies noted since the last [`Ledger::take_window`], and the statements' fates.
#[derive(Default)]
pub struct Ledger {
	/// When each statement's submit was sent, by sequence number.
	sent: Vec<Instant>,
	/// Whether node 0 answered `new`, by sequence number.
	accepted: Vec<bool>,
	/// Whether the delivery subscription read it, by sequence number.
	delivered: Vec<bool>,
	/// The first answer other than `new`.
	pub first_refusal: Option<String>,
	submit_window: Vec<Duration>,
	delivery_window: Vec<Duration>,
}

impl Ledger {
	/// The submit and delivery latencies noted since the last call.
	pub fn take_window(&mut self) -> (Vec<Duration>, Vec<Duration>) {
		(std::mem::take(&mut self.submit_window), std::mem::take(&mut self.delivery_window))
	}

	/// Statements submitted, admitted, and admitted but not (yet) delivered.
	pub fn counts(&self) -> (usize, usize, usize) {
		let accepted = self.accepted.iter().filter(|a| **a).count();
		let undelivered = self.accepted.iter().zip(&self.delivered).filter(|(a, d)| **a && !**d);
		(self.sent.len(), accepted, undelivered.count())
	}

	fn note_delivered(&mut self, seq: usize, at: Instant) {
		if self.delivered.len() <= seq {
			self.delivered.resize(seq + 1, false);
		}
		if !std::mem::replace(&mut self.delivered[seq], true) {
			if let Some(sent) = self.sent.get(seq) {
				self.delivery_window.push(at.saturating_duration_since(*sent));
			}
		}
	}
}

/// What the churning subscriptions and the queries did.
#[derive(Default)]
pub struct Tally {
	/// Subscriptions opened and closed again.
	pub churned: AtomicU64,
	/// Notifications they read.
	pub churn_events: AtomicU64,
	/// Queries answered.
	pub queries: AtomicU64,
	/// The first failure of either, and how many.
	pub failures: AtomicU64,
	pub first_failure: Mutex<Option<String>>,
}

impl Tally {
	fn fail(&self, what: String) {
		self.failures.fetch_add(1, Ordering::Relaxed);
		self.first_failure.lock().get_or_insert(what);
	}
}

/// The running load.
pub struct Load {
	/// Shared with the tasks.
	pub ledger: Arc<Mutex<Ledger>>,
	/// Shared with the tasks.
	pub tally: Arc<Tally>,
	stop: Arc<AtomicBool>,
	submitter: JoinHandle<Result<(), String>>,
	delivery: JoinHandle<Result<(), String>>,
	others: Vec<JoinHandle<()>>,
}

impl Load {
	/// Start every part: submits into `submit_port`, the delivery subscription on
	/// `delivery_port`, churn and queries on each of `churn_ports` in turn.
	pub async fn start(
		plan: &Plan,
		submit_port: u16,
		delivery_port: u16,
		churn_ports: &[u16],
	) -> Result<Load, String> {
		let ledger = Arc::new(Mutex::new(Ledger::default()));
		let tally = Arc::new(Tally::default());
		let stop = Arc::new(AtomicBool::new(false));
		let subscription = subscribe_legacy(delivery_port).await?;
		let delivery = tokio::spawn(deliver(subscription, ledger.clone()));
		let signer = Signer::new(plan.lifetime)?;
		let client = HttpClientBuilder::default()
			.request_timeout(REQUEST_TIMEOUT)
			.build(format!("http://127.0.0.1:{submit_port}"))
			.map_err(|err| format!("cannot build an HTTP client: {err}"))?;
		let submitter =
			tokio::spawn(submit(client, signer, plan.rate, ledger.clone(), stop.clone()));
		let ports = churn_ports.to_vec();
		let churn = tokio::spawn(churn(plan.clone(), ports.clone(), tally.clone(), stop.clone()));
		let queries = tokio::spawn(query(plan.query_every, ports, tally.clone(), stop.clone()));
		Ok(Load { ledger, tally, stop, submitter, delivery, others: vec![churn, queries] })
	}

	/// Stop submitting, churning and querying; the delivery subscription keeps reading.
	pub async fn stop_sending(&mut self) -> Result<(), String> {
		self.stop.store(true, Ordering::Relaxed);
		for task in self.others.drain(..) {
			task.await.map_err(|err| format!("a load task panicked: {err}"))?;
		}
		(&mut self.submitter).await.map_err(|err| format!("the submitter panicked: {err}"))?
	}

	/// Whether the delivery subscription has ended by itself (an error), and why.
	pub async fn delivery_ended(&mut self) -> Option<String> {
		ended(&mut self.delivery, "the delivery subscription").await
	}

	/// Whether the submitter has stopped by itself (an error), and why.
	pub async fn submitter_ended(&mut self) -> Option<String> {
		ended(&mut self.submitter, "the submitter").await
	}
}

/// Why `task` (`what`) ended, if it has: only [`Load::stop_sending`] may end a load task.
async fn ended(task: &mut JoinHandle<Result<(), String>>, what: &str) -> Option<String> {
	if !task.is_finished() {
		return None;
	}
	match task.await {
		Ok(Ok(())) => Some(format!("{what} stopped")),
		Ok(Err(err)) => Some(err),
		Err(err) => Some(format!("{what} panicked: {err}")),
	}
}

impl Drop for Load {
	fn drop(&mut self) {
		self.stop.store(true, Ordering::Relaxed);
		self.delivery.abort();
	}
}

/// Signs statement `seq` when it falls due: sr25519 dev accounts in turn, expiring
/// `lifetime` from now, `seq` in the data and as the expiry's sequence.
struct Signer {
	pairs: Vec<sr25519::Pair>,
	lifetime: Duration,
}

impl Signer {
	fn new(lifetime: Duration) -> Result<Signer, String> {
		let pairs = DEV_ACCOUNTS
			.iter()
			.map(|name| sr25519::Pair::from_string(&dev::suri(name), None))
			.collect::<Result<Vec<_>, _>>()
			.map_err(|err| format!("cannot derive a dev account: {err:?}"))?;
		Ok(Signer { pairs, lifetime })
	}

	fn sign(&self, seq: u64) -> String {
		let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
		let expiry = u32::try_from(now + self.lifetime.as_secs().max(1)).unwrap_or(u32::MAX);
		let mut data = vec![0u8; DATA_BYTES];
		data[..8].copy_from_slice(&seq.to_le_bytes());
		let pair = &self.pairs[seq as usize % self.pairs.len()];
		let statement = TestStatement::new()
			.expiry(expiry, seq as u32)
			.topic(0, soak_topic())
			.data(data)
			.signed_sr25519(pair);
		hex::encode(&statement.encode())
	}
}

/// The sequence number a received statement carries.
fn sequence_of(encoded_hex: &str) -> Option<usize> {
	let bytes = hex::decode(encoded_hex).ok()?;
	let statement = <Statement as codec::Decode>::decode(&mut bytes.as_slice()).ok()?;
	let seq = u64::from_le_bytes(statement.data()?.get(..8)?.try_into().ok()?);
	usize::try_from(seq).ok()
}

async fn submit(
	client: HttpClient,
	signer: Signer,
	rate: f64,
	ledger: Arc<Mutex<Ledger>>,
	stop: Arc<AtomicBool>,
) -> Result<(), String> {
	let origin = Instant::now();
	let mut next: u64 = 0;
	let mut tick = tokio::time::interval(SUBMIT_TICK);
	tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
	while !stop.load(Ordering::Relaxed) {
		tick.tick().await;
		let due = (origin.elapsed().as_secs_f64() * rate) as u64;
		if due <= next {
			continue;
		}
		let seqs: Vec<u64> = (next..due).collect();
		let mut batch = BatchRequestBuilder::new();
		for seq in &seqs {
			batch
				.insert("statement_submit", rpc_params![signer.sign(*seq)])
				.map_err(|err| format!("cannot encode a submit: {err}"))?;
		}
		let at = Instant::now();
		ledger.lock().sent.extend(seqs.iter().map(|_| at));
		let answers = client
			.batch_request::<Value>(batch)
			.await
			.map_err(|err| format!("a submit batch to node 0 failed: {err}"))?;
		let took = at.elapsed();
		let mut ledger = ledger.lock();
		for (seq, answer) in seqs.iter().zip(answers) {
			let accepted = matches!(&answer, Ok(value) if value["status"] == "new");
			if !accepted && ledger.first_refusal.is_none() {
				let answer = answer.map_or_else(|err| err.to_string(), |value| value.to_string());
				ledger.first_refusal = Some(format!("statement {seq}: {answer}"));
			}
			ledger.accepted.push(accepted);
			ledger.submit_window.push(took);
		}
		next = due;
	}
	Ok(())
}

async fn ws(port: u16) -> Result<WsClient, String> {
	WsClientBuilder::default()
		.request_timeout(REQUEST_TIMEOUT)
		.max_response_size(u32::MAX)
		.max_buffer_capacity_per_subscription(SUBSCRIBER_BUFFER)
		.build(format!("ws://127.0.0.1:{port}"))
		.await
		.map_err(|err| format!("cannot open a WebSocket to port {port}: {err}"))
}

fn match_all() -> Value {
	json!({ "matchAll": [hex::encode(&soak_topic().0)] })
}

/// A legacy subscription to the soak topic, with the client that holds it.
async fn subscribe_legacy(port: u16) -> Result<(WsClient, Subscription<Value>), String> {
	let client = ws(port).await?;
	let subscription = client
		.subscribe::<Value, _>(
			"statement_subscribeStatement",
			rpc_params![match_all()],
			"statement_unsubscribeStatement",
		)
		.await
		.map_err(|err| format!("cannot subscribe on port {port}: {err}"))?;
	Ok((client, subscription))
}

/// The statements a legacy notification carries.
fn legacy_statements(event: &Value) -> impl Iterator<Item = &str> {
	let statements = event["data"]["statements"].as_array().map_or(&[][..], Vec::as_slice);
	statements.iter().filter_map(Value::as_str)
}

/// Read the delivery subscription until it fails or the task is aborted; the client lives
/// as long as the subscription.
async fn deliver(
	(_client, mut subscription): (WsClient, Subscription<Value>),
	ledger: Arc<Mutex<Ledger>>,
) -> Result<(), String> {
	loop {
		let event = match subscription.next().await {
			Some(Ok(event)) => event,
			Some(Err(err)) => return Err(format!("a delivery notification is unreadable: {err}")),
			None => {
				return Err(format!(
					"node 1 ended the delivery subscription: {:?}",
					subscription.close_reason()
				))
			}
		};
		let now = Instant::now();
		let mut ledger = ledger.lock();
		for seq in legacy_statements(&event).filter_map(sequence_of) {
			ledger.note_delivered(seq, now);
		}
	}
}

/// Open a subscription on each port in turn, legacy and spec-v2 alternately, read it for
/// `churn_hold`, and close it: by unsubscribing, or (every third) by dropping the connection.
async fn churn(plan: Plan, ports: Vec<u16>, tally: Arc<Tally>, stop: Arc<AtomicBool>) {
	let mut round: usize = 0;
	while !stop.load(Ordering::Relaxed) {
		let port = ports[round % ports.len()];
		let v2 = round % 2 == 1;
		let unsubscribe = round % 3 != 2;
		match churn_once(port, v2, unsubscribe, plan.churn_hold).await {
			Ok(events) => {
				tally.churned.fetch_add(1, Ordering::Relaxed);
				tally.churn_events.fetch_add(events, Ordering::Relaxed);
			}
			Err(err) => tally.fail(format!("churn on port {port} (v2 {v2}): {err}")),
		}
		round += 1;
		tokio::time::sleep(plan.churn_every).await;
	}
}

async fn churn_once(port: u16, v2: bool, unsubscribe: bool, hold: Duration) -> Result<u64, String> {
	let client = ws(port).await?;
	let (method, close) = if v2 {
		("statement_unstable_subscribe", "statement_unstable_unsubscribe")
	} else {
		("statement_subscribeStatement", "statement_unsubscribeStatement")
	};
	let params = if v2 { rpc_params![] } else { rpc_params![match_all()] };
	let mut subscription = client
		.subscribe::<Value, _>(method, params, close)
		.await
		.map_err(|err| format!("subscribe: {err}"))?;
	if v2 {
		let SubscriptionKind::Subscription(id) = subscription.kind() else {
			return Err("a spec-v2 subscription without an id".into());
		};
		let id = id.clone().into_owned();
		let filter: Value = client
			.request("statement_unstable_add_filter", rpc_params![id, match_all()])
			.await
			.map_err(|err| format!("add_filter: {err}"))?;
		if !filter.is_string() {
			return Err(format!("add_filter answered {filter}"));
		}
	}
	let mut events = 0;
	let until = tokio::time::Instant::now() + hold;
	loop {
		match tokio::time::timeout_at(until, subscription.next()).await {
			Err(_elapsed) => break,
			Ok(Some(Ok(_event))) => events += 1,
			Ok(Some(Err(err))) => return Err(format!("a notification is unreadable: {err}")),
			Ok(None) => {
				return Err(format!("ended by the node: {:?}", subscription.close_reason()))
			}
		}
	}
	if unsubscribe {
		subscription.unsubscribe().await.map_err(|err| format!("unsubscribe: {err}"))?;
	}
	drop(client);
	Ok(events)
}

/// Query the soak topic's statements on each port in turn.
async fn query(every: Duration, ports: Vec<u16>, tally: Arc<Tally>, stop: Arc<AtomicBool>) {
	let mut clients = Vec::new();
	for port in &ports {
		match HttpClientBuilder::default()
			.request_timeout(REQUEST_TIMEOUT)
			.max_response_size(u32::MAX)
			.build(format!("http://127.0.0.1:{port}"))
		{
			Ok(client) => clients.push((*port, client)),
			Err(err) => tally.fail(format!("an HTTP client for port {port}: {err}")),
		}
	}
	let mut round = 0;
	while !stop.load(Ordering::Relaxed) && !clients.is_empty() {
		let (port, client) = &clients[round % clients.len()];
		let topics = json!([hex::encode(&soak_topic().0)]);
		match client
			.request::<Vec<String>, _>("statement_broadcastsStatement", rpc_params![topics])
			.await
		{
			Ok(_) => {
				tally.queries.fetch_add(1, Ordering::Relaxed);
			}
			Err(err) => tally.fail(format!("a query on port {port}: {err}")),
		}
		round += 1;
		tokio::time::sleep(every).await;
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn a_signed_statement_gives_back_its_sequence_number() {
		let signer = Signer::new(Duration::from_secs(60)).unwrap();
		assert_eq!(sequence_of(&signer.sign(1 << 40)), Some(1 << 40));
		assert_eq!(sequence_of("0xzz"), None);
	}

	#[test]
	fn the_ledger_counts_what_was_admitted_and_not_delivered() {
		let mut ledger = Ledger::default();
		let at = Instant::now();
		ledger.sent = vec![at; 3];
		ledger.accepted = vec![true, false, true];
		ledger.note_delivered(2, at + Duration::from_millis(5));
		ledger.note_delivered(2, at + Duration::from_millis(9));
		assert_eq!(ledger.counts(), (3, 2, 1));
		let (_, delivery) = ledger.take_window();
		assert_eq!(delivery, [Duration::from_millis(5)], "a repeat is not a second delivery");
		assert!(ledger.take_window().1.is_empty());
	}
}

//! The load: statements signed before the clock starts, each carrying its sequence number,
//! submitted at a fixed rate to one node over HTTP JSON-RPC, while a WebSocket subscriber on
//! another node notes when each arrives.
//!
//! No clock travels in the statements: the harness notes the instant each submit request is
//! sent and the instant the subscriber reads each notification, both on this process's
//! monotonic clock, and the sequence number in the data pairs them. A statement's latency is
//! therefore from the moment its submit left the client to the moment its notification was
//! read from the last node, submit handling on the first node included.

use jsonrpsee::{
	core::{
		client::{ClientT, Subscription, SubscriptionClientT},
		params::BatchRequestBuilder,
	},
	http_client::{HttpClient, HttpClientBuilder},
	rpc_params,
	ws_client::{WsClient, WsClientBuilder},
};
use serde_json::{json, Value};
use sp_core::{sr25519, Pair};
use statement_primitives::{
	dev::{self, DEV_ACCOUNTS},
	testing::TestStatement,
	Statement, Topic,
};
use statement_store_benches::{fixture::topic, latency::Latency, workload::on_every_core};
use statement_test_support::hex;
use std::{
	sync::{
		atomic::{AtomicUsize, Ordering},
		Arc,
	},
	time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};
use tokio::{sync::Notify, task::JoinHandle};

/// Statements each dev account may keep; past it the lowest-priority ones are evicted.
const DEV_ALLOWANCE: usize = 100_000;

/// Bytes of data per statement; the sequence number is the first four.
const DATA_BYTES: usize = 256;

/// Most submits per HTTP request (one JSON-RPC batch).
const BATCH: usize = 250;

/// HTTP connections submitting at once.
const SUBMITTERS: usize = 2;

/// How long one request may take; only a stuck node reaches it.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// Notifications the WebSocket client may buffer before it gives up on the subscription.
const SUBSCRIBER_BUFFER: usize = 1 << 16;

/// The bench's `k`th topic; the subscribers match the first.
pub fn bench_topic(k: usize) -> Topic {
	topic(0x0b0b_0001 + k as u32)
}

/// Statements signed once, `0x`-hex encoded, the `seq`-th carrying `seq` and topic
/// `seq % topics`.
pub struct Pool {
	signed: Arc<Vec<String>>,
	topics: usize,
}

impl Pool {
	/// Sign `count` statements on the first topic.
	pub fn sign(count: usize) -> Result<Pool, String> {
		Pool::sign_on(count, 1)
	}

	/// Sign `count` statements spread over `topics` topics, on every core.
	pub fn sign_on(count: usize, topics: usize) -> Result<Pool, String> {
		let topics = topics.max(1);
		if count.div_ceil(DEV_ACCOUNTS.len()) > DEV_ALLOWANCE {
			return Err(format!(
				"{count} statements exceed the dev accounts' allowances ({} x {DEV_ALLOWANCE}); \
				 the node would evict some",
				DEV_ACCOUNTS.len()
			));
		}
		let pairs = DEV_ACCOUNTS
			.iter()
			.map(|name| sr25519::Pair::from_string(&dev::suri(name), None))
			.collect::<Result<Vec<_>, _>>()
			.map_err(|err| format!("cannot derive a dev account: {err:?}"))?;
		let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
		let expiry = u32::try_from(now + 24 * 3600).unwrap_or(u32::MAX);
		let count = u32::try_from(count).map_err(|_| format!("{count} statements: too many"))?;
		let signed = on_every_core(0, count, |seq| {
			let pair = &pairs[seq as usize % pairs.len()];
			signed_statement(seq, expiry, pair, bench_topic(seq as usize % topics))
		});
		Ok(Pool { signed: Arc::new(signed), topics })
	}

	/// Topics the pool's statements are spread over.
	pub fn topics(&self) -> usize {
		self.topics
	}

	/// Statements in the pool.
	pub fn len(&self) -> usize {
		self.signed.len()
	}

	/// Statements `from..to` as a pool of their own (their data keeps their numbers).
	pub fn range(&self, from: usize, to: usize) -> Pool {
		let to = to.min(self.len());
		let signed = self.signed[from.min(to)..to].to_vec();
		Pool { signed: Arc::new(signed), topics: self.topics }
	}

	/// The topic statement `seq` carries.
	pub fn topic_of(&self, seq: usize) -> Topic {
		bench_topic(seq % self.topics)
	}

	/// Statements `0..count` on topic `k`, and their encoded bytes.
	pub fn on_topic(&self, k: usize, count: usize) -> (usize, usize) {
		let mine = (0..count.min(self.len())).filter(|seq| seq % self.topics == k);
		mine.fold((0, 0), |(n, bytes), seq| (n + 1, bytes + (self.signed[seq].len() - 2) / 2))
	}
}

/// Statement `seq` as `0x`-hex: the topic, `seq` in the data and as the expiry's sequence
/// (so each account's statements have distinct priorities).
fn signed_statement(seq: u32, expiry: u32, pair: &sr25519::Pair, topic: Topic) -> String {
	let mut data = vec![0u8; DATA_BYTES];
	data[..4].copy_from_slice(&seq.to_le_bytes());
	let statement =
		TestStatement::new().expiry(expiry, seq).topic(0, topic).data(data).signed_sr25519(pair);
	hex::encode(&statement.encode())
}

/// The sequence numbers of the statements the node at `port` stores, read page by page with
/// `statement_dumpPage` (an unsafe method, served on loopback).
pub async fn stored_sequences(port: u16) -> Result<Vec<usize>, String> {
	let client = HttpClientBuilder::default()
		.request_timeout(REQUEST_TIMEOUT)
		.max_response_size(u32::MAX)
		.build(format!("http://127.0.0.1:{port}"))
		.map_err(|err| format!("cannot build an HTTP client: {err}"))?;
	let mut stored = Vec::new();
	let mut cursor = Value::Null;
	loop {
		let page: Value = client
			.request("statement_dumpPage", rpc_params![&cursor])
			.await
			.map_err(|err| format!("statement_dumpPage on port {port}: {err}"))?;
		let statements = page["statements"].as_array().map_or(&[][..], Vec::as_slice);
		stored.extend(statements.iter().filter_map(|hex| sequence_of(hex.as_str()?)));
		cursor = page["next"].clone();
		if cursor.is_null() {
			return Ok(stored);
		}
	}
}

/// The sequence number a received statement carries, if it is one of ours.
fn sequence_of(encoded_hex: &str) -> Option<usize> {
	let bytes = hex::decode(encoded_hex).ok()?;
	let statement = <Statement as codec::Decode>::decode(&mut bytes.as_slice()).ok()?;
	let data = statement.data()?;
	let seq = u32::from_le_bytes(data.get(..4)?.try_into().ok()?);
	Some(seq as usize)
}

/// What the submitters did.
pub struct Submissions {
	/// When the request carrying each statement was sent, by sequence number.
	pub at: Vec<Option<Instant>>,
	/// Whether the node answered `{"status":"new"}`, by sequence number.
	pub accepted: Vec<bool>,
	/// The first answer other than `new`.
	pub first_refusal: Option<String>,
	/// From the first request to the last answer.
	pub elapsed: Duration,
}

impl Submissions {
	/// Statements the node admitted.
	pub fn accepted_count(&self) -> usize {
		self.accepted.iter().filter(|accepted| **accepted).count()
	}

	/// Statements submitted a second, over the whole run.
	pub fn rate(&self) -> f64 {
		self.at.iter().flatten().count() as f64 / self.elapsed.as_secs_f64().max(1e-9)
	}
}

/// When statement `seq` is due: `origin + seq / rate`.
#[derive(Clone, Copy)]
struct Pace {
	origin: Instant,
	rate: f64,
}

impl Pace {
	fn due(&self, seq: u32) -> Instant {
		self.origin + Duration::from_secs_f64(f64::from(seq) / self.rate)
	}
}

/// One submitter's record: per statement, when it was sent and whether it was admitted.
struct Share {
	sent: Vec<(u32, Instant, bool)>,
	first_refusal: Option<String>,
}

/// Submit statements `0..count` of `pool` to the node at `port` over [`SUBMITTERS`]
/// connections, at `rate` a second in all (as fast as the node answers if `None`). Whatever is
/// due goes in one batch of at most [`BATCH`], so a submitter that falls behind catches up.
pub async fn submit(
	port: u16,
	pool: &Pool,
	count: usize,
	rate: Option<f64>,
) -> Result<Submissions, String> {
	let count = count.min(pool.len());
	let origin = Instant::now();
	let mut workers = Vec::new();
	for worker in 0..SUBMITTERS {
		let client = HttpClientBuilder::default()
			.request_timeout(REQUEST_TIMEOUT)
			.max_request_size(u32::MAX)
			.build(format!("http://127.0.0.1:{port}"))
			.map_err(|err| format!("cannot build an HTTP client: {err}"))?;
		let mine: Vec<u32> = (worker..count).step_by(SUBMITTERS).map(|seq| seq as u32).collect();
		let pace = rate.map(|rate| Pace { origin, rate });
		workers.push(tokio::spawn(submit_share(client, pool.signed.clone(), mine, pace)));
	}
	let mut submissions = Submissions {
		at: vec![None; count],
		accepted: vec![false; count],
		first_refusal: None,
		elapsed: Duration::ZERO,
	};
	for worker in workers {
		let share = worker.await.map_err(|err| format!("a submitter panicked: {err}"))??;
		for (seq, at, accepted) in share.sent {
			submissions.at[seq as usize] = Some(at);
			submissions.accepted[seq as usize] = accepted;
		}
		submissions.first_refusal = submissions.first_refusal.or(share.first_refusal);
	}
	submissions.elapsed = origin.elapsed();
	Ok(submissions)
}

async fn submit_share(
	client: HttpClient,
	pool: Arc<Vec<String>>,
	mine: Vec<u32>,
	pace: Option<Pace>,
) -> Result<Share, String> {
	let mut share = Share { sent: Vec::with_capacity(mine.len()), first_refusal: None };
	let mut next = 0;
	while next < mine.len() {
		let now = Instant::now();
		let end = match pace {
			Some(pace) => {
				let due = mine[next..].iter().take(BATCH).take_while(|seq| pace.due(**seq) <= now);
				next + due.count()
			}
			None => (next + BATCH).min(mine.len()),
		};
		if end == next {
			if let Some(pace) = pace {
				tokio::time::sleep_until(pace.due(mine[next]).into()).await;
			}
			continue;
		}
		let mut batch = BatchRequestBuilder::new();
		for seq in &mine[next..end] {
			batch
				.insert("statement_submit", rpc_params![pool[*seq as usize].as_str()])
				.map_err(|err| format!("cannot encode a submit: {err}"))?;
		}
		let at = Instant::now();
		let answers = client
			.batch_request::<Value>(batch)
			.await
			.map_err(|err| format!("a submit batch failed: {err}"))?;
		for (seq, answer) in mine[next..end].iter().zip(answers) {
			let accepted = matches!(&answer, Ok(value) if value["status"] == "new");
			if !accepted && share.first_refusal.is_none() {
				let answer = answer.map_or_else(|err| err.to_string(), |value| value.to_string());
				share.first_refusal = Some(format!("statement {seq}: {answer}"));
			}
			share.sent.push((*seq, at, accepted));
		}
		next = end;
	}
	Ok(share)
}

/// A WebSocket subscription to the bench topic on one node, read on a task of its own.
pub struct Subscriber {
	delivered: Arc<AtomicUsize>,
	stop: Arc<Notify>,
	task: JoinHandle<Received>,
}

/// What the subscriber read.
pub struct Received {
	/// When each statement's notification was read, by sequence number.
	pub at: Vec<Option<Instant>>,
	/// Why the subscription ended before it was closed, if it did.
	pub ended: Option<String>,
}

impl Subscriber {
	/// Subscribe (`statement_subscribeStatement` with `{"matchAll": [topic]}`) on the node at
	/// `port`, for statements with sequence numbers below `count`.
	pub async fn open(port: u16, count: usize) -> Result<Subscriber, String> {
		let filter = json!({ "matchAll": [hex::encode(&bench_topic(0).0)] });
		Subscriber::open_with(port, count, filter).await
	}

	/// [`Subscriber::open`] with another filter (`"any"`, `{"matchAny": [...]}` ...).
	pub async fn open_with(port: u16, count: usize, filter: Value) -> Result<Subscriber, String> {
		let client = WsClientBuilder::default()
			.request_timeout(REQUEST_TIMEOUT)
			.max_response_size(u32::MAX)
			.max_buffer_capacity_per_subscription(SUBSCRIBER_BUFFER)
			.build(format!("ws://127.0.0.1:{port}"))
			.await
			.map_err(|err| format!("cannot open a WebSocket to port {port}: {err}"))?;
		let subscription = client
			.subscribe::<Value, _>(
				"statement_subscribeStatement",
				rpc_params![filter],
				"statement_unsubscribeStatement",
			)
			.await
			.map_err(|err| format!("cannot subscribe on port {port}: {err}"))?;
		let delivered = Arc::new(AtomicUsize::new(0));
		let stop = Arc::new(Notify::new());
		let task =
			tokio::spawn(receive(client, subscription, count, delivered.clone(), stop.clone()));
		Ok(Subscriber { delivered, stop, task })
	}

	/// Distinct statements read so far.
	pub fn delivered(&self) -> usize {
		self.delivered.load(Ordering::Relaxed)
	}

	/// Whether the subscription has ended on its own.
	pub fn ended(&self) -> bool {
		self.task.is_finished()
	}

	/// Stop reading; what was read.
	pub async fn close(self) -> Result<Received, String> {
		self.stop.notify_one();
		self.task.await.map_err(|err| format!("the subscriber panicked: {err}"))
	}
}

async fn receive(
	client: WsClient,
	mut subscription: Subscription<Value>,
	count: usize,
	delivered: Arc<AtomicUsize>,
	stop: Arc<Notify>,
) -> Received {
	let mut at = vec![None; count];
	let ended = loop {
		let event = tokio::select! {
			_ = stop.notified() => break None,
			event = subscription.next() => event,
		};
		let event = match event {
			Some(Ok(event)) => event,
			Some(Err(err)) => break Some(format!("a notification could not be read: {err}")),
			None => {
				break Some(format!(
					"the node ended the subscription ({:?}; it drops subscribers 1 MiB behind)",
					subscription.close_reason()
				))
			}
		};
		let now = Instant::now();
		let statements = event["data"]["statements"].as_array().map_or(&[][..], Vec::as_slice);
		for seq in statements.iter().filter_map(|hex| sequence_of(hex.as_str()?)) {
			if let Some(slot @ None) = at.get_mut(seq) {
				*slot = Some(now);
				delivered.fetch_add(1, Ordering::Relaxed);
			}
		}
	};
	drop(client);
	Received { at, ended }
}

/// One load run, end to end.
pub struct Delivery {
	/// Statements submitted.
	pub submitted: usize,
	/// Statements the first node admitted.
	pub accepted: usize,
	/// The first answer other than `new`.
	pub first_refusal: Option<String>,
	/// Submits a second actually achieved.
	pub submit_rate: f64,
	/// Admitted statements every subscriber read.
	pub delivered: usize,
	/// From submit to the last subscriber's notification, over the delivered statements.
	pub latency: Option<Latency>,
	/// Why a subscription ended early, if one did.
	pub subscription_ended: Option<String>,
}

impl Delivery {
	/// Admitted statements some subscriber never read.
	pub fn lost(&self) -> usize {
		self.accepted - self.delivered
	}
}

/// Subscribe on every node of `to`, submit `count` statements to `from` at `rate`, then wait
/// up to `drain` after the last answer for every subscriber to read every admitted statement.
/// A statement's latency runs to the last subscriber that read it.
pub async fn deliver(
	from: u16,
	to: &[u16],
	pool: &Pool,
	count: usize,
	rate: f64,
	drain: Duration,
) -> Result<Delivery, String> {
	let mut subscribers = Vec::with_capacity(to.len());
	for port in to {
		subscribers.push(Subscriber::open(*port, count).await?);
	}
	let submissions = submit(from, pool, count, Some(rate)).await?;
	let accepted = submissions.accepted_count();
	let deadline = Instant::now() + drain;
	let behind = |subscribers: &[Subscriber]| {
		subscribers
			.iter()
			.any(|subscriber| subscriber.delivered() < accepted && !subscriber.ended())
	};
	while behind(&subscribers) && Instant::now() < deadline {
		tokio::time::sleep(Duration::from_millis(10)).await;
	}
	let mut received = Vec::with_capacity(subscribers.len());
	for subscriber in subscribers {
		received.push(subscriber.close().await?);
	}
	let latencies: Vec<Duration> = (0..submissions.at.len())
		.filter(|seq| submissions.accepted[*seq])
		.filter_map(|seq| {
			let last = received.iter().map(|read| read.at[seq]).collect::<Option<Vec<_>>>()?;
			let last = last.into_iter().max()?;
			Some(last.saturating_duration_since(submissions.at[seq]?))
		})
		.collect();
	Ok(Delivery {
		submitted: submissions.at.iter().flatten().count(),
		accepted,
		first_refusal: submissions.first_refusal.clone(),
		submit_rate: submissions.rate(),
		delivered: latencies.len(),
		latency: Latency::of(latencies),
		subscription_ended: received.into_iter().find_map(|read| read.ended),
	})
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn a_signed_statement_gives_back_its_sequence_number() {
		let pair = sr25519::Pair::from_string("//Alice", None).unwrap();
		let signed = signed_statement(4242, u32::MAX - 1, &pair, bench_topic(0));
		assert_eq!(sequence_of(&signed), Some(4242));
		assert_eq!(sequence_of("0xzz"), None);
	}
}

//! The node's phases: groups of connections over either transport, each connection with one
//! request outstanding at a time, submitting from a feed or repeating a query until the
//! window ends; for each group, the rate and latencies of the requests the window counts.
//!
//! A closed loop (each connection sends its next request when the last is answered) measures
//! the most the node answers. A paced group is an open loop: request `n` of the group is due
//! at `opened + n / rate` whichever connection takes it. When no connection was free at that
//! moment its latency runs from when it was due, not from when it left, so a node that falls
//! behind is charged for the wait (no coordinated omission); when one was free, from when it
//! left, so the timer's millisecond granularity is not charged to the node.

use crate::{
	data::Feed,
	window::{Timing, Window},
};
use jsonrpsee::{core::ClientError, rpc_params};
use serde::de::IgnoredAny;
use serde_json::json;
use statement_store_benches::{
	client::{Client, Transport},
	latency::Latency,
};
use std::{
	sync::{
		atomic::{AtomicU64, Ordering},
		Arc,
	},
	time::{Duration, Instant},
};

/// What each connection of a group does.
#[derive(Clone)]
pub enum Job {
	/// Submit statements from the feed, each as soon as the last is answered.
	Submit(Arc<Feed>),
	/// Submit statements from the feed at this many a second, all connections together.
	Paced(Arc<Feed>, f64),
	/// `statement_broadcasts` on these (`0x`-hex) topics; every answer must hold `expected`.
	Query {
		/// The topics.
		topics: Arc<Vec<String>>,
		/// Statements each answer holds.
		expected: usize,
	},
}

/// Connections doing the same job.
pub struct Group {
	/// Their transport.
	pub transport: Transport,
	/// How many.
	pub connections: usize,
	/// What each does.
	pub job: Job,
}

/// What a group did in the measured span.
pub struct Measured {
	/// Requests answered a second.
	pub rate: f64,
	/// Their latencies (paced: from when each was due if no connection was free then).
	pub latency: Option<Latency>,
	/// Paced only: from sending each request to its answer, the node's part of the latency.
	pub service: Option<Latency>,
	/// Answers other than success (`{"status":"new"}`, or the expected count).
	pub refused: u64,
	/// The first of them.
	pub first_refusal: Option<String>,
	/// Whether the feed ran out before the window ended (the rate is then a floor).
	pub ran_dry: bool,
}

/// One connection's record.
#[derive(Default)]
struct Tally {
	latencies: Vec<Duration>,
	service: Vec<Duration>,
	refused: u64,
	first_refusal: Option<String>,
	ran_dry: bool,
}

/// When each request of a paced group is due.
struct Pace {
	opened: Instant,
	rate: f64,
	issued: AtomicU64,
}

impl Pace {
	fn next_due(&self) -> Instant {
		let n = self.issued.fetch_add(1, Ordering::Relaxed);
		self.opened + Duration::from_secs_f64(n as f64 / self.rate)
	}
}

/// Run `groups` against the node at `port` for one window; their figures, in order.
pub async fn run(port: u16, groups: &[Group], timing: Timing) -> Result<Vec<Measured>, String> {
	// Every connection is open before the clock starts.
	let mut connected = Vec::new();
	for group in groups {
		let mut clients = Vec::with_capacity(group.connections);
		for _ in 0..group.connections {
			clients.push(Client::connect(group.transport, port).await?);
		}
		connected.push(clients);
	}
	let window = Window::open(timing);
	let mut running = Vec::new();
	for (group, clients) in groups.iter().zip(connected) {
		let pace = match group.job {
			Job::Paced(_, rate) => {
				Some(Arc::new(Pace { opened: window.opened, rate, issued: AtomicU64::new(0) }))
			}
			_ => None,
		};
		let tasks: Vec<_> = clients
			.into_iter()
			.map(|client| tokio::spawn(connection(client, group.job.clone(), pace.clone(), window)))
			.collect();
		running.push(tasks);
	}
	let mut measured = Vec::new();
	for tasks in running {
		let mut all = Tally::default();
		for task in tasks {
			let tally = task.await.map_err(|err| format!("a connection panicked: {err}"))??;
			all.latencies.extend(tally.latencies);
			all.service.extend(tally.service);
			all.refused += tally.refused;
			all.first_refusal = all.first_refusal.or(tally.first_refusal);
			all.ran_dry |= tally.ran_dry;
		}
		measured.push(Measured {
			rate: all.latencies.len() as f64 / window.seconds(),
			latency: Latency::of(all.latencies),
			service: Latency::of(all.service),
			refused: all.refused,
			first_refusal: all.first_refusal,
			ran_dry: all.ran_dry,
		});
	}
	Ok(measured)
}

/// One connection's loop until the window ends.
async fn connection(
	client: Client,
	job: Job,
	pace: Option<Arc<Pace>>,
	window: Window,
) -> Result<Tally, String> {
	let mut tally = Tally::default();
	loop {
		let free = Instant::now();
		let due = match &pace {
			Some(pace) => {
				let due = pace.next_due();
				if due < window.end {
					tokio::time::sleep_until(due.into()).await;
				}
				due
			}
			None => free,
		};
		if due >= window.end {
			break;
		}
		let sent = Instant::now();
		// Late because every connection was busy: the node's wait. Late on the timer: ours.
		let start = if due < free { due } else { sent };
		let refusal = match &job {
			Job::Submit(feed) | Job::Paced(feed, _) => {
				let Some(signed) = feed.take() else {
					tally.ran_dry = true;
					break;
				};
				submit(&client, &signed.hex).await?
			}
			Job::Query { topics, expected } => query(&client, topics, *expected).await?,
		};
		let answered = Instant::now();
		if let Some(refusal) = refusal {
			tally.refused += 1;
			tally.first_refusal.get_or_insert(refusal);
		} else if window.counts(due) {
			tally.latencies.push(answered - start);
			if pace.is_some() {
				tally.service.push(answered - sent);
			}
		}
	}
	Ok(tally)
}

/// Submit one statement: `None` if the node took it as new, else what it said instead.
async fn submit(client: &Client, hex: &str) -> Result<Option<String>, String> {
	match client.submit(hex).await {
		Ok(answer) if answer == json!({"status": "new"}) => Ok(None),
		Ok(answer) => Ok(Some(answer.to_string())),
		Err(err) => refused_or_failed(err),
	}
}

/// One query: `None` if it returned `expected` statements, else what it returned.
async fn query(
	client: &Client,
	topics: &[String],
	expected: usize,
) -> Result<Option<String>, String> {
	// The items are only counted: parsing them would spend the cores the node runs on.
	match client.request::<Vec<IgnoredAny>>("statement_broadcasts", rpc_params![topics]).await {
		Ok(items) if items.len() == expected => Ok(None),
		Ok(items) => Ok(Some(format!("{} statements, {expected} expected", items.len()))),
		Err(err) => refused_or_failed(err),
	}
}

/// An error object is an answer (a refusal); anything else means the harness cannot go on.
fn refused_or_failed(err: ClientError) -> Result<Option<String>, String> {
	match err {
		ClientError::Call(object) => Ok(Some(format!("{} {}", object.code(), object.message()))),
		other => Err(format!("a request failed: {other}")),
	}
}

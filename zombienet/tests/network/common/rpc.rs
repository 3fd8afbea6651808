//! A node's JSON-RPC as these tests use it: raw requests over zombienet's WebSocket client
//! (never `wait_client`, whose runtime metadata this node cannot serve).

use super::{eventually, fingerprint, Check, Statement};
use anyhow::{anyhow, bail, Context, Result};
use serde_json::{json, Value};
use std::{
	collections::BTreeSet,
	time::{Duration, Instant},
};
use zombienet_sdk::{
	subxt::ext::subxt_rpcs::client::{rpc_params, RpcClient, RpcSubscription},
	NetworkNode,
};

/// Statements per `statement_dumpPage` call (the most the node gives).
const DUMP_PAGE: usize = 1000;

/// A set of encoded statements, as `0x`-hex.
pub type Encoded = BTreeSet<String>;

/// The encodings of `statements`.
pub fn encoded<'a>(statements: impl IntoIterator<Item = &'a Statement>) -> Encoded {
	statements.into_iter().map(|statement| statement.hex.clone()).collect()
}

/// One WebSocket connection to one node.
pub struct Client {
	name: String,
	rpc: RpcClient,
}

impl Client {
	/// Connect to `node`.
	pub async fn connect(node: &NetworkNode) -> Result<Self> {
		let rpc = node.rpc().await.with_context(|| format!("cannot connect to {}", node.name()))?;
		Ok(Client { name: node.name().into(), rpc })
	}

	/// The node's name.
	pub fn name(&self) -> &str {
		&self.name
	}

	/// `statement_submit`: the `SubmitResult` JSON, e.g. `{"status": "new"}` or
	/// `{"status": "rejected", "reason": "accountFull", ..}`.
	pub async fn submit(&self, statement: &Statement) -> Result<Value> {
		self.rpc
			.request("statement_submit", rpc_params![&statement.hex])
			.await
			.with_context(|| format!("statement_submit {} to {}", statement.hash, self.name))
	}

	/// Submit `statement` and require the node to store it as new.
	pub async fn submit_new(&self, statement: &Statement) -> Result<()> {
		let result = self.submit(statement).await?;
		if result != json!({"status": "new"}) {
			bail!("{} answered {result} to {}, not new", self.name, statement.hash);
		}
		Ok(())
	}

	/// Submit every statement at once (one request each, all in flight together), and
	/// require every one to be stored as new.
	pub async fn submit_all_new(&self, statements: &[Statement]) -> Result<()> {
		futures::future::try_join_all(
			statements.iter().map(|statement| self.submit_new(statement)),
		)
		.await?;
		Ok(())
	}

	/// `statement_subscribeStatement` with a topic filter: `"any"`, `{"matchAll": [..]}` or
	/// `{"matchAny": [..]}`.
	pub async fn subscribe(&self, filter: Value) -> Result<Subscription> {
		let inner = self
			.rpc
			.subscribe(
				"statement_subscribeStatement",
				rpc_params![filter],
				"statement_unsubscribeStatement",
			)
			.await
			.with_context(|| format!("cannot subscribe on {}", self.name))?;
		Ok(Subscription { name: self.name.clone(), inner })
	}

	/// `statement_broadcastsStatement`: the stored statements without a decryption key that
	/// carry every topic in `topics`.
	pub async fn broadcasts(&self, topics: &[String]) -> Result<Encoded> {
		let statements: Vec<String> = self
			.rpc
			.request("statement_broadcastsStatement", rpc_params![topics])
			.await
			.with_context(|| format!("statement_broadcastsStatement on {}", self.name))?;
		Ok(statements.into_iter().collect())
	}

	/// Every statement the node stores, paged through `statement_dumpPage`.
	pub async fn dump(&self) -> Result<Encoded> {
		let mut stored = Encoded::new();
		let mut cursor = Value::Null;
		loop {
			let page: Value = self
				.rpc
				.request("statement_dumpPage", rpc_params![&cursor, DUMP_PAGE])
				.await
				.with_context(|| format!("statement_dumpPage on {}", self.name))?;
			let statements = page["statements"]
				.as_array()
				.ok_or_else(|| anyhow!("{}: dump page without statements: {page}", self.name))?;
			for statement in statements {
				let text = statement.as_str().ok_or_else(|| anyhow!("{statement} is not hex"))?;
				stored.insert(text.to_string());
			}
			cursor = page["next"].clone();
			if cursor.is_null() {
				return Ok(stored);
			}
		}
	}

	/// Wait until the node stores exactly `expected`.
	pub async fn wait_for_store(&self, expected: &Encoded, within: Duration) -> Result<()> {
		wait_until_all_store(std::slice::from_ref(self), expected, within).await
	}

	/// `system_health`'s `peers`.
	pub async fn health_peers(&self) -> Result<u64> {
		let health: Value = self.rpc.request("system_health", rpc_params![]).await?;
		health["peers"].as_u64().ok_or_else(|| anyhow!("{}: system_health {health}", self.name))
	}

	/// `chain_getBlockHash(0)`: the genesis hash, as `0x`-hex; it names the network protocols.
	pub async fn genesis_hash(&self) -> Result<String> {
		Ok(self.rpc.request("chain_getBlockHash", rpc_params![0]).await?)
	}

	/// `system_localPeerId`.
	pub async fn local_peer_id(&self) -> Result<String> {
		Ok(self.rpc.request("system_localPeerId", rpc_params![]).await?)
	}
}

/// Wait until every one of `clients`' nodes stores exactly `expected`, all by one deadline.
pub async fn wait_until_all_store(
	clients: &[Client],
	expected: &Encoded,
	within: Duration,
) -> Result<()> {
	let what = format!("every node stores exactly the {} expected statements", expected.len());
	eventually(&what, within, || async {
		for client in clients {
			let stored = client.dump().await?;
			if &stored != expected {
				return Ok(Check::Unmet(format!("{}: {}", client.name, diff(&stored, expected))));
			}
		}
		Ok(Check::Met(()))
	})
	.await
}

/// What a node holds compared to what it should: counts and a few of each difference.
pub fn diff(seen: &Encoded, expected: &Encoded) -> String {
	let sample = |set: Vec<&String>| {
		set.iter().take(3).map(|hex| fingerprint(hex)).collect::<Vec<_>>().join(", ")
	};
	let missing: Vec<_> = expected.difference(seen).collect();
	let extra: Vec<_> = seen.difference(expected).collect();
	format!(
		"{} of {} expected; {} missing [{}]; {} unexpected [{}]",
		seen.len() - extra.len(),
		expected.len(),
		missing.len(),
		sample(missing),
		extra.len(),
		sample(extra),
	)
}

/// A live `statement_subscribeStatement`.
pub struct Subscription {
	name: String,
	inner: RpcSubscription<Value>,
}

impl Subscription {
	/// The statements of the next notification, or `None` if none came by `deadline`.
	async fn next_batch(&mut self, deadline: Instant) -> Result<Option<Vec<String>>> {
		let Ok(next) = tokio::time::timeout_at(deadline.into(), self.inner.next()).await else {
			return Ok(None);
		};
		let event = next
			.ok_or_else(|| anyhow!("{}: the subscription ended", self.name))?
			.with_context(|| format!("{}: subscription error", self.name))?;
		let statements = event["data"]["statements"]
			.as_array()
			.filter(|_| event["event"] == "newStatements")
			.ok_or_else(|| anyhow!("{}: unexpected notification {event}", self.name))?;
		statements
			.iter()
			.map(|statement| {
				statement
					.as_str()
					.map(String::from)
					.ok_or_else(|| anyhow!("{statement} is not hex"))
			})
			.collect::<Result<_>>()
			.map(Some)
	}

	/// Receive notifications until exactly `expected` has been delivered, each once, within
	/// `within`; anything else delivered fails at once.
	pub async fn expect_exactly(&mut self, expected: &Encoded, within: Duration) -> Result<()> {
		let deadline = Instant::now() + within;
		let mut delivered = Encoded::new();
		while &delivered != expected {
			let Some(batch) = self.next_batch(deadline).await? else {
				bail!(
					"{}'s subscription within {within:?}: {}",
					self.name,
					diff(&delivered, expected)
				);
			};
			for statement in batch {
				if !expected.contains(&statement) || !delivered.insert(statement.clone()) {
					bail!(
						"{}'s subscription delivered {} unexpectedly or twice",
						self.name,
						fingerprint(&statement)
					);
				}
			}
		}
		Ok(())
	}

	/// Require no statement to be delivered for `quiet`.
	pub async fn expect_silence(&mut self, quiet: Duration) -> Result<()> {
		let deadline = Instant::now() + quiet;
		while let Some(batch) = self.next_batch(deadline).await? {
			if let Some(statement) = batch.first() {
				bail!(
					"{}'s subscription delivered {} more statement(s) within {quiet:?}, e.g. {}",
					self.name,
					batch.len(),
					fingerprint(statement)
				);
			}
		}
		Ok(())
	}
}

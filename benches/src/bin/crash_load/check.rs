//! After a restart, read every client's statements back by topic, block by block, and hold
//! them against the ledgers: everything acknowledged (or kept before) is there, nothing that
//! was never acknowledged or in flight is, and the blocks sent to in the last round come back
//! byte for byte (their hashes match the ones signed).

use crate::ledger::{block_topic, client_topic, parse_data, Fate, Ledger, BLOCK};
use codec::Decode;
use jsonrpsee::{core::client::ClientT, http_client::HttpClient, rpc_params};
use serde_json::Value;
use statement_primitives::{Statement, Topic};
use std::{collections::HashSet, ops::Range};

/// What one check found.
#[derive(Debug, Default)]
pub struct Tally {
	/// Statements that must be present and are.
	pub present: u64,
	/// In flight at the kill, present now.
	pub kept: u64,
	/// In flight at the kill, absent now.
	pub dropped: u64,
	/// Must be present, absent: `(client, index)`.
	pub lost: Vec<(u32, u32)>,
	/// Present though never acknowledged nor in flight (or dropped before, or not ours).
	pub phantom: Vec<String>,
	/// Present with a hash other than the one signed.
	pub altered: Vec<(u32, u32)>,
	/// Statements compared by hash.
	pub hashed: u64,
}

fn topics(client: u32, block: u32) -> Value {
	let hex = |topic: Topic| Value::String(format!("0x{}", hex::encode(topic.0)));
	Value::Array(vec![hex(client_topic(client)), hex(block_topic(block))])
}

fn unhex(text: &str) -> Result<Vec<u8>, String> {
	hex::decode(text.trim_start_matches("0x")).map_err(|err| format!("{text:?} is not hex: {err}"))
}

/// Check every ledger against the node; `fresh[c]` are the indices client `c` sent in the round
/// just ended, whose blocks are compared by hash. In-flight statements become kept or dropped.
pub async fn check(
	http: &HttpClient,
	ledgers: &mut [Ledger],
	fresh: &[Range<u32>],
) -> Result<Tally, String> {
	let mut tally = Tally::default();
	for (ledger, fresh) in ledgers.iter_mut().zip(fresh) {
		let fresh_blocks = fresh.start / BLOCK..fresh.end.div_ceil(BLOCK);
		for block in ledger.blocks_sent() {
			let by_hash = fresh_blocks.contains(&block);
			let found = read_block(http, ledger.client, block, by_hash).await?;
			tally_block(ledger, block, found, &mut tally);
		}
	}
	Ok(tally)
}

/// What a block query returned: each statement's data, and its hash if whole statements were
/// asked for.
struct Found {
	data: Vec<u8>,
	hash: Option<[u8; 32]>,
}

async fn read_block(
	http: &HttpClient,
	client: u32,
	block: u32,
	by_hash: bool,
) -> Result<Vec<Found>, String> {
	let method = if by_hash { "statement_broadcastsStatement" } else { "statement_broadcasts" };
	let items: Vec<String> = http
		.request(method, rpc_params![topics(client, block)])
		.await
		.map_err(|err| format!("{method} for client {client} block {block} failed: {err}"))?;
	let mut found = Vec::with_capacity(items.len());
	for item in items {
		let bytes = unhex(&item)?;
		if !by_hash {
			found.push(Found { data: bytes, hash: None });
			continue;
		}
		let statement = Statement::decode(&mut &bytes[..])
			.map_err(|err| format!("{method} returned a statement that does not decode: {err}"))?;
		let data = statement.data().map(<[u8]>::to_vec).unwrap_or_default();
		found.push(Found { data, hash: Some(statement.hash()) });
	}
	Ok(found)
}

fn tally_block(ledger: &mut Ledger, block: u32, found: Vec<Found>, tally: &mut Tally) {
	let client = ledger.client;
	let sent = ledger.sent();
	let mut present = HashSet::new();
	for item in found {
		let Some((owner, index)) = parse_data(&item.data) else {
			tally
				.phantom
				.push(format!("client {client} block {block}: foreign data {:?}", item.data));
			continue;
		};
		if owner != client || index / BLOCK != block || index >= sent {
			tally
				.phantom
				.push(format!("client {client} block {block}: ({owner}, {index}) never sent"));
			continue;
		}
		if !present.insert(index) {
			tally.phantom.push(format!("client {client}: statement {index} returned twice"));
			continue;
		}
		if let Some(hash) = item.hash {
			tally.hashed += 1;
			if ledger.hashes[index as usize] != hash {
				tally.altered.push((client, index));
			}
		}
	}
	for index in block * BLOCK..((block + 1) * BLOCK).min(sent) {
		let fate = &mut ledger.fates[index as usize];
		match (*fate, present.contains(&index)) {
			(Fate::Acknowledged | Fate::Kept, true) => tally.present += 1,
			(Fate::Acknowledged | Fate::Kept, false) => tally.lost.push((client, index)),
			(Fate::InFlight, true) => {
				*fate = Fate::Kept;
				tally.kept += 1;
				tally.present += 1;
			}
			(Fate::InFlight, false) => {
				*fate = Fate::Dropped;
				tally.dropped += 1;
			}
			(Fate::Unsent | Fate::Refused | Fate::Dropped, true) => {
				tally.phantom.push(format!("client {client}: statement {index} was {fate:?}"))
			}
			(Fate::Unsent | Fate::Refused | Fate::Dropped, false) => {}
		}
	}
}

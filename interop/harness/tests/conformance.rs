//! The same operations, drawn at random, on the reference store (`sc-statement-store` 33) and
//! on ours behind the adapter, through the reference's trait: every answer must be the same
//! (query results compared as sets, since neither store promises an order). Accounts are
//! allowed 3 statements and 600 bytes, so evictions, channel replacement and refusals are
//! drawn often; a failure names every operation drawn up to it.

use codec::Encode;
use sc_keystore::LocalKeystore;
use sp_core::{crypto::KeyTypeId, ed25519, sr25519, Pair};
use sp_keystore::Keystore;
use sp_statement_store::{
	Hash, Statement, StatementAllowance, StatementSource, StatementStore, Topic,
};
use statement_interop::chain::{Client, TokioSpawner};
use std::{
	sync::Arc,
	time::{SystemTime, UNIX_EPOCH},
};

const STATEMENT: KeyTypeId = KeyTypeId(*b"stmt");
const ALLOWANCE: StatementAllowance = StatementAllowance { max_count: 3, max_size: 600 };
const SEEDS: u64 = 48;
const OPERATIONS: usize = 80;

/// xorshift64: the same draws for the same seed.
struct Draw(u64);

impl Draw {
	fn next(&mut self) -> u64 {
		let mut x = self.0;
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		self.0 = x;
		x
	}

	fn below(&mut self, n: u64) -> u64 {
		self.next() % n.max(1)
	}
}

struct World {
	accounts: Vec<sr25519::Pair>,
	topics: Vec<Topic>,
	/// A statement key the keystore holds, and one it does not.
	held: ed25519::Pair,
	stranger: [u8; 32],
	now: u32,
}

impl World {
	fn statement(&self, draw: &mut Draw) -> (Statement, String) {
		let account = draw.below(self.accounts.len() as u64) as usize;
		let mut statement = Statement::new();
		let sequence = draw.below(12) as u32;
		statement.set_expiry_from_parts(self.now + 3600, sequence);
		let mut topics = Vec::new();
		for (index, topic) in self.topics.iter().enumerate() {
			if draw.below(2) == 0 {
				statement.set_topic(topics.len(), *topic);
				topics.push(index);
			}
		}
		let channel = match draw.below(3) {
			0 => None,
			n => Some([n as u8; 32]),
		};
		if let Some(channel) = channel {
			statement.set_channel(channel);
		}
		let len = draw.below(220) as usize;
		let key = match draw.below(4) {
			0 => Some(self.held.public().0),
			1 => Some(self.stranger),
			_ => None,
		};
		let data = vec![draw.below(256) as u8; len];
		match key {
			Some(key) if key == self.held.public().0 && len > 0 => {
				statement.set_decryption_key(key);
				let sealed =
					statement_primitives::ecies::encrypt_ed25519(&self.held.public(), &data)
						.expect("small data encrypts");
				statement.set_plain_data(sealed);
			}
			Some(key) => {
				statement.set_decryption_key(key);
				if len > 0 {
					statement.set_plain_data(data);
				}
			}
			None if len > 0 => statement.set_plain_data(data),
			None => {}
		}
		statement.sign_sr25519_private(&self.accounts[account]);
		let len = statement.data().map_or(0, Vec::len);
		let name = format!(
			"statement(account {account}, seq {sequence}, topics {topics:?}, channel {:?}, key {}, {len} bytes of data)",
			channel.map(|c| c[0]),
			match key {
				Some(k) if k == self.held.public().0 => "held",
				Some(_) => "stranger",
				None => "none",
			}
		);
		(statement, name)
	}

	fn topics(&self, draw: &mut Draw) -> Vec<Topic> {
		let count = draw.below(4) as usize;
		(0..count).map(|_| self.topics[draw.below(self.topics.len() as u64) as usize]).collect()
	}
}

fn sorted(mut values: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
	values.sort();
	values
}

fn open(dir: &std::path::Path, keystore: Arc<LocalKeystore>) -> [Arc<dyn StatementStore>; 2] {
	let client = Arc::new(Client::with_allowance([9; 32], ALLOWANCE));
	let spawner = || Box::new(TokioSpawner(tokio::runtime::Handle::current()));
	let reference = sc_statement_store::Store::new_shared(
		&dir.join("reference"),
		Default::default(),
		client.clone(),
		keystore.clone(),
		None,
		spawner(),
	)
	.expect("the reference store opens");
	let ours = statement_store_sp_adapter::new_shared(
		&dir.join("ours"),
		Default::default(),
		client,
		keystore,
		None,
		spawner(),
	)
	.expect("our store opens");
	[reference, ours]
}

/// One operation on both stores; the answers as text, to compare and to show.
fn operate(
	draw: &mut Draw,
	world: &World,
	stores: &[Arc<dyn StatementStore>; 2],
	known: &mut Vec<(Hash, Statement)>,
) -> (String, [String; 2]) {
	let both = |f: &dyn Fn(&dyn StatementStore) -> String| [f(&*stores[0]), f(&*stores[1])];
	let any_known = |draw: &mut Draw| -> Option<(Hash, Statement)> {
		(!known.is_empty()).then(|| known[draw.below(known.len() as u64) as usize].clone())
	};
	match draw.below(20) {
		17 => (
			"take_recent_statements".into(),
			both(&|store| {
				let mut hashes: Vec<String> = store
					.take_recent_statements()
					.unwrap_or_default()
					.iter()
					.map(|(hash, _)| short(hash))
					.collect();
				hashes.sort();
				format!("{hashes:?}")
			}),
		),
		18 => (
			"statement_hashes".into(),
			both(&|store| {
				let mut hashes: Vec<String> =
					store.statement_hashes().iter().map(|hash| short(hash)).collect();
				hashes.sort();
				format!("{hashes:?}")
			}),
		),
		19 => {
			// Some known hashes (stored or not) in a drawn order, taken, skipped or aborted on
			// by a rule on the statement, as initial sync uses it.
			let mut hashes: Vec<Hash> = known.iter().map(|(hash, _)| *hash).collect();
			hashes.retain(|_| draw.below(2) == 0);
			let abort_at = draw.below(hashes.len() as u64 + 2) as usize;
			(
				format!(
					"statements_by_hashes of {} (abort at the {abort_at}th offered)",
					hashes.len()
				),
				both(&|store| {
					let mut offered = 0;
					let mut filter = |_: &Hash, encoding: &[u8], statement: &Statement| {
						offered += 1;
						if offered == abort_at {
							sp_statement_store::FilterDecision::Abort
						} else if encoding.len().is_multiple_of(2) || statement.topics().is_empty()
						{
							sp_statement_store::FilterDecision::Take
						} else {
							sp_statement_store::FilterDecision::Skip
						}
					};
					match store.statements_by_hashes(&hashes, &mut filter) {
						Ok((taken, processed)) => format!(
							"{:?} processed {processed}",
							taken.iter().map(|(hash, _)| short(hash)).collect::<Vec<_>>()
						),
						Err(err) => format!("{err:?}"),
					}
				}),
			)
		}
		14 => {
			let account = draw.below(world.accounts.len() as u64) as usize;
			let who = world.accounts[account].public().0;
			(
				format!("remove_by account {account}"),
				both(&|store| format!("{:?}", store.remove_by(who))),
			)
		}
		15 => {
			let (mut statement, name) = world.statement(draw);
			statement.set_expiry_from_parts(world.now - 10, 1);
			statement.sign_sr25519_private(&world.accounts[0]);
			(
				format!("submit an expired {name}"),
				both(&|store| {
					format!("{:?}", store.submit(statement.clone(), StatementSource::Local))
				}),
			)
		}
		16 => {
			let mut statement = Statement::new();
			statement.set_expiry_from_parts(world.now + 60, 1);
			statement.set_plain_data(vec![1, 2, 3]);
			(
				"submit an unsigned statement".into(),
				both(&|store| {
					format!("{:?}", store.submit(statement.clone(), StatementSource::Network))
				}),
			)
		}
		0..=4 => {
			let (statement, name) = world.statement(draw);
			let source =
				if draw.below(2) == 0 { StatementSource::Local } else { StatementSource::Network };
			known.push((statement.hash(), statement.clone()));
			(
				format!("submit {} {name} from {source:?}", short(&statement.hash())),
				both(&|store| format!("{:?}", store.submit(statement.clone(), source))),
			)
		}
		5 => match any_known(draw) {
			Some((hash, statement)) => {
				// A stored statement submitted again from a local source is where the two
				// differ on purpose: the reference runs it through admission again (a channel
				// statement is refused as ChannelPriorityTooLow against itself, any other is
				// counted a second time in its account's size), ours answers Known. Drawn from
				// the network instead, where both answer Known.
				let stored = stores[0].has_statement(&hash);
				let source = if draw.below(2) == 0 && !stored {
					StatementSource::Local
				} else {
					StatementSource::Network
				};
				(
					format!("submit again {} from {source:?}", short(&hash)),
					both(&|store| format!("{:?}", store.submit(statement.clone(), source))),
				)
			}
			None => ("nothing".into(), [String::new(), String::new()]),
		},
		6 => {
			let (mut statement, name) = world.statement(draw);
			let mut data = statement.data().cloned().unwrap_or_default();
			data.push(1);
			statement.set_plain_data(data);
			(
				format!("submit a badly signed {name}"),
				both(&|store| {
					format!("{:?}", store.submit(statement.clone(), StatementSource::Network))
				}),
			)
		}
		7 => match any_known(draw) {
			Some((hash, _)) => (
				format!("remove {}", short(&hash)),
				both(&|store| format!("{:?}", store.remove(&hash))),
			),
			None => ("nothing".into(), [String::new(), String::new()]),
		},
		8 => {
			let topics = world.topics(draw);
			(
				format!("broadcasts {topics:?}"),
				both(&|store| format!("{:?}", store.broadcasts(&topics).map(sorted))),
			)
		}
		9 => {
			let topics = world.topics(draw);
			(
				format!("broadcasts_stmt {topics:?}"),
				both(&|store| format!("{:?}", store.broadcasts_stmt(&topics).map(sorted))),
			)
		}
		10 => {
			let topics = world.topics(draw);
			let key = if draw.below(2) == 0 { world.held.public().0 } else { world.stranger };
			(
				format!("posted and posted_stmt {topics:?} to {}", short(&key)),
				both(&|store| {
					format!(
						"{:?} {:?}",
						store.posted(&topics, key).map(sorted),
						store.posted_stmt(&topics, key).map(sorted)
					)
				}),
			)
		}
		11 => {
			let topics = world.topics(draw);
			let key = world.held.public().0;
			(
				format!("posted_clear and posted_clear_stmt {topics:?}"),
				both(&|store| {
					format!(
						"{:?} {:?}",
						store.posted_clear(&topics, key).map(sorted),
						store.posted_clear_stmt(&topics, key).map(sorted)
					)
				}),
			)
		}
		12 => match any_known(draw) {
			Some((hash, _)) => (
				format!("statement and has_statement {}", short(&hash)),
				both(&|store| {
					format!(
						"{:?} {}",
						store.statement(&hash).map(|s| s.map(|s| s.encode())),
						store.has_statement(&hash)
					)
				}),
			),
			None => ("nothing".into(), [String::new(), String::new()]),
		},
		_ => (
			"statements (the dump)".into(),
			both(&|store| {
				let mut all: Vec<Hash> = store
					.statements()
					.map(|all| all.into_iter().map(|(hash, _)| hash).collect())
					.unwrap_or_default();
				all.sort();
				format!(
					"{} statements {:?}",
					all.len(),
					all.iter().map(|hash| short(hash)).collect::<Vec<_>>()
				)
			}),
		),
	}
}

/// A statement's short name in messages: its hash's first 4 bytes as hex.
fn short(hash: &[u8]) -> String {
	statement_test_support::hex::encode(&hash[..hash.len().min(4)])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reference_store_and_ours_answer_the_same_drawn_operations() {
	let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() as u32;
	let accounts: Vec<sr25519::Pair> = ["//Alice", "//Bob", "//Charlie"]
		.iter()
		.map(|suri| sr25519::Pair::from_string(suri, None).unwrap())
		.collect();
	let topics = (1..=3u8).map(|n| Topic([n; 32])).collect();
	let mut drawn = std::collections::BTreeMap::<String, usize>::new();
	for seed in 1..=SEEDS {
		let dir = tempfile::tempdir().unwrap();
		let keystore = Arc::new(LocalKeystore::in_memory());
		let held = ed25519::Pair::from_seed(&[seed as u8; 32]);
		keystore
			.ed25519_generate_new(STATEMENT, Some(&format!("0x{}", hex_all(&held.seed()))))
			.expect("the keystore takes the key");
		let world = World {
			accounts: accounts.clone(),
			topics: Vec::clone(&topics),
			held,
			stranger: [0xEE; 32],
			now,
		};
		let stores = open(dir.path(), keystore);
		let mut draw = Draw(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
		let mut known = Vec::new();
		let mut history = Vec::new();
		for _ in 0..OPERATIONS {
			let (name, [reference, ours]) = operate(&mut draw, &world, &stores, &mut known);
			*drawn.entry(name.split_whitespace().next().unwrap_or("").to_string()).or_default() +=
				1;
			history.push(format!("{name} -> {reference}"));
			assert_eq!(
				reference,
				ours,
				"seed {seed}: the stores differ on `{name}` (reference left, ours right); the operations drawn:\n{}",
				history.join("\n")
			);
			// What each holds must agree after every operation, or a difference that no answer
			// showed yet would surface later, far from its cause.
			let held: Vec<Vec<Hash>> = stores
				.iter()
				.map(|store| {
					let mut hashes: Vec<Hash> =
						store.statements().unwrap().into_iter().map(|(hash, _)| hash).collect();
					hashes.sort();
					hashes
				})
				.collect();
			assert_eq!(
				held[0].iter().map(|h| short(h)).collect::<Vec<_>>(),
				held[1].iter().map(|h| short(h)).collect::<Vec<_>>(),
				"seed {seed}: the stores hold different statements after `{name}` (reference left, ours right); the operations drawn:\n{}",
				history.join("\n")
			);
		}
	}
	eprintln!("operations drawn over {SEEDS} seeds: {drawn:?}");
}

fn hex_all(bytes: &[u8]) -> String {
	bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

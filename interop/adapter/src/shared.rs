//! [`new_shared`]: the constructor a polkadot-sdk node calls, shaped as the reference's.

use crate::{allowance::ClientAllowances, keystore::KeystoreDecryptor, store::SpStore};
use sc_client_api::StorageProvider;
use sc_keystore::LocalKeystore;
use sp_blockchain::HeaderBackend;
use sp_core::traits::SpawnNamed;
use sp_runtime::traits::Block as BlockT;
use std::{path::Path, sync::Arc, time::Duration};

/// How often expired statements are removed and bans purged.
pub const MAINTENANCE_PERIOD: Duration = Duration::from_secs(30);

/// The reference's `sc_statement_store::Config`, field for field, so that a node's existing
/// configuration carries over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
	/// Most statements kept.
	pub max_total_statements: usize,
	/// Most bytes of statements kept.
	pub max_total_size: usize,
	/// Seconds a removed or expired statement stays refused.
	pub purge_after_sec: u64,
	/// Accepted for the reference's gossip handler, which reads it; unused here.
	pub network_workers: usize,
	/// Accepted for the reference's gossip handler, which reads it; unused here.
	pub rate_limit: u32,
}

impl Default for Config {
	fn default() -> Self {
		Config {
			max_total_statements: statement_store::DEFAULT_MAX_TOTAL_STATEMENTS as usize,
			max_total_size: statement_store::DEFAULT_MAX_TOTAL_SIZE as usize,
			purge_after_sec: statement_store::DEFAULT_BAN_PERIOD.as_secs(),
			network_workers: 1,
			rate_limit: 50_000,
		}
	}
}

/// Open our store in `<path>/statements`, with allowances read through `client` at the best
/// block and `postedClear` decrypted with `keystore`, and spawn its maintenance on
/// `task_spawner`; the reference's `Store::new_shared`, argument for argument.
///
/// `prometheus` is accepted for the same shape; our store's metrics are read with
/// `statement_store::Store::metrics` and rendered by whoever serves them.
pub fn new_shared<Block, Client, BE>(
	path: &Path,
	config: Config,
	client: Arc<Client>,
	keystore: Arc<LocalKeystore>,
	prometheus: Option<&prometheus_endpoint::Registry>,
	task_spawner: Box<dyn SpawnNamed>,
) -> sp_statement_store::Result<Arc<SpStore>>
where
	Block: BlockT,
	BE: sc_client_api::Backend<Block> + 'static,
	Client: HeaderBackend<Block> + StorageProvider<Block, BE> + Send + Sync + 'static,
{
	let _ = prometheus;
	let mut ours = statement_store::Config::new(path.join("statements"));
	ours.max_total_statements = config.max_total_statements as u64;
	ours.max_total_size = config.max_total_size as u64;
	ours.ban_period = Duration::from_secs(config.purge_after_sec);
	ours.decryptor = Some(Arc::new(KeystoreDecryptor(keystore)));
	let allowances = Arc::new(ClientAllowances::<Block, Client, BE>::new(client));
	let store = statement_store::Store::open(ours, allowances)
		.map_err(|err| sp_statement_store::Error::Db(err.to_string()))?;
	let (stop, stopped) = std::sync::mpsc::channel::<()>();
	let maintained = store.clone();
	// On a blocking thread of the node's: it ends when the returned store (holding `stop`)
	// is dropped, so the database closes with it.
	task_spawner.spawn_blocking(
		"statement-store-maintenance",
		Some("statement-store"),
		Box::pin(async move {
			while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
				stopped.recv_timeout(MAINTENANCE_PERIOD)
			{
				if let Err(err) = maintained.maintain() {
					log::warn!(target: "statement-store", "maintenance failed: {err}");
				}
			}
		}),
	);
	Ok(Arc::new(SpStore::with_stop(Arc::new(store), stop)))
}

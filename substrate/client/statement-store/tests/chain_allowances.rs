//! Allowances read from chain state through sc-client-api's in-memory backend, holding real
//! storage at real blocks; and the genesis-map form the node uses.

use codec::Encode;
use sc_client_api::{backend::NewBlockState, in_mem, Backend, BlockImportOperation};
use sp_core::storage::{StateVersion, Storage};
use sp_runtime::{
	generic,
	traits::{BlakeTwo256, Hash as _, Header as _},
	OpaqueExtrinsic,
};
use statement_primitives::{statement_allowance_key, StatementAllowance};
use statement_store::{AllowanceAt, AllowanceProvider, ChainAllowances, MapAllowances};
use std::{collections::BTreeMap, sync::Arc};

type Header = generic::Header<u64, BlakeTwo256>;
type Block = generic::Block<Header, OpaqueExtrinsic>;

const ALICE: [u8; 32] = [0xa1; 32];
const BOB: [u8; 32] = [0xb0; 32];

fn import(
	backend: &in_mem::Backend<Block>,
	number: u64,
	parent: <BlakeTwo256 as sp_runtime::traits::Hash>::Output,
	pairs: &[([u8; 32], StatementAllowance)],
	state: NewBlockState,
) -> <BlakeTwo256 as sp_runtime::traits::Hash>::Output {
	let mut top = BTreeMap::new();
	top.insert(b":code".to_vec(), vec![0u8; 4]);
	for (account, allowance) in pairs {
		top.insert(statement_allowance_key(account), allowance.encode());
	}
	let mut op = backend.begin_operation().unwrap();
	let root = op
		.reset_storage(Storage { top, children_default: Default::default() }, StateVersion::V1)
		.unwrap();
	let header = Header::new(number, BlakeTwo256::hash(&[]), root, parent, Default::default());
	let hash = header.hash();
	op.set_block_data(header, Some(vec![]), None, None, state, true).unwrap();
	backend.commit_operation(op).unwrap();
	hash
}

#[test]
fn allowances_come_from_the_chosen_block_and_missing_ones_are_none() {
	let backend = Arc::new(in_mem::Backend::<Block>::new());
	let genesis = import(
		&backend,
		0,
		Default::default(),
		&[(ALICE, StatementAllowance::new(5, 500))],
		NewBlockState::Final,
	);
	import(
		&backend,
		1,
		genesis,
		&[(ALICE, StatementAllowance::new(7, 700)), (BOB, StatementAllowance::new(1, 10))],
		NewBlockState::Best,
	);

	let best = ChainAllowances::<Block, _>::new(backend.clone(), AllowanceAt::Best);
	let finalized = ChainAllowances::<Block, _>::new(backend.clone(), AllowanceAt::Finalized);
	assert_eq!(best.allowance(&ALICE).unwrap(), Some(StatementAllowance::new(7, 700)));
	assert_eq!(best.allowance(&BOB).unwrap(), Some(StatementAllowance::new(1, 10)));
	assert_eq!(finalized.allowance(&ALICE).unwrap(), Some(StatementAllowance::new(5, 500)));
	assert_eq!(finalized.allowance(&BOB).unwrap(), None);
	assert_eq!(best.allowance(&[0; 32]).unwrap(), None);
}

#[test]
fn a_malformed_allowance_value_is_an_error_not_a_zero() {
	let backend = Arc::new(in_mem::Backend::<Block>::new());
	let mut op = backend.begin_operation().unwrap();
	let mut top = BTreeMap::new();
	top.insert(statement_allowance_key(&ALICE), vec![1, 2, 3]);
	let root = op
		.reset_storage(Storage { top, children_default: Default::default() }, StateVersion::V1)
		.unwrap();
	let header =
		Header::new(0, BlakeTwo256::hash(&[]), root, Default::default(), Default::default());
	op.set_block_data(header, Some(vec![]), None, None, NewBlockState::Final, true).unwrap();
	backend.commit_operation(op).unwrap();
	let provider = ChainAllowances::<Block, _>::new(backend, AllowanceAt::Best);
	assert!(provider.allowance(&ALICE).is_err());
}

#[test]
fn genesis_storage_pairs_become_a_map_of_allowances() {
	let key = statement_allowance_key(&ALICE);
	let value = StatementAllowance::new(3, 30).encode();
	let other = (b":code".to_vec(), vec![1]);
	let map = MapAllowances::from_storage([
		(key.as_slice(), value.as_slice()),
		(other.0.as_slice(), other.1.as_slice()),
	])
	.unwrap();
	assert_eq!(map.allowance(&ALICE).unwrap(), Some(StatementAllowance::new(3, 30)));
	assert_eq!(map.allowance(&BOB).unwrap(), None);
	let short_key = [b":statement_allowance:".as_slice(), &[1, 2]].concat();
	assert!(MapAllowances::from_storage([(short_key.as_slice(), value.as_slice())]).is_err());
}

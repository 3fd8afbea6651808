//! The allocator's own account of the heap, for `/metrics`: what jemalloc has handed out and
//! what it holds in RAM (as polkadot's `polkadot_memory_allocated` and `_resident` report it).
//! RSS cannot tell a leak from the kernel keeping a mapped database file's pages; these can.
//! A node built with another allocator has no such account and exports neither.

/// One reading, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Heap {
	/// Bytes in live allocations.
	pub allocated: u64,
	/// Bytes of the allocator's pages in RAM: live allocations, free space it keeps, its own
	/// bookkeeping.
	pub resident: u64,
}

/// The allocator's figures now; `None` when it keeps none or they cannot be read.
#[cfg(all(feature = "jemalloc", unix))]
pub fn read() -> Option<Heap> {
	use tikv_jemalloc_ctl::{epoch, stats};
	// jemalloc's statistics are a snapshot taken at the last epoch: advance it first.
	epoch::advance().ok()?;
	let allocated = stats::allocated::read().ok()?;
	let resident = stats::resident::read().ok()?;
	Some(Heap { allocated: allocated as u64, resident: resident as u64 })
}

/// The allocator's figures now; `None` when it keeps none or they cannot be read.
#[cfg(not(all(feature = "jemalloc", unix)))]
pub fn read() -> Option<Heap> {
	None
}

#[cfg(all(test, feature = "jemalloc", unix))]
mod tests {
	use super::*;

	// The unit tests are built from main.rs, so jemalloc is their allocator too. Other tests
	// allocate and free meanwhile: the block is large enough that their churn cannot hide it.
	#[test]
	fn a_block_in_use_is_counted_allocated_and_resident() {
		const BLOCK: u64 = 64 << 20;
		let before = read().expect("jemalloc's statistics").allocated;
		let block = std::hint::black_box(vec![1u8; BLOCK as usize]);
		let during = read().unwrap();
		assert!(during.allocated >= before + BLOCK / 2, "{before} then {during:?}");
		assert!(during.resident >= BLOCK, "{during:?}");
		drop(block);
	}
}

//! A schnellru limiter that bounds an LRU map by the bytes its values hold, shared by the
//! posting-list cache and the body cache.

use schnellru::Limiter;

/// What a cached value costs against the byte budget.
pub trait Weigh {
	/// Bytes this value holds (an estimate including per-entry overhead where it matters).
	fn weight(&self) -> usize;
}

/// Bounds a map to about `max` bytes of values; a value larger than `max` is not kept.
pub struct ByteLimit {
	max: usize,
	used: usize,
}

impl ByteLimit {
	/// A budget of `max` bytes.
	pub fn new(max: usize) -> Self {
		ByteLimit { max, used: 0 }
	}

	/// Bytes held now.
	pub fn used(&self) -> usize {
		self.used
	}
}

impl<K, V: Weigh> Limiter<K, V> for ByteLimit {
	type KeyToInsert<'a> = K;
	type LinkType = u32;

	fn is_over_the_limit(&self, _length: usize) -> bool {
		self.used > self.max
	}

	fn on_insert(&mut self, _length: usize, key: K, value: V) -> Option<(K, V)> {
		let cost = value.weight();
		if cost > self.max {
			return None;
		}
		self.used += cost;
		Some((key, value))
	}

	fn on_replace(
		&mut self,
		_length: usize,
		_old_key: &mut K,
		_new_key: K,
		old: &mut V,
		new: &mut V,
	) -> bool {
		if new.weight() > self.max {
			return false;
		}
		self.used = self.used - old.weight() + new.weight();
		true
	}

	fn on_removed(&mut self, _key: &mut K, value: &mut V) {
		self.used -= value.weight();
	}

	fn on_cleared(&mut self) {
		self.used = 0;
	}

	fn on_grow(&mut self, new_memory_usage: usize) -> bool {
		new_memory_usage <= self.max.max(4096)
	}
}

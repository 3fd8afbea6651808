//! Per-peer rate limit: a token bucket of `rate` tokens a second holding at most five
//! seconds' worth, as upstream's (`Quota::per_second(rate).allow_burst(rate * 5)`).

use std::time::Duration;

/// Seconds of tokens a bucket holds: the burst a peer may send at once.
pub const BURST_SECONDS: u64 = 5;

/// One peer's bucket, on the caller's clock (time since any fixed origin).
#[derive(Debug)]
pub struct Bucket {
	rate: f64,
	capacity: f64,
	tokens: f64,
	refilled: Duration,
}

impl Bucket {
	/// A full bucket of `rate` tokens a second.
	pub fn new(rate: u32, now: Duration) -> Self {
		let rate = f64::from(rate.max(1));
		let capacity = rate * BURST_SECONDS as f64;
		Bucket { rate, capacity, tokens: capacity, refilled: now }
	}

	/// Take `n` tokens if there are that many; a batch is allowed or refused whole.
	pub fn take(&mut self, n: usize, now: Duration) -> bool {
		let elapsed = now.saturating_sub(self.refilled).as_secs_f64();
		self.tokens = (self.tokens + elapsed * self.rate).min(self.capacity);
		self.refilled = self.refilled.max(now);
		if (n as f64) > self.tokens {
			return false;
		}
		self.tokens -= n as f64;
		true
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn a_burst_of_five_seconds_passes_and_one_more_does_not() {
		let start = Duration::from_secs(7);
		let mut bucket = Bucket::new(50, start);
		assert!(bucket.take(250, start));
		assert!(!bucket.take(1, start));
	}

	#[test]
	fn tokens_come_back_at_the_rate_and_no_further_than_the_burst() {
		let start = Duration::ZERO;
		let mut bucket = Bucket::new(50, start);
		assert!(bucket.take(250, start));
		assert!(bucket.take(50, start + Duration::from_secs(1)));
		assert!(!bucket.take(1, start + Duration::from_secs(1)));
		let later = start + Duration::from_secs(3600);
		assert!(!bucket.take(251, later));
		assert!(bucket.take(250, later));
	}
}

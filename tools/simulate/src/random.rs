//! Repeatable randomness: one seed gives one run (the simulated network and its load), on
//! every machine.

/// SplitMix64: small, fast, and the same sequence for the same seed on every machine.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
	/// A generator started at `seed`.
	pub fn new(seed: u64) -> Self {
		Rng(seed)
	}

	/// A generator of its own for a part of the run, so that adding draws to one part does not
	/// change the others'.
	pub fn fork(&mut self, salt: u64) -> Rng {
		Rng(self.next() ^ salt.wrapping_mul(0x9e37_79b9_7f4a_7c15))
	}

	/// The next 64 random bits.
	#[allow(clippy::should_implement_trait)]
	pub fn next(&mut self) -> u64 {
		self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
		let mut z = self.0;
		z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
		z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
		z ^ (z >> 31)
	}

	/// Uniform in `[0, 1)`.
	pub fn unit(&mut self) -> f64 {
		(self.next() >> 11) as f64 / (1u64 << 53) as f64
	}

	/// Uniform in `0..n` (`n > 0`).
	pub fn below(&mut self, n: usize) -> usize {
		(self.next() % n as u64) as usize
	}

	/// Exponentially distributed with this mean: the gap between events of a Poisson process.
	pub fn exponential(&mut self, mean: f64) -> f64 {
		-mean * (1.0 - self.unit()).ln()
	}
}

/// A stateless draw for a pair, so a link's latency does not depend on when it is first used.
pub fn pair_unit(seed: u64, a: u32, b: u32) -> f64 {
	let (low, high) = if a < b { (a, b) } else { (b, a) };
	let mut rng = Rng::new(seed ^ ((u64::from(low) << 32) | u64::from(high)));
	rng.next();
	rng.unit()
}

/// Ranks `1..=n` drawn with probability proportional to `1 / rank^exponent`.
pub struct Zipf {
	cumulative: Vec<f64>,
}

impl Zipf {
	/// Ranks `1..=n` with this exponent.
	pub fn new(n: usize, exponent: f64) -> Self {
		let mut total = 0.0;
		let cumulative = (1..=n.max(1))
			.map(|rank| {
				total += 1.0 / (rank as f64).powf(exponent);
				total
			})
			.collect::<Vec<_>>();
		let cumulative = cumulative.into_iter().map(|c| c / total).collect();
		Zipf { cumulative }
	}

	/// An index in `0..n`, 0 the most popular.
	pub fn draw(&self, rng: &mut Rng) -> usize {
		let u = rng.unit();
		self.cumulative.partition_point(|c| *c < u).min(self.cumulative.len() - 1)
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn the_same_seed_draws_the_same_and_another_does_not() {
		let draw = |seed| (0..8).map(|_| Rng::new(seed).fork(3).next()).collect::<Vec<_>>();
		assert_eq!(draw(7), draw(7));
		assert_ne!(draw(7), draw(8));
		assert_eq!(pair_unit(1, 4, 9), pair_unit(1, 9, 4), "a link's draw is symmetric");
	}

	#[test]
	fn zipf_favours_low_ranks_in_proportion() {
		let zipf = Zipf::new(100, 1.0);
		let mut rng = Rng::new(1);
		let mut counts = [0usize; 100];
		for _ in 0..100_000 {
			counts[zipf.draw(&mut rng)] += 1;
		}
		// Rank 1 is drawn twice as often as rank 2, and ten times as often as rank 10.
		let ratio = |a: usize, b: usize| counts[a] as f64 / counts[b] as f64;
		assert!((1.8..2.2).contains(&ratio(0, 1)), "rank 1 / rank 2 = {}", ratio(0, 1));
		assert!((8.0..12.5).contains(&ratio(0, 9)), "rank 1 / rank 10 = {}", ratio(0, 9));
	}
}

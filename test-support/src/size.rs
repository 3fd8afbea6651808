//! Counts as the harnesses' command lines take them: `50000`, `200k`, `1M`.

/// `text` as a count: digits, optionally followed by `k` (thousands) or `M` (millions), either
/// case; `None` for anything else, for 0, or past `u32::MAX`.
pub fn parse_count(text: &str) -> Option<u32> {
	let text = text.trim();
	let (digits, scale) = match text.strip_suffix(['k', 'K']) {
		Some(digits) => (digits, 1_000),
		None => match text.strip_suffix(['m', 'M']) {
			Some(digits) => (digits, 1_000_000),
			None => (text, 1),
		},
	};
	digits.parse::<u32>().ok()?.checked_mul(scale).filter(|&count| count > 0)
}

#[cfg(test)]
mod tests {
	use super::parse_count;

	#[test]
	fn plain_numbers_and_k_and_m_suffixes_are_counts_and_nothing_else_is() {
		assert_eq!(parse_count("50000"), Some(50_000));
		assert_eq!(parse_count("200k"), Some(200_000));
		assert_eq!(parse_count(" 1M "), Some(1_000_000));
		assert_eq!(parse_count("4m"), Some(4_000_000));
		for bad in ["", "0", "k", "1.5M", "-1", "5000M", "12x"] {
			assert_eq!(parse_count(bad), None, "{bad:?}");
		}
	}
}

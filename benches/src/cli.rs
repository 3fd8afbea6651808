//! Value parsers the harnesses' command lines share (clap derive): numbers and counts that
//! must be positive, and times given in decimal seconds; and the check that documented
//! command lines parse (the test support's, re-exported).

use std::time::Duration;

/// A positive, finite number, such as a rate or a number of seconds.
pub fn positive(text: &str) -> Result<f64, String> {
	match text.trim().parse::<f64>() {
		Ok(value) if value.is_finite() && value > 0.0 => Ok(value),
		_ => Err(format!("{text:?} is not a positive number")),
	}
}

/// A count that must be at least 1, such as connections or threads.
pub fn count(text: &str) -> Result<usize, String> {
	match text.trim().parse::<usize>() {
		Ok(count) if count > 0 => Ok(count),
		_ => Err(format!("{text:?} is not a count of at least 1")),
	}
}

/// A length of time in decimal seconds, such as `0.25` (zero allowed).
pub fn seconds(text: &str) -> Result<Duration, String> {
	text.trim()
		.parse::<f64>()
		.ok()
		.and_then(|value| Duration::try_from_secs_f64(value).ok())
		.ok_or_else(|| format!("{text:?} is not a time in seconds"))
}

pub use statement_test_support::cli::{assert_parses, parse_line};

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn only_positive_finite_numbers_pass() {
		assert_eq!(positive("2.5"), Ok(2.5));
		assert_eq!(positive(" 1000"), Ok(1000.0));
		for bad in ["0", "-1", "NaN", "inf", "ten", ""] {
			assert!(positive(bad).is_err(), "{bad}");
		}
		assert_eq!(count("8"), Ok(8));
		assert!(count("0").is_err() && count("-1").is_err());
		assert_eq!(seconds("0.25"), Ok(Duration::from_millis(250)));
		assert_eq!(seconds("0"), Ok(Duration::ZERO));
		assert!(seconds("-1").is_err() && seconds("NaN").is_err());
	}
}

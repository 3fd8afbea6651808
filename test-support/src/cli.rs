//! Command lines as the docs give them (feature `cli`): each must parse, so that a renamed
//! flag fails a test instead of a reader.

use clap::Parser;

/// `line` (the binary's name, then its arguments split on white space) parsed as `P`.
pub fn parse_line<P: Parser>(line: &str) -> Result<P, clap::Error> {
	P::try_parse_from(line.split_whitespace())
}

/// Panics unless `P`'s definition is sound and each of `lines` parses: for the tests that hold
/// every invocation the docs give.
pub fn assert_parses<P: Parser>(lines: &[&str]) {
	P::command().debug_assert();
	for line in lines {
		if let Err(err) = parse_line::<P>(line) {
			panic!("{line}: {err}");
		}
	}
}

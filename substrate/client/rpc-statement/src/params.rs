//! Reading the methods' parameters, with errors that say what is wrong.
//!
//! The raw JSON is read by hand rather than through derived `Deserialize` impls: serde's
//! messages name neither the parameter nor the accepted forms, and carry a line and column of
//! the params text that mean nothing to the caller. Every refusal here is a [`ParamError`]
//! whose text is the JSON-RPC error message:
//!
//! - `missing <param>: expected <forms>` when a required parameter is absent;
//! - `bad <param><where>: <problem>` otherwise, where `<where>` locates the fault inside the
//!   value (`topics[1]`, `topic filter: matchAll[0][4]`) and `<problem>` is usually
//!   `expected <forms>, got <given>`. `<given>` is the value itself (cut to
//!   [`SHOWN_CHARS`] characters) when its JSON type is one the parameter accepts, and only
//!   the type (`a string`, `an object`, ...) when it is not.
//!
//! One rule for 32-byte values everywhere (topics, in lists and in filters; keys; hashes): a
//! `0x`-hex string of 32 bytes or an array of 32 numbers from 0 to 255.

use jsonrpsee::types::{error::ErrorObjectOwned, Params};
use serde_json::Value;
use statement_primitives::{Statement, Topic, TopicFilter, MAX_ANY_TOPICS, MAX_TOPICS};

use crate::{error::invalid_params, limits::DUMP_PAGE_MAX};

/// Characters of a given value an error message shows before cutting it with `…`.
pub const SHOWN_CHARS: usize = 40;

/// The forms a topic filter takes, as error messages list them.
const FILTER_FORMS: &str = r#""any", {"matchAll": [topics]} or {"matchAny": [topics]}"#;
/// The forms a topic, key or hash takes.
const BYTES32_FORMS: &str = "a 0x-hex string of 32 bytes or an array of 32 numbers";

/// A parameter the method cannot use; the text is the JSON-RPC error message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParamError {
	/// The params are not a JSON array (named params are not supported).
	#[error("bad params: expected an array of parameters by position, got {given}")]
	NotPositional {
		/// What was sent instead.
		given: String,
	},
	/// A required parameter is absent.
	#[error("missing {param}: expected {expected}")]
	Missing {
		/// The parameter's name.
		param: &'static str,
		/// The forms it takes.
		expected: String,
	},
	/// A parameter is present but unusable.
	#[error("bad {param}{at}: {problem}")]
	Bad {
		/// The parameter's name.
		param: &'static str,
		/// Where inside the value (`[1]`, `: matchAll[0]`), empty for the whole value.
		at: String,
		/// What is wrong.
		problem: String,
	},
}

impl From<ParamError> for ErrorObjectOwned {
	fn from(err: ParamError) -> Self {
		invalid_params(err.to_string())
	}
}

/// What is wrong somewhere inside one parameter, before it is named.
struct Fault {
	at: String,
	problem: String,
}

impl Fault {
	fn new(problem: impl Into<String>) -> Fault {
		Fault { at: String::new(), problem: problem.into() }
	}

	/// `expected <forms>, got <given>`.
	fn expected(forms: impl std::fmt::Display, given: impl std::fmt::Display) -> Fault {
		Fault::new(format!("expected {forms}, got {given}"))
	}

	/// The same fault, one level further out: `segment` is `[n]` or `: key`.
	fn inside(mut self, segment: String) -> Fault {
		self.at.insert_str(0, &segment);
		self
	}

	fn of(self, param: &'static str) -> ParamError {
		ParamError::Bad { param, at: self.at, problem: self.problem }
	}
}

/// A value's JSON type, for a value whose type the parameter does not take.
fn kind(value: &Value) -> &'static str {
	match value {
		Value::Null => "null",
		Value::Bool(_) => "a boolean",
		Value::Number(_) => "a number",
		Value::String(_) => "a string",
		Value::Array(_) => "an array",
		Value::Object(_) => "an object",
	}
}

/// A value as JSON, cut after [`SHOWN_CHARS`] characters.
fn shown(value: &Value) -> String {
	let text = value.to_string();
	match text.char_indices().nth(SHOWN_CHARS) {
		Some((cut, _)) => format!("{}…", &text[..cut]),
		None => text,
	}
}

/// `0x`-hex bytes, or what is wrong with the text.
fn parse_hex(text: &str) -> Result<Vec<u8>, Fault> {
	let Some(digits) = text.strip_prefix("0x") else {
		return Err(Fault::new("not valid hex: it must start with 0x"));
	};
	if let Some((at, digit)) = digits.char_indices().find(|(_, c)| !c.is_ascii_hexdigit()) {
		return Err(Fault::new(format!(
			"not valid hex: {digit:?} at position {} is not a hex digit",
			at + 2
		)));
	}
	if digits.len() % 2 != 0 {
		return Err(Fault::new(format!(
			"not valid hex: odd number of hex digits ({})",
			digits.len()
		)));
	}
	// Every byte is an ASCII hex digit now, so each pair decodes.
	let nibble = |digit: u8| (digit as char).to_digit(16).unwrap_or(0) as u8;
	Ok(digits.as_bytes().chunks(2).map(|pair| nibble(pair[0]) << 4 | nibble(pair[1])).collect())
}

/// A topic, key or hash: [`BYTES32_FORMS`].
fn bytes32(value: &Value) -> Result<[u8; 32], Fault> {
	match value {
		Value::String(text) => {
			let bytes = parse_hex(text)?;
			<[u8; 32]>::try_from(bytes.as_slice())
				.map_err(|_| Fault::new(format!("expected 32 bytes, got {}", bytes.len())))
		}
		Value::Array(numbers) => {
			if numbers.len() != 32 {
				return Err(Fault::new(format!("expected 32 numbers, got {}", numbers.len())));
			}
			let mut out = [0u8; 32];
			for (at, (byte, number)) in out.iter_mut().zip(numbers).enumerate() {
				*byte = number.as_u64().and_then(|n| u8::try_from(n).ok()).ok_or_else(|| {
					let given =
						if number.is_number() { shown(number) } else { kind(number).into() };
					Fault::expected("a number from 0 to 255", given).inside(format!("[{at}]"))
				})?;
			}
			Ok(out)
		}
		other => Err(Fault::expected(BYTES32_FORMS, kind(other))),
	}
}

/// A list of at most `max` topics.
fn topic_list(value: &Value, max: usize) -> Result<Vec<Topic>, Fault> {
	let Value::Array(items) = value else {
		return Err(Fault::expected(format!("an array of at most {max} topics"), kind(value)));
	};
	// Counted before any is read, so a huge list costs nothing more to refuse.
	if items.len() > max {
		return Err(Fault::new(format!("{} topics given, at most {max}", items.len())));
	}
	items
		.iter()
		.enumerate()
		.map(|(at, item)| bytes32(item).map(Topic).map_err(|f| f.inside(format!("[{at}]"))))
		.collect()
}

/// A topic filter: [`FILTER_FORMS`], names spelled exactly so.
fn topic_filter(value: &Value) -> Result<TopicFilter, Fault> {
	let (name, topics) = match value {
		Value::String(text) if text == "any" => return Ok(TopicFilter::Any),
		Value::Object(fields) if fields.len() == 1 => match fields.iter().next() {
			Some((name, topics)) if name == "matchAll" || name == "matchAny" => (name, topics),
			_ => return Err(Fault::expected(FILTER_FORMS, shown(value))),
		},
		Value::String(_) | Value::Object(_) => {
			return Err(Fault::expected(FILTER_FORMS, shown(value)))
		}
		other => return Err(Fault::expected(FILTER_FORMS, kind(other))),
	};
	let all = name == "matchAll";
	let topics = topic_list(topics, if all { MAX_TOPICS } else { MAX_ANY_TOPICS })
		.map_err(|fault| fault.inside(format!(": {name}")))?;
	let filter = if all { TopicFilter::match_all(topics) } else { TopicFilter::match_any(topics) };
	filter.map_err(|err| Fault::new(err.to_string()).inside(format!(": {name}")))
}

/// The parameters of one call, by position.
pub struct Positional(Vec<Value>);

impl Positional {
	/// Read the raw params; no params at all is an empty list.
	pub fn of(params: &Params) -> Result<Positional, ParamError> {
		let Some(text) = params.as_str().filter(|text| !text.trim().is_empty()) else {
			return Ok(Positional(Vec::new()));
		};
		// jsonrpsee has already checked that the params are JSON.
		match serde_json::from_str::<Value>(text) {
			Ok(Value::Array(values)) => Ok(Positional(values)),
			Ok(other) => Err(ParamError::NotPositional { given: kind(&other).into() }),
			Err(_) => Err(ParamError::NotPositional { given: "text that is not JSON".into() }),
		}
	}

	/// The parameter at `position`, or [`ParamError::Missing`].
	fn required(
		&self,
		position: usize,
		param: &'static str,
		expected: impl Into<String>,
	) -> Result<&Value, ParamError> {
		self.0.get(position).ok_or_else(|| ParamError::Missing { param, expected: expected.into() })
	}

	/// The parameter at `position`, `None` if it is absent or `null`.
	fn optional(&self, position: usize) -> Option<&Value> {
		self.0.get(position).filter(|value| !value.is_null())
	}

	/// A `0x`-hex SCALE-encoded statement. An oversized one is decoded leniently so that the
	/// store can answer with upstream's `EncodingTooLarge` result.
	pub fn statement(&self, position: usize) -> Result<Statement, ParamError> {
		const PARAM: &str = "statement";
		let forms = "a 0x-hex SCALE-encoded statement";
		let bytes = match self.required(position, PARAM, forms)? {
			Value::String(text) => parse_hex(text).map_err(|fault| fault.of(PARAM))?,
			other => return Err(Fault::expected(forms, kind(other)).of(PARAM)),
		};
		let decoded = match Statement::from_bytes(&bytes) {
			Err(statement_primitives::Error::TooLarge { .. }) => {
				<Statement as codec::Decode>::decode(&mut &bytes[..]).map_err(|e| e.to_string())
			}
			other => other.map_err(|e| e.to_string()),
		};
		decoded.map_err(|err| Fault::new(format!("does not decode: {err}")).of(PARAM))
	}

	/// A list of at most [`MAX_TOPICS`] topics, all of which a statement must carry.
	pub fn topics(&self, position: usize) -> Result<Vec<Topic>, ParamError> {
		const PARAM: &str = "topics";
		let value =
			self.required(position, PARAM, format!("an array of at most {MAX_TOPICS} topics"))?;
		topic_list(value, MAX_TOPICS).map_err(|fault| fault.of(PARAM))
	}

	/// A decryption key (upstream's `dest`).
	pub fn key(&self, position: usize) -> Result<[u8; 32], ParamError> {
		self.bytes32(position, "decryption key")
	}

	/// A statement hash.
	pub fn hash(&self, position: usize) -> Result<[u8; 32], ParamError> {
		self.bytes32(position, "statement hash")
	}

	fn bytes32(&self, position: usize, param: &'static str) -> Result<[u8; 32], ParamError> {
		bytes32(self.required(position, param, BYTES32_FORMS)?).map_err(|fault| fault.of(param))
	}

	/// A string, such as a subscription or filter id.
	pub fn string(&self, position: usize, param: &'static str) -> Result<String, ParamError> {
		match self.required(position, param, "a string")? {
			Value::String(text) => Ok(text.clone()),
			other => Err(Fault::expected("a string", kind(other)).of(param)),
		}
	}

	/// A topic filter.
	pub fn filter(&self, position: usize) -> Result<TopicFilter, ParamError> {
		const PARAM: &str = "topic filter";
		topic_filter(self.required(position, PARAM, FILTER_FORMS)?).map_err(|f| f.of(PARAM))
	}

	/// `statement_dumpPage`'s cursor: `null` (or absent) to start, else the `next` of the
	/// previous page.
	pub fn cursor(&self, position: usize) -> Result<Option<u64>, ParamError> {
		let Some(value) = self.optional(position) else { return Ok(None) };
		value.as_u64().map(Some).ok_or_else(|| {
			let given = if value.is_number() { shown(value) } else { kind(value).into() };
			let forms = "null or the \"next\" number of the previous page";
			Fault::expected(forms, given).of("cursor")
		})
	}

	/// `statement_dumpPage`'s limit: `null` (or absent) for the most, else a whole number from
	/// 1; more than [`DUMP_PAGE_MAX`] reads as that. 0 asks for nothing and is refused (a page
	/// of one would not be what was asked, and an empty one would never move on).
	pub fn limit(&self, position: usize) -> Result<Option<usize>, ParamError> {
		let Some(value) = self.optional(position) else { return Ok(None) };
		let limit =
			value.as_u64().filter(|n| *n > 0).map(|n| usize::try_from(n).unwrap_or(usize::MAX));
		limit.map(Some).ok_or_else(|| {
			let given = if value.is_number() { shown(value) } else { kind(value).into() };
			let forms =
				format!("null or a whole number from 1 (at most {DUMP_PAGE_MAX} are returned)");
			Fault::expected(forms, given).of("limit")
		})
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	const FORMS: &str = r#"expected "any", {"matchAll": [topics]} or {"matchAny": [topics]}"#;

	fn hex32() -> String {
		format!("\"0x{}\"", "11".repeat(32))
	}

	fn numbers32() -> String {
		format!("[{}]", vec!["17"; 32].join(","))
	}

	/// The message `read` gives for the params `json`.
	fn message<T: std::fmt::Debug>(
		json: &str,
		read: impl Fn(&Positional) -> Result<T, ParamError>,
	) -> String {
		match Positional::of(&Params::new(Some(json))).and_then(|params| read(&params)) {
			Ok(value) => panic!("{json} accepted as {value:?}"),
			Err(err) => err.to_string(),
		}
	}

	fn filter_message(json: &str) -> String {
		message(json, |p| p.filter(0))
	}

	#[test]
	fn filter_spellings_other_than_upstreams_are_refused_listing_the_forms() {
		assert_eq!(
			filter_message(r#"["Any"]"#),
			format!(r#"bad topic filter: {FORMS}, got "Any""#)
		);
		assert_eq!(
			filter_message(r#"["all"]"#),
			format!(r#"bad topic filter: {FORMS}, got "all""#)
		);
		let snake = format!(r#"[{{"match_all": [{}]}}]"#, hex32());
		assert_eq!(
			filter_message(&snake),
			format!(r#"bad topic filter: {FORMS}, got {{"match_all":["0x{}…"#, "1".repeat(23))
		);
		let both = format!(r#"[{{"matchAll": [], "matchAny": [{}]}}]"#, hex32());
		assert!(filter_message(&both).starts_with(&format!("bad topic filter: {FORMS}, got {{")));
		assert_eq!(filter_message("[5]"), format!("bad topic filter: {FORMS}, got a number"));
		assert_eq!(filter_message("[null]"), format!("bad topic filter: {FORMS}, got null"));
	}

	#[test]
	fn the_three_filter_forms_are_accepted() {
		let read = |json: &str| Positional::of(&Params::new(Some(json))).unwrap().filter(0);
		assert_eq!(read(r#"["any"]"#), Ok(TopicFilter::Any));
		let all = read(&format!(r#"[{{"matchAll": [{}]}}]"#, hex32())).unwrap();
		assert_eq!(all, TopicFilter::MatchAll(vec![Topic([0x11; 32])]));
		let any = read(r#"[{"matchAny": []}]"#).unwrap();
		assert_eq!(any, TopicFilter::MatchAny(vec![]));
	}

	#[test]
	fn topics_as_number_arrays_are_accepted_inside_filters_as_in_lists() {
		let read = |json: &str| Positional::of(&Params::new(Some(json))).unwrap();
		let mixed = format!("[{}, {}]", hex32(), numbers32());
		let all = read(&format!(r#"[{{"matchAll": {mixed}}}]"#)).filter(0).unwrap();
		assert_eq!(all, TopicFilter::MatchAll(vec![Topic([0x11; 32]); 2]));
		let any = read(&format!(r#"[{{"matchAny": {mixed}}}]"#)).filter(0).unwrap();
		assert_eq!(any, TopicFilter::MatchAny(vec![Topic([0x11; 32]); 2]));
		assert_eq!(read(&format!("[{mixed}]")).topics(0).unwrap(), vec![Topic([0x11; 32]); 2]);
	}

	#[test]
	fn too_many_topics_say_how_many_were_given_and_the_limit() {
		let five = format!("[{}]", vec![hex32(); 5].join(","));
		assert_eq!(
			filter_message(&format!(r#"[{{"matchAll": {five}}}]"#)),
			"bad topic filter: matchAll: 5 topics given, at most 4"
		);
		assert_eq!(
			message(&format!("[{five}]"), |p| p.topics(0)),
			"bad topics: 5 topics given, at most 4"
		);
		let many = format!("[{}]", vec![hex32(); 129].join(","));
		assert_eq!(
			filter_message(&format!(r#"[{{"matchAny": {many}}}]"#)),
			"bad topic filter: matchAny: 129 topics given, at most 128"
		);
	}

	#[test]
	fn a_bad_topic_is_located_inside_its_list() {
		assert_eq!(
			filter_message(r#"[{"matchAll": ["0x0102"]}]"#),
			"bad topic filter: matchAll[0]: expected 32 bytes, got 2"
		);
		assert_eq!(
			filter_message(r#"[{"matchAny": ["0x123"]}]"#),
			"bad topic filter: matchAny[0]: not valid hex: odd number of hex digits (3)"
		);
		let mut bad_byte = vec!["1"; 32];
		bad_byte[4] = "300";
		let json = format!(r#"[{{"matchAll": [{}, [{}]]}}]"#, hex32(), bad_byte.join(","));
		assert_eq!(
			filter_message(&json),
			"bad topic filter: matchAll[1][4]: expected a number from 0 to 255, got 300"
		);
		assert_eq!(
			filter_message(r#"[{"matchAll": "0x11"}]"#),
			"bad topic filter: matchAll: expected an array of at most 4 topics, got a string"
		);
		let topics = |json: &str| message(json, |p| p.topics(0));
		assert_eq!(
			topics(&format!("[{}]", hex32())),
			"bad topics: expected an array of at most 4 topics, got a string"
		);
		assert_eq!(topics("[[[1, 2]]]"), "bad topics[0]: expected 32 numbers, got 2");
		assert_eq!(
			topics("[[true]]"),
			"bad topics[0]: expected a 0x-hex string of 32 bytes or an array of 32 numbers, got a boolean"
		);
		assert_eq!(
			topics(r#"[["0xzz"]]"#),
			r#"bad topics[0]: not valid hex: 'z' at position 2 is not a hex digit"#
		);
	}

	#[test]
	fn keys_and_hashes_take_the_same_forms_and_name_themselves() {
		let key = format!(r#"[[], "0x{}"]"#, "zz".repeat(32));
		assert_eq!(
			message(&key, |p| p.key(1)),
			"bad decryption key: not valid hex: 'z' at position 2 is not a hex digit"
		);
		assert_eq!(
			message(r#"["0x0102"]"#, |p| p.hash(0)),
			"bad statement hash: expected 32 bytes, got 2"
		);
		let read = |json: &str| Positional::of(&Params::new(Some(json))).unwrap();
		assert_eq!(read(&format!("[{}]", numbers32())).hash(0), Ok([17; 32]));
		assert_eq!(read(&format!("[[], {}]", hex32())).key(1), Ok([0x11; 32]));
	}

	#[test]
	fn a_missing_parameter_is_named_with_what_it_should_be() {
		assert_eq!(
			message("[]", |p| p.topics(0)),
			"missing topics: expected an array of at most 4 topics"
		);
		assert_eq!(
			message("[[]]", |p| p.key(1)),
			"missing decryption key: expected a 0x-hex string of 32 bytes or an array of 32 numbers"
		);
		assert_eq!(message("[]", |p| p.filter(0)), format!("missing topic filter: {FORMS}"));
		assert_eq!(
			message("[]", |p| p.statement(0)),
			"missing statement: expected a 0x-hex SCALE-encoded statement"
		);
		// No params at all reads as an empty list.
		let none = Positional::of(&Params::new(None)).unwrap();
		assert!(matches!(none.hash(0), Err(ParamError::Missing { param: "statement hash", .. })));
	}

	#[test]
	fn statements_must_be_hex_that_decodes() {
		let statement = |json: &str| message(json, |p| p.statement(0));
		assert_eq!(
			statement(r#"["0x08022"]"#),
			"bad statement: not valid hex: odd number of hex digits (5)"
		);
		assert_eq!(
			statement(r#"["0x0g"]"#),
			"bad statement: not valid hex: 'g' at position 3 is not a hex digit"
		);
		assert_eq!(statement(r#"["0802"]"#), "bad statement: not valid hex: it must start with 0x");
		assert_eq!(
			statement("[5]"),
			"bad statement: expected a 0x-hex SCALE-encoded statement, got a number"
		);
		assert!(statement(r#"["0x08022a"]"#).starts_with("bad statement: does not decode: "));
	}

	#[test]
	fn dump_page_cursor_and_limit_are_optional_numbers() {
		let read = |json: &str| Positional::of(&Params::new(Some(json))).unwrap();
		assert_eq!(read("[]").cursor(0), Ok(None));
		assert_eq!(read("[null, null]").limit(1), Ok(None));
		assert_eq!(read("[7, 10]").cursor(0), Ok(Some(7)));
		assert_eq!(read("[7, 10]").limit(1), Ok(Some(10)));
		assert_eq!(
			message(r#"["x"]"#, |p| p.cursor(0)),
			r#"bad cursor: expected null or the "next" number of the previous page, got a string"#
		);
		assert_eq!(
			message("[null, -1]", |p| p.limit(1)),
			"bad limit: expected null or a whole number from 1 (at most 1000 are returned), got -1"
		);
		assert_eq!(
			message("[null, 0]", |p| p.limit(1)),
			"bad limit: expected null or a whole number from 1 (at most 1000 are returned), got 0"
		);
	}

	#[test]
	fn params_by_name_are_refused_as_not_positional() {
		let err =
			Positional::of(&Params::new(Some(r#"{"topics": []}"#))).err().map(|e| e.to_string());
		assert_eq!(
			err.as_deref(),
			Some("bad params: expected an array of parameters by position, got an object")
		);
	}

	#[test]
	fn long_values_are_cut_on_a_character_boundary() {
		let long = Value::String("é".repeat(100));
		let text = shown(&long);
		assert_eq!(text.chars().count(), SHOWN_CHARS + 1);
		assert!(text.ends_with('…'));
		assert_eq!(shown(&Value::String("any".into())), "\"any\"");
	}

	#[test]
	fn refusals_are_invalid_params_errors_with_the_message() {
		let err =
			ErrorObjectOwned::from(ParamError::Missing { param: "topics", expected: "x".into() });
		assert_eq!(err.code(), crate::error::INVALID_PARAMS);
		assert_eq!(err.message(), "missing topics: expected x");
	}
}

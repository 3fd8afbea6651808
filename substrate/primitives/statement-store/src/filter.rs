//! Topic filters: which statements a query or a subscription wants.

use crate::{Error, Result, Statement, Topic, MAX_ANY_TOPICS, MAX_TOPICS};

/// Which statements a subscription wants, by topic.
///
/// JSON as upstream's RPC: `"any"`, `{"matchAll": ["0x..", ..]}`, `{"matchAny": ["0x..", ..]}`.
/// Deserializing refuses more topics than the kind allows.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", try_from = "UncheckedTopicFilter")]
pub enum TopicFilter {
	/// Every statement.
	Any,
	/// Statements carrying every one of these topics (at most [`MAX_TOPICS`]).
	MatchAll(Vec<Topic>),
	/// Statements carrying at least one of these topics (at most [`MAX_ANY_TOPICS`]).
	MatchAny(Vec<Topic>),
}

impl TopicFilter {
	/// A `MatchAll` filter, refused if it names more than [`MAX_TOPICS`] topics.
	pub fn match_all(topics: Vec<Topic>) -> Result<Self> {
		check_match_all(&topics)?;
		Ok(TopicFilter::MatchAll(topics))
	}

	/// A `MatchAny` filter, refused if it names more than [`MAX_ANY_TOPICS`] topics.
	pub fn match_any(topics: Vec<Topic>) -> Result<Self> {
		if topics.len() > MAX_ANY_TOPICS {
			return Err(Error::TooManyTopics { given: topics.len(), max: MAX_ANY_TOPICS });
		}
		Ok(TopicFilter::MatchAny(topics))
	}

	/// Whether `statement` passes the filter. An empty `MatchAll` passes everything, an empty
	/// `MatchAny` nothing.
	pub fn matches(&self, statement: &Statement) -> bool {
		let topics = statement.topics();
		match self {
			TopicFilter::Any => true,
			TopicFilter::MatchAll(wanted) => wanted.iter().all(|t| topics.contains(t)),
			TopicFilter::MatchAny(wanted) => wanted.iter().any(|t| topics.contains(t)),
		}
	}
}

/// Refuse a `MatchAll` topic list longer than [`MAX_TOPICS`]: no statement could match it.
pub fn check_match_all(topics: &[Topic]) -> Result<()> {
	if topics.len() > MAX_TOPICS {
		return Err(Error::TooManyTopics { given: topics.len(), max: MAX_TOPICS });
	}
	Ok(())
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
enum UncheckedTopicFilter {
	Any,
	MatchAll(Vec<Topic>),
	MatchAny(Vec<Topic>),
}

impl TryFrom<UncheckedTopicFilter> for TopicFilter {
	type Error = Error;

	fn try_from(filter: UncheckedTopicFilter) -> Result<Self> {
		match filter {
			UncheckedTopicFilter::Any => Ok(TopicFilter::Any),
			UncheckedTopicFilter::MatchAll(topics) => TopicFilter::match_all(topics),
			UncheckedTopicFilter::MatchAny(topics) => TopicFilter::match_any(topics),
		}
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	fn with_topics(topics: &[u8]) -> Statement {
		let topics: Vec<Topic> = topics.iter().map(|byte| Topic([*byte; 32])).collect();
		crate::testing::TestStatement::new().topics(&topics).unsigned()
	}

	#[test]
	fn match_all_needs_every_topic_and_match_any_one() {
		let statement = with_topics(&[1, 2]);
		assert!(TopicFilter::Any.matches(&statement));
		assert!(TopicFilter::MatchAll(vec![Topic([2; 32]), Topic([1; 32])]).matches(&statement));
		assert!(!TopicFilter::MatchAll(vec![Topic([1; 32]), Topic([3; 32])]).matches(&statement));
		assert!(TopicFilter::MatchAll(vec![]).matches(&statement));
		assert!(TopicFilter::MatchAny(vec![Topic([3; 32]), Topic([2; 32])]).matches(&statement));
		assert!(!TopicFilter::MatchAny(vec![Topic([3; 32])]).matches(&statement));
		assert!(!TopicFilter::MatchAny(vec![]).matches(&statement));
	}

	#[test]
	fn json_forms_match_upstream_rpc() {
		let topic = format!("0x{}", "ab".repeat(32));
		assert_eq!(serde_json::to_string(&TopicFilter::Any).unwrap(), "\"any\"");
		let all = TopicFilter::MatchAll(vec![Topic([0xab; 32])]);
		assert_eq!(serde_json::to_string(&all).unwrap(), format!("{{\"matchAll\":[\"{topic}\"]}}"));
		let parsed: TopicFilter =
			serde_json::from_str(&format!("{{\"matchAny\":[\"{topic}\"]}}")).unwrap();
		assert_eq!(parsed, TopicFilter::MatchAny(vec![Topic([0xab; 32])]));
		assert_eq!(serde_json::from_str::<TopicFilter>("\"any\"").unwrap(), TopicFilter::Any);
	}

	#[test]
	fn too_many_topics_are_refused_in_json_and_constructors() {
		let topic = format!("\"0x{}\"", "01".repeat(32));
		let five = vec![topic.clone(); 5].join(",");
		let err =
			serde_json::from_str::<TopicFilter>(&format!("{{\"matchAll\":[{five}]}}")).unwrap_err();
		assert!(err.to_string().contains("5 topics given, at most 4"), "{err}");
		let many = vec![topic; 129].join(",");
		assert!(serde_json::from_str::<TopicFilter>(&format!("{{\"matchAny\":[{many}]}}")).is_err());
		assert_eq!(
			TopicFilter::match_all(vec![Topic::default(); 5]),
			Err(Error::TooManyTopics { given: 5, max: 4 })
		);
		assert!(TopicFilter::match_any(vec![Topic::default(); 128]).is_ok());
	}

	#[test]
	fn short_topic_hex_is_refused() {
		assert!(serde_json::from_str::<TopicFilter>("{\"matchAll\":[\"0x0102\"]}").is_err());
	}
}

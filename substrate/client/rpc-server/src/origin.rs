//! Browser origins and the `--rpc-cors` policy that says which of them may use the RPC server.
//!
//! An origin is `scheme://host[:port]` (RFC 6454), the value a browser puts in the `Origin`
//! header. Two origins are the same when scheme, host and port are equal, the scheme's default
//! port (80 for `http` and `ws`, 443 for `https` and `wss`) being the same as none: so
//! `http://localhost` never matches `http://localhost.evil.com`, which a prefix test would let
//! through. An allow-list entry may end in `:*`, any port or none. The `null` origin, sent by
//! sandboxed frames and `file:` pages, is not one origin but any of them, so no list holds it:
//! only `all` lets it in.

use std::fmt;

/// Which browser origins may call the RPC server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cors {
	/// Any origin: `--rpc-cors all`, and `--dev` without `--rpc-cors`.
	All,
	/// Only the origins these entries match.
	List(Vec<AllowedOrigin>),
}

/// One `--rpc-cors` entry: a scheme, a host and a port, or any port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AllowedOrigin {
	scheme: String,
	host: String,
	port: PortRule,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PortRule {
	/// `:*`.
	Any,
	/// This port; `None` is the scheme's default port, written or not.
	Exact(Option<u16>),
}

/// A `--rpc-cors` entry that is not an origin.
#[derive(Debug, thiserror::Error)]
#[error(
	"--rpc-cors: {entry:?} is not an origin: {reason}; write scheme://host[:port] (`:*` for any \
	 port), comma separated, e.g. `http://localhost:*,https://app.example`, or `all`"
)]
pub struct InvalidOrigin {
	/// The entry as given.
	pub entry: String,
	/// What is wrong with it.
	pub reason: &'static str,
}

/// What a browser sends for pages it will not name.
const NULL: &str = "null";

/// Substrate's default allow-list, for a node started without `--rpc-cors` or `--dev`.
const DEFAULT_ORIGINS: [&str; 5] = [
	"http://localhost:*",
	"http://127.0.0.1:*",
	"https://localhost:*",
	"https://127.0.0.1:*",
	"https://polkadot.js.org",
];

impl Cors {
	/// The policy for `--rpc-cors flag`: `all` (or `*`) anywhere in the list allows every
	/// origin, as in Substrate; empty entries are skipped, so `""` allows none.
	pub fn parse(flag: &str) -> Result<Cors, InvalidOrigin> {
		let entries: Vec<&str> =
			flag.split(',').map(str::trim).filter(|entry| !entry.is_empty()).collect();
		if entries.iter().any(|entry| entry.eq_ignore_ascii_case("all") || *entry == "*") {
			return Ok(Cors::All);
		}
		entries.into_iter().map(AllowedOrigin::parse).collect::<Result<_, _>>().map(Cors::List)
	}

	/// Substrate's default for a node without `--rpc-cors`: pages served from this machine, on
	/// any port, and polkadot.js apps.
	pub fn substrate_default() -> Cors {
		let list = DEFAULT_ORIGINS.iter().map(|entry| AllowedOrigin::parse(entry));
		Cors::List(list.collect::<Result<_, _>>().unwrap_or_default())
	}

	/// Whether a request whose `Origin` header is `origin` may be served.
	pub fn allows(&self, origin: &[u8]) -> bool {
		let list = match self {
			Cors::All => return true,
			Cors::List(list) => list,
		};
		let Some(origin) =
			std::str::from_utf8(origin).ok().and_then(|text| Origin::parse(text).ok())
		else {
			return false;
		};
		list.iter().any(|entry| entry.matches(&origin))
	}
}

impl fmt::Display for Cors {
	fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
		match self {
			Cors::All => f.write_str("all"),
			Cors::List(list) if list.is_empty() => f.write_str("none"),
			Cors::List(list) => {
				for (at, entry) in list.iter().enumerate() {
					if at > 0 {
						f.write_str(",")?;
					}
					write!(f, "{entry}")?;
				}
				Ok(())
			}
		}
	}
}

impl AllowedOrigin {
	/// `entry` as an allow-list entry: an origin, or one whose port is `*`.
	pub fn parse(entry: &str) -> Result<AllowedOrigin, InvalidOrigin> {
		let invalid = |reason| InvalidOrigin { entry: entry.to_string(), reason };
		if entry.eq_ignore_ascii_case(NULL) {
			return Err(invalid(
				"the null origin stands for any sandboxed or file: page, so it cannot be listed; \
				 only `all` allows it",
			));
		}
		let parts = Parts::parse(entry).map_err(invalid)?;
		let port = match parts.port {
			PortText::Any => PortRule::Any,
			PortText::Given(port) => PortRule::Exact(without_default(&parts.scheme, Some(port))),
			PortText::None => PortRule::Exact(None),
		};
		Ok(AllowedOrigin { scheme: parts.scheme, host: parts.host, port })
	}

	fn matches(&self, origin: &Origin) -> bool {
		self.scheme == origin.scheme
			&& self.host == origin.host
			&& match self.port {
				PortRule::Any => true,
				PortRule::Exact(port) => port == origin.port,
			}
	}
}

impl fmt::Display for AllowedOrigin {
	fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
		write!(f, "{}://{}", self.scheme, self.host)?;
		match self.port {
			PortRule::Any => f.write_str(":*"),
			PortRule::Exact(Some(port)) => write!(f, ":{port}"),
			PortRule::Exact(None) => Ok(()),
		}
	}
}

/// An origin from an `Origin` header, its port left out if it is the scheme's default.
struct Origin {
	scheme: String,
	host: String,
	port: Option<u16>,
}

impl Origin {
	fn parse(text: &str) -> Result<Origin, &'static str> {
		let parts = Parts::parse(text)?;
		let port = match parts.port {
			PortText::Any => return Err("a browser's origin has a port number, not *"),
			PortText::Given(port) => Some(port),
			PortText::None => None,
		};
		Ok(Origin {
			port: without_default(&parts.scheme, port),
			scheme: parts.scheme,
			host: parts.host,
		})
	}
}

/// `port`, or `None` if it is `scheme`'s default port (which a browser leaves out).
fn without_default(scheme: &str, port: Option<u16>) -> Option<u16> {
	let default = match scheme {
		"http" | "ws" => Some(80),
		"https" | "wss" => Some(443),
		_ => None,
	};
	port.filter(|port| Some(*port) != default)
}

/// The pieces of `scheme://host[:port]`, scheme and host in lower case (both are
/// case-insensitive).
struct Parts {
	scheme: String,
	host: String,
	port: PortText,
}

enum PortText {
	None,
	Any,
	Given(u16),
}

impl Parts {
	fn parse(text: &str) -> Result<Parts, &'static str> {
		let (scheme, rest) = text.split_once("://").ok_or("it has no scheme://")?;
		let scheme_ok = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
			&& scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
		if !scheme_ok {
			return Err("the scheme is not valid");
		}
		if rest.contains(['/', '?', '#', '@', '\\']) {
			return Err("an origin has no user, path or query (https://app.example, not \
			            https://app.example/)");
		}
		let (host, port) = match rest.strip_prefix('[') {
			Some(bracketed) => {
				let (address, after) = bracketed.split_once(']').ok_or("unclosed [ in the host")?;
				if address.is_empty()
					|| !address.chars().all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.')
				{
					return Err("the host is not an IPv6 address");
				}
				let port = match after {
					"" => None,
					_ => Some(after.strip_prefix(':').ok_or("expected :port after the host")?),
				};
				(&rest[..address.len() + 2], port)
			}
			None => match rest.split_once(':') {
				Some((host, port)) => (host, Some(port)),
				None => (rest, None),
			},
		};
		if host.is_empty() {
			return Err("the host is empty");
		}
		let host_ok = host.starts_with('[')
			|| host.chars().all(|c| c.is_ascii_alphanumeric() || "-._~".contains(c));
		if !host_ok {
			return Err("the host has characters a host cannot have (write non-ASCII names in \
			            their xn-- form)");
		}
		let port = match port {
			None => PortText::None,
			Some("*") => PortText::Any,
			Some(digits) if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) => {
				PortText::Given(digits.parse().map_err(|_| "the port is over 65535")?)
			}
			Some(_) => return Err("the port is not a number or *"),
		};
		Ok(Parts { scheme: scheme.to_ascii_lowercase(), host: host.to_ascii_lowercase(), port })
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	fn allows(policy: &Cors, origin: &str) -> bool {
		policy.allows(origin.as_bytes())
	}

	#[test]
	fn the_default_matches_local_pages_on_any_port_and_nothing_that_only_starts_alike() {
		let policy = Cors::substrate_default();
		assert!(matches!(&policy, Cors::List(list) if list.len() == 5), "{policy:?}");
		for origin in [
			"http://localhost",
			"http://localhost:3000",
			"http://127.0.0.1:8080",
			"https://localhost:443",
			"https://127.0.0.1",
			"https://polkadot.js.org",
			"https://polkadot.js.org:443",
			"HTTP://LOCALHOST:3000",
		] {
			assert!(allows(&policy, origin), "{origin} should be allowed");
		}
		for origin in [
			"http://localhost.evil.com",
			"http://127.0.0.1.nip.io",
			"http://localhost.evil.com:3000",
			"https://polkadot.js.org.evil.com",
			"https://polkadot.js.org:8443",
			"http://polkadot.js.org",
			"ws://localhost",
			"http://localhost:abc",
			"http://localhost/",
			"null",
			"",
			"localhost",
		] {
			assert!(!allows(&policy, origin), "{origin} should be refused");
		}
	}

	#[test]
	fn an_entry_without_a_port_matches_the_default_port_only() {
		let policy = Cors::parse("http://app.example, https://secure.example:8443").unwrap();
		assert!(allows(&policy, "http://app.example"));
		assert!(allows(&policy, "http://app.example:80"));
		assert!(!allows(&policy, "http://app.example:8080"));
		assert!(!allows(&policy, "https://app.example"), "the scheme is part of the origin");
		assert!(allows(&policy, "https://secure.example:8443"));
		assert!(!allows(&policy, "https://secure.example"));
		let explicit_default = Cors::parse("https://app.example:443").unwrap();
		assert!(allows(&explicit_default, "https://app.example"));
	}

	#[test]
	fn ipv6_hosts_and_other_schemes_are_origins_too() {
		let policy = Cors::parse("http://[::1]:*,chrome-extension://abcdef").unwrap();
		assert!(allows(&policy, "http://[::1]:9000"));
		assert!(allows(&policy, "http://[::1]"));
		assert!(!allows(&policy, "http://[::2]"));
		assert!(allows(&policy, "chrome-extension://abcdef"));
		assert!(!allows(&policy, "chrome-extension://abcdef:80"), "no default port to drop");
	}

	#[test]
	fn all_anywhere_in_the_list_allows_every_origin_even_null() {
		for flag in ["all", "ALL", "*", "http://a.example,all"] {
			let policy = Cors::parse(flag).unwrap();
			assert_eq!(policy, Cors::All, "{flag}");
			assert!(allows(&policy, "null") && allows(&policy, "https://anything.example"));
		}
		assert_eq!(Cors::parse("").unwrap(), Cors::List(Vec::new()), "an empty list allows none");
	}

	#[test]
	fn an_entry_that_is_not_an_origin_is_an_error_naming_it() {
		for entry in [
			"app.example",
			"https://app.example/",
			"https://app.example/path",
			"https://user@app.example",
			"https://app.example:",
			"https://app.example:99999",
			"https://app.example:8o",
			"https://",
			"://app.example",
			"1http://app.example",
			"https://app example",
			"https://[::1",
			"https://[zz]",
			"null",
		] {
			let err = Cors::parse(&format!("http://localhost:*,{entry}")).unwrap_err();
			assert_eq!(err.entry, entry);
			let text = err.to_string();
			assert!(text.contains(&format!("{entry:?}")) && text.contains("--rpc-cors"), "{text}");
		}
	}

	#[test]
	fn the_policy_prints_as_it_would_be_written() {
		assert_eq!(
			Cors::substrate_default().to_string(),
			"http://localhost:*,http://127.0.0.1:*,https://localhost:*,https://127.0.0.1:*,\
			 https://polkadot.js.org"
		);
		assert_eq!(
			Cors::parse("HTTPS://App.Example:443").unwrap().to_string(),
			"https://app.example"
		);
		assert_eq!(Cors::All.to_string(), "all");
		assert_eq!(Cors::List(Vec::new()).to_string(), "none");
	}
}

//! Raw HTTP against a server on loopback: what JSON-RPC clients do not show (status codes,
//! CORS headers, plain-HTTP paths), and JSON-RPC calls for harnesses that need no client
//! library. Blocking; async tests call it from a blocking thread.

use crate::{Error, Result};
use serde_json::{json, Value};
use std::{
	io::{Read, Write},
	net::TcpStream,
	time::Duration,
};

/// How long an exchange waits for the server's answer.
const READ_TIMEOUT: Duration = Duration::from_secs(30);

/// An HTTP answer as it came.
#[derive(Debug)]
pub struct Answer {
	/// The status code.
	pub status: u16,
	/// The status line and header lines, lower case.
	pub headers: String,
	/// The body.
	pub body: String,
}

/// Send `request` as it is on a fresh connection to `127.0.0.1:port` and read the answer: to
/// its `Content-Length`, or to the end of the stream (a 403 to an upgrade may not close it).
pub fn try_exchange(port: u16, request: &str) -> Result<Answer> {
	let fail = |err: std::io::Error| Error::new(format!("HTTP to 127.0.0.1:{port}: {err}"));
	let mut stream = TcpStream::connect(("127.0.0.1", port)).map_err(fail)?;
	stream.set_read_timeout(Some(READ_TIMEOUT)).map_err(fail)?;
	stream.write_all(request.as_bytes()).map_err(fail)?;
	let mut response = Vec::new();
	let mut buf = [0u8; 4096];
	while let Ok(read) = stream.read(&mut buf) {
		if read == 0 {
			break;
		}
		response.extend_from_slice(&buf[..read]);
		let text = String::from_utf8_lossy(&response);
		if let Some((head, body)) = text.split_once("\r\n\r\n") {
			if content_length(head).is_some_and(|length| length == body.len()) {
				break;
			}
		}
	}
	let text = String::from_utf8_lossy(&response).to_string();
	let (head, body) = text
		.split_once("\r\n\r\n")
		.ok_or_else(|| Error::new(format!("HTTP to 127.0.0.1:{port}: no answer: {text:?}")))?;
	let status = head.split(' ').nth(1).and_then(|code| code.parse().ok()).unwrap_or(0);
	Ok(Answer { status, headers: head.to_lowercase(), body: body.to_string() })
}

/// [`try_exchange`] for tests: a failure to get an answer at all fails the test.
pub fn exchange(port: u16, request: &str) -> Answer {
	try_exchange(port, request).unwrap_or_else(|err| panic!("{err}"))
}

/// POST `body` as JSON to `/`, from `origin` if given, closing the connection after.
pub fn post(port: u16, origin: Option<&str>, body: &str) -> Answer {
	exchange(port, &post_request(port, origin, body))
}

/// `GET path`, closing the connection after.
pub fn get(port: u16, path: &str) -> Answer {
	exchange(
		port,
		&format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"),
	)
}

/// The text of a JSON POST to `/` that closes its connection.
pub fn post_request(port: u16, origin: Option<&str>, body: &str) -> String {
	let origin = origin.map(|origin| format!("Origin: {origin}\r\n")).unwrap_or_default();
	format!(
		"POST / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{origin}Content-Type: application/json\r\n\
		 Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
		body.len()
	)
}

/// The `Content-Length` in the header lines `head`.
pub fn content_length(head: &str) -> Option<usize> {
	head.lines().find_map(|line| {
		let line = line.to_ascii_lowercase();
		line.strip_prefix("content-length:")?.trim().parse().ok()
	})
}

/// One HTTP/1.1 exchange on an open `stream` (kept alive unless `close`): the response body.
/// Reads exactly the answer, so the next request can follow on the same connection.
pub fn exchange_on(
	stream: &mut TcpStream,
	method: &str,
	path: &str,
	body: &str,
	close: bool,
) -> Result<String> {
	let fail = |err: std::io::Error| Error::new(format!("HTTP exchange: {err}"));
	let connection = if close { "close" } else { "keep-alive" };
	let request = format!(
		"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
		 Content-Length: {}\r\nConnection: {connection}\r\n\r\n{body}",
		body.len()
	);
	stream.write_all(request.as_bytes()).map_err(fail)?;
	let head = read_head(stream)?;
	let mut body = Vec::new();
	match content_length(&head) {
		Some(length) => {
			body.resize(length, 0);
			stream.read_exact(&mut body).map_err(fail)?;
		}
		None => {
			stream.read_to_end(&mut body).map_err(fail)?;
		}
	}
	Ok(String::from_utf8_lossy(&body).into_owned())
}

/// Everything up to and including the blank line after the headers, read a byte at a time
/// so that nothing after it is taken from the stream.
pub fn read_head(stream: &mut TcpStream) -> Result<String> {
	let mut head = Vec::new();
	let mut byte = [0u8; 1];
	while !head.ends_with(b"\r\n\r\n") {
		match stream.read(&mut byte) {
			Ok(1) => head.push(byte[0]),
			Ok(_) => {
				return Err(Error::new(format!(
					"the connection closed inside the headers: {:?}",
					String::from_utf8_lossy(&head)
				)))
			}
			Err(err) => return Err(Error::new(format!("reading the headers: {err}"))),
		}
	}
	Ok(String::from_utf8_lossy(&head).into_owned())
}

/// A JSON-RPC request's text.
pub fn request_json(id: u64, method: &str, params: &Value) -> String {
	json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

/// Call `method` over HTTP on `127.0.0.1:port`: its `result`, or the `error` object's text.
pub fn rpc(port: u16, method: &str, params: Value) -> Result<Value> {
	let answer = try_exchange(port, &post_request(port, None, &request_json(1, method, &params)))?;
	let value: Value = serde_json::from_str(&answer.body).map_err(|err| {
		Error::new(format!("{method}: the answer is not JSON ({err}): {:.200}", answer.body))
	})?;
	match value.get("result") {
		Some(result) => Ok(result.clone()),
		None => Err(Error::new(format!("{method}: {value}"))),
	}
}

/// Call `method` once for each of `params`, in JSON-RPC batches of at most `batch` calls: the
/// results in order (an error object where a call failed).
pub fn rpc_batch(port: u16, method: &str, params: &[Value], batch: usize) -> Result<Vec<Value>> {
	let mut results = Vec::with_capacity(params.len());
	for chunk in params.chunks(batch.max(1)) {
		let calls: Vec<Value> = chunk
			.iter()
			.enumerate()
			.map(
				|(id, params)| json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
			)
			.collect();
		let body = Value::Array(calls).to_string();
		let answer = try_exchange(port, &post_request(port, None, &body))?;
		let answers: Vec<Value> = serde_json::from_str(&answer.body).map_err(|err| {
			Error::new(format!("{method} batch: not a JSON array ({err}): {:.200}", answer.body))
		})?;
		let mut ordered: Vec<(u64, Value)> = answers
			.into_iter()
			.map(|one| {
				let id = one["id"].as_u64().unwrap_or(u64::MAX);
				(id, one.get("result").cloned().unwrap_or_else(|| one["error"].clone()))
			})
			.collect();
		ordered.sort_by_key(|(id, _)| *id);
		if ordered.len() != chunk.len() {
			return Err(Error::new(format!(
				"{method} batch: {} answers to {} calls",
				ordered.len(),
				chunk.len()
			)));
		}
		results.extend(ordered.into_iter().map(|(_, result)| result));
	}
	Ok(results)
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn the_content_length_is_read_whatever_its_case() {
		assert_eq!(content_length("HTTP/1.1 200 OK\r\nContent-Length: 12\r\n"), Some(12));
		assert_eq!(content_length("http/1.1 200 ok\r\ncontent-length:3"), Some(3));
		assert_eq!(content_length("HTTP/1.1 200 OK\r\n"), None);
	}

	#[test]
	fn a_closed_port_is_an_error_naming_it() {
		let port = std::net::TcpListener::bind("127.0.0.1:0")
			.and_then(|listener| listener.local_addr())
			.map(|addr| addr.port())
			.unwrap();
		let err = try_exchange(port, "GET / HTTP/1.0\r\n\r\n").unwrap_err();
		assert!(err.0.contains(&port.to_string()), "{err}");
	}
}

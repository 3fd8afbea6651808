//! Raw HTTP against a server, for tests (feature `testing`): what JSON-RPC clients do not
//! show (status codes, CORS headers, plain-HTTP paths). Blocking; call it from a blocking
//! thread in async tests.

use std::{
	io::{Read, Write},
	net::TcpStream,
	time::Duration,
};

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
pub fn exchange(port: u16, request: &str) -> Answer {
	let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
	stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
	stream.write_all(request.as_bytes()).unwrap();
	let mut response = Vec::new();
	let mut buf = [0u8; 4096];
	while let Ok(read) = stream.read(&mut buf) {
		if read == 0 {
			break;
		}
		response.extend_from_slice(&buf[..read]);
		let text = String::from_utf8_lossy(&response);
		if let Some((head, body)) = text.split_once("\r\n\r\n") {
			let length = head.lines().find_map(|line| {
				line.to_lowercase().strip_prefix("content-length:").map(str::to_string)
			});
			if length.is_some_and(|length| length.trim().parse::<usize>() == Ok(body.len())) {
				break;
			}
		}
	}
	let text = String::from_utf8_lossy(&response).to_string();
	let (head, body) = text.split_once("\r\n\r\n").unwrap_or_else(|| panic!("no answer: {text:?}"));
	let status = head.split(' ').nth(1).and_then(|code| code.parse().ok()).unwrap_or(0);
	Answer { status, headers: head.to_lowercase(), body: body.to_string() }
}

/// POST `body` as JSON to `/`, from `origin` if given, closing the connection after.
pub fn post(port: u16, origin: Option<&str>, body: &str) -> Answer {
	let origin = origin.map(|origin| format!("Origin: {origin}\r\n")).unwrap_or_default();
	exchange(
		port,
		&format!(
			"POST / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{origin}Content-Type: application/json\r\n\
			 Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
			body.len()
		),
	)
}

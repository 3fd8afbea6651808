//! WebSocket by hand, for what client libraries hide: an upgrade refused for its origin, a
//! session that never sends a frame, a subscriber that never reads, a client that sends
//! without ever reading ([`flood`]). Frames are written masked,
//! as a client must; the server's are read unmasked.

use crate::{http, Error, Result};
use std::{
	io::{Read, Write},
	net::TcpStream,
};

/// The example key of RFC 6455; any valid key will do, since these clients never check the
/// server's accept value.
const KEY: &str = "dGhlIHNhbXBsZSBub25jZQ==";

/// Opcode of a text frame.
pub const TEXT: u8 = 1;
/// Opcode of a close frame.
pub const CLOSE: u8 = 8;
/// Opcode of a ping.
pub const PING: u8 = 9;
/// Opcode of a pong.
pub const PONG: u8 = 10;

/// The upgrade request for `127.0.0.1:port`, from `origin` if given.
pub fn upgrade_request(port: u16, origin: Option<&str>) -> String {
	let origin = origin.map(|origin| format!("Origin: {origin}\r\n")).unwrap_or_default();
	format!(
		"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{origin}Upgrade: websocket\r\n\
		 Connection: Upgrade\r\nSec-WebSocket-Key: {KEY}\r\nSec-WebSocket-Version: 13\r\n\r\n"
	)
}

/// Send the upgrade and read the server's answer head, whatever it is (a 403, a 101).
pub fn upgrade(stream: &mut TcpStream, port: u16, origin: Option<&str>) -> Result<String> {
	stream
		.write_all(upgrade_request(port, origin).as_bytes())
		.map_err(|err| Error::new(format!("sending the upgrade: {err}")))?;
	http::read_head(stream)
}

/// A connection to `127.0.0.1:port` upgraded to a WebSocket; an error unless the server
/// answered 101.
pub fn connect(port: u16) -> Result<TcpStream> {
	let mut stream = TcpStream::connect(("127.0.0.1", port))
		.map_err(|err| Error::new(format!("WebSocket to 127.0.0.1:{port}: {err}")))?;
	let head = upgrade(&mut stream, port, None)?;
	if !head.starts_with("HTTP/1.1 101") {
		return Err(Error::new(format!("the upgrade was refused: {head}")));
	}
	Ok(stream)
}

/// A masked client frame carrying `payload`: `first` is FIN and the opcode (`0x81`: a whole
/// text message).
pub fn frame(first: u8, payload: &[u8]) -> Vec<u8> {
	let mask = [0x5au8, 0x17, 0xc3, 0x88];
	let mut frame = match payload.len() {
		short @ 0..=125 => vec![first, 0x80 | short as u8],
		long @ 126..=0xffff => {
			let length = (long as u16).to_be_bytes();
			vec![first, 0x80 | 126, length[0], length[1]]
		}
		long => {
			let mut frame = vec![first, 0x80 | 127];
			frame.extend((long as u64).to_be_bytes());
			frame
		}
	};
	frame.extend_from_slice(&mask);
	frame.extend(payload.iter().enumerate().map(|(at, byte)| byte ^ mask[at % 4]));
	frame
}

/// A whole text message as one masked frame.
pub fn text(message: &str) -> Vec<u8> {
	frame(0x80 | TEXT, message.as_bytes())
}

/// The next whole message from the server (continuations joined; a control frame between
/// fragments comes on its own): its opcode and payload.
pub fn read_message(stream: &mut TcpStream) -> std::io::Result<(u8, Vec<u8>)> {
	let mut payload = Vec::new();
	let mut opcode = None;
	loop {
		let mut head = [0u8; 2];
		stream.read_exact(&mut head)?;
		let length = match head[1] & 0x7f {
			126 => {
				let mut bytes = [0u8; 2];
				stream.read_exact(&mut bytes)?;
				u16::from_be_bytes(bytes) as usize
			}
			127 => {
				let mut bytes = [0u8; 8];
				stream.read_exact(&mut bytes)?;
				u64::from_be_bytes(bytes) as usize
			}
			short => short as usize,
		};
		let start = payload.len();
		payload.resize(start + length, 0);
		stream.read_exact(&mut payload[start..])?;
		let code = head[0] & 0x0f;
		if code >= CLOSE {
			return Ok((code, payload.split_off(start)));
		}
		let opcode = *opcode.get_or_insert(code);
		if head[0] & 0x80 != 0 {
			return Ok((opcode, payload));
		}
	}
}

/// The next text message from the server, past pings and pongs: the server pings a session
/// as soon as it opens, so a ping can come before the answer to a first request. A close
/// frame is an error that says so.
pub fn read_text(stream: &mut TcpStream) -> std::io::Result<Vec<u8>> {
	loop {
		match read_message(stream)? {
			(TEXT, payload) => return Ok(payload),
			(CLOSE, payload) => {
				return Err(std::io::Error::new(
					std::io::ErrorKind::ConnectionAborted,
					format!(
						"the server closed the session: {:?}",
						String::from_utf8_lossy(&payload)
					),
				))
			}
			_ => {}
		}
	}
}

/// How a [`flood`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flooded {
	/// Whole messages written.
	pub sent: usize,
	/// Whether it stopped because the server read nothing for `stall` (rather than after
	/// `most` messages).
	pub stalled: bool,
}

/// Write `message` over `stream` (an upgraded WebSocket) as fast as the server reads it,
/// never reading an answer, until `most` messages are written or the server has read nothing
/// for `stall`; `progress` is called with the messages written about every 10,000. An error
/// if the connection fails.
pub fn flood(
	stream: &mut TcpStream,
	message: &str,
	most: usize,
	stall: std::time::Duration,
	mut progress: impl FnMut(usize),
) -> Result<Flooded> {
	use std::time::{Duration, Instant};
	stream
		.set_nonblocking(true)
		.map_err(|err| Error::new(format!("a nonblocking flood socket: {err}")))?;
	let frame = text(message);
	let chunk: Vec<u8> = frame.iter().copied().cycle().take(frame.len() * 1000).collect();
	let (mut written_bytes, mut at, mut last_progress) = (0usize, 0usize, Instant::now());
	let mut reported = 0;
	loop {
		let sent = written_bytes / frame.len();
		if sent >= most {
			return Ok(Flooded { sent, stalled: false });
		}
		if sent >= reported + 10_000 {
			reported = sent;
			progress(sent);
		}
		match stream.write(&chunk[at..]) {
			Ok(written) => {
				written_bytes += written;
				at = (at + written) % chunk.len();
				last_progress = Instant::now();
			}
			Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => {
				// The socket buffers are full: the server is not reading.
				if last_progress.elapsed() > stall {
					return Ok(Flooded { sent, stalled: true });
				}
				std::thread::sleep(Duration::from_millis(20));
			}
			Err(err) => {
				return Err(Error::new(format!("the flood failed after {sent} messages: {err}")))
			}
		}
	}
}

#[cfg(test)]
mod tests {
	use super::*;
	use std::net::TcpListener;

	#[test]
	fn frames_carry_their_length_in_the_short_medium_and_long_forms() {
		assert_eq!(&frame(0x81, b"hi")[..2], &[0x81, 0x82]);
		assert_eq!(&frame(0x81, &[0; 300])[..4], &[0x81, 0x80 | 126, 1, 44]);
		assert_eq!(&frame(0x81, &[0; 70_000])[..2], &[0x81, 0x80 | 127]);
		// Unmasking gives the payload back.
		let framed = text("hello");
		let mask = &framed[2..6];
		let clear: Vec<u8> =
			framed[6..].iter().enumerate().map(|(at, byte)| byte ^ mask[at % 4]).collect();
		assert_eq!(clear, b"hello");
	}

	#[test]
	fn the_upgrade_names_its_origin_only_when_given() {
		assert!(upgrade_request(9944, Some("http://app.example"))
			.contains("Origin: http://app.example\r\n"));
		assert!(!upgrade_request(9944, None).contains("Origin"));
	}

	/// A connection to a server that writes these whole frames (unmasked, each a FIN frame
	/// with its opcode and a short payload) and keeps the connection open for a second.
	fn serving(frames: &'static [(u8, &'static [u8])]) -> TcpStream {
		let listener = TcpListener::bind(("127.0.0.1", 0)).unwrap();
		let port = listener.local_addr().unwrap().port();
		std::thread::spawn(move || {
			let (mut stream, _) = listener.accept().unwrap();
			for (opcode, payload) in frames {
				stream.write_all(&[0x80 | opcode, payload.len() as u8]).unwrap();
				stream.write_all(payload).unwrap();
			}
			std::thread::sleep(std::time::Duration::from_secs(1));
		});
		TcpStream::connect(("127.0.0.1", port)).unwrap()
	}

	#[test]
	fn a_ping_before_the_answer_is_passed_over_and_the_answer_read() {
		let mut stream = serving(&[(PING, b""), (TEXT, b"{\"result\":\"world\"}")]);
		assert_eq!(read_text(&mut stream).unwrap(), b"{\"result\":\"world\"}");
	}

	#[test]
	fn a_close_instead_of_the_answer_is_an_error() {
		let mut stream = serving(&[(PING, b""), (CLOSE, b"")]);
		let err = read_text(&mut stream).unwrap_err();
		assert_eq!(err.kind(), std::io::ErrorKind::ConnectionAborted, "{err}");
	}
}

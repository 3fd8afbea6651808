//! The two clients the node is driven with, written out on plain sockets so that nothing
//! between the harness and the node buffers or reads ahead: HTTP/1.1 exchanges (kept alive or
//! not) and WebSocket connections that subscribe, and either read every message or never read.

use std::{
	io::{Read, Write},
	net::{Shutdown, TcpStream},
};

/// One HTTP/1.1 exchange on `stream` (kept alive unless `close`); the response body.
pub fn exchange(
	stream: &mut TcpStream,
	method: &str,
	path: &str,
	body: &str,
	close: bool,
) -> Result<String, String> {
	let connection = if close { "close" } else { "keep-alive" };
	let request = format!(
		"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
		 Content-Length: {}\r\nConnection: {connection}\r\n\r\n{body}",
		body.len()
	);
	stream.write_all(request.as_bytes()).map_err(|err| err.to_string())?;
	let mut head = Vec::new();
	let mut byte = [0u8; 1];
	while !head.ends_with(b"\r\n\r\n") {
		stream.read_exact(&mut byte).map_err(|err| format!("reading the response: {err}"))?;
		head.push(byte[0]);
	}
	let head = String::from_utf8_lossy(&head).to_lowercase();
	let length = head
		.lines()
		.find_map(|line| line.strip_prefix("content-length:"))
		.and_then(|value| value.trim().parse::<usize>().ok());
	let mut body = Vec::new();
	match length {
		Some(length) => {
			body.resize(length, 0);
			stream.read_exact(&mut body).map_err(|err| err.to_string())?;
		}
		None => {
			stream.read_to_end(&mut body).map_err(|err| err.to_string())?;
		}
	}
	Ok(String::from_utf8_lossy(&body).into_owned())
}

/// What a subscribing client does with each text message the node sends it.
pub type Reader = Box<dyn FnMut(&[u8]) + Send>;

/// A WebSocket connection with `count` subscriptions on `filter` (JSON). With `reader`, a
/// thread reads everything the node sends and hands each text message to it; without, nothing
/// past the handshake is ever read.
pub fn subscriber(
	port: u16,
	count: usize,
	filter: &str,
	reader: Option<Reader>,
) -> Result<TcpStream, String> {
	let mut stream = TcpStream::connect(("127.0.0.1", port)).map_err(|err| err.to_string())?;
	let handshake = format!(
		"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
		 Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
	);
	stream.write_all(handshake.as_bytes()).map_err(|err| err.to_string())?;
	let mut response = Vec::new();
	let mut byte = [0u8; 1];
	while !response.ends_with(b"\r\n\r\n") {
		stream.read_exact(&mut byte).map_err(|err| err.to_string())?;
		response.push(byte[0]);
	}
	if !response.starts_with(b"HTTP/1.1 101") {
		return Err(format!("handshake refused: {}", String::from_utf8_lossy(&response)));
	}
	if let Some(mut reader) = reader {
		let mut incoming = stream.try_clone().map_err(|err| err.to_string())?;
		std::thread::spawn(move || {
			let mut pong = incoming.try_clone().ok();
			// Ends when the connection closes (the benchmark shuts it down).
			while let Ok((opcode, payload)) = read_message(&mut incoming) {
				match opcode {
					1 => reader(&payload),
					// Answer pings, or the node closes the connection after a minute.
					9 => {
						if let Some(pong) = pong.as_mut() {
							let _ = pong.write_all(&frame(0x8a, &payload));
						}
					}
					8 => break,
					_ => {}
				}
			}
		});
	}
	let mut frames = Vec::new();
	for id in 0..count {
		let request = format!(
			r#"{{"jsonrpc":"2.0","id":{id},"method":"statement_subscribeStatement","params":[{filter}]}}"#,
		);
		frames.extend(frame(0x81, request.as_bytes()));
	}
	stream.write_all(&frames).map_err(|err| err.to_string())?;
	Ok(stream)
}

/// A masked client frame (`first`: FIN and opcode) carrying `payload`.
fn frame(first: u8, payload: &[u8]) -> Vec<u8> {
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

/// The next whole message from the server (unmasked frames, continuations joined): its opcode
/// and payload.
fn read_message(stream: &mut TcpStream) -> std::io::Result<(u8, Vec<u8>)> {
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
		// Control frames may arrive between a message's fragments.
		if code >= 8 {
			return Ok((code, payload.split_off(start)));
		}
		let opcode = *opcode.get_or_insert(code);
		if head[0] & 0x80 != 0 {
			return Ok((opcode, payload));
		}
	}
}

/// Whether `needle` occurs in `message` (no copy: the readers run beside the node).
pub fn contains(message: &[u8], needle: &[u8]) -> bool {
	message.windows(needle.len()).any(|window| window == needle)
}

/// Close `streams`, which ends their reader threads.
pub fn close(streams: Vec<TcpStream>) {
	for stream in streams {
		let _ = stream.shutdown(Shutdown::Both);
	}
}

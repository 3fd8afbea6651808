//! The subscribing client the node is driven with, on a plain socket so that nothing between
//! the harness and the node buffers or reads ahead: WebSocket connections (the workspace's
//! `ws` helpers) that subscribe, and either read every message or never read.

pub use statement_store_benches::client::contains;
use statement_test_support::ws;
use std::{
	io::Write,
	net::{Shutdown, TcpStream},
};

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
	let mut stream = ws::connect(port)?;
	if let Some(mut reader) = reader {
		let mut incoming = stream.try_clone().map_err(|err| err.to_string())?;
		std::thread::spawn(move || {
			let mut pong = incoming.try_clone().ok();
			// Ends when the connection closes (the benchmark shuts it down).
			while let Ok((opcode, payload)) = ws::read_message(&mut incoming) {
				match opcode {
					ws::TEXT => reader(&payload),
					// Answer pings, or the node closes the connection after a minute.
					ws::PING => {
						if let Some(pong) = pong.as_mut() {
							let _ = pong.write_all(&ws::frame(0x80 | ws::PONG, &payload));
						}
					}
					ws::CLOSE => break,
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
		frames.extend(ws::text(&request));
	}
	stream.write_all(&frames).map_err(|err| err.to_string())?;
	Ok(stream)
}

/// Close `streams`, which ends their reader threads.
pub fn close(streams: Vec<TcpStream>) {
	for stream in streams {
		let _ = stream.shutdown(Shutdown::Both);
	}
}

//! WebSocket JSON-RPC on a plain socket (the workspace's `ws` helpers): a thread reads
//! everything the node sends, stamps it with the time it came and hands it to a handler,
//! so that the harness measures when the node's messages arrive, not when it got to them.

use serde_json::Value;
use statement_test_support::ws;
use std::{
	io::Write,
	net::{Shutdown, TcpStream},
	sync::mpsc::{channel, Receiver, RecvTimeoutError},
	time::{Duration, Instant},
};

/// What the reading thread does with each text message, and when it came.
pub type Handler = Box<dyn FnMut(Instant, &[u8]) + Send>;

/// A WebSocket connection to the node; the reading thread ends when it is closed.
pub struct Socket {
	writer: TcpStream,
}

impl Socket {
	/// Connect to the node's RPC port; `handler` gets each text message.
	pub fn connect(port: u16, mut handler: Handler) -> Result<Socket, String> {
		let writer = ws::connect(port).map_err(String::from)?;
		let mut incoming = writer.try_clone().map_err(|err| err.to_string())?;
		let mut pong = writer.try_clone().map_err(|err| err.to_string())?;
		std::thread::spawn(move || {
			while let Ok((opcode, payload)) = ws::read_message(&mut incoming) {
				match opcode {
					ws::TEXT => handler(Instant::now(), &payload),
					// Answer pings, or the node closes the connection after a minute.
					ws::PING => {
						let _ = pong.write_all(&ws::frame(0x80 | ws::PONG, &payload));
					}
					ws::CLOSE => break,
					_ => {}
				}
			}
		});
		Ok(Socket { writer })
	}

	/// Connect, with every message parsed and sent to the receiver returned.
	pub fn with_channel(port: u16) -> Result<(Socket, Receiver<(Instant, Value)>), String> {
		let (sender, receiver) = channel();
		let handler: Handler = Box::new(move |at, message| {
			if let Ok(value) = serde_json::from_slice(message) {
				let _ = sender.send((at, value));
			}
		});
		Ok((Socket::connect(port, handler)?, receiver))
	}

	/// Send `messages`, each a text frame, in one write.
	pub fn send_all(&mut self, messages: &[String]) -> Result<(), String> {
		let frames: Vec<u8> = messages.iter().flat_map(|message| ws::text(message)).collect();
		self.writer.write_all(&frames).map_err(|err| format!("sending to the node: {err}"))
	}

	/// Send one message.
	pub fn send(&mut self, message: &str) -> Result<(), String> {
		self.send_all(&[message.to_string()])
	}

	/// Close the connection, which ends its reading thread.
	pub fn close(self) {
		let _ = self.writer.shutdown(Shutdown::Both);
	}
}

/// A JSON-RPC request.
pub fn request(id: u64, method: &str, params: Value) -> String {
	serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

/// Messages from `receiver` until the answer to request `id`, within `within`; the others
/// go to `other`. The answer's result, or its error as an error.
pub fn answer(
	receiver: &Receiver<(Instant, Value)>,
	id: u64,
	within: Duration,
	mut other: impl FnMut(Instant, Value),
) -> Result<Value, String> {
	let deadline = Instant::now() + within;
	loop {
		let left = deadline.saturating_duration_since(Instant::now());
		let (at, message) = match receiver.recv_timeout(left) {
			Ok(message) => message,
			Err(RecvTimeoutError::Timeout) => {
				return Err(format!("no answer to request {id} within {within:?}"))
			}
			Err(RecvTimeoutError::Disconnected) => {
				return Err(format!("the connection closed before answering request {id}"))
			}
		};
		if message.get("id").and_then(Value::as_u64) != Some(id) {
			other(at, message);
			continue;
		}
		if let Some(error) = message.get("error") {
			return Err(format!("request {id}: {error}"));
		}
		return Ok(message["result"].clone());
	}
}

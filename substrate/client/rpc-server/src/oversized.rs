//! Requests whose declared body is over the limit get HTTP 413 with a JSON-RPC error, after
//! the body has been read and dropped.
//!
//! Answering at once and closing would leave the rest of the body unread, and a socket closed
//! with unread data sends a TCP reset: a client still sending its body sees "connection reset"
//! and never reads the answer. So the body is read through (without keeping it) up to
//! [`MOST_DRAINED`] bytes, and the connection stays usable. A client that sent
//! `Expect: 100-continue` has not sent its body yet and is answered at once. Bodies without a
//! `Content-Length` are cut off by jsonrpsee at the limit, which answers 413 too.

use http::{header, HeaderValue, Request};
use hyper::body::{Body, Bytes};
use jsonrpsee::{
	core::BoxError,
	server::{http::response::too_large, HttpResponse},
};
use std::{
	future::Future,
	pin::Pin,
	task::{Context, Poll},
};

/// Most bytes of an oversized body read to answer it cleanly; past this the answer is sent
/// and the connection closed.
pub const MOST_DRAINED: u64 = 64 * 1024 * 1024;

/// HTTP layer answering oversized requests, for a body limit of `limit` bytes.
#[derive(Clone)]
pub struct OversizedLayer {
	limit: u32,
}

impl OversizedLayer {
	/// The layer for bodies of at most `limit` bytes.
	pub fn new(limit: u32) -> Self {
		OversizedLayer { limit }
	}
}

impl<S> tower::Layer<S> for OversizedLayer {
	type Service = Oversized<S>;

	fn layer(&self, inner: S) -> Oversized<S> {
		Oversized { limit: self.limit, inner }
	}
}

/// The service [`OversizedLayer`] makes.
#[derive(Clone)]
pub struct Oversized<S> {
	limit: u32,
	inner: S,
}

impl<S, B> tower::Service<Request<B>> for Oversized<S>
where
	S: tower::Service<Request<B>, Response = HttpResponse, Error = BoxError>,
	S::Future: Send + 'static,
	B: Body<Data = Bytes> + Send + Unpin + 'static,
{
	type Response = HttpResponse;
	type Error = BoxError;
	type Future = Pin<Box<dyn Future<Output = Result<HttpResponse, BoxError>> + Send>>;

	fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
		self.inner.poll_ready(cx)
	}

	fn call(&mut self, request: Request<B>) -> Self::Future {
		// An unreadable length is not ours to judge: hyper refuses a malformed one, and
		// jsonrpsee still enforces the limit on whatever body arrives.
		let declared = request
			.headers()
			.get(header::CONTENT_LENGTH)
			.and_then(|value| value.to_str().ok()?.trim().parse::<u64>().ok());
		let Some(declared) = declared.filter(|declared| *declared > u64::from(self.limit)) else {
			return Box::pin(self.inner.call(request));
		};
		let expects_continue = request
			.headers()
			.get(header::EXPECT)
			.is_some_and(|value| value.as_bytes().eq_ignore_ascii_case(b"100-continue"));
		let limit = self.limit;
		Box::pin(async move {
			let drained = !expects_continue && declared <= MOST_DRAINED && {
				let mut body = request.into_body();
				drain(&mut body).await
			};
			let mut response = too_large(limit);
			if !drained {
				response
					.headers_mut()
					.insert(header::CONNECTION, HeaderValue::from_static("close"));
			}
			Ok(response)
		})
	}
}

/// Read `body` to its end, keeping nothing; whether it ended within [`MOST_DRAINED`] bytes.
async fn drain<B: Body<Data = Bytes> + Unpin>(body: &mut B) -> bool {
	let mut read = 0u64;
	loop {
		match std::future::poll_fn(|cx| Pin::new(&mut *body).poll_frame(cx)).await {
			None => return true,
			Some(Err(_)) => return false,
			Some(Ok(frame)) => {
				read += frame.data_ref().map_or(0, |data| data.len() as u64);
				if read > MOST_DRAINED {
					return false;
				}
			}
		}
	}
}

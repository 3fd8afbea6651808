//! The CORS policy at the HTTP level: requests from origins the policy does not allow are
//! refused with 403, and allowed ones get CORS headers.
//!
//! CORS headers alone only stop a page from reading answers; the request itself still runs,
//! and a WebSocket is not subject to CORS at all: any page could open one and call
//! `statement_remove`. So, as Substrate nodes did before they moved to tower-http, a request
//! or WebSocket upgrade carrying an `Origin` the policy does not allow is answered 403 before
//! anything runs, preflights (`OPTIONS`) included. Requests without an `Origin` are not from a
//! browser page and are served.

use crate::{
	intercept::{Answer, Interceptor},
	origin::Cors,
};
use http::{header, HeaderValue, Request, Response, StatusCode};
use jsonrpsee::server::{HttpBody, HttpResponse};
use std::sync::Arc;
use tower_http::cors::{AllowOrigin, Any, CorsLayer};

/// Most bytes of a refused origin repeated in the answer.
const MAX_ECHOED: usize = 200;

/// The tower-http layer that answers allowed preflights and adds CORS headers for `cors`.
pub fn headers_layer(cors: &Arc<Cors>) -> CorsLayer {
	let base = CorsLayer::new().allow_methods(Any).allow_headers(Any);
	match cors.as_ref() {
		Cors::All => base.allow_origin(Any),
		Cors::List(_) => {
			let cors = cors.clone();
			base.allow_origin(AllowOrigin::predicate(move |origin, _| {
				cors.allows(origin.as_bytes())
			}))
		}
	}
}

/// Answers 403 to requests whose `Origin` the policy does not allow (an [`Interceptor`]).
#[derive(Clone)]
pub struct OriginGuard {
	cors: Arc<Cors>,
}

impl OriginGuard {
	/// The guard for `cors`.
	pub fn new(cors: Arc<Cors>) -> Self {
		OriginGuard { cors }
	}
}

impl Interceptor for OriginGuard {
	fn intercept<B>(&self, request: &Request<B>) -> Option<Answer> {
		// Every `Origin` must pass: a browser sends one, so several are not a browser's doing.
		let refused = request
			.headers()
			.get_all(header::ORIGIN)
			.iter()
			.find(|origin| !self.cors.allows(origin.as_bytes()))?;
		let answer = forbidden(refused);
		Some(Box::pin(async move { answer }))
	}
}

/// The 403 for `origin`: what was refused and how to allow it.
fn forbidden(origin: &HeaderValue) -> HttpResponse {
	let shown: String =
		String::from_utf8_lossy(origin.as_bytes()).chars().take(MAX_ECHOED).collect();
	log::debug!("RPC: refused a request from origin {shown:?}, not allowed by --rpc-cors");
	let body = format!(
		"Origin {shown} is not allowed to use this node's RPC. Start the node with --rpc-cors \
		 listing it (comma-separated origins such as https://app.example or \
		 http://localhost:*), or --rpc-cors all to allow any.\n"
	);
	let mut response = Response::new(HttpBody::from(body));
	*response.status_mut() = StatusCode::FORBIDDEN;
	let headers = response.headers_mut();
	headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
	// The origin is echoed: keep a browser from reading the answer as anything but text.
	headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
	response
}

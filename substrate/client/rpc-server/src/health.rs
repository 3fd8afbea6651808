//! `GET /health` and `GET /health/readiness`, as a Substrate node answers them, for load
//! balancers and orchestrators that probe over plain HTTP.
//!
//! - `/health`: 200 with the `system_health` result as JSON,
//!   `{"peers":N,"isSyncing":false,"shouldHavePeers":B}` (`B`: boot or reserved nodes are
//!   configured).
//! - `/health/readiness`: 200 when the node has a peer and is not syncing, else 500; empty body.
//!
//! Both ask the registered `system_health`, so the answers never drift from the RPC method.
//! Other paths and methods go on to jsonrpsee.

use crate::intercept::{Answer, Interceptor};
use http::{header, HeaderValue, Method, Request, Response, StatusCode};
use jsonrpsee::{
	core::EmptyServerParams,
	server::{HttpBody, HttpResponse, Methods},
};

/// Answers the health endpoints from `system_health` in the node's methods (an
/// [`Interceptor`]).
#[derive(Clone)]
pub struct HealthProbe {
	methods: Methods,
}

impl HealthProbe {
	/// The probe asking `methods` for `system_health`.
	pub fn new(methods: Methods) -> Self {
		HealthProbe { methods }
	}
}

/// Which endpoint was asked for.
#[derive(Clone, Copy)]
enum Probe {
	Health,
	Readiness,
}

impl Interceptor for HealthProbe {
	fn intercept<B>(&self, request: &Request<B>) -> Option<Answer> {
		let probe = match (request.method(), request.uri().path()) {
			(&Method::GET, "/health") => Probe::Health,
			(&Method::GET, "/health/readiness") => Probe::Readiness,
			_ => return None,
		};
		let methods = self.methods.clone();
		Some(Box::pin(async move {
			let health = methods.call::<_, SystemHealth>("system_health", EmptyServerParams::new());
			let health = match health.await {
				Ok(health) => health,
				Err(err) => {
					log::debug!("GET /health: system_health failed: {err}");
					return answer(StatusCode::INTERNAL_SERVER_ERROR, HttpBody::empty());
				}
			};
			match probe {
				Probe::Health => match serde_json::to_string(&health) {
					Ok(json) => answer(StatusCode::OK, HttpBody::from(json)),
					Err(_) => answer(StatusCode::INTERNAL_SERVER_ERROR, HttpBody::empty()),
				},
				Probe::Readiness if health.is_ready() => answer(StatusCode::OK, HttpBody::empty()),
				Probe::Readiness => answer(StatusCode::INTERNAL_SERVER_ERROR, HttpBody::empty()),
			}
		}))
	}
}

/// `system_health`'s answer, its fields in Substrate's order.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct SystemHealth {
	peers: u64,
	is_syncing: bool,
	should_have_peers: bool,
}

impl SystemHealth {
	/// Substrate's rule: ready once the node has a peer and is not syncing.
	fn is_ready(&self) -> bool {
		self.peers > 0 && !self.is_syncing
	}
}

fn answer(status: StatusCode, body: HttpBody) -> HttpResponse {
	let mut response = Response::new(body);
	*response.status_mut() = status;
	response
		.headers_mut()
		.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json; charset=utf-8"));
	response
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn ready_needs_a_peer_and_no_sync() {
		let health =
			|peers, is_syncing| SystemHealth { peers, is_syncing, should_have_peers: true };
		assert!(health(1, false).is_ready());
		assert!(!health(0, false).is_ready());
		assert!(!health(3, true).is_ready());
	}

	#[test]
	fn the_health_body_keeps_substrate_field_order() {
		let health = SystemHealth { peers: 2, is_syncing: false, should_have_peers: true };
		assert_eq!(
			serde_json::to_string(&health).unwrap(),
			r#"{"peers":2,"isSyncing":false,"shouldHavePeers":true}"#
		);
	}
}

//! Subscriptions need a WebSocket: a subscription method called over plain HTTP gets an error
//! that says so, instead of jsonrpsee's bare `-32603 Internal error`.
//!
//! An HTTP layer labels each request with its [`Transport`]; jsonrpsee hands the request's
//! extensions to every call it carries (every call of a WebSocket, too), where an RPC
//! middleware refuses subscription methods on plain HTTP. Which methods are subscriptions is
//! read from the registered methods themselves, so a new subscription is covered unnamed.

use http::{header, HeaderValue, Request};
use jsonrpsee::{
	core::middleware::{Batch, BatchEntry, BatchEntryErr, Notification, RpcServiceT},
	server::{ws::is_upgrade_request, MethodCallback, MethodResponse, Methods},
	types::{ErrorObjectOwned, Request as RpcRequest},
};
use std::{
	collections::HashSet,
	future::Future,
	sync::Arc,
	task::{Context, Poll},
};

/// JSON-RPC error code for a subscription method called over plain HTTP: the method exists but
/// is not available there ("Method not found": "does not exist / is not available").
pub const SUBSCRIPTION_OVER_HTTP_CODE: i32 = -32601;

/// How a request reached the server, as the HTTP layer saw it.
#[derive(Clone, Debug)]
pub enum Transport {
	/// A plain HTTP request; `host` is its `Host`, to name the WebSocket address in errors.
	Http {
		/// The `Host` the client used, if it sent one (kept as the header value: it is read
		/// only when a subscription is refused).
		host: Option<HeaderValue>,
	},
	/// A WebSocket upgrade, and every call made over that WebSocket.
	WebSocket,
}

/// HTTP layer that labels every request with its [`Transport`].
#[derive(Clone, Copy)]
pub struct TransportLayer;

impl<S> tower::Layer<S> for TransportLayer {
	type Service = Label<S>;

	fn layer(&self, inner: S) -> Label<S> {
		Label(inner)
	}
}

/// The service [`TransportLayer`] makes.
#[derive(Clone)]
pub struct Label<S>(S);

impl<S, B> tower::Service<Request<B>> for Label<S>
where
	S: tower::Service<Request<B>>,
{
	type Response = S::Response;
	type Error = S::Error;
	type Future = S::Future;

	fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
		self.0.poll_ready(cx)
	}

	fn call(&mut self, mut request: Request<B>) -> S::Future {
		let transport = if is_upgrade_request(&request) {
			Transport::WebSocket
		} else {
			// HTTP/2 carries the host in the URI instead.
			let host = request.headers().get(header::HOST).cloned().or_else(|| {
				let authority = request.uri().authority()?;
				HeaderValue::from_str(authority.as_str()).ok()
			});
			Transport::Http { host }
		};
		request.extensions_mut().insert(transport);
		self.0.call(request)
	}
}

/// The names of every subscription and unsubscription method in `methods`.
pub fn subscription_methods(methods: &Methods) -> HashSet<&'static str> {
	methods
		.method_names()
		.filter(|name| {
			matches!(
				methods.method(name),
				Some(MethodCallback::Subscription(_) | MethodCallback::Unsubscription(_))
			)
		})
		.collect()
}

/// RPC middleware layer refusing subscription methods called over plain HTTP.
#[derive(Clone)]
pub struct SubscriptionsNeedWebSocketLayer {
	subscriptions: Arc<HashSet<&'static str>>,
}

impl SubscriptionsNeedWebSocketLayer {
	/// The layer refusing the methods in `subscriptions` (see [`subscription_methods`]).
	pub fn new(subscriptions: HashSet<&'static str>) -> Self {
		SubscriptionsNeedWebSocketLayer { subscriptions: Arc::new(subscriptions) }
	}
}

impl<S> tower::Layer<S> for SubscriptionsNeedWebSocketLayer {
	type Service = SubscriptionsNeedWebSocket<S>;

	fn layer(&self, inner: S) -> SubscriptionsNeedWebSocket<S> {
		SubscriptionsNeedWebSocket { subscriptions: self.subscriptions.clone(), inner }
	}
}

/// The service [`SubscriptionsNeedWebSocketLayer`] makes.
#[derive(Clone)]
pub struct SubscriptionsNeedWebSocket<S> {
	subscriptions: Arc<HashSet<&'static str>>,
	inner: S,
}

impl<S> SubscriptionsNeedWebSocket<S> {
	/// The error for calling `method` with `extensions`, if it is a subscription on plain HTTP.
	fn refusal(&self, method: &str, extensions: &http::Extensions) -> Option<ErrorObjectOwned> {
		match extensions.get::<Transport>() {
			Some(Transport::Http { host }) => self.refusal_over_http(method, host.as_ref()),
			_ => None,
		}
	}

	/// The error for calling `method` over plain HTTP to `host`, if it is a subscription.
	fn refusal_over_http(
		&self,
		method: &str,
		host: Option<&HeaderValue>,
	) -> Option<ErrorObjectOwned> {
		if !self.subscriptions.contains(method) {
			return None;
		}
		let host = host.and_then(|host| host.to_str().ok()).unwrap_or("HOST:PORT");
		let address = format!("ws://{host}");
		Some(ErrorObjectOwned::owned(
			SUBSCRIPTION_OVER_HTTP_CODE,
			format!(
				"{method} is a subscription method: subscriptions need a WebSocket connection; \
				 connect over WebSocket ({address}) instead of HTTP"
			),
			None::<()>,
		))
	}
}

impl<S> RpcServiceT for SubscriptionsNeedWebSocket<S>
where
	S: RpcServiceT<
			MethodResponse = MethodResponse,
			BatchResponse = MethodResponse,
			NotificationResponse = MethodResponse,
		> + Send
		+ Sync,
{
	type MethodResponse = MethodResponse;
	type NotificationResponse = MethodResponse;
	type BatchResponse = MethodResponse;

	fn call<'a>(
		&self,
		request: RpcRequest<'a>,
	) -> impl Future<Output = MethodResponse> + Send + 'a {
		let next = match self.refusal(request.method_name(), request.extensions()) {
			Some(error) => {
				Err(MethodResponse::error(request.id, error).with_extensions(request.extensions))
			}
			None => Ok(self.inner.call(request)),
		};
		async move {
			match next {
				Ok(call) => call.await,
				Err(refused) => refused,
			}
		}
	}

	fn batch<'a>(&self, mut batch: Batch<'a>) -> impl Future<Output = MethodResponse> + Send + 'a {
		// Only plain HTTP batches are looked through; a WebSocket's pass untouched.
		if let Some(Transport::Http { host }) = batch.extensions().get::<Transport>() {
			let host = host.clone();
			for entry in batch.iter_mut() {
				let refusal = match entry {
					Ok(BatchEntry::Call(request)) => self
						.refusal_over_http(request.method_name(), host.as_ref())
						.map(|error| BatchEntryErr::new(request.id.clone(), error)),
					_ => None,
				};
				if let Some(refusal) = refusal {
					*entry = Err(refusal);
				}
			}
		}
		self.inner.batch(batch)
	}

	fn notification<'a>(
		&self,
		notification: Notification<'a>,
	) -> impl Future<Output = MethodResponse> + Send + 'a {
		self.inner.notification(notification)
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	fn guard(methods: &[&'static str]) -> SubscriptionsNeedWebSocket<()> {
		let layer = SubscriptionsNeedWebSocketLayer::new(methods.iter().copied().collect());
		SubscriptionsNeedWebSocket { subscriptions: layer.subscriptions, inner: () }
	}

	#[test]
	fn a_subscription_over_http_is_refused_naming_the_websocket_address() {
		let guard = guard(&["sub"]);
		let mut extensions = http::Extensions::new();
		extensions.insert(Transport::Http { host: Some(HeaderValue::from_static("node:9944")) });
		let error = guard.refusal("sub", &extensions).unwrap();
		assert_eq!(error.code(), SUBSCRIPTION_OVER_HTTP_CODE);
		assert!(error.message().contains("connect over WebSocket (ws://node:9944)"), "{error:?}");
		let error = guard.refusal_over_http("sub", None).unwrap();
		assert!(error.message().contains("ws://HOST:PORT"), "{error:?}");
	}

	#[test]
	fn other_methods_and_websocket_calls_pass() {
		let guard = guard(&["sub"]);
		let mut http = http::Extensions::new();
		http.insert(Transport::Http { host: None });
		assert!(guard.refusal("hello", &http).is_none());
		let mut websocket = http::Extensions::new();
		websocket.insert(Transport::WebSocket);
		assert!(guard.refusal("sub", &websocket).is_none());
		assert!(guard.refusal("sub", &http::Extensions::new()).is_none(), "unlabelled: not ours");
	}
}

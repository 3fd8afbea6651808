//! Tells the connection table what each connection is doing: an HTTP layer sees requests
//! arrive and upgrades to WebSocket, an RPC middleware sees JSON-RPC calls start and end.

use crate::connections::Conn;
use http::{Request, StatusCode};
use jsonrpsee::{
	core::{
		middleware::{Batch, Notification, RpcServiceT},
		BoxError,
	},
	server::HttpResponse,
	types::Request as RpcRequest,
};
use std::{
	future::Future,
	pin::Pin,
	sync::Arc,
	task::{Context, Poll},
};

/// HTTP layer for one connection: restarts its deadline when a request's headers arrive, marks
/// it upgraded when it becomes a WebSocket, and hands the connection to [`CountCalls`] through
/// the request's extensions (which jsonrpsee passes on to every call, WebSocket ones included).
#[derive(Clone)]
pub struct TrackLayer {
	conn: Arc<Conn>,
}

impl TrackLayer {
	/// The layer for `conn`.
	pub fn new(conn: Arc<Conn>) -> Self {
		TrackLayer { conn }
	}
}

impl<S> tower::Layer<S> for TrackLayer {
	type Service = Track<S>;

	fn layer(&self, inner: S) -> Track<S> {
		Track { conn: self.conn.clone(), inner }
	}
}

/// The service [`TrackLayer`] makes.
#[derive(Clone)]
pub struct Track<S> {
	conn: Arc<Conn>,
	inner: S,
}

impl<S, B> tower::Service<Request<B>> for Track<S>
where
	S: tower::Service<Request<B>, Response = HttpResponse, Error = BoxError>,
	S::Future: Send + 'static,
{
	type Response = HttpResponse;
	type Error = BoxError;
	type Future = Pin<Box<dyn Future<Output = Result<HttpResponse, BoxError>> + Send>>;

	fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
		self.inner.poll_ready(cx)
	}

	fn call(&mut self, mut request: Request<B>) -> Self::Future {
		self.conn.request_arrived();
		request.extensions_mut().insert(self.conn.clone());
		let conn = self.conn.clone();
		let response = self.inner.call(request);
		Box::pin(async move {
			let response = response.await?;
			if response.status() == StatusCode::SWITCHING_PROTOCOLS {
				conn.upgraded();
			}
			Ok(response)
		})
	}
}

/// RPC middleware layer that marks a connection busy while one of its calls runs.
#[derive(Clone, Copy)]
pub struct CountCallsLayer;

impl<S> tower::Layer<S> for CountCallsLayer {
	type Service = CountCalls<S>;

	fn layer(&self, inner: S) -> CountCalls<S> {
		CountCalls(inner)
	}
}

/// The service [`CountCallsLayer`] makes.
#[derive(Clone)]
pub struct CountCalls<S>(S);

impl<S> RpcServiceT for CountCalls<S>
where
	S: RpcServiceT + Send + Sync,
{
	type MethodResponse = S::MethodResponse;
	type NotificationResponse = S::NotificationResponse;
	type BatchResponse = S::BatchResponse;

	fn call<'a>(
		&self,
		request: RpcRequest<'a>,
	) -> impl Future<Output = Self::MethodResponse> + Send + 'a {
		let busy = request.extensions().get::<Arc<Conn>>().map(|conn| conn.call_started());
		let call = self.0.call(request);
		async move {
			let response = call.await;
			drop(busy);
			response
		}
	}

	fn batch<'a>(
		&self,
		mut batch: Batch<'a>,
	) -> impl Future<Output = Self::BatchResponse> + Send + 'a {
		let busy = batch.extensions().get::<Arc<Conn>>().map(|conn| conn.call_started());
		let call = self.0.batch(batch);
		async move {
			let response = call.await;
			drop(busy);
			response
		}
	}

	fn notification<'a>(
		&self,
		notification: Notification<'a>,
	) -> impl Future<Output = Self::NotificationResponse> + Send + 'a {
		let busy = notification.extensions().get::<Arc<Conn>>().map(|conn| conn.call_started());
		let call = self.0.notification(notification);
		async move {
			let response = call.await;
			drop(busy);
			response
		}
	}
}

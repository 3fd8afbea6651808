//! HTTP layers that answer some requests themselves and pass the rest on, written once: each
//! such layer is an [`Interceptor`] saying which requests it answers and how.

use http::Request;
use jsonrpsee::{core::BoxError, server::HttpResponse};
use std::{
	future::Future,
	pin::Pin,
	task::{Context, Poll},
};

/// An answer an interceptor gives in place of the inner service.
pub type Answer = Pin<Box<dyn Future<Output = HttpResponse> + Send>>;

/// Decides, from the request alone, whether to answer it here.
pub trait Interceptor: Clone {
	/// The answer to `request`, or `None` to pass it on.
	fn intercept<B>(&self, request: &Request<B>) -> Option<Answer>;
}

/// The tower layer for an [`Interceptor`].
#[derive(Clone)]
pub struct InterceptLayer<I>(pub I);

impl<I: Clone, S> tower::Layer<S> for InterceptLayer<I> {
	type Service = Intercept<I, S>;

	fn layer(&self, inner: S) -> Intercept<I, S> {
		Intercept { interceptor: self.0.clone(), inner }
	}
}

/// The service [`InterceptLayer`] makes.
#[derive(Clone)]
pub struct Intercept<I, S> {
	interceptor: I,
	inner: S,
}

impl<I, S, B> tower::Service<Request<B>> for Intercept<I, S>
where
	I: Interceptor,
	S: tower::Service<Request<B>, Response = HttpResponse, Error = BoxError>,
	S::Future: Send + 'static,
{
	type Response = HttpResponse;
	type Error = BoxError;
	type Future = Pin<Box<dyn Future<Output = Result<HttpResponse, BoxError>> + Send>>;

	fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
		self.inner.poll_ready(cx)
	}

	fn call(&mut self, request: Request<B>) -> Self::Future {
		match self.interceptor.intercept(&request) {
			Some(answer) => Box::pin(async move { Ok(answer.await) }),
			None => Box::pin(self.inner.call(request)),
		}
	}
}

//! The vendored litep2p's request-response (`vendor/README.md`, litep2p change 3): requests
//! sent to a peer while it is being dialled each get an answer once it connects. Before the
//! change only the last of them was sent; the others were neither answered nor reported
//! failed, so the route protocol's queries to a new peer waited out the router's deadline.

use futures::StreamExt;
use litep2p::{
	config::ConfigBuilder,
	crypto::ed25519::Keypair,
	protocol::request_response::{
		ConfigBuilder as RequestResponseConfig, DialOptions, RequestResponseEvent,
		RequestResponseHandle,
	},
	transport::tcp::config::Config as TcpConfig,
	types::protocol::ProtocolName,
	Litep2p,
};
use std::time::Duration;

/// A hang detector: three answers on loopback take milliseconds.
const WITHIN: Duration = Duration::from_secs(60);

fn node() -> (Litep2p, RequestResponseHandle) {
	let (protocol, handle) =
		RequestResponseConfig::new(ProtocolName::from("/test/route/1")).with_max_size(1024).build();
	let tcp = TcpConfig {
		listen_addresses: vec!["/ip4/127.0.0.1/tcp/0".parse().expect("an address")],
		..Default::default()
	};
	let config = ConfigBuilder::new()
		.with_keypair(Keypair::generate())
		.with_tcp(tcp)
		.with_request_response_protocol(protocol)
		.build();
	(Litep2p::new(config).expect("litep2p starts"), handle)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_sent_while_the_peer_is_dialled_is_answered() {
	let (mut asker, mut asking) = node();
	let (mut answerer, mut answering) = node();
	let peer = *answerer.local_peer_id();
	let address = answerer.listen_addresses().next().expect("a listen address").clone();
	asker.add_known_address(peer, std::iter::once(address));
	tokio::spawn(async move { while asker.next_event().await.is_some() {} });
	tokio::spawn(async move { while answerer.next_event().await.is_some() {} });
	tokio::spawn(async move {
		while let Some(event) = answering.next().await {
			if let RequestResponseEvent::RequestReceived { request_id, request, .. } = event {
				answering.send_response(request_id, request);
			}
		}
	});
	// Three requests before the connection exists: the first starts the dial.
	let sent: Vec<_> = (0..3u8)
		.map(|n| asking.try_send_request(peer, vec![n], DialOptions::Dial).expect("sent"))
		.collect();
	let mut answered = Vec::new();
	let outcome = tokio::time::timeout(WITHIN, async {
		while answered.len() < sent.len() {
			match asking.next().await {
				Some(RequestResponseEvent::ResponseReceived { request_id, response, .. }) => {
					answered.push((request_id, response))
				}
				Some(RequestResponseEvent::RequestFailed { request_id, error, .. }) => {
					return Err(format!("request {request_id:?} failed: {error:?}"))
				}
				Some(_) => {}
				None => return Err("the handle closed".to_string()),
			}
		}
		Ok(())
	})
	.await;
	assert!(
		matches!(outcome, Ok(Ok(()))),
		"{outcome:?}: {} of {} requests sent while the dial ran were answered: {answered:?}",
		answered.len(),
		sent.len()
	);
	for (id, response) in &answered {
		let n = sent.iter().position(|sent| sent == id).expect("an answer to a request sent");
		assert_eq!(response, &vec![n as u8], "each answer is its own request's");
	}
}

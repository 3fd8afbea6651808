//! The reference's affinity filter, compiled from its own source (see build.rs), and a test
//! that records its answers as vectors (src/make.rs).

#[allow(dead_code)]
pub mod config {
	include!(concat!(env!("OUT_DIR"), "/config.rs"));
}

#[allow(dead_code)]
pub mod affinity {
	include!(concat!(env!("OUT_DIR"), "/affinity.rs"));
}

#[cfg(test)]
mod make;

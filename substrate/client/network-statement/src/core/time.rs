//! The core's clock.

use std::time::Duration;

/// The core's clock: time since a fixed origin the driver chooses.
pub type Time = Duration;

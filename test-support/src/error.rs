//! The crate's one error type: what a helper could not do, in words a failing test can print.

/// Why a helper failed: a message naming what it was doing and what it saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error(pub String);

impl Error {
	/// An error saying `message`.
	pub fn new(message: impl Into<String>) -> Self {
		Error(message.into())
	}
}

impl std::fmt::Display for Error {
	fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
		f.write_str(&self.0)
	}
}

impl std::error::Error for Error {}

impl From<String> for Error {
	fn from(message: String) -> Self {
		Error(message)
	}
}

impl From<Error> for String {
	fn from(err: Error) -> Self {
		err.0
	}
}

/// Result with the crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

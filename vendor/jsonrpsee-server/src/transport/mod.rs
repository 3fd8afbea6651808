/// HTTP related server functionality.
pub mod http;
/// WebSocket related server functionality.
pub mod ws;

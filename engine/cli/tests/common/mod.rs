//! Helpers shared by the binary's tests.

use mysql::{Conn, OptsBuilder};

/// A connection to the server on `socket`, database sbtest.
pub fn connect(socket: &std::path::Path) -> Conn {
    let opts = OptsBuilder::new()
        .socket(Some(socket.to_str().unwrap()))
        .user(Some("root"))
        .db_name(Some("sbtest"));
    Conn::new(opts).unwrap()
}

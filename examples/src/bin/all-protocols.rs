//! One server hosting every protocol.

fn main() {}

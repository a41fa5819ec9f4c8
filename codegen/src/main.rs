//! `cargo run -p codegen`: regenerates every protocol crate from the pinned schemas.

fn main() {}

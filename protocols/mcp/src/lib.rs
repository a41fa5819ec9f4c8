//! Typed mcp messages. Everything under `generated` is written by `cargo run -p codegen`.

pub mod generated;

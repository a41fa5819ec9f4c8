//! codegen: pinned upstream schemas in, typed protocol modules out. `sources` and `sync` own the
//! pins and the cache, `frontend` turns a revision's files into a `model::RevisionModel`,
//! `constructs` refuses what cannot be generated, `normalize` rewrites schema typify cannot take,
//! `emit` renders a module, `generate` runs it all in memory and `output` writes or checks the
//! result. `samples` is the test support the protocol crates share.

pub mod constructs;
pub mod door;
pub mod emit;
pub mod error;
pub mod frontend;
pub mod generate;
pub mod model;
pub mod normalize;
pub mod output;
pub mod proto;
// Test support: a check that fails panics, as a test does.
#[allow(clippy::panic)]
pub mod samples;
pub mod schema_doc;
pub mod service;
pub mod sources;
pub mod sync;
pub mod tag_dispatch;
pub mod types_emit;

//! Decode cost of a `CallToolResult` with text content (MCP 2025-11-25): the generated
//! `ContentBlock`, which reads its `type` tag first, against an untagged enum over the same
//! member types (how typify derives it, trying members in order), in one run.
//! `cargo run --release -p protocols-mcp --example content_block_decode [iterations] [which]`
//! where `which` is `tagged`, `untagged` or `both` (for callgrind, run one at a time).

use std::hint::black_box;
use std::time::Instant;

use protocols_mcp::generated::v2025_11_25::types::{
    AudioContent, CallToolResult, EmbeddedResource, ImageContent, ResourceLink, TextContent,
};
use serde::Deserialize;

/// The enum as typify derives it, members in the generated order.
#[derive(Deserialize)]
#[serde(untagged)]
#[allow(dead_code)]
enum UntaggedContentBlock {
    ImageContent(ImageContent),
    AudioContent(AudioContent),
    ResourceLink(ResourceLink),
    TextContent(TextContent),
    EmbeddedResource(EmbeddedResource),
}

/// `CallToolResult` with the untagged content enum.
#[derive(Deserialize)]
#[allow(dead_code)]
struct UntaggedCallToolResult {
    content: Vec<UntaggedContentBlock>,
    #[serde(rename = "isError")]
    is_error: Option<bool>,
}

const MESSAGE: &str = r#"{"content":[{"type":"text","text":"Echo: hello world"}],"isError":false}"#;

fn time(label: &str, iterations: u32, decode: &dyn Fn() -> bool) {
    if !decode() {
        eprintln!("{label}: the message does not decode");
        return;
    }
    let started = Instant::now();
    for _ in 0..iterations {
        black_box(decode());
    }
    let per = started.elapsed().as_nanos() as f64 / f64::from(iterations);
    println!("{label:<28} {per:>8.1} ns/decode");
}

fn main() -> Result<(), serde_json::Error> {
    let mut args = std::env::args().skip(1);
    let iterations: u32 = args.next().and_then(|n| n.parse().ok()).unwrap_or(200_000);
    let which = args.next().unwrap_or_else(|| "both".into());
    let value: serde_json::Value = serde_json::from_str(MESSAGE)?;
    let tagged = which != "untagged";
    let untagged = which != "tagged";
    if tagged {
        time("tagged   from &str", iterations, &|| {
            serde_json::from_str::<CallToolResult>(black_box(MESSAGE)).is_ok()
        });
        time("tagged   from Value", iterations, &|| {
            serde_json::from_value::<CallToolResult>(black_box(value.clone())).is_ok()
        });
    }
    if untagged {
        time("untagged from &str", iterations, &|| {
            serde_json::from_str::<UntaggedCallToolResult>(black_box(MESSAGE)).is_ok()
        });
        time("untagged from Value", iterations, &|| {
            serde_json::from_value::<UntaggedCallToolResult>(black_box(value.clone())).is_ok()
        });
    }
    Ok(())
}

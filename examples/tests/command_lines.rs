//! The example binaries' command lines: `--help` answers and exits 0, a missing or unknown
//! argument is refused with usage on stderr and exit status 2, before anything is served.

#![allow(clippy::expect_used)]
use std::process::Command;

fn run(binary: &str, arguments: &[&str]) -> std::process::Output {
    Command::new(binary)
        .args(arguments)
        .env_remove("MCP_CONFORMANCE_CONTEXT")
        .output()
        .expect("the binary runs")
}

#[test]
fn every_example_binary_answers_help_and_exits_zero() {
    for binary in [
        env!("CARGO_BIN_EXE_all-protocols"),
        env!("CARGO_BIN_EXE_mcp-everything"),
        env!("CARGO_BIN_EXE_mcp-conformance-client"),
    ] {
        let output = run(binary, &["--help"]);
        assert!(
            output.status.success(),
            "{binary} --help: {:?}",
            output.status
        );
        let help = String::from_utf8_lossy(&output.stdout);
        assert!(help.contains("Usage:"), "{binary} --help printed {help}");
    }
}

#[test]
fn mcp_everything_without_a_mode_is_refused_with_usage() {
    let output = run(env!("CARGO_BIN_EXE_mcp-everything"), &[]);
    assert_eq!(output.status.code(), Some(2));
    let usage = String::from_utf8_lossy(&output.stderr);
    assert!(
        usage.contains("--listen") && usage.contains("--stdio"),
        "{usage}"
    );
}

#[test]
fn mcp_everything_refuses_a_bad_address() {
    let output = run(
        env!("CARGO_BIN_EXE_mcp-everything"),
        &["--listen", "nowhere"],
    );
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn mcp_conformance_client_without_a_server_url_is_refused_with_usage() {
    let output = run(env!("CARGO_BIN_EXE_mcp-conformance-client"), &[]);
    assert_eq!(output.status.code(), Some(2));
    let usage = String::from_utf8_lossy(&output.stderr);
    assert!(usage.contains("<SERVER_URL>"), "{usage}");
}

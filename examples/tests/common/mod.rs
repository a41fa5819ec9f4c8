//! What the process tests of `all-protocols` share: the binary started on a free loopback port
//! with the flags a test names, waited for until it listens, and killed however the test ends.

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// How long a started server has to accept connections before the test fails.
const LISTENS_WITHIN: Duration = Duration::from_secs(20);

/// A running `all-protocols`, killed when dropped.
pub struct AllProtocols {
    child: Child,
    address: SocketAddr,
}

impl Drop for AllProtocols {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl AllProtocols {
    /// Starts `all-protocols --listen <free port> FLAGS…` and waits until it accepts connections.
    pub async fn start(flags: &[&str]) -> Self {
        Self::start_binary(env!("CARGO_BIN_EXE_all-protocols"), flags).await
    }

    /// The same for another example binary that takes `--listen` (`mcp-everything`).
    pub async fn start_binary(binary: &str, flags: &[&str]) -> Self {
        let address = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap()
            .local_addr()
            .unwrap();
        let child = Command::new(binary)
            .args(["--listen", &address.to_string()])
            .args(flags)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let serving = Self { child, address };
        assert!(
            protocols_testkit::listening_within(address, LISTENS_WITHIN).await,
            "{binary} never listened on {address}"
        );
        serving
    }

    /// The Streamable HTTP endpoint of its MCP server.
    pub fn mcp_url(&self) -> String {
        format!("http://{}/mcp", self.address)
    }
}

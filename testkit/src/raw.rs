//! HTTP/1.1 over a raw socket, for what an HTTP client will not send (an absolute-form target,
//! a dribbled head, a keep-alive connection reused on purpose) and for reading what a server
//! writes before it closes: one answer read at a time, by its `Content-Length`.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

/// How long a raw read waits before failing the test.
pub const RAW_PATIENCE: Duration = Duration::from_secs(10);

/// One HTTP/1.1 answer as read off the socket.
#[derive(Debug, Clone)]
pub struct RawAnswer {
    /// The status code.
    pub status: u16,
    /// Header names in lower case, in the order sent.
    pub headers: Vec<(String, String)>,
    /// The body: the `content-length` bytes after the head.
    pub body: Vec<u8>,
}

impl RawAnswer {
    /// The first value of header `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(found, _)| found == name)
            .map(|(_, value)| value.as_str())
    }

    /// The body parsed as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("a JSON body")
    }
}

/// A request as bytes: `head_lines` joined by CRLF after the request line, then `body` with
/// its `Content-Length`.
pub fn raw_request(request_line: &str, head_lines: &[&str], body: &str) -> Vec<u8> {
    let mut text = format!("{request_line}\r\n");
    for line in head_lines {
        text.push_str(line);
        text.push_str("\r\n");
    }
    text.push_str(&format!("content-length: {}\r\n\r\n{body}", body.len()));
    text.into_bytes()
}

/// A keep-alive connection that reads answers one at a time.
#[derive(Debug)]
pub struct RawConnection {
    /// The socket, for a test that writes or closes it itself.
    pub stream: TcpStream,
    buffer: Vec<u8>,
}

impl RawConnection {
    /// Connects to `address`.
    pub async fn open(address: SocketAddr) -> Self {
        Self::over(TcpStream::connect(address).await.expect("connect"))
    }

    /// Reads answers off an already open socket.
    pub fn over(stream: TcpStream) -> Self {
        Self {
            stream,
            buffer: Vec::new(),
        }
    }

    /// Writes `bytes` as they are, without framing.
    pub async fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).await.expect("write");
    }

    /// Sends `bytes` and reads the answer.
    pub async fn exchange(&mut self, bytes: &[u8]) -> RawAnswer {
        self.send(bytes).await;
        self.answer()
            .await
            .expect("an answer before the connection closed")
    }

    /// The next answer; `None` when the server closed the connection before one.
    pub async fn answer(&mut self) -> Option<RawAnswer> {
        loop {
            if let Some(answer) = self.take_answer() {
                return Some(answer);
            }
            let mut chunk = [0; 4096];
            let read = tokio::time::timeout(RAW_PATIENCE, self.stream.read(&mut chunk))
                .await
                .expect("the server answered or closed in time");
            match read {
                Ok(0) | Err(_) => return None,
                Ok(read) => self
                    .buffer
                    .extend_from_slice(chunk.get(..read).unwrap_or_default()),
            }
        }
    }

    /// Waits until the server closes the connection (EOF or reset), discarding what it sends;
    /// `false` if it is still open after `patience`.
    pub async fn closed_within(&mut self, patience: Duration) -> bool {
        let mut chunk = [0; 4096];
        tokio::time::timeout(patience, async {
            loop {
                match self.stream.read(&mut chunk).await {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
            }
        })
        .await
        .is_ok()
    }

    fn take_answer(&mut self) -> Option<RawAnswer> {
        let head_end = self
            .buffer
            .windows(4)
            .position(|window| window == b"\r\n\r\n")?;
        let head = String::from_utf8_lossy(self.buffer.get(..head_end)?).into_owned();
        let mut lines = head.split("\r\n");
        let status = lines.next()?.split(' ').nth(1)?.parse().ok()?;
        let headers: Vec<(String, String)> = lines
            .filter_map(|line| line.split_once(':'))
            .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
            .collect();
        let length: usize = headers
            .iter()
            .find(|(name, _)| name == "content-length")
            .and_then(|(_, value)| value.parse().ok())
            .unwrap_or(0);
        let end = head_end + 4 + length;
        if self.buffer.len() < end {
            return None;
        }
        let body = self.buffer.get(head_end + 4..end)?.to_vec();
        self.buffer.drain(..end);
        Some(RawAnswer {
            status,
            headers,
            body,
        })
    }
}

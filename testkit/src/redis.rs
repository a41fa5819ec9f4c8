//! A throwaway `redis-server` for tests: started on a free loopback port with persistence off
//! (`--save '' --appendonly no`), answered with RESP on a plain socket, stopped and started
//! again on the same port (an outage), and killed when dropped, so a test needs nothing running
//! beforehand and leaves nothing behind. The binary is `$REDIS_SERVER` or `redis-server` on
//! `PATH` (`.ci/run` installs Debian's package when it is missing).

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a started server has to answer `PING` before the test fails.
const READY_WITHIN: Duration = Duration::from_secs(10);

/// A running (or deliberately stopped) `redis-server` owned by one test.
#[derive(Debug)]
pub struct RedisServer {
    address: SocketAddr,
    process: Option<Child>,
}

impl RedisServer {
    /// Starts a server on a free port and waits until it answers `PING`.
    pub fn start() -> Self {
        let mut server = Self {
            // Clients reconnect to it in a loop through an outage: off the ephemeral range.
            address: crate::listening::free_port_below_ephemeral_range(),
            process: None,
        };
        server.resume();
        server
    }

    /// `redis://127.0.0.1:PORT`, what a client connects to.
    pub fn url(&self) -> String {
        format!("redis://{}", self.address)
    }

    /// The server's socket address.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Whether the server is running (between [`stop`](Self::stop) and
    /// [`resume`](Self::resume) it is not).
    pub fn is_running(&self) -> bool {
        self.process.is_some()
    }

    /// Kills the server (SIGKILL, as an outage looks to a client) and waits for it to exit;
    /// its data is gone, as with persistence off it would be after any crash.
    pub fn stop(&mut self) {
        if let Some(mut process) = self.process.take() {
            let _ = process.kill();
            let _ = process.wait();
        }
    }

    /// Starts the server again on the same port and waits until it answers `PING`.
    pub fn resume(&mut self) {
        assert!(self.process.is_none(), "redis-server is already running");
        let binary = std::env::var("REDIS_SERVER").unwrap_or_else(|_| "redis-server".into());
        let process = Command::new(&binary)
            .args(["--bind", "127.0.0.1", "--port"])
            .arg(self.address.port().to_string())
            .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|error| {
                panic!(
                    "cannot start `{binary}` ({error}); install redis-server or set REDIS_SERVER"
                )
            });
        self.process = Some(process);
        self.await_ready();
    }

    fn await_ready(&mut self) {
        let deadline = Instant::now() + READY_WITHIN;
        while Instant::now() < deadline {
            if let Some(process) = self.process.as_mut()
                && let Ok(Some(status)) = process.try_wait()
            {
                panic!("redis-server on {} exited at start: {status}", self.address);
            }
            if self.try_command(&["PING"]) == Some(Reply::Status("PONG".into())) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!(
            "redis-server on {} did not answer PING within {READY_WITHIN:?}",
            self.address
        );
    }

    /// Sends one command and returns its reply, failing the test if the server does not
    /// answer. Enough for counting keys, reading a TTL or listing keys by pattern.
    pub fn command(&self, arguments: &[&str]) -> Reply {
        self.try_command(arguments)
            .unwrap_or_else(|| panic!("redis-server on {} did not answer", self.address))
    }

    /// The number of keys in the server's database (`DBSIZE`).
    pub fn key_count(&self) -> i64 {
        match self.command(&["DBSIZE"]) {
            Reply::Integer(count) => count,
            other => panic!("unexpected DBSIZE reply {other:?}"),
        }
    }

    fn try_command(&self, arguments: &[&str]) -> Option<Reply> {
        let mut stream = TcpStream::connect_timeout(&self.address, Duration::from_secs(1)).ok()?;
        stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
        stream.write_all(&encode_command(arguments)).ok()?;
        read_reply(&mut BufReader::new(stream)).ok()
    }
}

/// A RESP2 reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// `+OK`
    Status(String),
    /// `-ERR …`
    Error(String),
    /// `:3`
    Integer(i64),
    /// `$5 hello`; `None` for the null bulk string.
    Bulk(Option<String>),
    /// `*2 …`
    Array(Vec<Reply>),
}

impl Reply {
    /// The text of a status or bulk reply.
    pub fn text(&self) -> Option<&str> {
        match self {
            Self::Status(text) | Self::Bulk(Some(text)) => Some(text),
            _ => None,
        }
    }
}

fn read_reply(reader: &mut impl BufRead) -> std::io::Result<Reply> {
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    let line = line.trim_end_matches(['\r', '\n']);
    let invalid = || std::io::Error::new(std::io::ErrorKind::InvalidData, line.to_owned());
    let (kind, rest) = line.split_at_checked(1).ok_or_else(invalid)?;
    let number = || rest.parse::<i64>().map_err(|_| invalid());
    Ok(match kind {
        "+" => Reply::Status(rest.to_owned()),
        "-" => Reply::Error(rest.to_owned()),
        ":" => Reply::Integer(number()?),
        "$" => match usize::try_from(number()?) {
            Err(_) => Reply::Bulk(None),
            Ok(length) => {
                let mut bytes = vec![0; length + 2];
                reader.read_exact(&mut bytes)?;
                bytes.truncate(length);
                Reply::Bulk(Some(String::from_utf8_lossy(&bytes).into_owned()))
            }
        },
        "*" => {
            let count = usize::try_from(number()?).unwrap_or(0);
            let items = (0..count)
                .map(|_| read_reply(reader))
                .collect::<Result<_, _>>()?;
            Reply::Array(items)
        }
        _ => return Err(invalid()),
    })
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A command as a RESP array of bulk strings.
fn encode_command(arguments: &[&str]) -> Vec<u8> {
    let mut encoded = format!("*{}\r\n", arguments.len()).into_bytes();
    for argument in arguments {
        encoded.extend_from_slice(format!("${}\r\n", argument.len()).as_bytes());
        encoded.extend_from_slice(argument.as_bytes());
        encoded.extend_from_slice(b"\r\n");
    }
    encoded
}

/// A loopback port nothing listens on now (the OS picks it; the listener is closed before
/// redis-server binds it).
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_is_encoded_as_a_resp_array_of_bulk_strings() {
        assert_eq!(
            encode_command(&["SET", "k", ""]),
            b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n".to_vec()
        );
    }

    #[test]
    fn nested_arrays_nulls_and_errors_are_read_whole() {
        let wire = b"*3\r\n$4\r\nsave\r\n$-1\r\n*2\r\n:7\r\n-ERR no\r\n";
        let reply = read_reply(&mut &wire[..]).unwrap();
        assert_eq!(
            reply,
            Reply::Array(vec![
                Reply::Bulk(Some("save".into())),
                Reply::Bulk(None),
                Reply::Array(vec![Reply::Integer(7), Reply::Error("ERR no".into())]),
            ])
        );
    }

    #[test]
    fn a_cut_reply_is_an_error_not_a_value() {
        assert!(read_reply(&mut &b"$5\r\nhel"[..]).is_err());
        assert!(read_reply(&mut &b""[..]).is_err());
        assert!(read_reply(&mut &b"?what\r\n"[..]).is_err());
    }
}

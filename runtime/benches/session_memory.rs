//! Memory per idle session, measured so that it can be believed: the sessionful echo server of
//! the HTTP benchmark, run under a counting global allocator, with one extra route that reports
//! the live heap bytes, and the RSS before and after `malloc_trim(0)`. RSS alone cannot show
//! that expired sessions were freed (glibc keeps freed pages for reuse); the live-heap count
//! can, and the trimmed RSS shows what the allocator hands back once asked.
//!
//! Both the allocator and the trim live in this benchmark binary only; the library allocates
//! with whatever allocator its user chose. `scripts/bench-runtime.sh sessions` drives it:
//!
//! ```text
//! session_memory serve <port-file>   # the sessionful echo at /mcp, the report at /bench/memory
//! session_memory report <port>       # prints the report as one JSON line
//! ```

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use axum::Router;
use axum::routing::get;
use bytes::Bytes;
use http::{Request, header};
use http_body_util::{BodyExt as _, Empty};
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};

#[allow(dead_code)] // each benchmark binary uses its own part of the shared support
mod bench_support;
mod counting_allocator;

use counting_allocator::CountingAllocator;

const REPORT_PATH: &str = "/bench/memory";

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let words: Vec<&str> = args.iter().map(String::as_str).collect();
    let outcome = match words.as_slice() {
        ["serve", port_file] => serve(PathBuf::from(port_file)),
        ["report", port] => report(port),
        _ => {
            eprintln!(
                "run scripts/bench-runtime.sh sessions; usage: serve <port-file> | report <port>"
            );
            Ok(())
        }
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("session_memory: {message}");
            ExitCode::FAILURE
        }
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|error| error.to_string())
}

fn serve(port_file: PathBuf) -> Result<(), String> {
    runtime()?.block_on(async move {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|error| error.to_string())?;
        let address = listener.local_addr().map_err(|error| error.to_string())?;
        let app = bench_support::runtime_sessions(address)?
            .merge(Router::new().route(REPORT_PATH, get(memory_report)));
        std::fs::write(&port_file, address.port().to_string())
            .map_err(|error| error.to_string())?;
        bench_support::serve_nodelay(listener, app).await
    })
}

/// The live heap bytes, then the RSS as it stands and after the allocator returned what it
/// can (`malloc_trim(0)` releases free pages of every arena, not only the top of the heap).
async fn memory_report() -> String {
    let live_heap_bytes = counting_allocator::live_bytes();
    let untrimmed_rss_kib = rss_kib();
    // SAFETY: `malloc_trim` only walks glibc's own free lists, and is safe to call from any
    // thread at any time.
    #[allow(unsafe_code)]
    unsafe {
        libc::malloc_trim(0);
    }
    let trimmed_rss_kib = rss_kib();
    format!(
        "{{\"live_heap_bytes\":{live_heap_bytes},\"rss_kib\":{untrimmed_rss_kib},\"trimmed_rss_kib\":{trimmed_rss_kib}}}"
    )
}

/// This process's resident set, from `/proc/self/status` (0 where there is no such file).
fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("VmRSS:"))
                .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// Fetches the report from a running `serve` and prints it.
fn report(port: &str) -> Result<(), String> {
    let port: u16 = port.parse().map_err(|_| "port")?;
    runtime()?.block_on(async move {
        let stream = TcpStream::connect(SocketAddr::from(([127, 0, 0, 1], port)))
            .await
            .map_err(|error| error.to_string())?;
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|error| error.to_string())?;
        tokio::spawn(connection);
        let request = Request::get(REPORT_PATH)
            .header(header::HOST, format!("127.0.0.1:{port}"))
            .body(Empty::<Bytes>::new())
            .map_err(|error| error.to_string())?;
        let response = sender
            .send_request(request)
            .await
            .map_err(|error| error.to_string())?;
        let status = response.status();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|error| error.to_string())?
            .to_bytes();
        if !status.is_success() {
            return Err(format!("report answered {status}"));
        }
        println!("{}", String::from_utf8_lossy(&body));
        Ok(())
    })
}

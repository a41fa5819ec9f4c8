//! The stdio transport: newline-delimited JSON-RPC over any reader/writer pair (stdin/stdout in
//! production, a duplex pipe in tests). Both directions are served at once, so a handler can
//! call the peer and await its answer while other requests run. Messages a protocol publishes
//! on the session's own stream (notifications not tied to a request) are written as lines too,
//! as they come. Nothing but JSON-RPC is ever written to the writer; logs belong on stderr. EOF
//! on the reader ends the conversation cleanly.
//!
//! Both directions are bounded ([`StdioConfig`]): past `max_in_flight` requests running, a new
//! request is answered at once with the overloaded error (-32013) instead of being run; the
//! queue of lines to write holds `outbound_capacity`, past which the reader waits for the
//! writer (the peer is not reading) and a handler's own message fails with
//! [`PeerError::Backlogged`](crate::peer::PeerError::Backlogged).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use futures::future::Either;
use futures::stream::{FuturesUnordered, StreamExt};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::dispatch::{Scope, answer_request, serve_message, take_notification, take_response};
use crate::handler::{DEFAULT_PEER_TIMEOUT, RequestHandler, RequestMeta};
use crate::hardening::Refusal;
use crate::jsonrpc::{
    DecodeError, DecodeLimits, ErrorObject, InvalidMessage, Message, Payload, Response,
    batch_to_bytes, decode,
};
use crate::peer::{Peer, Route};
use crate::session::{Session, SessionId};
use crate::sse::EventId;
use crate::store::{StoreError, StoreFuture};
use crate::tail::{
    EventCursor, EventReader, EventStore, EventStream, EventTail, OpenedStream, PublishError,
    ResumeError, ResumedStream, Start, StreamClosed, StreamFuture,
};

/// Requests running at once over stdio before a new one is answered as overloaded.
const DEFAULT_STDIO_MAX_IN_FLIGHT: usize = 256;
/// Lines waiting to be written before the reader waits for the writer.
const DEFAULT_STDIO_OUTBOUND_CAPACITY: usize = 1024;

/// How the stdio transport bounds its input and waits on its peer.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct StdioConfig {
    /// How large and how deep one line may be.
    pub limits: DecodeLimits,
    /// How long a request sent to the peer waits for its answer.
    pub peer_timeout: Duration,
    /// After EOF, how long requests still running may take to answer before they are dropped.
    pub drain_grace: Duration,
    /// Requests (and batches) running at once; one more is answered with the overloaded
    /// error (-32013) at once, and a notification past it is not run.
    pub max_in_flight: usize,
    /// Lines queued for the writer; when it is full the reader waits (the peer is not
    /// reading what it is sent), and a handler's own message fails as backlogged.
    pub outbound_capacity: usize,
}

crate::config_setters!(StdioConfig {
    limits: DecodeLimits,
    peer_timeout: Duration,
    drain_grace: Duration,
    max_in_flight: usize,
    outbound_capacity: usize
});

impl Default for StdioConfig {
    fn default() -> Self {
        Self {
            limits: DecodeLimits::default(),
            peer_timeout: DEFAULT_PEER_TIMEOUT,
            drain_grace: Duration::from_secs(1),
            max_in_flight: DEFAULT_STDIO_MAX_IN_FLIGHT,
            outbound_capacity: DEFAULT_STDIO_OUTBOUND_CAPACITY,
        }
    }
}

/// Serves `handler` on this process's stdin and stdout until stdin closes.
pub async fn serve_stdio<H: RequestHandler>(
    handler: &H,
    config: StdioConfig,
) -> std::io::Result<()> {
    serve_lines(handler, tokio::io::stdin(), tokio::io::stdout(), config).await
}

/// Serves `handler` on a line-oriented reader/writer pair until the reader reaches EOF. Requests
/// still running then get [`StdioConfig::drain_grace`] to answer and are dropped after it;
/// every answer produced is written before returning.
pub async fn serve_lines<H, R, W>(
    handler: &H,
    reader: R,
    writer: W,
    config: StdioConfig,
) -> std::io::Result<()>
where
    H: RequestHandler,
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let request = Arc::new(RequestMeta::default());
    serve_lines_exposing(handler, reader, writer, config, request, |_| {}).await
}

/// [`serve_lines`] for a conversation another transport carries (the messages of one HTTP or
/// WebSocket connection piped through, as ACP's remote transport does): every message is
/// served as having arrived on `request`, so its handler sees that request's headers and the
/// principal the hardening authenticated for it.
pub async fn serve_lines_as<H, R, W>(
    handler: &H,
    reader: R,
    writer: W,
    config: StdioConfig,
    request: Arc<RequestMeta>,
) -> std::io::Result<()>
where
    H: RequestHandler,
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    serve_lines_exposing(handler, reader, writer, config, request, |_| {}).await
}

/// [`serve_lines_as`], handing the conversation's [`Peer`] to `expose` before the first line is
/// read, so the side that opened the conversation can call first (see `crate::connect`).
pub(crate) async fn serve_lines_exposing<H, R, W>(
    handler: &H,
    reader: R,
    writer: W,
    config: StdioConfig,
    request: Arc<RequestMeta>,
    expose: impl FnOnce(Peer),
) -> std::io::Result<()>
where
    H: RequestHandler,
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    crate::panic_boundary::install();
    let (outbound, queued) = mpsc::channel::<Bytes>(config.outbound_capacity.max(1));
    let finished = CancellationToken::new();
    let session = Arc::new(Session::with_events(
        SessionId::random(),
        H::Session::default(),
        SystemTime::now(),
        Arc::new(LineEvents::new(outbound.clone())),
    ));
    let span = tracing::debug_span!("stdio", session = %session.id());
    let scope = Scope {
        conversation: Some(Arc::clone(session.conversation())),
        session: Some(Arc::clone(&session)),
        meta: request,
        peer: Peer::new(
            Route::Lines(outbound.clone()),
            Some(Arc::clone(session.conversation())),
            config.peer_timeout,
            handler.profile().cancellation().copied(),
        ),
        relay: None,
    };
    expose(scope.peer.clone());
    let reading = async {
        let outcome = read_until_eof(handler, reader, &outbound, scope, &config).await;
        session.end();
        finished.cancel();
        outcome
    };
    let (read_outcome, write_outcome) =
        async { tokio::join!(reading, write_lines(writer, queued, &finished)) }
            .instrument(span)
            .await;
    read_outcome.and(write_outcome)
}

/// Reads messages and runs them concurrently until EOF.
async fn read_until_eof<H, R>(
    handler: &H,
    reader: R,
    outbound: &mpsc::Sender<Bytes>,
    scope: Scope<H::Session>,
    config: &StdioConfig,
) -> std::io::Result<()>
where
    H: RequestHandler,
    R: AsyncRead + Unpin,
{
    let mut lines = LineReader::new(reader, config.limits.max_bytes);
    let mut in_flight = FuturesUnordered::new();
    loop {
        tokio::select! {
            line = lines.next_line() => {
                let Some(line) = line? else { break };
                let room = if in_flight.len() < config.max_in_flight {
                    Room::Available
                } else {
                    Room::Full
                };
                let work = match line {
                    Line::Complete(bytes) => serve_line(handler, &bytes, &scope, &config.limits, room),
                    Line::TooLong => Work::Answer(DecodeError::TooLarge { limit: config.limits.max_bytes }.to_response()),
                };
                match work {
                    Work::Nothing => {}
                    Work::Answer(response) => send(outbound, Message::Response(response).to_bytes()).await,
                    Work::Run(future) => in_flight.push(future),
                }
            }
            Some(answer) = in_flight.next(), if !in_flight.is_empty() => {
                if let Some(bytes) = answer {
                    send(outbound, bytes).await;
                }
            }
        }
    }
    // Nothing more can arrive: calls awaiting the peer fail now, and what is still running gets
    // a short grace to answer (a request piped in just before EOF is still answered).
    if let Some(conversation) = &scope.conversation {
        conversation.fail_awaiting();
    }
    let drained = tokio::time::timeout(config.drain_grace, async {
        while let Some(answer) = in_flight.next().await {
            if let Some(bytes) = answer {
                send(outbound, bytes).await;
            }
        }
    })
    .await;
    if drained.is_err() {
        tracing::debug!(
            dropped = in_flight.len(),
            "requests still running at end of input were dropped"
        );
    }
    Ok(())
}

/// What one line asks for: nothing more, an immediate answer, or work to run.
enum Work<F> {
    Nothing,
    Answer(Response),
    Run(F),
}

/// Whether another request may run now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Room {
    Available,
    Full,
}

/// The answer to a request (or batch) past the in-flight bound: the overloaded refusal's code
/// and message, as HTTP answers it with 503.
fn overloaded(id: Option<crate::jsonrpc::RequestId>) -> Response {
    let refusal = Refusal::Overloaded;
    Response::error(id, ErrorObject::new(refusal.code(), refusal.message()))
}

fn serve_line<'a, H: RequestHandler>(
    handler: &'a H,
    line: &[u8],
    scope: &Scope<H::Session>,
    limits: &DecodeLimits,
    room: Room,
) -> Work<impl Future<Output = Option<Bytes>> + Send + 'a> {
    match decode(line, limits) {
        Err(error) => Work::Answer(error.to_response()),
        Ok(Payload::Single(Message::Response(response))) => {
            take_response(scope.conversation.as_deref(), response);
            Work::Nothing
        }
        Ok(Payload::Single(Message::Request(request))) if room == Room::Full => {
            tracing::warn!("a request past the in-flight bound was answered as overloaded");
            Work::Answer(overloaded(Some(request.id)))
        }
        Ok(Payload::Single(Message::Request(request))) => {
            let scope = scope.clone();
            Work::Run(Either::Left(Either::Left(async move {
                answer_request(handler, request, scope)
                    .await
                    .map(|response| Message::Response(response).to_bytes())
            })))
        }
        Ok(Payload::Single(Message::Notification(notification))) if room == Room::Full => {
            // A cancellation still applies; the handler is not run.
            drop(take_notification(handler, notification, scope.clone()));
            tracing::warn!("a notification past the in-flight bound was not run");
            Work::Nothing
        }
        Ok(Payload::Single(Message::Notification(notification))) => {
            let scope = scope.clone();
            Work::Run(Either::Left(Either::Right(async move {
                take_notification(handler, notification, scope).await;
                None
            })))
        }
        Ok(Payload::Batch(_)) if room == Room::Full => {
            tracing::warn!("a batch past the in-flight bound was answered as overloaded");
            Work::Answer(overloaded(None))
        }
        Ok(Payload::Batch(entries)) => {
            let state = scope.session.as_deref().map(Session::state);
            if !handler.accepts_batch(&scope.meta.headers, state) {
                return Work::Answer(Response::error(
                    None,
                    ErrorObject::invalid_request("batches are not accepted"),
                ));
            }
            Work::Run(Either::Right(serve_batch(handler, entries, scope.clone())))
        }
    }
}

/// Runs a batch's entries concurrently and answers them as one array (nothing when the batch
/// held only notifications and responses).
async fn serve_batch<H: RequestHandler>(
    handler: &H,
    entries: Vec<Result<Message, InvalidMessage>>,
    scope: Scope<H::Session>,
) -> Option<Bytes> {
    let answers = futures::future::join_all(entries.into_iter().map(|entry| {
        let scope = scope.clone();
        async move {
            match entry {
                Ok(message) => serve_message(handler, message, scope).await,
                Err(invalid) => Some(invalid.to_response()),
            }
        }
    }))
    .await;
    let answers: Vec<Message> = answers
        .into_iter()
        .flatten()
        .map(Message::Response)
        .collect();
    (!answers.is_empty()).then(|| batch_to_bytes(&answers))
}

/// Queues an answer for the writer, waiting while the queue is full.
async fn send(outbound: &mpsc::Sender<Bytes>, bytes: Bytes) {
    if outbound.send(bytes).await.is_err() {
        tracing::debug!("the writer has stopped; an answer was dropped");
    }
}

/// Writes each queued message as one line, flushing whenever the queue runs dry. After
/// `finished`, writes what is already queued and stops.
async fn write_lines<W: AsyncWrite + Unpin>(
    mut writer: W,
    mut queued: mpsc::Receiver<Bytes>,
    finished: &CancellationToken,
) -> std::io::Result<()> {
    loop {
        let next = tokio::select! {
            biased;
            next = queued.recv() => next,
            () = finished.cancelled() => None,
        };
        let Some(bytes) = next else { break };
        write_line(&mut writer, &bytes).await?;
        while let Ok(bytes) = queued.try_recv() {
            write_line(&mut writer, &bytes).await?;
        }
        writer.flush().await?;
    }
    while let Ok(bytes) = queued.try_recv() {
        write_line(&mut writer, &bytes).await?;
    }
    writer.flush().await
}

async fn write_line<W: AsyncWrite + Unpin>(writer: &mut W, bytes: &[u8]) -> std::io::Result<()> {
    writer.write_all(bytes).await?;
    writer.write_all(b"\n").await
}

/// Where the stdio session's streams live. Its standalone stream writes each event straight out
/// as a line: stdio is one ordered channel with nothing to resume, so nothing is kept. Request
/// streams do not exist here (answers go out as lines), so one asked for is already closed.
struct LineEvents {
    standalone: Arc<LineStream>,
}

impl LineEvents {
    fn new(lines: mpsc::Sender<Bytes>) -> Self {
        Self {
            standalone: Arc::new(LineStream {
                lines,
                published: AtomicU64::new(0),
                closed: AtomicBool::new(false),
            }),
        }
    }
}

impl EventStore for LineEvents {
    fn answers_at_once(&self) -> bool {
        true
    }

    fn standalone<'a>(&'a self, _session: &'a SessionId) -> OpenedStream<'a> {
        StoreFuture::ready(Ok(Arc::clone(&self.standalone) as Arc<dyn EventStream>))
    }

    fn open_request_stream<'a>(&'a self, _session: &'a SessionId) -> OpenedStream<'a> {
        StoreFuture::ready(Ok(EventTail::closed() as Arc<dyn EventStream>))
    }

    fn resume<'a>(&'a self, _session: &'a SessionId, _after: EventCursor) -> ResumedStream<'a> {
        StoreFuture::ready(Err(ResumeError::Unknown))
    }

    fn close_session(&self, _session: &SessionId) -> StreamFuture<Result<(), StoreError>> {
        self.standalone.close_now();
        StoreFuture::ready(Ok(()))
    }
}

/// The session's standalone stream over stdio: published events become lines on the writer.
#[derive(Debug)]
struct LineStream {
    lines: mpsc::Sender<Bytes>,
    published: AtomicU64,
    closed: AtomicBool,
}

impl LineStream {
    fn publish_now(&self, payload: Bytes) -> Result<EventId, StreamClosed> {
        if self.closed.load(Ordering::Acquire) {
            return Err(StreamClosed);
        }
        // A full queue (the peer is not reading) refuses the event rather than growing.
        self.lines.try_send(payload).map_err(|_| StreamClosed)?;
        let sequence = self.published.fetch_add(1, Ordering::Relaxed) + 1;
        Ok(EventCursor {
            stream: 0,
            sequence,
        }
        .to_event_id())
    }

    fn close_now(&self) {
        self.closed.store(true, Ordering::Release);
    }
}

impl EventStream for LineStream {
    fn number(&self) -> u32 {
        0
    }

    fn publish(&self, payload: Bytes) -> StreamFuture<Result<EventId, PublishError>> {
        StoreFuture::ready(self.publish_now(payload).map_err(PublishError::from))
    }

    fn close(&self) -> StreamFuture<Result<(), StoreError>> {
        self.close_now();
        StoreFuture::ready(Ok(()))
    }

    fn is_untouched(&self) -> bool {
        self.published.load(Ordering::Relaxed) == 0
    }

    /// No connection of its own to let go of: the lines are the conversation itself.
    fn release_reader(&self, _retry: Duration) -> StreamFuture<Result<(), PublishError>> {
        StoreFuture::ready(Err(PublishError::Closed))
    }

    /// Events are written as they are published, so a reader finds nothing to read.
    fn subscribe(&self, start: Start) -> Box<dyn EventReader> {
        EventTail::closed().subscribe(start)
    }
}

/// One line read from the peer.
enum Line {
    Complete(Vec<u8>),
    /// The line exceeded the limit and was discarded up to its end.
    TooLong,
}

/// Reads LF-terminated lines (a trailing CR is dropped) of bounded length. Cancel-safe: every
/// byte consumed is recorded in `self` before the next await.
struct LineReader<R> {
    reader: BufReader<R>,
    line: Vec<u8>,
    overflowed: bool,
    max: usize,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    fn new(reader: R, max: usize) -> Self {
        Self {
            reader: BufReader::new(reader),
            line: Vec::new(),
            overflowed: false,
            max,
        }
    }

    /// The next non-empty line; `None` at EOF.
    async fn next_line(&mut self) -> std::io::Result<Option<Line>> {
        loop {
            let available = self.reader.fill_buf().await?;
            if available.is_empty() {
                return Ok(self.take_line());
            }
            let (chunk, complete) = match available.iter().position(|byte| *byte == b'\n') {
                Some(end) => (available.get(..end).unwrap_or_default(), true),
                None => (available, false),
            };
            let consumed = chunk.len() + usize::from(complete);
            if self.line.len() + chunk.len() > self.max {
                self.overflowed = true;
                self.line.clear();
            } else if !self.overflowed {
                self.line.extend_from_slice(chunk);
            }
            self.reader.consume(consumed);
            if complete && let Some(line) = self.take_line() {
                return Ok(Some(line));
            }
        }
    }

    fn take_line(&mut self) -> Option<Line> {
        if std::mem::take(&mut self.overflowed) {
            return Some(Line::TooLong);
        }
        if self.line.last() == Some(&b'\r') {
            self.line.pop();
        }
        let line = std::mem::take(&mut self.line);
        (!line.iter().all(u8::is_ascii_whitespace)).then_some(Line::Complete(line))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handler::{Context, Profile, Reply};
    use crate::jsonrpc::{Notification, Request, to_raw};
    use tokio::io::AsyncReadExt;

    /// `announce` publishes a notification on the session's own stream (as a protocol does for
    /// list changes), then answers.
    struct Announcer {
        profile: Profile,
    }

    impl RequestHandler for Announcer {
        type Session = ();

        fn profile(&self) -> &Profile {
            &self.profile
        }

        async fn handle(&self, request: Request, cx: Context<()>) -> Reply {
            let announcement = Message::Notification(Notification {
                method: "changed".to_owned(),
                params: None,
            });
            let published = cx
                .session()
                .map(|session| session.publish_standalone(announcement.to_bytes()));
            if request.method != "announce" {
                return Err(ErrorObject::method_not_found());
            }
            let outcome = serde_json::json!({ "published": matches!(published, Some(Ok(_))) });
            to_raw(&outcome).map_err(|_| ErrorObject::internal_error())
        }

        async fn notify(&self, _notification: Notification, _cx: Context<()>) {}
    }

    #[tokio::test]
    async fn what_is_published_on_the_session_stream_is_written_as_a_line_before_the_answer() {
        let handler = Announcer {
            profile: Profile::new(),
        };
        let input: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"announce\"}\n";
        let (writer, mut output) = tokio::io::duplex(1 << 16);
        serve_lines(&handler, input, writer, StdioConfig::default())
            .await
            .unwrap_or_else(|error| panic!("serving failed: {error}"));
        let mut written = String::new();
        output
            .read_to_string(&mut written)
            .await
            .unwrap_or_else(|error| panic!("reading failed: {error}"));
        let lines: Vec<serde_json::Value> = written
            .lines()
            .map(|line| serde_json::from_str(line).unwrap_or_else(|_| panic!("not JSON: {line:?}")))
            .collect();
        assert_eq!(lines.len(), 2, "{written}");
        assert_eq!(lines[0]["method"], "changed");
        assert_eq!(lines[1]["id"], 1);
        assert_eq!(lines[1]["result"]["published"], true);
    }

    #[tokio::test]
    async fn the_session_stream_refuses_events_once_the_conversation_ended() {
        let (sender, mut lines) = mpsc::channel(4);
        let events = LineEvents::new(sender);
        let session = SessionId::random();
        let Ok(Ok(stream)) = events.standalone(&session).now() else {
            panic!("the line events answer at once");
        };
        assert!(stream.publish(Bytes::from_static(b"{}")).await.is_ok());
        assert!(matches!(events.close_session(&session).await, Ok(())));
        assert!(matches!(
            stream.publish(Bytes::from_static(b"{}")).await,
            Err(PublishError::Closed)
        ));
        assert_eq!(lines.recv().await, Some(Bytes::from_static(b"{}")));
        assert!(lines.try_recv().is_err());
    }
}

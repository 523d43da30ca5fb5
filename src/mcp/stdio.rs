//! The transport of a stdio server, and the way a program's `tools/call` requests go out
//! and their answers come back without a detour through rmcp's service loop.
//!
//! Why: in a program's `Promise.all` of a thousand calls, rmcp's loop writes the first
//! request only once the program has started all of them and yields (the loop runs on the
//! program's thread), so the server starts late by the whole burst. And rmcp reads every
//! incoming message as one untagged enum of every result a server can send, trying the
//! variants in turn: a `tools/call` result is the sixteenth, about 2.7 µs against 0.4 µs
//! read as what it must be (rmcp 3.11, server-everything's `echo` answer).
//!
//! - **Calls** ([`Link::call`]): the request is written to the server's stdin as the call
//!   starts, from its first poll, with an id of this client's own (`"c0"`, `"c1"`, …, never
//!   one of rmcp's numbers) and the same string as its progress token. Its answer is read
//!   straight into a `CallToolResult` (or its error) and handed to the call; rmcp never
//!   sees either. A late answer to a call given up is dropped.
//! - **Writing** ([`Outbox`]): one queue for the calls' requests and rmcp's own messages,
//!   so each line goes out whole and in order. A line is written at once when nothing is
//!   waiting and the pipe takes it; the rest waits in the queue for one flushing task per
//!   connection. The queue is bounded ([`QUEUE_LIMIT`]): a server that stops reading gets
//!   an error, not the client's memory.
//! - **Everything else** goes through rmcp's codec, with rmcp's rules:
//!   - a line that is not JSON is skipped;
//!   - well-formed JSON that is no message gets an `Invalid Request` error back (the first
//!     [`INVALID_ANSWERS`] of them: a server flooding such lines while it does not read
//!     its input would otherwise fill the pipe and stop this reader);
//!   - a notification rmcp does not know is ignored;
//!   - a leading byte-order mark and a trailing `\r` are dropped.
//! - **Lines skipped are said**: each line that could not be read goes to the connection's
//!   record of noise, so a call that then times out says why.
//! - **Lone surrogates**: JavaScript's `JSON.stringify` writes a string cut in the middle of
//!   a surrogate pair as a lone `\uD83D`, which JSON parsers in JavaScript accept and
//!   `serde_json` refuses. Such a line is read again with each lone surrogate as U+FFFD (the
//!   replacement character), rather than dropped while its call waits for its timeout.
//! - **The end**: when the server's stdout ends (or the transport is dropped), every call
//!   waiting is answered with the connection's end at once.
//! - **Cancel safety**: rmcp polls `receive` inside a `select!`. A line read in part stays
//!   in the transport's buffer, so the next `receive` goes on with it.

use std::collections::HashMap;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};

use rmcp::RoleClient;
use rmcp::model::{
    CallToolResult, ErrorData, JsonRpcMessage, JsonRpcResponse, NumberOrString, ProgressToken,
    RequestId,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::{JsonRpcMessageCodec, JsonRpcMessageCodecError};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, BufReader};
use tokio::sync::{Notify, oneshot};
use tokio_util::bytes::{Buf, BytesMut};
use tokio_util::codec::Decoder;

use crate::value::FxBuild;

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// How a server answered a `tools/call`.
#[derive(Debug)]
pub(super) enum Answer {
    Result(CallToolResult),
    /// A JSON-RPC error.
    Error(ErrorData),
    /// A response whose result is no `CallToolResult`.
    Other,
    /// A line with the call's id that is no JSON-RPC response: why it cannot be read.
    Invalid(String),
}

/// A connection's way out to its server and back for calls: shared by the connection (which
/// starts calls and cancels them) and its transport (which reads their answers).
#[derive(Clone)]
pub(super) struct Link(Arc<LinkState>);

struct LinkState {
    outbox: Arc<Outbox>,
    calls: Mutex<Calls>,
    next: AtomicU64,
}

#[derive(Default)]
struct Calls {
    /// By the number in their id.
    waiting: HashMap<u64, oneshot::Sender<Answer>, FxBuild>,
    /// The server's stdout ended: no answer will come.
    ended: bool,
}

/// The id of a call about to be written; the same string is its progress token.
pub(super) struct Reserved {
    n: u64,
    id: Arc<str>,
}

impl Reserved {
    pub(super) fn id(&self) -> RequestId {
        NumberOrString::String(self.id.clone())
    }

    pub(super) fn token(&self) -> ProgressToken {
        ProgressToken(NumberOrString::String(self.id.clone()))
    }
}

/// The prefix of this client's own request ids.
const ID_PREFIX: char = 'c';

/// The number in `id` when it is one of this client's own, written as this client writes
/// it (JSON-RPC ids match exactly: `"c01"` and `"c+1"` are not `"c1"`).
fn own_id(id: &RequestId) -> Option<u64> {
    let NumberOrString::String(s) = id else {
        return None;
    };
    let digits = s.strip_prefix(ID_PREFIX)?;
    let canonical = !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'));
    canonical.then(|| digits.parse().ok()).flatten()
}

/// Whether `token` is the progress token of one of this client's own calls: each is
/// registered before its request is written, so a report for one that is not registered
/// is late or was never asked for.
pub(super) fn is_own_token(token: &ProgressToken) -> bool {
    own_id(&token.0).is_some()
}

#[derive(Serialize)]
struct CallLine<'a> {
    jsonrpc: &'static str,
    id: &'a str,
    method: &'static str,
    params: CallParams<'a>,
}

#[derive(Serialize)]
struct CallParams<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    arguments: Option<&'a Map<String, Value>>,
    #[serde(rename = "_meta")]
    meta: Meta<'a>,
}

#[derive(Serialize)]
struct Meta<'a> {
    #[serde(rename = "progressToken")]
    progress_token: &'a str,
}

#[derive(Serialize)]
struct CancelLine<'a> {
    jsonrpc: &'static str,
    method: &'static str,
    params: CancelParams<'a>,
}

#[derive(Serialize)]
struct CancelParams<'a> {
    #[serde(rename = "requestId")]
    request_id: &'a str,
    reason: &'a str,
}

impl Link {
    /// A link writing to `stdin`. Starts the connection's flushing task: call within a
    /// Tokio runtime.
    pub(super) fn new(stdin: impl AsyncWrite + Send + 'static) -> Link {
        let link = Link(Arc::new(LinkState {
            outbox: Arc::new(Outbox::new(Box::pin(stdin))),
            calls: Mutex::default(),
            next: AtomicU64::new(0),
        }));
        // Until the outbox is closed, which the transport does when it ends.
        let outbox = link.0.outbox.clone();
        tokio::spawn(async move {
            loop {
                outbox.wake.notified().await;
                if std::future::poll_fn(|cx| outbox.poll_flush(cx)).await == Flushed::Closed {
                    return;
                }
            }
        });
        link
    }

    /// The id of the next call.
    pub(super) fn reserve(&self) -> Reserved {
        let n = self.0.next.fetch_add(1, Ordering::Relaxed);
        Reserved {
            n,
            id: format!("{ID_PREFIX}{n}").into(),
        }
    }

    /// Writes the `tools/call` `call` of `tool` with `arguments` (MCP, "Calling Tools"),
    /// its answer awaited from the returned receiver (which errs when the connection
    /// ends). Errors when the connection has ended, the request cannot be written or the
    /// server has not read the last [`QUEUE_LIMIT`] bytes (`ErrorKind::Other`).
    pub(super) fn send(
        &self,
        call: &Reserved,
        tool: &str,
        arguments: Option<&Map<String, Value>>,
    ) -> io::Result<oneshot::Receiver<Answer>> {
        let (tx, answer) = oneshot::channel();
        {
            // Noted before it is written, so that the answer cannot come first.
            let mut calls = lock(&self.0.calls);
            if calls.ended {
                return Err(io::ErrorKind::BrokenPipe.into());
            }
            calls.waiting.insert(call.n, tx);
        }
        let line = CallLine {
            jsonrpc: "2.0",
            id: &call.id,
            method: "tools/call",
            params: CallParams {
                name: tool,
                arguments,
                meta: Meta {
                    progress_token: &call.id,
                },
            },
        };
        if let Err(e) = self.0.outbox.write(&line) {
            lock(&self.0.calls).waiting.remove(&call.n);
            return Err(e);
        }
        Ok(answer)
    }

    /// Stops waiting for the answer to `id`; a late one is dropped.
    pub(super) fn forget(&self, id: &RequestId) {
        if let Some(n) = own_id(id) {
            lock(&self.0.calls).waiting.remove(&n);
        }
    }

    /// Forgets `id` and writes `notifications/cancelled` for it (MCP, "Cancellation")
    /// without waiting: queued when the pipe is full, dropped when the connection is gone.
    pub(super) fn cancel(&self, id: &RequestId, reason: &str) {
        self.forget(id);
        if let NumberOrString::String(id) = id {
            let line = CancelLine {
                jsonrpc: "2.0",
                method: "notifications/cancelled",
                params: CancelParams {
                    request_id: id,
                    reason,
                },
            };
            let _ = self.0.outbox.write(&line);
        }
    }

    /// Where the answer to `id` goes: `None` when `id` is not one of this client's own,
    /// `Some(None)` for a call given up (its late answer is dropped).
    fn answering(&self, id: &RequestId) -> Option<Option<oneshot::Sender<Answer>>> {
        let n = own_id(id)?;
        Some(lock(&self.0.calls).waiting.remove(&n))
    }

    /// Whether the connection has ended ([`Link::end`]).
    pub(super) fn has_ended(&self) -> bool {
        lock(&self.0.calls).ended
    }

    fn is_waiting(&self) -> bool {
        !lock(&self.0.calls).waiting.is_empty()
    }

    /// The connection ended (the server's stdout ended, or the server exited): every call
    /// waiting gets the connection's end, and later ones are refused.
    pub(super) fn end(&self) {
        let mut calls = lock(&self.0.calls);
        calls.ended = true;
        calls.waiting.clear();
    }

    #[cfg(test)]
    fn waiting(&self) -> usize {
        lock(&self.0.calls).waiting.len()
    }
}

/// What is written to the server's stdin, whole lines in order.
struct Outbox {
    state: Mutex<OutState>,
    /// Wakes the flushing task when the queue is no longer empty, or closed.
    wake: Notify,
}

struct OutState {
    /// `None` once closed or broken.
    pipe: Option<Pin<Box<dyn AsyncWrite + Send>>>,
    /// Closed by the transport: the queue is written out, then the pipe closed.
    closing: bool,
    /// Bytes the pipe did not take yet.
    queue: BytesMut,
    /// Why writing ended, for the next writer.
    broken: Option<io::ErrorKind>,
}

/// How many bytes may wait for a server that does not read its input: 64 MiB.
pub(super) const QUEUE_LIMIT: usize = 64 << 20;

#[derive(PartialEq)]
enum Flushed {
    Empty,
    Closed,
}

impl Outbox {
    fn new(pipe: Pin<Box<dyn AsyncWrite + Send>>) -> Outbox {
        Outbox {
            state: Mutex::new(OutState {
                pipe: Some(pipe),
                closing: false,
                queue: BytesMut::new(),
                broken: None,
            }),
            wake: Notify::new(),
        }
    }

    /// Writes `message` as one line of JSON: at once when nothing waits before it and the
    /// pipe takes it, else through the queue.
    fn write(&self, message: &impl Serialize) -> io::Result<()> {
        let mut line = Vec::with_capacity(256);
        serde_json::to_writer(&mut line, message)?;
        line.push(b'\n');
        self.write_line(&line)
    }

    fn write_line(&self, line: &[u8]) -> io::Result<()> {
        let mut state = lock(&self.state);
        let state = &mut *state;
        let Some(pipe) = state.pipe.as_mut().filter(|_| !state.closing) else {
            return Err(state.broken.unwrap_or(io::ErrorKind::BrokenPipe).into());
        };
        if !state.queue.is_empty() {
            if state.queue.len() + line.len() > QUEUE_LIMIT {
                return Err(io::Error::other(format!(
                    "the server has not read the last {} MiB written to it",
                    QUEUE_LIMIT >> 20
                )));
            }
            // The flushing task was woken when the queue filled.
            state.queue.extend_from_slice(line);
            return Ok(());
        }
        // Nothing waits, so the flushing task is not waiting on the pipe: a poll here with
        // no waker takes nothing from it.
        let rest = match pipe
            .as_mut()
            .poll_write(&mut Context::from_waker(Waker::noop()), line)
        {
            Poll::Ready(Ok(n)) if n == line.len() => return Ok(()),
            Poll::Ready(Ok(0)) => {
                state.pipe = None;
                state.broken = Some(io::ErrorKind::WriteZero);
                return Err(io::ErrorKind::WriteZero.into());
            }
            Poll::Ready(Ok(n)) => &line[n..],
            Poll::Ready(Err(e)) => {
                state.pipe = None;
                state.broken = Some(e.kind());
                return Err(e);
            }
            Poll::Pending => line,
        };
        state.queue.extend_from_slice(rest);
        self.wake.notify_one();
        Ok(())
    }

    /// Writes the queue out; `Closed` when the pipe is gone (or closed, the queue written).
    fn poll_flush(&self, cx: &mut Context<'_>) -> Poll<Flushed> {
        let mut state = lock(&self.state);
        let state = &mut *state;
        loop {
            if state.closing && state.queue.is_empty() {
                state.pipe = None;
            }
            let Some(pipe) = state.pipe.as_mut() else {
                state.queue.clear();
                return Poll::Ready(Flushed::Closed);
            };
            if state.queue.is_empty() {
                return Poll::Ready(Flushed::Empty);
            }
            match pipe.as_mut().poll_write(cx, &state.queue) {
                Poll::Ready(Ok(n)) if n > 0 => state.queue.advance(n),
                Poll::Ready(Ok(_)) => {
                    state.pipe = None;
                    state.broken = Some(io::ErrorKind::WriteZero);
                }
                Poll::Ready(Err(e)) => {
                    tracing::debug!("writing to the server's stdin failed: {e}");
                    state.pipe = None;
                    state.broken = Some(e.kind());
                }
                Poll::Pending => return Poll::Pending,
            }
        }
    }

    /// Closes the pipe, so the server reads the end of its input, once what is queued has
    /// been written (a request cut halfway, then the cancellation of the calls it did get):
    /// at once when nothing is queued. A server that does not read then is stopped by the
    /// connection's shutdown, which ends the writing.
    fn close(&self) {
        let mut state = lock(&self.state);
        state.closing = true;
        if state.queue.is_empty() {
            state.pipe = None;
        }
        drop(state);
        self.wake.notify_one();
    }
}

/// How many `Invalid Request` answers a connection sends, at most.
pub(super) const INVALID_ANSWERS: usize = 16;

/// Told about each line that could not be read: its bytes, and why.
type Unreadable = Box<dyn Fn(&[u8], &str) + Send>;

/// rmcp's `Transport` for a stdio server: reads its stdout (`R`), writes through `link`.
pub(super) struct StdioTransport<R> {
    link: Link,
    read: BufReader<R>,
    /// The line being read; kept across `receive`s cancelled halfway.
    line: Vec<u8>,
    codec: JsonRpcMessageCodec<RxJsonRpcMessage<RoleClient>>,
    unreadable: Unreadable,
    /// `Invalid Request` answers sent so far.
    answered: usize,
}

impl<R: AsyncRead + Send + Unpin> StdioTransport<R> {
    /// A transport reading `read` and writing through `link`, which it answers calls on;
    /// `unreadable` hears of each line skipped.
    pub(super) fn new(
        read: R,
        link: Link,
        unreadable: impl Fn(&[u8], &str) + Send + 'static,
    ) -> Self {
        StdioTransport {
            link,
            read: BufReader::new(read),
            line: Vec::new(),
            codec: JsonRpcMessageCodec::default(),
            unreadable: Box::new(unreadable),
            answered: 0,
        }
    }

    /// What `line` (without its end of line) is: an answer to a call, else what rmcp's
    /// codec reads.
    fn read(&mut self, line: &[u8]) -> Result<Read, serde_json::Error> {
        if self.link.is_waiting()
            && let Ok(response) = serde_json::from_slice::<JsonRpcResponse<CallToolResult>>(line)
            && let Some(call) = self.link.answering(&response.id)
        {
            if let Some(call) = call {
                let _ = call.send(Answer::Result(response.result));
            }
            return Ok(Read::Skip);
        }
        // The codec wants the line with a newline.
        let mut bytes = BytesMut::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line);
        bytes.extend_from_slice(b"\n");
        match self.codec.decode(&mut bytes) {
            Ok(Some(JsonRpcMessage::Response(response))) => {
                // An answer to a call that is no tool result.
                if let Some(call) = self.link.answering(&response.id) {
                    if let Some(call) = call {
                        let _ = call.send(Answer::Other);
                    }
                    return Ok(Read::Skip);
                }
                Ok(Read::Message(JsonRpcMessage::Response(response)))
            }
            Ok(Some(JsonRpcMessage::Error(error))) => {
                if let Some(call) = error.id.as_ref().and_then(|id| self.link.answering(id)) {
                    if let Some(call) = call {
                        let _ = call.send(Answer::Error(error.error));
                    }
                    return Ok(Read::Skip);
                }
                Ok(Read::Message(JsonRpcMessage::Error(error)))
            }
            Ok(Some(message)) => Ok(Read::Message(message)),
            Ok(None) => Ok(Read::Skip),
            Err(JsonRpcMessageCodecError::Serde(e)) => Err(e),
            Err(e) => {
                tracing::debug!("reading the server's stdout failed: {e}");
                Ok(Read::End)
            }
        }
    }
}

/// What a line that is no message it can read has of one: whether it is meant as a
/// response (it has `result` or `error`, or an id and no `method`), and its id.
#[derive(serde::Deserialize)]
struct Shape {
    #[serde(default)]
    id: Option<RequestId>,
    #[serde(default, deserialize_with = "present")]
    result: bool,
    #[serde(default, deserialize_with = "present")]
    error: bool,
    #[serde(default, deserialize_with = "present")]
    method: bool,
}

/// `true` for a member that is there, whatever its value (`null` too).
fn present<'de, D: serde::Deserializer<'de>>(member: D) -> Result<bool, D::Error> {
    serde::de::IgnoredAny::deserialize(member).map(|_| true)
}

impl Shape {
    fn is_response(&self) -> bool {
        self.result || self.error || (self.id.is_some() && !self.method)
    }
}

/// What to do with one line read.
#[expect(
    clippy::large_enum_variant,
    reason = "lives for one line on the stack; boxing would allocate per message"
)]
enum Read {
    Message(RxJsonRpcMessage<RoleClient>),
    Skip,
    /// Well-formed JSON that is no message: answer `Invalid Request`.
    Invalid,
    /// The codec failed otherwise: the connection ends.
    End,
}

impl<R: AsyncRead + Send + Unpin> Transport<RoleClient> for StdioTransport<R> {
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        std::future::ready(self.link.0.outbox.write(&item))
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let message = self.next().await;
        if message.is_none() {
            self.link.end();
        }
        message
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.link.0.outbox.close();
        Ok(())
    }
}

impl<R> Drop for StdioTransport<R> {
    fn drop(&mut self) {
        self.link.end();
        self.link.0.outbox.close();
    }
}

impl<R: AsyncRead + Send + Unpin> StdioTransport<R> {
    /// The next message for rmcp; `None` at the end of the server's stdout.
    async fn next(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            match self.read.read_until(b'\n', &mut self.line).await {
                Ok(0) => return None,
                Ok(_) if self.line.last() != Some(&b'\n') => {
                    // End of input in the middle of a line: rmcp drops such a tail too.
                    return None;
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::debug!("reading the server's stdout failed: {e}");
                    return None;
                }
            }
            let mut line = std::mem::take(&mut self.line);
            let read = {
                let text = &line[..line.len() - 1];
                let text = text.strip_suffix(b"\r").unwrap_or(text);
                let text = text.strip_prefix(BOM).unwrap_or(text);
                if text.is_empty() {
                    Read::Skip
                } else {
                    let read = match self.read(text) {
                        // serde_json's message differs with what follows the surrogate.
                        Err(e) if e.classify() == serde_json::error::Category::Syntax => {
                            match without_lone_surrogates(text) {
                                Some(repaired) => self.read(&repaired),
                                None => Err(e),
                            }
                        }
                        other => other,
                    };
                    match read {
                        Ok(read) => read,
                        Err(e) => {
                            // A line that is not even meant as a message is the stdout
                            // watcher's to count.
                            let meant = text
                                .iter()
                                .find(|b| !b.is_ascii_whitespace())
                                .is_some_and(|b| matches!(b, b'{' | b'['));
                            if meant {
                                (self.unreadable)(text, &e.to_string());
                            }
                            let shape = serde_json::from_slice::<Shape>(text).ok();
                            match e.classify() {
                                serde_json::error::Category::Syntax
                                | serde_json::error::Category::Eof => Read::Skip,
                                // A response is never answered (JSON-RPC 2.0, 5); one to a
                                // call fails it now, rather than at its timeout.
                                _ if shape.as_ref().is_some_and(Shape::is_response) => {
                                    let call = shape
                                        .and_then(|shape| shape.id)
                                        .and_then(|id| self.link.answering(&id));
                                    if let Some(Some(call)) = call {
                                        let _ = call.send(Answer::Invalid(e.to_string()));
                                    }
                                    Read::Skip
                                }
                                _ if self.answered < INVALID_ANSWERS => Read::Invalid,
                                _ => Read::Skip,
                            }
                        }
                    }
                }
            };
            // The buffer goes back, emptied, for the next line.
            line.clear();
            self.line = line;
            match read {
                Read::Message(message) => return Some(message),
                Read::Skip => {}
                Read::Invalid => {
                    self.answered += 1;
                    // With `"id": null`, as JSON-RPC 2.0 (5) asks when the id is unknown.
                    let answer = serde_json::json!({
                        "jsonrpc": "2.0",
                        "id": null,
                        "error": ErrorData::invalid_request("Invalid request", None),
                    });
                    if self.link.0.outbox.write(&answer).is_err() {
                        return None;
                    }
                }
                Read::End => return None,
            }
        }
    }
}

/// The UTF-8 byte-order mark, which may open a message (RFC 8259, 8.1).
pub(super) const BOM: &[u8] = b"\xEF\xBB\xBF";

/// `line` with each `\uXXXX` escape of a lone surrogate (one not in a high-low pair) as
/// `\uFFFD`; `None` when it has none. Escapes are found as JSON reads them: a backslash
/// always escapes the next character, so `\\uD83D` (an escaped backslash, then text) is
/// left alone.
fn without_lone_surrogates(line: &[u8]) -> Option<Vec<u8>> {
    fn unit(line: &[u8], at: usize) -> Option<u16> {
        let hex = line.get(at..at + 6)?;
        if hex[0] != b'\\' || hex[1] != b'u' {
            return None;
        }
        u16::from_str_radix(std::str::from_utf8(&hex[2..]).ok()?, 16).ok()
    }
    let high = |u: u16| (0xD800..0xDC00).contains(&u);
    let low = |u: u16| (0xDC00..0xE000).contains(&u);
    let mut out = Vec::with_capacity(line.len());
    let mut repaired = false;
    let mut i = 0;
    while i < line.len() {
        if line[i] != b'\\' {
            out.push(line[i]);
            i += 1;
            continue;
        }
        match unit(line, i) {
            Some(u) if high(u) && unit(line, i + 6).is_some_and(low) => {
                out.extend_from_slice(&line[i..i + 12]);
                i += 12;
            }
            Some(u) if high(u) || low(u) => {
                out.extend_from_slice(b"\\uFFFD");
                repaired = true;
                i += 6;
            }
            // Any other escape: its two characters as they are.
            _ => {
                out.extend_from_slice(&line[i..(i + 2).min(line.len())]);
                i += 2;
            }
        }
    }
    repaired.then_some(out)
}

#[cfg(test)]
mod tests {
    use rmcp::model::{ClientRequest, JsonRpcRequest, ListToolsRequest};
    use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};
    use tokio::sync::mpsc;

    use super::*;

    /// A call written to the server: its id, its progress token, and its answer.
    struct Sent {
        id: RequestId,
        token: ProgressToken,
        answer: oneshot::Receiver<Answer>,
    }

    impl Link {
        fn call(&self, tool: &str, arguments: Option<&Map<String, Value>>) -> io::Result<Sent> {
            let call = self.reserve();
            let answer = self.send(&call, tool, arguments)?;
            Ok(Sent {
                id: call.id(),
                token: call.token(),
                answer,
            })
        }
    }

    /// A link and its transport, reading in a task of its own that passes on what rmcp
    /// would get; the server's end of its stdout (to write to) and of its stdin (to read).
    struct Server {
        link: Link,
        rmcp: mpsc::UnboundedReceiver<RxJsonRpcMessage<RoleClient>>,
        /// What rmcp sends, written by the transport.
        send: mpsc::UnboundedSender<TxJsonRpcMessage<RoleClient>>,
        out: DuplexStream,
        stdin: BufReader<DuplexStream>,
        skipped: Arc<Mutex<Vec<(String, String)>>>,
    }

    fn server(capacity: usize) -> Server {
        let (stdout, out) = tokio::io::duplex(1 << 16);
        let (stdin, server_in) = tokio::io::duplex(capacity);
        let skipped: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
        let noted = {
            let skipped = skipped.clone();
            move |line: &[u8], why: &str| {
                lock(&skipped).push((String::from_utf8_lossy(line).into_owned(), why.to_owned()));
            }
        };
        let link = Link::new(stdin);
        let mut transport = StdioTransport::new(stdout, link.clone(), noted);
        let (to_rmcp, rmcp) = mpsc::unbounded_channel();
        let (send, mut sending) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    message = transport.receive() => match message {
                        Some(message) => { let _ = to_rmcp.send(message); }
                        None => return,
                    },
                    Some(item) = sending.recv() => transport.send(item).await.unwrap(),
                }
            }
        });
        Server {
            link,
            rmcp,
            send,
            out,
            stdin: BufReader::new(server_in),
            skipped,
        }
    }

    impl Server {
        /// The next line the server reads, as JSON.
        async fn read(&mut self) -> Value {
            let mut line = String::new();
            self.stdin.read_line(&mut line).await.unwrap();
            assert!(line.ends_with('\n'), "a whole line: {line:?}");
            serde_json::from_str(&line).unwrap()
        }

        async fn write(&mut self, bytes: &[u8]) {
            self.out.write_all(bytes).await.unwrap();
        }
    }

    fn text(answer: Answer) -> String {
        match answer {
            Answer::Result(r) => r.content[0].as_text().unwrap().text.clone(),
            other => panic!("not a tool result: {other:?}"),
        }
    }

    #[tokio::test]
    async fn a_call_is_written_at_once_and_its_answer_handed_to_it_not_to_rmcp() {
        let mut s = server(1 << 16);
        let args = json_map(serde_json::json!({"message": "x"}));
        let sent = s.link.call("echo", Some(&args)).unwrap();
        assert_eq!(sent.id, NumberOrString::String("c0".into()));
        assert_eq!(sent.token.0, NumberOrString::String("c0".into()));
        // Written before anything awaits.
        assert_eq!(
            s.read().await,
            serde_json::json!({"jsonrpc": "2.0", "id": "c0", "method": "tools/call",
                "params": {"name": "echo", "arguments": {"message": "x"},
                    "_meta": {"progressToken": "c0"}}})
        );
        let second = s.link.call("echo", None).unwrap();
        assert_eq!(
            s.read().await["params"],
            serde_json::json!({"name": "echo", "_meta": {"progressToken": "c1"}})
        );
        assert_eq!(s.link.waiting(), 2);
        // Answered out of order, one with a byte-order mark and a `\r`.
        s.write(b"{\"jsonrpc\":\"2.0\",\"id\":\"c1\",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"two\"}],\"isError\":true}}\r\n\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":\"c0\",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"Echo: x\"}]}}\n").await;
        match second.answer.await.unwrap() {
            Answer::Result(r) => {
                assert_eq!(r.is_error, Some(true));
                assert_eq!(r.content[0].as_text().unwrap().text, "two");
            }
            other => panic!("not a tool result: {other:?}"),
        }
        assert_eq!(text(sent.answer.await.unwrap()), "Echo: x");
        assert_eq!(s.link.waiting(), 0);
        assert!(s.rmcp.try_recv().is_err(), "rmcp saw an answer to a call");
    }

    fn json_map(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => unreachable!(),
        }
    }

    #[tokio::test]
    async fn rmcp_s_own_messages_are_read_by_rmcp_and_errors_and_odd_answers_go_to_the_call() {
        let mut s = server(1 << 16);
        let call = s.link.call("echo", None).unwrap();
        let odd = s.link.call("echo", None).unwrap();
        s.send
            .send(JsonRpcMessage::Request(JsonRpcRequest::new(
                NumberOrString::Number(2),
                ClientRequest::ListToolsRequest(ListToolsRequest::default()),
            )))
            .unwrap();
        s.read().await;
        s.read().await;
        assert_eq!(s.read().await["method"], "tools/list");
        // This answer to `tools/list` would also read as a tool result (it has `content`),
        // but its id is rmcp's: rmcp reads it as what it is.
        s.write(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"tools\":[],\"content\":[]}}\n")
            .await;
        match s.rmcp.recv().await {
            Some(JsonRpcMessage::Response(r)) => {
                assert_eq!(r.id, NumberOrString::Number(2));
                assert!(
                    matches!(r.result, rmcp::model::ServerResult::ListToolsResult(_)),
                    "{r:?}"
                );
            }
            other => panic!("not a response: {other:?}"),
        }
        // A notification (rmcp's), an error answer and an answer that is no tool result.
        s.write(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n{\"jsonrpc\":\"2.0\",\"id\":\"c0\",\"error\":{\"code\":-32602,\"message\":\"no such tool\"}}\n{\"jsonrpc\":\"2.0\",\"id\":\"c1\",\"result\":{\"content\":7}}\n").await;
        assert!(
            matches!(s.rmcp.recv().await, Some(JsonRpcMessage::Notification(_))),
            "a notification"
        );
        match call.answer.await.unwrap() {
            Answer::Error(e) => {
                assert_eq!(e.message, "no such tool");
                assert_eq!(e.code.0, -32602);
            }
            other => panic!("not an error: {other:?}"),
        }
        assert!(matches!(odd.answer.await.unwrap(), Answer::Other));
        assert!(s.rmcp.try_recv().is_err());
    }

    #[tokio::test]
    async fn lines_that_are_no_message_are_skipped_or_answered_as_rmcp_does() {
        let mut s = server(1 << 16);
        let call = s.link.call("echo", None).unwrap();
        s.read().await;
        // Not JSON (skipped), an empty line (skipped), JSON that is no message (answered
        // with `Invalid Request`), then the answer.
        s.write(b"starting up...\n\n{\"hello\":1}\n{\"jsonrpc\":\"2.0\",\"id\":\"c0\",\"result\":{\"content\":[]}}\n")
            .await;
        assert!(matches!(call.answer.await.unwrap(), Answer::Result(_)));
        let answer = s.read().await;
        assert_eq!(
            answer,
            serde_json::json!({"jsonrpc": "2.0", "id": null,
                "error": {"code": -32600, "message": "Invalid request"}})
        );
        // Only the line meant as a message is noted (the text is the stdout watcher's).
        let skipped = lock(&s.skipped);
        assert_eq!(skipped.len(), 1, "{skipped:?}");
        assert_eq!(skipped[0].0, "{\"hello\":1}");
        assert_eq!(skipped[0].1, "unrecognized JSON-RPC message");
    }

    #[tokio::test]
    async fn a_flood_of_lines_that_are_no_message_gets_a_bounded_number_of_answers() {
        let mut s = server(1 << 16);
        let call = s.link.call("echo", None).unwrap();
        s.read().await;
        let mut flood = "{\"hello\":1}\n".repeat(INVALID_ANSWERS + 10);
        flood.push_str("{\"jsonrpc\":\"2.0\",\"id\":\"c0\",\"result\":{\"content\":[]}}\n");
        s.write(flood.as_bytes()).await;
        call.answer.await.unwrap();
        // The end of stdout ends the transport, which closes stdin.
        drop(s.out);
        let mut sent = String::new();
        s.stdin.read_to_string(&mut sent).await.unwrap();
        assert_eq!(sent.matches("-32600").count(), INVALID_ANSWERS, "{sent}");
    }

    #[tokio::test]
    async fn an_answer_with_a_lone_surrogate_is_read_with_a_replacement_character() {
        let mut s = server(1 << 16);
        let call = s.link.call("echo", None).unwrap();
        // What Node's `JSON.stringify` writes for "ok 😀".slice(0, 4).
        s.write(b"{\"jsonrpc\":\"2.0\",\"id\":\"c0\",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"ok \\ud83d \\ud83d\\ude00 \\\\ud83d\"}]}}\n")
            .await;
        assert_eq!(
            text(call.answer.await.unwrap()),
            "ok \u{FFFD} \u{1F600} \\ud83d"
        );
        assert!(lock(&s.skipped).is_empty());
    }

    #[test]
    fn only_lone_surrogate_escapes_are_replaced() {
        let fix =
            |s: &str| without_lone_surrogates(s.as_bytes()).map(|v| String::from_utf8(v).unwrap());
        assert_eq!(fix(r#""\uD83D\uDE00""#), None);
        assert_eq!(fix(r#""\\uD83D \u00e9""#), None);
        assert_eq!(fix(r#""a\ud83d""#).as_deref(), Some(r#""a\uFFFD""#));
        assert_eq!(
            fix(r#""\uDE00\uD83D""#).as_deref(),
            Some(r#""\uFFFD\uFFFD""#)
        );
        assert_eq!(
            fix(r#""\uD83D\n\uD83D\uDE00\\""#).as_deref(),
            Some(r#""\uFFFD\n\uD83D\uDE00\\""#)
        );
        // A cut escape at the end is left for the parser to refuse.
        assert_eq!(fix(r#""\uD8"#), None);
    }

    #[tokio::test]
    async fn a_receive_cancelled_halfway_loses_nothing() {
        let (stdout, mut out) = tokio::io::duplex(1 << 16);
        let (stdin, _server_in) = tokio::io::duplex(1 << 16);
        let link = Link::new(stdin);
        let mut t = StdioTransport::new(stdout, link.clone(), |_: &[u8], _: &str| {});
        let call = link.call("echo", None).unwrap();
        out.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":\"c0\",\"res")
            .await
            .unwrap();
        // The half line is read, then the receive is dropped (another branch of rmcp's
        // `select!` won).
        let waited = tokio::time::timeout(std::time::Duration::from_millis(50), t.receive()).await;
        assert!(waited.is_err(), "no message yet");
        out.write_all(b"ult\":{\"content\":[]}}\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n").await.unwrap();
        assert!(matches!(
            t.receive().await,
            Some(JsonRpcMessage::Notification(_))
        ));
        assert!(matches!(call.answer.await.unwrap(), Answer::Result(_)));
        // The end of input ends the transport.
        drop(out);
        assert!(t.receive().await.is_none());
    }

    #[tokio::test]
    async fn a_call_given_up_is_cancelled_at_the_server_and_its_late_answer_dropped() {
        let mut s = server(1 << 16);
        let call = s.link.call("slow", None).unwrap();
        s.read().await;
        s.link.cancel(&call.id, "timeout");
        assert_eq!(
            s.read().await,
            serde_json::json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": "c0", "reason": "timeout"}})
        );
        assert_eq!(s.link.waiting(), 0);
        s.write(b"{\"jsonrpc\":\"2.0\",\"id\":\"c0\",\"result\":{\"content\":[]}}\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n")
            .await;
        // rmcp gets the notification, never the late answer.
        assert!(matches!(
            s.rmcp.recv().await,
            Some(JsonRpcMessage::Notification(_))
        ));
        assert!(
            call.answer.await.is_err(),
            "the call was dropped, not answered"
        );
    }

    #[tokio::test]
    async fn the_end_of_the_server_s_output_answers_every_call_waiting_and_refuses_new_ones() {
        let s = server(1 << 16);
        let first = s.link.call("echo", None).unwrap();
        let second = s.link.call("echo", None).unwrap();
        drop(s.out);
        assert!(first.answer.await.is_err());
        assert!(second.answer.await.is_err());
        let refused = s.link.call("echo", None).err().expect("refused");
        assert_eq!(refused.kind(), io::ErrorKind::BrokenPipe);
        assert_eq!(s.link.waiting(), 0);
    }

    #[tokio::test]
    async fn lines_wait_in_order_and_whole_while_the_pipe_is_full() {
        // A pipe of 100 bytes: most lines are written in part, the rest queued.
        let mut s = server(100);
        let args = json_map(serde_json::json!({"message": "x".repeat(150)}));
        let calls: Vec<Sent> = (0..40)
            .map(|_| s.link.call("echo", Some(&args)).unwrap())
            .collect();
        s.send
            .send(JsonRpcMessage::Notification(
                rmcp::model::JsonRpcNotification {
                    jsonrpc: Default::default(),
                    notification: rmcp::model::ClientNotification::InitializedNotification(
                        Default::default(),
                    ),
                },
            ))
            .unwrap();
        s.link.cancel(&calls[39].id, "late");
        for n in 0..40 {
            let line = s.read().await;
            assert_eq!(line["id"], format!("c{n}"));
            assert_eq!(line["params"]["arguments"]["message"], "x".repeat(150));
        }
        // The cancellation was written as it was made; rmcp's line when its task ran.
        let mut last = [s.read().await, s.read().await].map(|line| line["method"].clone());
        last.sort_by_key(|method| method.to_string());
        assert_eq!(
            last,
            ["notifications/cancelled", "notifications/initialized"].map(Value::from)
        );
    }

    #[tokio::test]
    async fn a_server_that_does_not_read_gets_an_error_past_the_queue_limit() {
        let s = server(1 << 10);
        let args = json_map(serde_json::json!({"message": "x".repeat(1 << 20)}));
        let mut sent = Vec::new();
        let error = loop {
            match s.link.call("echo", Some(&args)) {
                Ok(call) => sent.push(call),
                Err(e) => break e,
            }
            assert!(sent.len() <= QUEUE_LIMIT >> 20, "never refused");
        };
        assert_eq!(sent.len(), (QUEUE_LIMIT >> 20) - 1);
        assert_eq!(error.kind(), io::ErrorKind::Other);
        assert_eq!(
            error.to_string(),
            "the server has not read the last 64 MiB written to it"
        );
        // The refused call is not waiting.
        assert_eq!(s.link.waiting(), sent.len());
    }

    #[test]
    fn only_ids_written_as_this_client_writes_them_are_its_own() {
        let id = |s: &str| own_id(&NumberOrString::String(s.into()));
        assert_eq!(id("c0"), Some(0));
        assert_eq!(id("c17"), Some(17));
        for other in [
            "c00", "c01", "c+1", "c-1", "c", "c1.0", "C1", " c1", "c1 ", "d1",
        ] {
            assert_eq!(id(other), None, "{other}");
        }
        assert_eq!(own_id(&NumberOrString::Number(0)), None);
        assert!(is_own_token(&ProgressToken(NumberOrString::String(
            "c3".into()
        ))));
        assert!(!is_own_token(&ProgressToken(NumberOrString::Number(3))));
    }

    #[tokio::test]
    async fn an_answer_to_a_call_that_is_no_response_fails_it_at_once_and_is_not_answered() {
        let mut s = server(1 << 16);
        let calls: Vec<Sent> = (0..4).map(|_| s.link.call("echo", None).unwrap()).collect();
        for _ in 0..4 {
            s.read().await;
        }
        // An error without its message; no `jsonrpc`; neither result nor error; an id that
        // only looks like c3's, then c3's answer.
        s.write(b"{\"jsonrpc\":\"2.0\",\"id\":\"c0\",\"error\":{\"code\":-7}}\n{\"id\":\"c1\",\"result\":{\"content\":[]}}\n{\"jsonrpc\":\"2.0\",\"id\":\"c2\"}\n{\"jsonrpc\":\"2.0\",\"id\":\"c03\",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"not c3\"}]}}\n{\"jsonrpc\":\"2.0\",\"id\":\"c3\",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"c3\"}]}}\n").await;
        let mut calls = calls.into_iter();
        let mut invalid = Vec::new();
        for _ in 0..3 {
            let mut call = calls.next().unwrap();
            match (&mut call.answer).await.unwrap() {
                Answer::Invalid(why) => assert_eq!(why, "unrecognized JSON-RPC message"),
                other => panic!("not invalid: {other:?}"),
            }
            invalid.push(call);
        }
        assert_eq!(text(calls.next().unwrap().answer.await.unwrap()), "c3");
        assert_eq!(s.link.waiting(), 0);
        // The answer to no call of this client's own is rmcp's to drop.
        match s.rmcp.recv().await {
            Some(JsonRpcMessage::Response(r)) => {
                assert_eq!(r.id, NumberOrString::String("c03".into()))
            }
            other => panic!("not c03's answer: {other:?}"),
        }
        // No line was answered: the next line the server reads is this one.
        s.link.cancel(&invalid[2].id, "test");
        assert_eq!(s.read().await["method"], "notifications/cancelled");
        assert_eq!(lock(&s.skipped).len(), 3, "{:?}", lock(&s.skipped));
    }

    #[tokio::test]
    async fn closing_writes_what_is_queued_whole_then_ends_the_input() {
        let mut s = server(100);
        let args = json_map(serde_json::json!({"message": "x".repeat(1000)}));
        let calls: Vec<Sent> = (0..5)
            .map(|_| s.link.call("echo", Some(&args)).unwrap())
            .collect();
        for call in &calls {
            s.link.cancel(&call.id, "the program ended");
        }
        s.link.0.outbox.close();
        assert!(s.link.call("echo", None).is_err(), "closed to new lines");
        let mut rest = String::new();
        s.stdin.read_to_string(&mut rest).await.unwrap();
        let lines: Vec<Value> = rest
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        assert_eq!(lines.len(), 10);
        for (n, line) in lines[..5].iter().enumerate() {
            assert_eq!(line["id"], format!("c{n}"));
        }
        for (n, line) in lines[5..].iter().enumerate() {
            assert_eq!(line["params"]["requestId"], format!("c{n}"));
        }
    }
}

//! The transport of a stdio server: rmcp's own reader and writer, with one shortcut on the
//! way in. A response to a `tools/call` this client sent is read straight into a
//! `CallToolResult`.
//!
//! Why: rmcp reads every incoming message as one untagged enum of every result a server can
//! send, trying the variants in turn. A `tools/call` result is the sixteenth, so reading one
//! costs about 2.7 µs, against 0.4 µs read as what it must be (measured with rmcp 3.11 on
//! server-everything's `echo` answer). On a program's calls that is a fifth of the
//! client's CPU per call.
//!
//! - **Shortcut**: the ids of the `tools/call` requests written and not yet answered are kept. A
//!   line that reads as a JSON-RPC response with a `CallToolResult` and one of those ids
//!   becomes that response; anything else (a response to another request, a notification,
//!   a request from the server, an error) goes through rmcp's codec as before.
//! - **rmcp's rules**, kept:
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
//! - **Cancel safety**: rmcp polls `receive` inside a `select!`. A line read in part stays
//!   in the transport's buffer, so the next `receive` goes on with it.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::RoleClient;
use rmcp::model::{
    CallToolResult, ClientRequest, ErrorData, JsonRpcMessage, JsonRpcResponse, RequestId,
    ServerResult,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::{AsyncRwTransport, JsonRpcMessageCodec, JsonRpcMessageCodecError};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, BufReader};
use tokio_util::bytes::BytesMut;
use tokio_util::codec::Decoder;

use crate::value::FxBuild;

/// The ids of the `tools/call` requests sent and not yet answered, shared with the
/// connection, which forgets the id of a call it gives up on.
#[derive(Clone, Default)]
pub(super) struct CallIds(Arc<Mutex<HashSet<RequestId, FxBuild>>>);

impl CallIds {
    fn ids(&self) -> std::sync::MutexGuard<'_, HashSet<RequestId, FxBuild>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Forgets `id`: its call was cancelled or abandoned, so an answer may never come.
    pub(super) fn forget(&self, id: &RequestId) {
        self.ids().remove(id);
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.ids().len()
    }
}

/// How many `Invalid Request` answers a connection sends, at most.
pub(super) const INVALID_ANSWERS: usize = 16;

/// Told about each line that could not be read: its bytes, and why.
type Unreadable = Box<dyn Fn(&[u8], &str) + Send>;

/// rmcp's `Transport` for a stdio server's stdout (`R`) and stdin (`W`).
pub(super) struct StdioTransport<R, W: AsyncWrite> {
    /// rmcp's transport, used for writing only: its framing and its lock.
    write: AsyncRwTransport<RoleClient, tokio::io::Empty, W>,
    read: BufReader<R>,
    /// The line being read; kept across `receive`s cancelled halfway.
    line: Vec<u8>,
    codec: JsonRpcMessageCodec<RxJsonRpcMessage<RoleClient>>,
    calls: CallIds,
    unreadable: Unreadable,
    /// `Invalid Request` answers sent so far.
    answered: usize,
}

impl<R, W> StdioTransport<R, W>
where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    /// A transport reading `read` and writing `write`; `calls` is filled as `tools/call`
    /// requests go out; `unreadable` hears of each line skipped.
    pub(super) fn new(
        read: R,
        write: W,
        calls: CallIds,
        unreadable: impl Fn(&[u8], &str) + Send + 'static,
    ) -> Self {
        StdioTransport {
            write: AsyncRwTransport::new_client(tokio::io::empty(), write),
            read: BufReader::new(read),
            line: Vec::new(),
            codec: JsonRpcMessageCodec::default(),
            calls,
            unreadable: Box::new(unreadable),
            answered: 0,
        }
    }

    /// What `line` (without its end of line) is: the shortcut, else rmcp's codec.
    fn read(&mut self, line: &[u8]) -> Result<Read, serde_json::Error> {
        if let Some(message) = self.call_result(line) {
            return Ok(Read::Message(message));
        }
        // The codec wants the line with a newline.
        let mut bytes = BytesMut::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line);
        bytes.extend_from_slice(b"\n");
        match self.codec.decode(&mut bytes) {
            Ok(Some(message)) => {
                // An answer to a call that is not a tool result (an error): the call is
                // answered all the same.
                if let JsonRpcMessage::Response(JsonRpcResponse { id, .. })
                | JsonRpcMessage::Error(rmcp::model::JsonRpcError { id: Some(id), .. }) =
                    &message
                {
                    self.calls.forget(id);
                }
                Ok(Read::Message(message))
            }
            Ok(None) => Ok(Read::Skip),
            Err(JsonRpcMessageCodecError::Serde(e)) => Err(e),
            Err(e) => {
                tracing::debug!("reading the server's stdout failed: {e}");
                Ok(Read::End)
            }
        }
    }

    /// The response in `line` when it answers a `tools/call` this client is waiting for.
    fn call_result(&self, line: &[u8]) -> Option<RxJsonRpcMessage<RoleClient>> {
        if self.calls.ids().is_empty() {
            return None;
        }
        let response: JsonRpcResponse<CallToolResult> = serde_json::from_slice(line).ok()?;
        if !self.calls.ids().remove(&response.id) {
            return None;
        }
        Some(JsonRpcMessage::Response(JsonRpcResponse {
            jsonrpc: response.jsonrpc,
            id: response.id,
            result: ServerResult::CallToolResult(response.result),
        }))
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

impl<R, W> Transport<RoleClient> for StdioTransport<R, W>
where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        // Noted before it is written, so that the answer cannot come first.
        let call = match &item {
            JsonRpcMessage::Request(request)
                if matches!(request.request, ClientRequest::CallToolRequest(_)) =>
            {
                self.calls.ids().insert(request.id.clone());
                Some(request.id.clone())
            }
            _ => None,
        };
        let sent = self.write.send(item);
        let calls = self.calls.clone();
        async move {
            let result = sent.await;
            if result.is_err()
                && let Some(id) = call
            {
                calls.forget(&id);
            }
            result
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
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
                            match e.classify() {
                                serde_json::error::Category::Syntax
                                | serde_json::error::Category::Eof => Read::Skip,
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
                    let answer = TxJsonRpcMessage::<RoleClient>::error(
                        ErrorData::invalid_request("Invalid request", None),
                        None,
                    );
                    if self.write.send(answer).await.is_err() {
                        return None;
                    }
                }
                Read::End => return None,
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.write.close().await
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
    use rmcp::model::{
        CallToolRequest, CallToolRequestParams, ClientRequest, JsonRpcRequest, ListToolsRequest,
        NumberOrString,
    };
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    type Pipes = (
        StdioTransport<tokio::io::DuplexStream, tokio::io::DuplexStream>,
        tokio::io::DuplexStream,
        tokio::io::DuplexStream,
        CallIds,
    );

    /// A transport, the server's end of its stdout (to write to) and of its stdin (to read).
    fn transport() -> Pipes {
        transport_noting(Arc::default())
    }

    /// The same, with the lines it skipped (and why) noted in `skipped`.
    fn transport_noting(skipped: Arc<Mutex<Vec<(String, String)>>>) -> Pipes {
        let (stdout, server_out) = tokio::io::duplex(1 << 16);
        let (stdin, server_in) = tokio::io::duplex(1 << 16);
        let calls = CallIds::default();
        let noted = move |line: &[u8], why: &str| {
            skipped
                .lock()
                .unwrap()
                .push((String::from_utf8_lossy(line).into_owned(), why.to_owned()));
        };
        (
            StdioTransport::new(stdout, stdin, calls.clone(), noted),
            server_out,
            server_in,
            calls,
        )
    }

    fn request(id: i64, request: ClientRequest) -> TxJsonRpcMessage<RoleClient> {
        JsonRpcMessage::Request(JsonRpcRequest::new(NumberOrString::Number(id), request))
    }

    fn call(id: i64) -> TxJsonRpcMessage<RoleClient> {
        request(
            id,
            ClientRequest::CallToolRequest(CallToolRequest::new(CallToolRequestParams::new(
                "echo",
            ))),
        )
    }

    fn result(message: Option<RxJsonRpcMessage<RoleClient>>) -> (RequestId, ServerResult) {
        match message {
            Some(JsonRpcMessage::Response(r)) => (r.id, r.result),
            other => panic!("not a response: {other:?}"),
        }
    }

    #[tokio::test]
    async fn a_call_result_is_read_as_one_and_its_id_forgotten() {
        let (mut t, mut out, _in, calls) = transport();
        t.send(call(7)).await.unwrap();
        assert_eq!(calls.len(), 1);
        out.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"Echo: x\"}],\"isError\":true}}\r\n")
            .await
            .unwrap();
        let (id, r) = result(t.receive().await);
        assert_eq!(id, NumberOrString::Number(7));
        let ServerResult::CallToolResult(r) = r else {
            panic!("not a tool result: {r:?}")
        };
        assert_eq!(r.is_error, Some(true));
        assert_eq!(r.content[0].as_text().unwrap().text, "Echo: x");
        assert_eq!(calls.len(), 0);
    }

    #[tokio::test]
    async fn other_messages_are_read_by_rmcp_whatever_their_shape() {
        let (mut t, mut out, _in, calls) = transport();
        t.send(call(1)).await.unwrap();
        t.send(request(
            2,
            ClientRequest::ListToolsRequest(ListToolsRequest::default()),
        ))
        .await
        .unwrap();
        // Only the call's id is kept.
        assert_eq!(calls.len(), 1);
        // This answer to `tools/list` would also read as a tool result (it has `content`),
        // but its id is no call's: rmcp reads it as what it is.
        out.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"tools\":[],\"content\":[]}}\n")
            .await
            .unwrap();
        let (id, r) = result(t.receive().await);
        assert_eq!(id, NumberOrString::Number(2));
        assert!(matches!(r, ServerResult::ListToolsResult(_)), "{r:?}");
        // A notification, then an error answer to the call.
        out.write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32602,\"message\":\"no such tool\"}}\n")
            .await
            .unwrap();
        assert!(
            matches!(t.receive().await, Some(JsonRpcMessage::Notification(_))),
            "a notification"
        );
        match t.receive().await {
            Some(JsonRpcMessage::Error(e)) => assert_eq!(e.error.message, "no such tool"),
            other => panic!("not an error: {other:?}"),
        }
    }

    #[tokio::test]
    async fn lines_that_are_no_message_are_skipped_or_answered_as_rmcp_does() {
        let skipped = Arc::default();
        let (mut t, mut out, mut server_in, _calls) = transport_noting(Arc::clone(&skipped));
        t.send(call(3)).await.unwrap();
        let mut sent = vec![0; 4096];
        let n = server_in.read(&mut sent).await.unwrap();
        assert!(
            std::str::from_utf8(&sent[..n])
                .unwrap()
                .contains("\"method\":\"tools/call\"")
        );
        // Not JSON (skipped), an empty line (skipped), JSON that is no message (answered
        // with `Invalid Request`), then the answer.
        out.write_all(b"starting up...\n\n{\"hello\":1}\n\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"content\":[]}}\n")
            .await
            .unwrap();
        let (id, _) = result(t.receive().await);
        assert_eq!(id, NumberOrString::Number(3));
        let n = server_in.read(&mut sent).await.unwrap();
        let answer: serde_json::Value = serde_json::from_slice(&sent[..n]).unwrap();
        assert_eq!(answer["error"]["code"], -32600, "{answer}");
        // Only the line meant as a message is noted (the text is the stdout watcher's).
        let skipped = skipped.lock().unwrap();
        assert_eq!(skipped.len(), 1, "{skipped:?}");
        assert_eq!(skipped[0].0, "{\"hello\":1}");
        assert_eq!(skipped[0].1, "unrecognized JSON-RPC message");
    }

    #[tokio::test]
    async fn a_flood_of_lines_that_are_no_message_gets_a_bounded_number_of_answers() {
        let (mut t, mut out, mut server_in, _calls) = transport();
        t.send(call(8)).await.unwrap();
        let mut flood = "{\"hello\":1}\n".repeat(INVALID_ANSWERS + 10);
        flood.push_str("{\"jsonrpc\":\"2.0\",\"id\":8,\"result\":{\"content\":[]}}\n");
        out.write_all(flood.as_bytes()).await.unwrap();
        let (id, _) = result(t.receive().await);
        assert_eq!(id, NumberOrString::Number(8));
        drop(t);
        let mut sent = String::new();
        server_in.read_to_string(&mut sent).await.unwrap();
        assert_eq!(sent.matches("-32600").count(), INVALID_ANSWERS, "{sent}");
    }

    #[tokio::test]
    async fn an_answer_with_a_lone_surrogate_is_read_with_a_replacement_character() {
        let skipped = Arc::default();
        let (mut t, mut out, _in, calls) = transport_noting(Arc::clone(&skipped));
        t.send(call(9)).await.unwrap();
        t.send(call(10)).await.unwrap();
        // What Node's `JSON.stringify` writes for "ok 😀".slice(0, 4); then an error answer.
        out.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"ok \\ud83d \\ud83d\\ude00 \\\\ud83d\"}]}}\n{\"jsonrpc\":\"2.0\",\"id\":10,\"error\":{\"code\":-1,\"message\":\"no\"}}\n")
            .await
            .unwrap();
        let (_, r) = result(t.receive().await);
        let ServerResult::CallToolResult(r) = r else {
            panic!("not a tool result: {r:?}")
        };
        assert_eq!(
            r.content[0].as_text().unwrap().text,
            "ok \u{FFFD} \u{1F600} \\ud83d"
        );
        assert!(matches!(t.receive().await, Some(JsonRpcMessage::Error(_))));
        // Both calls are answered: no id is kept.
        assert_eq!(calls.len(), 0);
        assert!(skipped.lock().unwrap().is_empty());
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
        let (mut t, mut out, _in, _calls) = transport();
        t.send(call(4)).await.unwrap();
        out.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":4,\"res")
            .await
            .unwrap();
        // The half line is read, then the receive is dropped (another branch of rmcp's
        // `select!` won).
        let waited = tokio::time::timeout(std::time::Duration::from_millis(50), t.receive()).await;
        assert!(waited.is_err(), "no message yet");
        out.write_all(b"ult\":{\"content\":[]}}\n").await.unwrap();
        let (id, r) = result(t.receive().await);
        assert_eq!(id, NumberOrString::Number(4));
        assert!(matches!(r, ServerResult::CallToolResult(_)));
        // The end of input ends the transport.
        drop(out);
        assert!(t.receive().await.is_none());
    }

    #[tokio::test]
    async fn a_call_given_up_is_forgotten_and_its_late_answer_read_by_rmcp() {
        let (mut t, mut out, _in, calls) = transport();
        t.send(call(5)).await.unwrap();
        calls.forget(&NumberOrString::Number(5));
        assert_eq!(calls.len(), 0);
        out.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{\"content\":[]}}\n")
            .await
            .unwrap();
        let (id, r) = result(t.receive().await);
        assert_eq!(id, NumberOrString::Number(5));
        assert!(matches!(r, ServerResult::CallToolResult(_)), "{r:?}");
    }
}

//! `web_fetch`: an HTTP(S) GET of an allowed host, as text.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::dispatch::{CallCard, ErrorKind, Location, Outcome, ResultCard, Tool, ToolError};
use crate::schema::{Node, ParameterSchema, ValueSchema};

/// Bytes of body read by default: 1 MiB.
pub(super) const DEFAULT_MAX_BYTES: u64 = 1 << 20;

/// The most `max_bytes` may ask for: 10 MiB.
pub(super) const MAX_BYTES: u64 = 10 << 20;

/// Time for the whole fetch, redirects and body included: 30 s.
pub(super) const FETCH_TIMEOUT: Duration = Duration::from_secs(30);

/// Redirects followed at most: 10.
pub(super) const MAX_REDIRECTS: usize = 10;

/// The hosts a fetch may reach: `example.com` (any port) or `example.com:8080`, compared
/// without regard to case; an IPv6 address in brackets (`[::1]:8080`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AllowedHosts(Vec<String>);

impl AllowedHosts {
    /// The hosts in `entries` (`HOST` or `HOST:PORT`).
    pub fn new<S: AsRef<str>>(entries: impl IntoIterator<Item = S>) -> AllowedHosts {
        AllowedHosts(
            entries
                .into_iter()
                .map(|e| e.as_ref().trim().to_ascii_lowercase())
                .filter(|e| !e.is_empty())
                .collect(),
        )
    }

    /// Whether `url` (http or https) names an allowed host.
    pub fn allows(&self, url: &reqwest::Url) -> bool {
        let Some(host) = url.host_str() else {
            return false;
        };
        let host = host.to_ascii_lowercase();
        let port = url.port_or_known_default();
        self.0.iter().any(|entry| {
            if entry == &host {
                return true;
            }
            match (entry.rsplit_once(':'), port) {
                (Some((h, p)), Some(port)) if !h.is_empty() && !entry.ends_with(']') => {
                    h == host && p.parse::<u16>().ok() == Some(port)
                }
                _ => false,
            }
        })
    }

    /// Whether no host is allowed.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The entries, as given (lowercase).
    pub fn entries(&self) -> &[String] {
        &self.0
    }
}

/// The `web_fetch` tool: GET `url` when its host is in `allowed` (every redirect is checked
/// again, 10 at most), at most `max_bytes` of body (default 1 MiB, at most 10 MiB),
/// within 30 s for the whole fetch; HTML is turned into text. Its value: `{url,
/// status, content_type, title?, text, bytes, truncated}`, `url` the address after
/// redirects; a page that answers 404 is a value with its status, not an error.
pub fn web_fetch_tool(allowed: AllowedHosts) -> Tool {
    let allowed = Arc::new(allowed);
    Tool::builder("web_fetch")
        .annotations(crate::dispatch::ToolAnnotations::read_only().open_world())
        .description("Fetch a web page (HTTP GET) from an allowed host and return its text (HTML turned into text).")
        .parameters(ParameterSchema::new([
            (
                "url",
                Node::string().min_length(1).describe("An http:// or https:// address.").required(),
            ),
            (
                "max_bytes",
                Node::integer()
                    .minimum(1)
                    .maximum(MAX_BYTES)
                    .default_value(DEFAULT_MAX_BYTES)
                    .describe("Most bytes of the body to read; the rest is cut."),
            ),
        ]))
        .output(ValueSchema::new(
            Node::object([
                ("url", Node::string().describe("The address after redirects.").required()),
                ("status", Node::integer().describe("The HTTP status.").required()),
                ("content_type", Node::string().required()),
                ("title", Node::string().describe("The HTML page's title.")),
                ("text", Node::string().describe("The body as text.").required()),
                ("bytes", Node::integer().minimum(0).describe("Bytes of body read.").required()),
                ("truncated", Node::boolean().describe("Whether the body was cut at max_bytes.").required()),
            ])
            .additional_properties(false),
        ))
        .render(|_, v| {
            let mut text = format!("{} ({})", v["url"].as_str().unwrap_or_default(), v["status"]);
            if let Some(title) = v["title"].as_str() {
                text.push_str(&format!("\n# {title}"));
            }
            text.push('\n');
            text.push_str(v["text"].as_str().unwrap_or_default());
            if v["truncated"] == true {
                text.push_str(&format!("\n… cut at {} bytes", v["bytes"]));
            }
            vec![crate::dispatch::Content::text(text)]
        })
        .present_call(|args| {
            let url = args["url"].as_str().unwrap_or_default().to_owned();
            CallCard::Generic {
                title: format!("Fetch {url}"),
                kind: "fetch".into(),
                raw_input: args.clone(),
                locations: Vec::<Location>::new(),
            }
        })
        .present_result(web_card)
        .execute(move |args, exec| {
            let allowed = allowed.clone();
            async move {
                let url = args.str("url").unwrap_or_default().to_owned();
                let max = args
                    .get("max_bytes")
                    .and_then(Value::as_u64)
                    .unwrap_or(DEFAULT_MAX_BYTES)
                    .min(MAX_BYTES) as usize;
                tokio::select! {
                    r = tokio::time::timeout(FETCH_TIMEOUT, fetch(&allowed, &url, max)) => r.unwrap_or_else(|_| Err(ToolError::with_kind(
                        ErrorKind::Timeout,
                        format!("{url}: no complete answer within {} s", FETCH_TIMEOUT.as_secs()),
                    ))),
                    () = exec.signal().cancelled() => Err(ToolError::cancelled()),
                }
            }
        })
        .build()
        .unwrap_or_else(|e| unreachable!("web_fetch is well defined: {e}"))
}

fn check(allowed: &AllowedHosts, shown: &str, url: &reqwest::Url) -> Result<(), ToolError> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(ToolError::new(format!(
            "{shown}: only http and https addresses are fetched, not {}",
            url.scheme()
        )));
    }
    if !allowed.allows(url) {
        let host = match url.port() {
            Some(p) => format!("{}:{p}", url.host_str().unwrap_or_default()),
            None => url.host_str().unwrap_or_default().to_owned(),
        };
        return Err(ToolError::with_kind(
            ErrorKind::Denied,
            format!(
                "{shown}: host {host} is not among the hosts this tool may reach ({}); a redirect is checked like the first address",
                allowed.0.join(", ")
            ),
        ));
    }
    Ok(())
}

async fn fetch(allowed: &AllowedHosts, asked: &str, max: usize) -> Result<Value, ToolError> {
    let fail = |e: &dyn std::fmt::Display| ToolError::new(format!("{asked}: {e}"));
    let mut url = reqwest::Url::parse(asked).map_err(|e| fail(&e))?;
    check(allowed, asked, &url)?;
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("codemode/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| fail(&e))?;
    let mut redirects = 0;
    let mut response = loop {
        let response = client.get(url.clone()).send().await.map_err(|e| fail(&e))?;
        if !response.status().is_redirection() {
            break response;
        }
        let Some(location) = response.headers().get(reqwest::header::LOCATION) else {
            break response;
        };
        redirects += 1;
        if redirects > MAX_REDIRECTS {
            return Err(fail(&format!("more than {MAX_REDIRECTS} redirects")));
        }
        let next = location
            .to_str()
            .ok()
            .and_then(|l| url.join(l).ok())
            .ok_or_else(|| fail(&"a redirect to an address that cannot be read"))?;
        check(allowed, next.as_str(), &next)?;
        url = next;
    };
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let mut body: Vec<u8> = Vec::new();
    let mut truncated = false;
    while let Some(chunk) = response.chunk().await.map_err(|e| fail(&e))? {
        let room = max - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            truncated = true;
            break;
        }
        body.extend_from_slice(&chunk);
    }
    let mime = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let (title, text) = if mime == "text/html" || mime == "application/xhtml+xml" {
        html_text(body.clone()).await
    } else if mime.is_empty()
        || mime.starts_with("text/")
        || mime.ends_with("json")
        || mime.ends_with("xml")
        || mime.ends_with("javascript")
    {
        (None, String::from_utf8_lossy(&body).into_owned())
    } else {
        (None, format!("({} bytes of {mime}, not text)", body.len()))
    };
    let mut value = json!({
        "url": url.as_str(),
        "status": status,
        "content_type": content_type,
        "text": text,
        "bytes": body.len(),
        "truncated": truncated,
    });
    if let Some(title) = title {
        value["title"] = Value::String(title);
    }
    Ok(value)
}

/// Deepest element nesting `html2text` is given: its parser's work grows with the square of
/// the depth, so a deeper page (a hostile one) is turned into text by stripping its tags.
const MAX_HTML_DEPTH: usize = 256;

/// The title and text of an HTML body, converted on the blocking pool (the conversion is
/// CPU work that must not hold the run's thread).
async fn html_text(body: Vec<u8>) -> (Option<String>, String) {
    tokio::task::spawn_blocking(move || {
        let title = html_title(&body);
        let text = if nesting_depth(&body) > MAX_HTML_DEPTH {
            strip_tags(&body)
        } else {
            html2text::from_read(&body[..], 100)
                .unwrap_or_else(|_| String::from_utf8_lossy(&body).into_owned())
        };
        (title, text)
    })
    .await
    .unwrap_or_else(|_| (None, String::new()))
}

/// An estimate of the deepest element nesting of `html`: opening tags less closing ones;
/// void elements, `p` and `li` (often left open), comments and declarations not counted.
fn nesting_depth(html: &[u8]) -> usize {
    const OPEN_ENDED: &[&[u8]] = &[
        b"area", b"base", b"br", b"col", b"embed", b"hr", b"img", b"input", b"link", b"meta",
        b"source", b"track", b"wbr", b"p", b"li",
    ];
    let (mut depth, mut max) = (0usize, 0usize);
    let mut i = 0;
    while let Some(at) = html[i..].iter().position(|&b| b == b'<') {
        let tag = &html[i + at + 1..];
        let end = tag.iter().position(|&b| b == b'>').unwrap_or(tag.len());
        let inner = &tag[..end];
        if inner.starts_with(b"/") {
            depth = depth.saturating_sub(1);
        } else if inner.first().is_some_and(u8::is_ascii_alphabetic) && !inner.ends_with(b"/") {
            let name_end = inner
                .iter()
                .position(|b| !b.is_ascii_alphanumeric())
                .unwrap_or(inner.len());
            let name = inner[..name_end].to_ascii_lowercase();
            if !OPEN_ENDED.contains(&name.as_slice()) {
                depth += 1;
                max = max.max(depth);
            }
        }
        i += at + 1 + end;
        if i >= html.len() {
            break;
        }
    }
    max
}

/// The text of `html` with its tags (and script and style contents) removed, whitespace
/// runs collapsed: the fallback for pages too deep to parse.
fn strip_tags(html: &[u8]) -> String {
    let text = String::from_utf8_lossy(html);
    let lower = text.to_ascii_lowercase();
    let mut out = String::with_capacity(text.len() / 2);
    let mut i = 0;
    while i < text.len() {
        let Some(at) = text[i..].find('<') else {
            out.push_str(&text[i..]);
            break;
        };
        out.push_str(&text[i..i + at]);
        let start = i + at;
        let skip_to = ["script", "style"].iter().find_map(|t| {
            if lower[start + 1..].starts_with(t) {
                lower[start..].find(&format!("</{t}")).map(|p| start + p)
            } else {
                None
            }
        });
        let from = skip_to.unwrap_or(start);
        i = text[from..].find('>').map_or(text.len(), |p| from + p + 1);
        out.push(' ');
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The text of an HTML document's `<title>`, whitespace collapsed.
fn html_title(body: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(body);
    let lower = text.to_ascii_lowercase();
    let open = lower.find("<title")?;
    let start = open + lower[open..].find('>')? + 1;
    let end = start + lower[start..].find("</title")?;
    let title: Vec<&str> = text[start..end].split_whitespace().collect();
    let title = title.join(" ");
    (!title.is_empty()).then(|| {
        html2text::from_read(title.as_bytes(), usize::MAX / 2)
            .map(|t| t.trim().to_owned())
            .unwrap_or(title)
    })
}

fn web_card(args: &Value, outcome: &Outcome) -> ResultCard {
    match outcome.value() {
        Some(v) => ResultCard::Web {
            kind: "fetch".into(),
            url: v["url"].as_str().unwrap_or_default().to_owned(),
            title: v["title"].as_str().map(str::to_owned),
            text: v["text"].as_str().unwrap_or_default().to_owned(),
        },
        None => ResultCard::Generic {
            title: format!("Fetch {}", args["url"].as_str().unwrap_or_default()),
            text: outcome.text(),
            is_error: true,
            locations: Vec::new(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_match_with_or_without_a_port() {
        let allowed = AllowedHosts::new(["Example.com", "127.0.0.1:8080"]);
        let url = |s: &str| reqwest::Url::parse(s).unwrap();
        assert!(allowed.allows(&url("https://example.com/a")));
        assert!(allowed.allows(&url("http://EXAMPLE.com:81/")));
        assert!(allowed.allows(&url("http://127.0.0.1:8080/x")));
        assert!(!allowed.allows(&url("http://127.0.0.1:8081/x")));
        assert!(!allowed.allows(&url("http://127.0.0.1/x")));
        assert!(!allowed.allows(&url("https://sub.example.com/")));
        assert!(!allowed.allows(&url("https://example.com.evil.net/")));
    }

    #[test]
    fn deep_pages_are_stripped_not_parsed() {
        let deep = format!("<html><body>{}x</body></html>", "<div>".repeat(40_000));
        assert_eq!(nesting_depth(deep.as_bytes()), 40_002);
        let page = b"<html><head><title>T</title><script>var a = '<b>';</script></head><body><div><p>one<p>two<br>three</div></body></html>";
        assert_eq!(nesting_depth(page), 4);
        assert_eq!(strip_tags(page), "T one two three");
        let started = std::time::Instant::now();
        let (_, text) = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(html_text(deep.into_bytes()));
        assert_eq!(text, "x");
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }

    #[test]
    fn the_title_is_read_from_the_head() {
        assert_eq!(
            html_title(b"<html><head><TITLE> A  &amp; B </TITLE></head></html>").as_deref(),
            Some("A & B")
        );
        assert_eq!(html_title(b"<p>none</p>"), None);
    }
}

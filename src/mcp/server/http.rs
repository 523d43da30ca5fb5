//! The server over MCP's streamable HTTP transport: rmcp's tower service at `/mcp`,
//! mounted on axum, one session per `Mcp-Session-Id`.
//!
//! DNS rebinding (a web page whose host name resolves to 127.0.0.1 posting to the local
//! server) is refused twice over: the `Host` header must name a loopback host (or one
//! allowed with [`HttpOptions::allowed_hosts`], or the specific address bound), and a
//! request that carries an `Origin` (every browser request does) must come from
//! `http://localhost`, `http://127.0.0.1` or `http://[::1]` on the server's own port, or
//! an origin of [`HttpOptions::allowed_origins`]; anything else is answered `403
//! Forbidden`. Clients that are not browsers send no `Origin` and pass.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use super::{McpServer, McpServerError};

/// Hosts and origins the HTTP server accepts besides its loopback ones.
///
/// Default: none (loopback only).
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct HttpOptions {
    /// More `Host` header values to accept, as `name` (any port) or `name:port`, e.g.
    /// `mcp.example.com`: for a server bound to a non-loopback address and reached by name.
    pub allowed_hosts: Vec<String>,
    /// More `Origin` header values to accept, as `http://` or `https://` `host[:port]`
    /// (RFC 6454 origins: without a port, the scheme's default, 80 or 443; `:*` for any
    /// port), or `null`, e.g. `https://app.example.com`. Anything else (a path, no scheme)
    /// makes [`McpServer::bind_http`] fail with [`McpServerError::Origin`].
    pub allowed_origins: Vec<String>,
}

impl HttpOptions {
    /// Adds a `Host` header value to accept.
    pub fn allow_host(mut self, host: impl Into<String>) -> Self {
        self.allowed_hosts.push(host.into());
        self
    }

    /// Adds an `Origin` header value to accept.
    pub fn allow_origin(mut self, origin: impl Into<String>) -> Self {
        self.allowed_origins.push(origin.into());
        self
    }
}

/// A bound HTTP server, not serving yet: [`HttpServer::local_addr`] tells the port when
/// `0` was asked for.
pub struct HttpServer {
    listener: tokio::net::TcpListener,
    local_addr: SocketAddr,
    router: axum::Router,
    stop: CancellationToken,
}

impl std::fmt::Debug for HttpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpServer")
            .field("local_addr", &self.local_addr)
            .finish_non_exhaustive()
    }
}

impl McpServer {
    /// Binds `addr` for MCP's streamable HTTP transport at the path `/mcp`. Bind a
    /// loopback address (`127.0.0.1:8931`) unless the server must be reachable from other
    /// machines; port `0` picks a free port.
    ///
    /// # Errors
    /// [`McpServerError::Bind`] when the address cannot be bound.
    pub async fn bind_http(
        &self,
        addr: SocketAddr,
        options: HttpOptions,
    ) -> Result<HttpServer, McpServerError> {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| McpServerError::Bind { addr, source })?;
        let local_addr = listener
            .local_addr()
            .map_err(|source| McpServerError::Bind { addr, source })?;
        let port = local_addr.port();
        let mut hosts: Vec<String> = ["localhost", "127.0.0.1", "::1"]
            .into_iter()
            .map(String::from)
            .collect();
        if !local_addr.ip().is_unspecified() && !local_addr.ip().is_loopback() {
            hosts.push(local_addr.ip().to_string());
        }
        hosts.extend(options.allowed_hosts);
        let mut origins: Vec<String> = ["localhost", "127.0.0.1", "[::1]"]
            .into_iter()
            .map(|h| format!("http://{h}:{port}"))
            .collect();
        for origin in &options.allowed_origins {
            origins.push(
                normalize_origin(origin).map_err(|reason| McpServerError::Origin {
                    origin: origin.clone(),
                    reason,
                })?,
            );
        }
        let stop = CancellationToken::new();
        let config = StreamableHttpServerConfig::default()
            .with_allowed_hosts(hosts)
            .with_allowed_origins(origins)
            .enforce_origin_validation()
            .with_cancellation_token(stop.child_token());
        let server = self.clone();
        let service = StreamableHttpService::new(
            move || Ok(server.session()),
            Arc::new(LocalSessionManager::default()),
            config,
        );
        let router = axum::Router::new().route_service("/mcp", service);
        Ok(HttpServer {
            listener,
            local_addr,
            router,
            stop,
        })
    }

    /// Binds `addr` ([`McpServer::bind_http`] with no extra hosts or origins) and serves
    /// until the process ends.
    ///
    /// # Errors
    /// [`McpServerError::Bind`] when the address cannot be bound, [`McpServerError::Serve`]
    /// when accepting connections fails.
    pub async fn serve_http(&self, addr: SocketAddr) -> Result<(), McpServerError> {
        self.bind_http(addr, HttpOptions::default())
            .await?
            .serve_until(std::future::pending())
            .await
    }
}

impl HttpServer {
    /// The address bound (with the port picked, when `0` was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The URL clients connect to: `http://<address>/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.local_addr)
    }

    /// Serves until `shutdown` completes, then ends every session (runs in progress are
    /// cancelled) and returns once open connections are closed.
    ///
    /// # Errors
    /// [`McpServerError::Serve`] when accepting connections fails.
    pub async fn serve_until(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), McpServerError> {
        let stop = self.stop.clone();
        axum::serve(self.listener, self.router)
            .with_graceful_shutdown(async move {
                shutdown.await;
                stop.cancel();
            })
            .await
            .map_err(|e| McpServerError::Serve(e.to_string()))
    }
}

/// An allowed origin as the transport matches it: `scheme://host:port` with the port
/// written out (the scheme's default when none is given, RFC 6454 §4), `:*` kept, or
/// `null`; why not, for anything that is not an origin.
fn normalize_origin(text: &str) -> Result<String, String> {
    let text = text.trim();
    if text == "null" {
        return Ok(text.to_owned());
    }
    let (scheme, rest) = text
        .split_once("://")
        .ok_or("an origin starts with http:// or https://")?;
    let scheme = scheme.to_ascii_lowercase();
    let default_port = match scheme.as_str() {
        "http" => 80,
        "https" => 443,
        _ => return Err("an origin starts with http:// or https://".to_owned()),
    };
    if rest.is_empty() || rest.contains(['/', '?', '#', '@', ' ']) {
        return Err("an origin is a scheme, a host and a port, with no path".to_owned());
    }
    // The port follows the last `:` after an IPv6 literal's closing bracket.
    let host_end = rest.find(']').map_or(0, |i| i + 1);
    let (host, port) = match rest[host_end..].rfind(':') {
        Some(i) => rest.split_at(host_end + i),
        None => (rest, ""),
    };
    if host.is_empty() || (host.starts_with('[') != host.ends_with(']')) {
        return Err("an origin names a host".to_owned());
    }
    let port = match port.strip_prefix(':') {
        None => default_port.to_string(),
        Some("*") => "*".to_owned(),
        Some(p) => p
            .parse::<u16>()
            .map_err(|_| format!("{p:?} is not a port"))?
            .to_string(),
    };
    Ok(format!("{scheme}://{}:{port}", host.to_ascii_lowercase()))
}

#[cfg(test)]
mod tests {
    use super::normalize_origin;

    #[test]
    fn an_origin_is_written_out_with_its_port_and_anything_else_is_refused() {
        for (given, kept) in [
            ("https://App.Example", "https://app.example:443"),
            ("http://app.example", "http://app.example:80"),
            ("https://app.example:8443", "https://app.example:8443"),
            ("http://localhost:*", "http://localhost:*"),
            ("http://[::1]", "http://[::1]:80"),
            ("http://[::1]:3000", "http://[::1]:3000"),
            ("null", "null"),
        ] {
            assert_eq!(normalize_origin(given).as_deref(), Ok(kept), "{given}");
        }
        for (given, why) in [
            ("app.example", "an origin starts with http:// or https://"),
            (
                "ftp://app.example",
                "an origin starts with http:// or https://",
            ),
            (
                "https://app.example/path",
                "an origin is a scheme, a host and a port, with no path",
            ),
            (
                "https://",
                "an origin is a scheme, a host and a port, with no path",
            ),
            ("https://:443", "an origin names a host"),
            ("https://app.example:99999", "\"99999\" is not a port"),
            ("https://app.example:", "\"\" is not a port"),
        ] {
            assert_eq!(normalize_origin(given), Err(why.to_owned()), "{given}");
        }
    }
}

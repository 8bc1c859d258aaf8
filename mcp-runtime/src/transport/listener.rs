//! The listening socket of the HTTP edge, with an accept queue sized for bursts.

use std::io;

use tokio::net::{TcpListener, TcpSocket};

use super::http_config::HttpConfig;

/// Binds [`HttpConfig::bind`] and listens with [`HttpConfig::listen_backlog`] as the length of
/// the kernel's accept queue (capped by the system, `net.core.somaxconn` on Linux).
///
/// [`HttpServer::bind`](super::HttpServer::bind) listens this way; call it to bind a listener
/// of your own, for [`serve_router`](super::serve_router).
/// `tokio::net::TcpListener::bind` listens with a queue of 128: a burst of more new
/// connections than that, arriving faster than the server accepts them (clients starting
/// together, a load balancer reconnecting), overflows it, and the kernel drops their
/// handshakes, which clients retry only after a second. Must be called within a Tokio
/// runtime.
///
/// # Errors
/// The socket's error: the address is in use or cannot be assigned, or no permission.
///
/// # Example
/// ```no_run
/// # async fn run() -> std::io::Result<()> {
/// use mcp_runtime::transport::{HttpConfig, listen};
///
/// let config = HttpConfig::default().with_bind("127.0.0.1:8080".parse().unwrap());
/// let listener = listen(&config).await?;
/// println!("listening on {}", listener.local_addr()?);
/// # Ok(())
/// # }
/// ```
pub async fn listen(config: &HttpConfig) -> io::Result<TcpListener> {
    let addr = config.bind;
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    // As tokio's own `bind`: a restarted server takes its port back while the previous
    // process's connections sit in TIME_WAIT.
    #[cfg(unix)]
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(config.listen_backlog)
}

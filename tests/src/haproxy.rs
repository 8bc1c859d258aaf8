//! A real load balancer in front of test servers: HAProxy (Debian's `haproxy`), one process per
//! test, with its own configuration file in a temporary directory and its own free port.
//!
//! Tests that need it call [`haproxy_or_skip`]: without `haproxy` on `PATH` (or `HAPROXY`
//! naming the binary) they print `skipped: ...` and return, unless `MCP_REQUIRE_HAPROXY` is set
//! (as in CI), when they fail instead.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::Error;

/// The HAProxy binary to run: `$HAPROXY`, else `haproxy` on `PATH`, if it answers `-v`.
pub fn haproxy_binary() -> Result<PathBuf, String> {
    let binary =
        std::env::var_os("HAPROXY").map_or_else(|| PathBuf::from("haproxy"), PathBuf::from);
    match Command::new(&binary).arg("-v").output() {
        Ok(out) if out.status.success() => Ok(binary),
        Ok(out) => Err(format!(
            "`{} -v` failed: {}",
            binary.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Err(e) => Err(format!("cannot run {}: {e}", binary.display())),
    }
}

/// The HAProxy binary, or `None` after printing why the test is skipped. Panics instead when
/// `MCP_REQUIRE_HAPROXY` is set.
pub fn haproxy_or_skip(test: &str) -> Option<PathBuf> {
    match haproxy_binary() {
        Ok(binary) => Some(binary),
        Err(e) => {
            assert!(
                std::env::var_os("MCP_REQUIRE_HAPROXY").is_none(),
                "MCP_REQUIRE_HAPROXY is set but HAProxy is unusable: {e} (apt-get install haproxy)"
            );
            println!("skipped: {test} needs HAProxy ({e}; apt-get install haproxy)");
            None
        }
    }
}

/// A free loopback port (bound, read and released: a later bind may race another process,
/// which the caller's start-up check then reports).
pub fn free_port() -> Result<u16, Error> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// What one HAProxy process balances, and how.
#[derive(Debug, Clone)]
pub struct ProxyConfig {
    /// The backends, balanced round robin.
    pub servers: Vec<SocketAddr>,
    /// `timeout client`: the longest the client side of a stream may stay silent.
    pub timeout_client: Duration,
    /// `timeout server`: the longest the server side may stay silent (an SSE stream included:
    /// HAProxy cuts a response that sends nothing for this long).
    pub timeout_server: Duration,
    /// Health-check every backend (`GET /healthz` every 250 ms, down after 2 failures, up
    /// after 2 successes), so a killed or stopped instance is taken out of the rotation.
    pub health_checks: bool,
}

impl ProxyConfig {
    /// The configuration file: HTTP mode, round robin, `retries 0` and `retry-on none` (HAProxy
    /// never resends a request, a POST least of all: every retry is the client's own), `option
    /// redispatch` (a down server's share goes to the others).
    pub fn render(&self, port: u16) -> String {
        let ms = |d: Duration| d.as_millis().max(1);
        let mut text = format!(
            "global\n    maxconn 4096\n\n\
             defaults\n    mode http\n    timeout connect 1s\n    timeout client {}ms\n    \
             timeout server {}ms\n    timeout check 500ms\n    retries 0\n    retry-on none\n    \
             option redispatch\n\n\
             frontend mcp\n    bind 127.0.0.1:{port}\n    default_backend notes\n\n\
             backend notes\n    balance roundrobin\n",
            ms(self.timeout_client),
            ms(self.timeout_server),
        );
        if self.health_checks {
            text.push_str(
                "    option httpchk\n    http-check send meth GET uri /healthz ver HTTP/1.1 hdr Host localhost\n    \
                 http-check expect status 200\n    default-server inter 250ms fall 2 rise 2\n",
            );
        }
        for (i, server) in self.servers.iter().enumerate() {
            let check = if self.health_checks { " check" } else { "" };
            text.push_str(&format!("    server n{i} {server}{check}\n"));
        }
        text
    }
}

/// A running HAProxy; killed on drop.
pub struct Haproxy {
    child: Child,
    /// Where clients connect.
    pub addr: SocketAddr,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Haproxy {
    /// Starts `binary` with `config` on a free loopback port and waits until it accepts
    /// connections.
    ///
    /// # Errors
    /// The spawn error, or HAProxy's own output if it exited or did not listen within 10 s.
    pub fn start(binary: &Path, config: &ProxyConfig) -> Result<Self, Error> {
        let dir = tempfile::Builder::new().prefix("haproxy-test-").tempdir()?;
        let port = free_port()?;
        let cfg = dir.path().join("haproxy.cfg");
        std::fs::write(&cfg, config.render(port))?;
        let log = dir.path().join("haproxy.log");
        let child = Command::new(binary)
            .arg("-db")
            .arg("-f")
            .arg(&cfg)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&log)?)
            .stderr(std::fs::File::create(dir.path().join("haproxy.err"))?)
            .spawn()?;
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let mut proxy = Self {
            child,
            addr,
            log,
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(status) = proxy.child.try_wait()? {
                return Err(format!("haproxy exited ({status}): {}", proxy.output()).into());
            }
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                return Ok(proxy);
            }
            if Instant::now() > deadline {
                return Err(format!("haproxy did not listen on {addr}: {}", proxy.output()).into());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// What HAProxy printed (stdout and stderr), for diagnostics.
    pub fn output(&self) -> String {
        let err = self.log.with_file_name("haproxy.err");
        format!(
            "{}{}",
            std::fs::read_to_string(&self.log).unwrap_or_default(),
            std::fs::read_to_string(err).unwrap_or_default()
        )
    }

    /// `http://ADDR/mcp` through the proxy.
    pub fn mcp_url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }
}

impl Drop for Haproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

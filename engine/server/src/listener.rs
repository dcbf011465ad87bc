//! Accepting connections, one thread each, and shutting down gracefully.

use redoctor_args::say;
use std::collections::HashMap;
use std::io;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use msql_srv::MysqlIntermediary;
use parking_lot::Mutex;

use super::framing::{Guard, StmtParams};
use super::net_spin::{IdleGate, NetSpin, Spinner};
use super::session::Session;
use super::{peer, ConnState, ServerConfig, ServerError, Shared};
use redoctor_engine::Engine;

enum Sock {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Sock {
    fn shutdown_read(&self) {
        let _ = match self {
            Sock::Unix(s) => s.shutdown(Shutdown::Read),
            Sock::Tcp(s) => s.shutdown(Shutdown::Read),
        };
    }
}

struct Conn {
    state: Arc<ConnState>,
    sock: Sock,
    thread: Option<JoinHandle<()>>,
}

type Conns = Arc<Mutex<HashMap<u64, Conn>>>;

/// A running server. Dropping it without [`Server::shutdown`] (or
/// [`Server::stop_serving`]) leaves the threads running; call one of them.
pub struct Server {
    shared: Arc<Shared>,
    cfg: ServerConfig,
    stop: Arc<AtomicBool>,
    acceptor: Option<JoinHandle<()>>,
    conns: Conns,
    tcp_port: Option<u16>,
}

fn prepare_socket_path(path: &Path) -> Result<(), ServerError> {
    let err = |source| ServerError::Socket {
        path: path.display().to_string(),
        source,
    };
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_socket() => {
            if UnixStream::connect(path).is_ok() {
                return Err(err(io::Error::new(
                    io::ErrorKind::AddrInUse,
                    "a server is already listening there",
                )));
            }
            std::fs::remove_file(path).map_err(err)
        }
        Ok(_) => Err(err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            "the path exists and is not a socket",
        ))),
        Err(_) => Ok(()),
    }
}

/// Checks that a server could listen on `path`, binding a socket there and
/// removing it again, so a caller can refuse a bad path before it starts
/// anything else. A stale socket file there is removed; a live server's
/// socket, or a file that is not a socket, is an error.
pub fn check_socket_path(path: &Path) -> Result<(), ServerError> {
    prepare_socket_path(path)?;
    let probe = UnixListener::bind(path).map_err(|source| ServerError::Socket {
        path: path.display().to_string(),
        source,
    })?;
    drop(probe);
    let _ = std::fs::remove_file(path);
    Ok(())
}

impl Server {
    /// Listens and starts accepting connections.
    pub fn start(engine: Arc<Engine>, cfg: ServerConfig) -> Result<Server, ServerError> {
        prepare_socket_path(&cfg.socket)?;
        let sock_err = |source| ServerError::Socket {
            path: cfg.socket.display().to_string(),
            source,
        };
        let unix = UnixListener::bind(&cfg.socket).map_err(sock_err)?;
        std::fs::set_permissions(&cfg.socket, std::fs::Permissions::from_mode(0o600))
            .map_err(sock_err)?;
        unix.set_nonblocking(true).map_err(sock_err)?;
        let tcp = match cfg.tcp_port {
            None => None,
            Some(port) => {
                let l = TcpListener::bind(("127.0.0.1", port))
                    .map_err(|source| ServerError::Tcp { port, source })?;
                l.set_nonblocking(true)
                    .map_err(|source| ServerError::Tcp { port, source })?;
                Some(l)
            }
        };
        let tcp_port = tcp
            .as_ref()
            .map(|l| l.local_addr().map(|a| a.port()).unwrap_or(0));
        let replication =
            crate::replication::Replication::new(engine.clone(), cfg.source_socket.clone());
        let shared = Arc::new(Shared {
            engine,
            replication,
            auto_inc: Default::default(),
            shutting_down: AtomicBool::new(false),
            max_packet: cfg.max_packet,
            connect_timeout: cfg.connect_timeout.max(Duration::from_millis(1)),
            socket: cfg.socket.display().to_string(),
            port: tcp_port.unwrap_or(0),
            threads_connected: AtomicU64::new(0),
            connections: AtomicU64::new(0),
            questions: AtomicU64::new(0),
            stmt_timing: Default::default(),
            started: Instant::now(),
            thread_prefix: cfg.thread_prefix.clone(),
            log_prefix: cfg.log_prefix.clone(),
            net_spin: Arc::new(NetSpin::new(cfg.net_spin, IdleGate::host())),
        });
        if shared.replication.source().is_some() {
            if let Err(e) = shared.replication.start() {
                // As MySQL: the server runs; SHOW REPLICA STATUS says why
                // replication did not start.
                eprintln!("{}: START REPLICA failed: {e}", cfg.log_prefix);
            }
        }
        let stop = Arc::new(AtomicBool::new(false));
        let conns: Conns = Arc::default();
        let acceptor = {
            let (shared, stop, conns) = (shared.clone(), stop.clone(), conns.clone());
            std::thread::Builder::new()
                .name(format!("{}_acceptor", cfg.thread_prefix))
                .spawn(move || accept_loop(unix, tcp, shared, stop, conns))
                .map_err(sock_err)?
        };
        Ok(Server {
            shared,
            cfg,
            stop,
            acceptor: Some(acceptor),
            conns,
            tcp_port,
        })
    }

    pub fn socket_path(&self) -> &Path {
        &self.cfg.socket
    }

    /// The bound TCP port, if TCP is on.
    pub fn tcp_port(&self) -> Option<u16> {
        self.tcp_port
    }

    pub fn engine(&self) -> &Arc<Engine> {
        &self.shared.engine
    }

    /// Open connections.
    pub fn connections(&self) -> usize {
        self.conns.lock().len()
    }

    /// Graceful shutdown (see the module docs of `server`): stops serving,
    /// then shuts the engine down.
    pub fn shutdown(mut self) -> Result<(), ServerError> {
        self.close();
        self.shared.replication.stop();
        self.shared.engine.shutdown()?;
        Ok(())
    }

    /// Stops serving as [`Server::shutdown`] does (no new connections, the
    /// socket file removed, open transactions given the grace period, every
    /// connection closed and its thread joined) but leaves the engine
    /// running, for its owner to shut down.
    pub fn stop_serving(mut self) {
        self.close();
        self.shared.replication.stop();
    }

    fn close(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(h) = self.acceptor.take() {
            let _ = h.join();
        }
        let _ = std::fs::remove_file(&self.cfg.socket);
        self.shared.shutting_down.store(true, Ordering::Release);
        let deadline = Instant::now() + self.cfg.shutdown_grace;
        loop {
            let past = Instant::now() >= deadline;
            {
                let conns = self.conns.lock();
                if conns.is_empty() {
                    break;
                }
                for c in conns.values() {
                    if past || !c.state.in_trx.load(Ordering::Acquire) {
                        c.sock.shutdown_read();
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(10));
            // Join the threads that ended.
            let done: Vec<JoinHandle<()>> = {
                let mut conns = self.conns.lock();
                let ids: Vec<u64> = conns
                    .iter()
                    .filter(|(_, c)| c.thread.as_ref().is_some_and(|t| t.is_finished()))
                    .map(|(id, _)| *id)
                    .collect();
                ids.iter()
                    .filter_map(|id| conns.remove(id).and_then(|c| c.thread))
                    .collect()
            };
            for h in done {
                let _ = h.join();
            }
        }
    }
}

fn poll_readable(fds: &[i32], timeout_ms: i32) {
    let mut p: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    // SAFETY: `p` is a valid array of `p.len()` pollfd structs.
    unsafe { libc::poll(p.as_mut_ptr(), p.len() as libc::nfds_t, timeout_ms) };
}

fn accept_loop(
    unix: UnixListener,
    tcp: Option<TcpListener>,
    shared: Arc<Shared>,
    stop: Arc<AtomicBool>,
    conns: Conns,
) {
    let next_id = AtomicU64::new(1);
    let mut fds = vec![unix.as_raw_fd()];
    if let Some(t) = &tcp {
        fds.push(t.as_raw_fd());
    }
    while !stop.load(Ordering::Acquire) {
        let mut accepted = false;
        match unix.accept() {
            Ok((s, _)) => {
                accepted = true;
                let peer = peer::check_same_user(&s);
                if let Err(why) = &peer {
                    say!("{}: refusing a socket connection: {why}", shared.log_prefix);
                }
                match s.try_clone() {
                    Ok(c) => spawn_conn(&shared, &conns, &next_id, s, Sock::Unix(c), peer),
                    Err(e) => say!("{}: dropping a connection: {e}", shared.log_prefix),
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => say!("{}: accept failed: {e}", shared.log_prefix),
        }
        if let Some(t) = &tcp {
            match t.accept() {
                Ok((s, _)) => {
                    accepted = true;
                    let _ = s.set_nodelay(true);
                    match s.try_clone() {
                        Ok(c) => spawn_conn(&shared, &conns, &next_id, s, Sock::Tcp(c), Ok(())),
                        Err(e) => say!("{}: dropping a connection: {e}", shared.log_prefix),
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => say!("{}: accept failed: {e}", shared.log_prefix),
            }
        }
        if !accepted {
            poll_readable(&fds, 50);
        }
    }
}

trait Stream: io::Read + io::Write + AsRawFd + Send + Sized + 'static {
    fn set_blocking(&self) -> io::Result<()>;
    fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()>;
    fn try_clone(&self) -> io::Result<Self>;
}

impl Stream for UnixStream {
    fn set_blocking(&self) -> io::Result<()> {
        self.set_nonblocking(false)
    }
    fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        UnixStream::set_read_timeout(self, t)
    }
    fn try_clone(&self) -> io::Result<Self> {
        UnixStream::try_clone(self)
    }
}

impl Stream for TcpStream {
    fn set_blocking(&self) -> io::Result<()> {
        self.set_nonblocking(false)
    }
    fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        TcpStream::set_read_timeout(self, t)
    }
    fn try_clone(&self) -> io::Result<Self> {
        TcpStream::try_clone(self)
    }
}

fn spawn_conn<S: Stream>(
    shared: &Arc<Shared>,
    conns: &Conns,
    next_id: &AtomicU64,
    stream: S,
    sock: Sock,
    peer: Result<(), String>,
) {
    let id = next_id.fetch_add(1, Ordering::Relaxed);
    let state = Arc::new(ConnState {
        id,
        in_trx: AtomicBool::new(false),
    });
    shared.connections.fetch_add(1, Ordering::Relaxed);
    shared.threads_connected.fetch_add(1, Ordering::Relaxed);
    let (sh, st, reg_of_thread) = (shared.clone(), state.clone(), conns.clone());
    let connect_timeout = shared.connect_timeout;
    // Hold the registry lock across the spawn so the thread is registered
    // before it can finish.
    let mut reg = conns.lock();
    let thread = std::thread::Builder::new()
        .name(format!("{}/{id}", shared.thread_prefix))
        .spawn(move || {
            let max = sh.max_packet;
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                stream.set_blocking()?;
                // connect_timeout: the handshake must arrive in time; once
                // logged in, a connection may stay idle.
                stream.set_read_timeout(Some(connect_timeout))?;
                let after_login = stream.try_clone()?;
                let on_login: Box<dyn FnOnce() + Send> = Box::new(move || {
                    let _ = after_login.set_read_timeout(None);
                });
                let params = StmtParams::default();
                let session = Session::new(sh.clone(), st, peer, params.clone(), on_login);
                let fd = stream.as_raw_fd();
                let guard = Guard::new(stream, max, params).with_spin(Spinner {
                    fd,
                    policy: sh.net_spin.clone(),
                });
                MysqlIntermediary::run_on(session, guard)
            }));
            match r {
                Ok(Ok(())) => {}
                Ok(Err(e)) if is_disconnect(&e) => {}
                Ok(Err(e))
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    say!(
                        "{}: connection {id} closed: no login within connect_timeout",
                        sh.log_prefix
                    )
                }
                Ok(Err(e)) => say!("{}: connection {id} closed: {e}", sh.log_prefix),
                Err(_) => say!(
                    "{}: connection {id} closed: the protocol library \
                     rejected a malformed packet",
                    sh.log_prefix
                ),
            }
            sh.threads_connected.fetch_sub(1, Ordering::Relaxed);
            // Dropping the registry's clone of the socket closes it for good.
            reg_of_thread.lock().remove(&id);
        });
    match thread {
        Ok(t) => {
            reg.insert(
                id,
                Conn {
                    state,
                    sock,
                    thread: Some(t),
                },
            );
        }
        Err(e) => {
            shared.threads_connected.fetch_sub(1, Ordering::Relaxed);
            say!(
                "{}: cannot start a connection thread: {e}",
                shared.log_prefix
            );
        }
    }
}

fn is_disconnect(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::UnexpectedEof
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::BrokenPipe
            | io::ErrorKind::ConnectionAborted
    )
}

static SIGNALLED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    SIGNALLED.store(true, Ordering::SeqCst);
}

/// Blocks until SIGTERM or SIGINT arrives (installs the handlers).
pub fn wait_for_signal() {
    // SAFETY: the handler only stores to an atomic (async-signal-safe).
    unsafe {
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
    }
    while !SIGNALLED.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(50));
    }
}

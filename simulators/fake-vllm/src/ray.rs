//! A minimal Ray for the fake server's multi-node runs: a driver side ([`Hub`], in the engine
//! core) and a node agent ([`agent`], `fake-vllm ray-node --address IP:PORT`, one per worker
//! machine). The agent starts the actors the driver asks for and forwards their output; the
//! driver prints it, as Ray's log forwarding does; a machine that goes away (container killed,
//! network cut) is seen as its connection closing.
//!
//! Wire format, both ways, over one TCP connection per machine:
//! agent → driver: `HELLO <agent ip> <driver ip as the agent reached it>\n`, then frames
//! `OUT <1|2> <len>\n<len bytes>` (stdout or stderr of an actor);
//! driver → agent: `SPAWN <role> <len>\n<len bytes of JSON [[key, value], …]>`.

use std::collections::BTreeSet;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// The port the driver listens on (Ray's GCS port) unless `FAULTKIT_RAY_PORT` says otherwise.
pub const DEFAULT_PORT: u16 = 6379;
/// Longest frame accepted.
const FRAME_BYTES_MAX: usize = 16 << 20;
/// How long an agent keeps trying to reach its driver.
const CONNECT_TRIES: u32 = 600;

/// One connected machine.
#[derive(Debug)]
struct Agent {
    node: u32,
    ip: String,
    writer: TcpStream,
}

#[derive(Debug, Default)]
struct HubState {
    agents: Vec<Agent>,
    lost: BTreeSet<u32>,
    driver_ip: Option<String>,
}

/// The driver's side: machines that joined, and which were lost.
#[derive(Debug, Default)]
pub struct Hub {
    state: Mutex<HubState>,
    changed: Condvar,
}

impl Hub {
    /// Listens for agents; each agent's output goes to `forward(stream, bytes)`.
    pub fn listen(
        port: u16,
        forward: impl Fn(u8, &[u8]) + Send + Sync + 'static,
    ) -> io::Result<Arc<Hub>> {
        let listener = TcpListener::bind(("0.0.0.0", port))?;
        let hub = Arc::new(Hub::default());
        let forward = Arc::new(forward);
        let h = Arc::clone(&hub);
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let h = Arc::clone(&h);
                let forward = Arc::clone(&forward);
                std::thread::spawn(move || {
                    let _ = h.serve_agent(conn, &*forward);
                });
            }
        });
        Ok(hub)
    }

    fn serve_agent(&self, conn: TcpStream, forward: &dyn Fn(u8, &[u8])) -> io::Result<()> {
        let mut reader = BufReader::new(conn.try_clone()?);
        let mut hello = String::new();
        reader.read_line(&mut hello)?;
        let mut words = hello.split_whitespace();
        if words.next() != Some("HELLO") {
            return Ok(());
        }
        let ip = words.next().unwrap_or("0.0.0.0").to_string();
        let driver_ip = words.next().map(str::to_string);
        let node = {
            let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
            let node = st.agents.len() as u32 + 1;
            st.agents.push(Agent {
                node,
                ip,
                writer: conn,
            });
            if st.driver_ip.is_none() {
                st.driver_ip = driver_ip;
            }
            node
        };
        self.changed.notify_all();
        // Frames until the machine goes away.
        while let Some((stream, buf)) = read_frame(&mut reader, "OUT") {
            forward(if stream == "2" { 2 } else { 1 }, &buf);
        }
        self.state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .lost
            .insert(node);
        self.changed.notify_all();
        Ok(())
    }

    /// Waits (bounded) until `n` machines have joined; their IPs, in order, and the driver's IP.
    pub fn wait_agents(&self, n: usize, bound: Duration) -> (Vec<String>, Option<String>) {
        let st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let (st, _) = self
            .changed
            .wait_timeout_while(st, bound, |s| s.agents.len() < n)
            .unwrap_or_else(|e| e.into_inner());
        (
            st.agents.iter().map(|a| a.ip.clone()).collect(),
            st.driver_ip.clone(),
        )
    }

    /// Asks machine `node` to start `role` with `env`.
    pub fn spawn(&self, node: u32, role: &str, env: &[(String, String)]) -> io::Result<()> {
        let json = serde_json::to_vec(env)?;
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let agent = st
            .agents
            .iter_mut()
            .find(|a| a.node == node)
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("no machine {node}")))?;
        agent
            .writer
            .write_all(format!("SPAWN {role} {}\n", json.len()).as_bytes())?;
        agent.writer.write_all(&json)
    }

    /// Waits (bounded) until machine `node` is gone. Returns whether it is.
    pub fn wait_lost(&self, node: u32, bound: Duration) -> bool {
        let st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let (st, _) = self
            .changed
            .wait_timeout_while(st, bound, |s| !s.lost.contains(&node))
            .unwrap_or_else(|e| e.into_inner());
        st.lost.contains(&node)
    }
}

/// `fake-vllm ray-node --address IP:PORT`: join the driver, start the actors it asks for,
/// forward their output; exits (stopping its actors) when the driver goes away.
pub fn agent(args: &[String]) -> i32 {
    let Some(address) = args
        .windows(2)
        .find(|w| w[0] == "--address")
        .map(|w| w[1].clone())
    else {
        eprintln!("usage: fake-vllm ray-node --address IP:PORT");
        return 2;
    };
    let mut conn = None;
    for _ in 0..CONNECT_TRIES {
        match TcpStream::connect(&address) {
            Ok(c) => {
                conn = Some(c);
                break;
            }
            Err(_) => std::thread::sleep(Duration::from_millis(200)),
        }
    }
    let Some(conn) = conn else {
        eprintln!("fake-vllm ray-node: cannot reach {address}");
        return 1;
    };
    let me = conn
        .local_addr()
        .map(|a| a.ip().to_string())
        .unwrap_or_default();
    let driver = conn
        .peer_addr()
        .map(|a| a.ip().to_string())
        .unwrap_or_default();
    let writer = Arc::new(Mutex::new(match conn.try_clone() {
        Ok(w) => w,
        Err(e) => {
            eprintln!("fake-vllm ray-node: {e}");
            return 1;
        }
    }));
    if writer
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .write_all(format!("HELLO {me} {driver}\n").as_bytes())
        .is_err()
    {
        return 1;
    }
    let mut children: Vec<Child> = Vec::new();
    let mut reader = BufReader::new(conn);
    while let Some((role, buf)) = read_frame(&mut reader, "SPAWN") {
        let role = role.as_str();
        let env: Vec<(String, String)> = serde_json::from_slice(&buf).unwrap_or_default();
        match start_actor(role, &env, &writer) {
            Ok(c) => children.push(c),
            Err(e) => eprintln!("fake-vllm ray-node: cannot start {role}: {e}"),
        }
    }
    // The driver is gone: Ray kills its actors.
    for c in &mut children {
        let _ = c.kill();
        let _ = c.wait();
    }
    0
}

/// One frame `KIND TAG LEN\n` + LEN bytes: (TAG, bytes). None at the end of the stream, or on
/// anything else (another kind, a bad or too large length).
fn read_frame(reader: &mut impl BufRead, kind: &str) -> Option<(String, Vec<u8>)> {
    let mut head = String::new();
    if reader.read_line(&mut head).ok()? == 0 {
        return None;
    }
    let mut w = head.split_whitespace();
    if w.next()? != kind {
        return None;
    }
    let tag = w.next()?.to_string();
    let len: usize = w.next()?.parse().ok()?;
    if len > FRAME_BYTES_MAX {
        return None;
    }
    let mut buf = vec![0u8; len];
    reader.read_exact(&mut buf).ok()?;
    Some((tag, buf))
}

fn start_actor(
    role: &str,
    env: &[(String, String)],
    writer: &Arc<Mutex<TcpStream>>,
) -> io::Result<Child> {
    let exe = std::env::current_exe()?;
    let mut cmd = Command::new(exe);
    {
        use std::os::unix::process::CommandExt as _;
        cmd.arg0(format!("ray::RayWorkerWrapper ({role})"));
    }
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .envs(env.iter().map(|(k, v)| (k, v)));
    let mut child = cmd.spawn()?;
    for (tag, pipe) in [
        (
            1u8,
            child
                .stdout
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
        ),
        (
            2u8,
            child
                .stderr
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
        ),
    ] {
        let Some(mut pipe) = pipe else { continue };
        let writer = Arc::clone(writer);
        std::thread::spawn(move || {
            let send = |bytes: &[u8]| -> bool {
                let mut w = writer.lock().unwrap_or_else(|e| e.into_inner());
                w.write_all(format!("OUT {tag} {}\n", bytes.len()).as_bytes())
                    .and_then(|()| w.write_all(bytes))
                    .is_ok()
            };
            let mut lines = Lines::default();
            let mut buf = vec![0u8; 64 << 10];
            loop {
                let n = match pipe.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                if let Some(whole) = lines.push(&buf[..n]) {
                    if !send(&whole) {
                        return;
                    }
                }
            }
            let rest = lines.finish();
            if !rest.is_empty() {
                send(&rest);
            }
        });
    }
    Ok(child)
}

/// Cuts a byte stream into whole lines (a line is forwarded only once it is complete, so a
/// prefix never lands in the middle of one).
#[derive(Debug, Default)]
pub struct Lines {
    pending: Vec<u8>,
}

impl Lines {
    /// Adds bytes; returns the complete lines now available.
    pub fn push(&mut self, bytes: &[u8]) -> Option<Vec<u8>> {
        self.pending.extend_from_slice(bytes);
        let end = memchr_last_newline(&self.pending)?;
        let rest = self.pending.split_off(end + 1);
        Some(std::mem::replace(&mut self.pending, rest))
    }

    /// What is left at the end of the stream.
    pub fn finish(self) -> Vec<u8> {
        self.pending
    }
}

fn memchr_last_newline(b: &[u8]) -> Option<usize> {
    b.iter().rposition(|&c| c == b'\n')
}

/// Writes `bytes` (whole lines from an actor) with `prefix` before each line, as a Ray driver
/// whose stdout vLLM decorated prints forwarded output.
pub fn prefixed_lines(prefix: &str, bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len() + 64);
    for line in bytes.split_inclusive(|&b| b == b'\n') {
        out.extend_from_slice(prefix.as_bytes());
        out.extend_from_slice(line);
    }
    out
}

//! Assembling records per writer: Python tracebacks (also when several processes' tracebacks
//! interleave line by line), their exception chains, the log message that introduced them, and
//! single error lines.
//!
//! Main type: [`Assembler`], fed with parsed lines in file order; it keeps one open record per
//! stream ([`StreamKey`]: process, pid and log-call site) and yields closed [`Record`]s.

use std::collections::BTreeMap;

use super::grammar::{vllm_header_len, HeaderKind, Level, ParsedLine, StreamKey};

/// What a line is inside a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineRole {
    /// A log message before the traceback (`WorkerProc failed to start.`), or a single error line.
    Head,
    /// `Traceback (most recent call last):`
    TracebackStart,
    /// `  File "…", line N, in f`
    Frame,
    /// The source line (and caret lines) under a frame.
    Source,
    /// `Type: message` ending a traceback.
    Exception,
    /// Lines that continue the exception message.
    Continuation,
    /// `During handling…` / `The above exception was the direct cause…`
    Chain,
}

/// One line of a record, with what is needed to quote it.
#[derive(Clone, Debug)]
pub struct RecLine {
    pub no: u64,
    pub offset: usize,
    pub role: LineRole,
    /// The body (after prefixes and headers).
    pub body: String,
    /// The whole physical line as `text` is defined (ANSI removed, trailing CR/space trimmed).
    pub text: String,
    pub level: Option<Level>,
}

/// A record: a traceback with its head, or a single line.
#[derive(Clone, Debug)]
pub struct Record {
    pub stream: StreamKey,
    pub process: Option<String>,
    pub pid: Option<u32>,
    pub lines: Vec<RecLine>,
    pub traceback: bool,
    pub header: HeaderKind,
    pub location: Option<String>,
    /// The process named by CPython's `Process NAME:` line (not a prefix; used for layering).
    pub process_hint: Option<String>,
}

impl Record {
    pub fn first_line(&self) -> u64 {
        self.lines.first().map_or(0, |l| l.no)
    }

    /// The final exception line, if the record has one.
    pub fn exception(&self) -> Option<&RecLine> {
        self.lines
            .iter()
            .rev()
            .find(|l| l.role == LineRole::Exception)
    }

    pub fn level(&self) -> Option<Level> {
        self.lines.iter().filter_map(|l| l.level).max()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Message lines of a logged record (before `Traceback`), or a single error line.
    Head,
    /// Inside frames.
    Frames,
    /// After the exception line: continuation, or a chain.
    AfterException,
    /// After a chain marker, expecting `Traceback`.
    Chained,
}

#[derive(Debug)]
struct Open {
    rec: Record,
    state: State,
    /// Lines since the exception (bounds continuation).
    after_exc: u32,
    last_no: u64,
}

/// Continuation lines of an exception message beyond this are not taken as part of it.
const CONTINUATION_LINES_MAX: u32 = 24;
/// An open record with no line for this many lines of the file is closed.
const STREAM_IDLE_LINES: u64 = 2_000;

/// Builds records from lines in file order.
#[derive(Debug, Default)]
pub struct Assembler {
    open: BTreeMap<StreamKey, Open>,
    done: Vec<Record>,
}

fn is_exception_like(body: &str) -> bool {
    // `ValueError: …`, `torch.OutOfMemoryError: …`, `KeyboardInterrupt`, `Exception: …`
    let head = body.split(':').next().unwrap_or("");
    !head.is_empty()
        && head.len() < 120
        && !head.starts_with(' ')
        && head
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '_')
        && head.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && (head.ends_with("Error")
            || head.ends_with("Exception")
            || head.ends_with("Interrupt")
            || head.ends_with("Exit")
            || head.ends_with("Warning")
            || body.contains(": "))
}

/// An excerpt's mark for text left out (`[...]`, `...`, `…`).
pub fn is_elision(body: &str) -> bool {
    matches!(body.trim(), "[...]" | "[…]" | "..." | "…")
}

/// A line that states a raised exception on its own: `Type: message` whose type names an
/// exception (`…Error`, `…Exception`, `KeyboardInterrupt`, `SystemExit`), or pydantic's
/// `Value error, …` detail of a config `ValidationError`. Outside a traceback this is an excerpt
/// that kept only the last line, or a wrapper re-printing the error.
pub fn is_exception_statement(body: &str) -> bool {
    // Quoting a paste adds backticks, `> ` or an elision's `... ` in front.
    let body = body.trim_start_matches(['`', '>', ' ']);
    let body = body.strip_prefix("... ").unwrap_or(body);
    if body.starts_with("Value error, ") {
        return true;
    }
    // The type is the run of name characters at the start, right before the first `: ` (read
    // without searching the rest of the line: this runs at every position of a line when
    // prefixes are learned).
    let b = body.as_bytes();
    let n = b
        .iter()
        .take(120)
        .take_while(|c| c.is_ascii_alphanumeric() || **c == b'.' || **c == b'_')
        .count();
    if n == 0 || n >= 120 || !b[0].is_ascii_alphabetic() || !body[n..].starts_with(": ") {
        return matches!(body.trim_end(), "KeyboardInterrupt" | "SystemExit");
    }
    let head = &body[..n];
    // CPython names an exception with its module unless it is a builtin or the script's own
    // (`__main__`): `shutil.Error: …`. A bare `Error: …` is a tool's message (a CI runner's, a
    // CLI's), not an exception line; a script's own `class Error(Exception)` is read as one too,
    // a rare loss for the many tools' messages it spares.
    if head == "Error" {
        return false;
    }
    let ty = head.rsplit('.').next().unwrap_or(head);
    ty.ends_with("Error")
        || ty.ends_with("Exception")
        || ty == "KeyboardInterrupt"
        || ty == "SystemExit"
}

/// A shell's report that a job it ran ended: zsh's `[1]    3100846 segmentation fault (core
/// dumped)  python …` and `[1]  + 3100846 killed  python …` (`zsh: segmentation fault  python …`
/// in the foreground), bash's `[1]+  Segmentation fault      (core dumped) python …` and, from a
/// script, `./run.sh: line 5: 12345 Killed                  python …`. It is the shell's line,
/// never the message of the exception above it. Without its job number (a collector's tag before
/// it may have been taken for one), the pid and the status stay. The same forms, for the fatal
/// statuses, are the rules `worker_killed_by_signal` and `host_oom_killed` (signatures.toml).
pub fn is_shell_job_report(body: &str) -> bool {
    shell_job_report(body).is_some()
}

/// [`is_shell_job_report`], written with `?` for each form that does not fit.
fn shell_job_report(body: &str) -> Option<()> {
    // What the shell writes of a job's end: zsh's lower-case signal names, bash's capitalised
    // ones, and the ends that are no signal (`Done`, `Exit 1`, `Terminated`).
    const STATUSES: [&str; 10] = [
        "segmentation fault",
        "bus error",
        "killed",
        "abort",
        "illegal instruction",
        "floating point exception",
        "terminated",
        "done",
        "exit ",
        "stopped",
    ];
    let body = body.trim_start();
    let (rest, pid_required) = if let Some(r) = body.strip_prefix("zsh: ") {
        (r, false)
    } else if let Some((job, r)) = body.strip_prefix('[').and_then(|r| r.split_once(']')) {
        if job.is_empty() || !job.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        // bash's `[1]+  …`, zsh's `[1]  + …` and `[1]    …`.
        let after = r.trim_start();
        let r = match after.strip_prefix(['+', '-']) {
            Some(signed) if signed.starts_with(char::is_whitespace) => signed,
            None if after.len() < r.len() => after,
            _ => return None,
        };
        (r, false)
    } else if let Some((_, r)) = body
        .split_once(": line ")
        .filter(|(script, _)| !script.is_empty() && !script.contains(char::is_whitespace))
    {
        // bash's `SCRIPT: line N: PID STATUS …`.
        let digits = r.bytes().take_while(u8::is_ascii_digit).count();
        (r[digits..].strip_prefix(": ")?, true)
    } else {
        (body, true)
    };
    let rest = rest.trim_start();
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if pid_required && digits == 0 {
        return None;
    }
    if digits > 0 && !pid_required && rest[digits..].trim().is_empty() {
        // bash's `[1] 12345`: the job it just started.
        return Some(());
    }
    let status = if digits > 0 {
        rest[digits..]
            .strip_prefix(char::is_whitespace)?
            .trim_start()
    } else {
        rest
    };
    STATUSES
        .iter()
        .any(|w| {
            status
                .get(..w.len())
                .is_some_and(|h| h.eq_ignore_ascii_case(w))
        })
        .then_some(())
}

/// CPython's head line of an exception it printed and ignored (`Exception ignored in atexit
/// callback: <function shutdown at 0x…>`, `Exception ignored in: <function … __del__>`): the
/// traceback under it did not stop the process.
pub fn is_ignored_exception_head(body: &str) -> bool {
    body.starts_with("Exception ignored in")
}

/// The C library's reports of a process it is about to abort: a failed `assert()` (glibc's
/// `__assert_fail`: `prog: file.cpp:42: int f(int): Assertion `cond' failed.`) and the heap
/// checks of malloc/malloc.c (`free(): double free detected in tcache 2`, `double free or
/// corruption (out)`, `malloc(): corrupted top size`, `munmap_chunk(): invalid pointer`). The
/// SIGABRT report comes after them.
pub fn is_libc_fatal(body: &str) -> bool {
    let t = body.trim();
    let assert = t.ends_with("' failed.") && t.contains(": Assertion `");
    let heap = [
        "free(): ",
        "malloc(): ",
        "realloc(): ",
        "munmap_chunk(): ",
        "malloc_consolidate(): ",
    ]
    .iter()
    .any(|f| t.starts_with(f))
        || t.starts_with("double free or corruption")
        || t.starts_with("corrupted size vs. prev_size")
        || t.starts_with("corrupted double-linked list");
    assert || heap
}

/// A build tool's fatal diagnostic, as compilers and linkers print it when a JIT build (Triton's
/// launcher stubs, Inductor's C++ wrappers, FlashInfer's kernels) fails: `main.c:5:10: fatal
/// error: Python.h: No such file or directory`, `/usr/bin/ld: cannot find -lcuda`, `ptxas fatal
/// : Value 'sm_121a' is not defined`, LLVM's `LLVM ERROR: …`, a device kernel's `[ASSERT] …`.
/// The exception that follows (`CalledProcessError`, a compile error) reports it.
pub fn is_tool_fatal(body: &str) -> bool {
    let body = body.trim_start();
    // LLVM's fatal error handler (llvm/lib/Support/ErrorHandling.cpp, `report_fatal_error`),
    // inside Triton's and other JIT compilers: `LLVM ERROR: Unsupported rounding mode …`.
    if body.starts_with("LLVM ERROR: ") {
        return true;
    }
    // A device kernel's failed assertion as Ascend C prints it (`[ASSERT] [CANN_VERSION : …]
    // …/gather_v3_base.h:137: Assertion `(0 <= val …' Index 326 out of range`): the report of
    // the kernel itself, before the runtime's error code.
    if body.starts_with("[ASSERT] ") && body.contains(": Assertion `") {
        return true;
    }
    if let Some(rest) = body.strip_prefix("ptxas") {
        return rest.trim_start().starts_with("fatal") || rest.starts_with(" error");
    }
    // The rest name their program in the line's first word (this runs on every line a record
    // takes: a byte search for the first space, no substring searcher).
    let Some(space) = memchr::memchr(b' ', body.as_bytes()) else {
        return false;
    };
    let (word, rest) = (&body[..space], &body[space + 1..]);
    // A compiler driver's report that its compiler crashed: `neuronx-cc terminated abnormally -
    // Please open a support ticket …` (the AWS Neuron compiler, before the engine's traceback).
    if rest.starts_with("terminated abnormally") {
        return word.starts_with(|c: char| c.is_ascii_alphabetic());
    }
    let Some(tool) = word.strip_suffix(':').filter(|t| !t.is_empty()) else {
        return false;
    };
    let program = tool.rsplit('/').next().unwrap_or(tool);
    let linker = matches!(program, "ld" | "ld.bfd" | "ld.gold" | "ld.lld" | "collect2");
    (linker && (rest.starts_with("cannot find ") || rest.starts_with("error: ")))
        || (tool.split(':').count() >= 3 && rest.starts_with("fatal error: "))
}

/// The pieces of a physical line that holds several lines whose newlines a paste lost (a whole
/// traceback joined with spaces): split before each repeated process prefix or log header when
/// the pieces carry them, else before `Traceback (most recent call last):`, each `File "…"`
/// frame, the chain markers and the final exception line; in a line that holds a traceback, a
/// recurrence of the line's own record header marks the records instead (each piece is then one
/// record line, as the paste's writer printed it). A line with fewer than three such points is
/// left whole: `None` (two writers sharing a line are interleaving, reported as
/// damage). Most lines are whole, and cost no allocation.
pub fn resplit(line: &[u8]) -> Option<Vec<&[u8]>> {
    const MIN_POINTS: usize = 3;
    if line.len() < 160 {
        return None;
    }
    let finder = |pat: &'static [u8]| memchr::memmem::find_iter(line, pat);
    // Repeated prefixes: `(NAME pid=` after the start.
    let mut points: Vec<usize> = finder(b" pid=")
        .filter_map(|p| {
            line[..p]
                .iter()
                .rposition(|&b| b == b'(')
                .filter(|&o| o > 0 && p - o < 80)
        })
        .filter(|&o| line[o - 1] == b' ')
        .collect();
    points.dedup();
    // A record header (`ERROR 04-03 06:51:54 [engine.py:448] `) that recurs inside a line that
    // holds a traceback: each recurrence starts a record the paste joined to the one before.
    let tracebacks: Vec<usize> = if points.len() < MIN_POINTS {
        finder(b"Traceback (most recent call last):").collect()
    } else {
        Vec::new()
    };
    let recurring = if tracebacks.is_empty() {
        Vec::new()
    } else {
        recurring_header_points(line)
    };
    if !recurring.is_empty() {
        points = recurring;
    } else if points.len() < MIN_POINTS {
        points.clear();
        points.extend(tracebacks.iter().copied().filter(|&p| p > 0));
        for pat in [
            &b"During handling of the above exception"[..],
            b"The above exception was the direct cause",
        ] {
            points.extend(finder(pat).filter(|&p| p > 0));
        }
        points.extend(finder(b" File \"").map(|p| p + 1).filter(|&p| p > 1));
        // A traceback header at the start of the line is a point too, though nothing splits
        // there (a short traceback of two frames and its exception).
        let header_first = usize::from(line.starts_with(b"Traceback (most recent call last):"));
        if points.len() + header_first < MIN_POINTS {
            return None;
        }
        // The exception line after the last frame: its `Type: ` after a space.
        if let Some(&last) = points.iter().max() {
            if let Some(e) = last_exception_start(&line[last..]) {
                points.push(last + e);
            }
        }
    }
    points.sort_unstable();
    points.dedup();
    let mut out = Vec::with_capacity(points.len() + 1);
    let mut from = 0;
    for p in points {
        if p > from {
            out.push(line[from..p].trim_ascii_end());
            from = p;
        }
    }
    out.push(&line[from..]);
    out.retain(|p| !p.is_empty());
    Some(out)
}

/// Where the line's own vLLM record header (`ERROR 04-03 06:51:54 [engine.py:448] `, as
/// [`vllm_header_len`] reads it) recurs after a space.
fn recurring_header_points(line: &[u8]) -> Vec<usize> {
    let head = &line[..line.len().min(260)];
    let head = std::str::from_utf8(head)
        .unwrap_or_else(|e| std::str::from_utf8(&head[..e.valid_up_to()]).expect("valid prefix"));
    let Some(len) = vllm_header_len(head) else {
        return Vec::new();
    };
    let mut pat = Vec::with_capacity(len + 1);
    pat.push(b' ');
    pat.extend_from_slice(&line[..len]);
    memchr::memmem::find_iter(line, &pat)
        .map(|p| p + 1)
        .collect()
}

/// Where the last `Type: message` (or bare `KeyboardInterrupt`-style) exception starts in the
/// text after a frame, if one does (preceded by a space).
fn last_exception_start(tail: &[u8]) -> Option<usize> {
    let s = std::str::from_utf8(tail).ok()?;
    let mut best = None;
    for (i, _) in s.match_indices(' ') {
        let rest = &s[i + 1..];
        if rest.starts_with(|c: char| c.is_ascii_uppercase() || c.is_ascii_lowercase())
            && is_exception_statement(rest)
            && !rest.starts_with("File \"")
        {
            // The first exception statement after the frame header and its code line.
            best = Some(i + 1);
            break;
        }
    }
    // A bare exception type with no message ends the traceback (`    assert x % n == 0
    // AssertionError`): its last word.
    best.or_else(|| {
        let t = s.trim_end();
        let i = t.rfind(' ')?;
        let word = &t[i + 1..];
        let bare =
            word.starts_with(|c: char| c.is_ascii_uppercase()) && is_bare_exception_type(word);
        bare.then_some(i + 1)
    })
}

/// multiprocessing's head of a child's uncaught traceback (`Process EngineCore_0:`, `Process
/// SpawnProcess-1:`; multiprocessing/process.py `_bootstrap`), with the process's name.
pub(crate) fn is_process_head(body: &str) -> Option<&str> {
    body.strip_prefix("Process ")
        .and_then(|r| r.strip_suffix(':'))
        .filter(|name| !name.is_empty() && name.len() < 71)
}

pub(crate) fn is_chain_marker(body: &str) -> bool {
    body.starts_with("During handling of the above exception")
        || body.starts_with("The above exception was the direct cause")
}

pub(crate) fn is_traceback_start(body: &str) -> bool {
    body == "Traceback (most recent call last):"
        || body.ends_with("Traceback (most recent call last):")
}

fn is_frame(body: &str) -> bool {
    body.starts_with("  File \"") || body.starts_with("File \"")
}

/// A bare exception type that ends a traceback without a message (`AssertionError`,
/// `KeyboardInterrupt`, `torch.OutOfMemoryError`).
pub fn is_bare_exception_type(body: &str) -> bool {
    let w = body.trim();
    w.starts_with(|c: char| c.is_ascii_alphabetic())
        && w.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        && ["Error", "Exception", "Exit", "Interrupt"]
            .iter()
            .any(|k| w.ends_with(k))
}

fn is_source(body: &str) -> bool {
    body.starts_with("    ")
        || body.starts_with("...<")
        || (!body.is_empty()
            && body
                .trim_start()
                .chars()
                .all(|c| c == '^' || c == '~' || c == ' '))
}

impl Assembler {
    pub fn new() -> Assembler {
        Assembler::default()
    }

    fn close(&mut self, key: &StreamKey) {
        if let Some(o) = self.open.remove(key) {
            self.done.push(o.rec);
        }
    }

    fn start(&mut self, p: &ParsedLine<'_>, key: StreamKey, line: RecLine, state: State) {
        self.close(&key);
        let traceback = state != State::Head;
        let last_no = line.no;
        self.open.insert(
            key.clone(),
            Open {
                rec: Record {
                    stream: key,
                    process: p.process.as_deref().map(str::to_string),
                    pid: p.pid,
                    lines: vec![line],
                    traceback,
                    header: p.header,
                    location: p.location.as_deref().map(str::to_string),
                    process_hint: None,
                },
                state,
                after_exc: 0,
                last_no,
            },
        );
    }

    /// Feed one line: `raw`, the physical line as the file has it (decoded only when a record
    /// keeps it: most lines join none). `is_candidate` says whether a rule or an error level
    /// makes a single line worth a record of its own.
    pub fn push(
        &mut self,
        no: u64,
        offset: usize,
        raw: &[u8],
        p: &ParsedLine<'_>,
        is_candidate: bool,
    ) {
        let key = p.stream_key();
        let body = p.body.as_ref();
        let mk = |role: LineRole| RecLine {
            no,
            offset,
            role,
            body: body.to_string(),
            text: crate::clean_text(raw),
            level: p.level,
        };
        // Close records idle for long (a stream that stopped mid-traceback).
        if no.is_multiple_of(512) {
            let stale: Vec<StreamKey> = self
                .open
                .iter()
                .filter(|(_, o)| no.saturating_sub(o.last_no) > STREAM_IDLE_LINES)
                .map(|(k, _)| k.clone())
                .collect();
            for k in stale {
                self.close(&k);
            }
        }
        let state = self.open.get(&key).map(|o| o.state);
        match state {
            Some(State::Head) => {
                let o = self.open.get(&key).expect("open");
                // A record that opens with an exception line ends a traceback (Python prints
                // `Traceback (most recent call last):` first, the exception line last).
                let opens_with_exception = is_exception_statement(&o.rec.lines[0].body);
                if is_traceback_start(body) {
                    // A bare `Type: message` line before a traceback ends an earlier one whose
                    // start an excerpt cut; only a logger's record (`ERROR … [core.py:1]
                    // EngineCore failed to start.`) heads the traceback below it.
                    let bare_exception = opens_with_exception
                        && o.rec.header == HeaderKind::None
                        && o.rec.lines.len() == 1;
                    if bare_exception {
                        self.start(p, key, mk(LineRole::TracebackStart), State::Frames);
                        return;
                    }
                    let o = self.open.get_mut(&key).expect("open");
                    o.rec.lines.push(mk(LineRole::TracebackStart));
                    o.rec.traceback = true;
                    o.state = State::Frames;
                    o.last_no = no;
                    return;
                }
                // An excerpt that starts inside a logged traceback: its frames follow. Not after
                // an exception line: frames after it belong to another traceback whose start was
                // cut.
                if is_frame(body) && !opens_with_exception {
                    let o = self.open.get_mut(&key).expect("open");
                    o.rec.lines.push(mk(LineRole::Frame));
                    o.rec.traceback = true;
                    o.state = State::Frames;
                    o.last_no = no;
                    return;
                }
                // More lines of the same logged message (same header and site), e.g. NCCL's
                // multi-line error text.
                let o = self.open.get_mut(&key).expect("open");
                let same_record =
                    p.location.is_some() && p.level == o.rec.lines[0].level && no == o.last_no + 1;
                if same_record && o.rec.lines.len() < 40 {
                    o.rec.lines.push(mk(LineRole::Head));
                    o.last_no = no;
                    return;
                }
                self.close(&key);
            }
            Some(State::Frames) => {
                let o = self.open.get_mut(&key).expect("open");
                o.last_no = no;
                if is_frame(body) {
                    o.rec.lines.push(mk(LineRole::Frame));
                    return;
                }
                // Python prints the code line under a frame; a paste that lost the indentation
                // (`File "…", line 455, in f` then `raise ValueError("No available …"`) keeps it
                // as the one line after the frame that is no exception statement; one that kept
                // some indentation but not Python's four spaces (` raise exc`) is the code line
                // too, as an exception line is never indented.
                let after_frame = o
                    .rec
                    .lines
                    .last()
                    .is_some_and(|l| l.role == LineRole::Frame);
                let under_frame = after_frame && {
                    let frame = &o.rec.lines.last().expect("a frame").body;
                    !frame.starts_with("  ")
                        || (body.starts_with(' ') && !is_exception_statement(body.trim_start()))
                };
                if is_source(body)
                    || (under_frame
                        && !body.is_empty()
                        && !is_exception_statement(body)
                        && !is_bare_exception_type(body))
                {
                    o.rec.lines.push(mk(LineRole::Source));
                    return;
                }
                // An excerpt's elision inside a traceback leaves out frames, not its end.
                if body.is_empty() || is_elision(body) {
                    return;
                }
                if is_traceback_start(body) {
                    // A new traceback on the same stream without an exception line: the first
                    // was cut (an elided excerpt, or a killed writer).
                    self.close(&key);
                    self.start(p, key, mk(LineRole::TracebackStart), State::Frames);
                    return;
                }
                o.rec.lines.push(mk(LineRole::Exception));
                o.state = State::AfterException;
                o.after_exc = 0;
                return;
            }
            Some(State::AfterException) => {
                let o = self.open.get_mut(&key).expect("open");
                let process_header = is_process_head(body).is_some();
                if is_chain_marker(body) {
                    o.rec.lines.push(mk(LineRole::Chain));
                    o.state = State::Chained;
                    o.last_no = no;
                    return;
                }
                let leveled_mismatch = p.level.is_some() != o.rec.lines[0].level.is_some();
                // torch.dynamo's `BackendCompilerFailed: backend='…' raised:` goes on with the
                // exception its backend raised, on the next line (torch/_dynamo/exc.py).
                let raised = o.after_exc == 0
                    && o.rec
                        .lines
                        .last()
                        .is_some_and(|l| l.body.trim_end().ends_with(" raised:"));
                if raised && !leveled_mismatch && is_exception_statement(body) {
                    o.rec.lines.push(mk(LineRole::Continuation));
                    o.after_exc += 1;
                    o.last_no = no;
                    return;
                }
                if !leveled_mismatch
                    && !process_header
                    && !is_traceback_start(body)
                    && !is_ignored_exception_head(body)
                    && !is_shell_job_report(body)
                    && o.after_exc < CONTINUATION_LINES_MAX
                    && !(p.header == HeaderKind::Uvicorn)
                    && (body.is_empty()
                        || !is_exception_like(body)
                        || body.starts_with(' ')
                        || o.rec.header == HeaderKind::Vllm)
                    && (o.rec.header != HeaderKind::Vllm
                        || p.location.as_deref() == o.rec.location.as_deref())
                {
                    o.rec.lines.push(mk(LineRole::Continuation));
                    o.after_exc += 1;
                    o.last_no = no;
                    return;
                }
                self.close(&key);
            }
            Some(State::Chained) => {
                let o = self.open.get_mut(&key).expect("open");
                o.last_no = no;
                if is_traceback_start(body) {
                    o.rec.lines.push(mk(LineRole::TracebackStart));
                    o.state = State::Frames;
                    return;
                }
                if body.is_empty() {
                    return;
                }
                self.close(&key);
            }
            None => {}
        }
        // No open record on this stream.
        if is_traceback_start(body) {
            let role = LineRole::TracebackStart;
            self.start(p, key, mk(role), State::Frames);
            return;
        }
        if is_frame(body) {
            // An excerpt that begins mid-traceback.
            self.start(p, key, mk(LineRole::Frame), State::Frames);
            return;
        }
        if let Some(name) = is_process_head(body) {
            // CPython's `Process NAME:` before a child's uncaught traceback names the process.
            let name = name.to_string();
            self.start(p, key.clone(), mk(LineRole::Head), State::Head);
            if let Some(o) = self.open.get_mut(&key) {
                o.rec.process_hint = Some(name);
            }
            return;
        }
        let error_level = matches!(p.level, Some(Level::Error) | Some(Level::Critical));
        // NCCL's error text ends with `Last error:` and the detail on the next line; kept as a
        // record of its own so that the detail can be told from a line of its own.
        let nccl_last_error = body.trim_end() == "Last error:";
        if error_level
            || is_candidate
            || is_exception_statement(body)
            || is_tool_fatal(body)
            || nccl_last_error
            || is_ignored_exception_head(body)
            || is_libc_fatal(body)
        {
            self.start(p, key, mk(LineRole::Head), State::Head);
        }
    }

    /// Close everything and return the records in order of their first line.
    pub fn finish(mut self) -> Vec<Record> {
        let keys: Vec<StreamKey> = self.open.keys().cloned().collect();
        for k in keys {
            self.close(&k);
        }
        let mut done = self.done;
        done.sort_by_key(|r| r.first_line());
        done
    }
}

//! Bad input to the `faultkit` command line, one table row per input (ARCHITECTURE.md: "bad input
//! never panics; unreadable input is an exit code"): how the input is made, the command, the exit
//! code, and what stdout or stderr must (not) say. Every row runs `faultkit` as a real process
//! with a bound on its run time — a row that hangs is stopped and reported, never a stalled test —
//! and every human verdict is checked to be safe for a terminal.
//!
//! `cli.rs` checks the `--json` answers and exit codes for an empty file, NULs, junk, a directory
//! and a missing file, and a wrong type or an unknown root cause in a scenario file given by path;
//! the rows here check the human text and messages for those, and add what `cli.rs` does not try.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// A row that runs longer than this hangs (the slowest, 256 MiB, takes about a second).
const ROW_TIMEOUT: Duration = Duration::from_secs(60);
/// Bound on waiting for a condition while a row runs (a reader on a FIFO, follow's read position).
const CONDITION_TIMEOUT: Duration = Duration::from_secs(20);
const POLL: Duration = Duration::from_millis(5);
/// Rows running side by side.
const ROWS_AT_ONCE: usize = 4;
const MIB: usize = 1 << 20;

struct Row {
    name: &'static str,
    /// Makes the input in the row's own temporary directory.
    make: fn(&Path) -> Input,
    /// The arguments; `{in}` stands for the input's path.
    args: &'static [&'static str],
    code: i32,
    expect: &'static [Expect],
}

/// What the output must show.
#[derive(Debug)]
enum Expect {
    Stdout(&'static str),
    Stderr(&'static str),
    /// A raw control character (or text) that must not reach the terminal.
    StdoutLacks(&'static str),
    /// `faultkit: peak RSS (VmHWM)` (FAULTKIT_REPORT_PEAK_RSS) below this many MiB.
    PeakRssBelowMib(u64),
    /// Stdout is a verdict (JSON) whose root-cause text is exactly this.
    RootCauseText(&'static str),
}

/// Work done while faultkit runs, given its pid.
type During = Option<Box<dyn FnOnce(u32) -> Result<(), String>>>;

/// A row's input, made by its `make`.
struct Input {
    path: PathBuf,
    env: Vec<(&'static str, OsString)>,
    /// Runs while faultkit runs, with its pid: feeds a FIFO, rewrites a followed file.
    during: During,
    /// Substrings of stdout known only once the input exists (a truth file's line number).
    stdout_has: Vec<String>,
    /// Why the row cannot run here; printed, and the row counts as not run.
    skip: Option<String>,
}

impl Input {
    fn at(path: PathBuf) -> Input {
        Input {
            path,
            env: Vec::new(),
            during: None,
            stdout_has: Vec::new(),
            skip: None,
        }
    }
}

const ROWS: &[Row] = &[
    Row {
        name: "empty file",
        make: |d| write(d, "empty.log", b""),
        args: &["triage", "{in}"],
        code: 3,
        expect: &[
            Expect::Stdout("status: unknown"),
            Expect::Stdout("note: empty input"),
        ],
    },
    Row {
        name: "only NUL bytes (1 MiB)",
        make: |d| write(d, "nul.log", &vec![0; MIB]),
        args: &["triage", "{in}"],
        code: 3,
        expect: &[
            Expect::Stdout("only NUL bytes"),
            Expect::Stdout("nul_run at byte 0 (1048576 bytes)"),
        ],
    },
    Row {
        name: "random binary (1 MiB, seed 7)",
        make: |d| {
            let mut rng = generator::Seed(7).rng();
            let junk: Vec<u8> = (0..MIB).map(|_| rng.next_u64() as u8).collect();
            write(d, "junk.bin", &junk)
        },
        args: &["triage", "{in}"],
        code: 3,
        expect: &[Expect::Stdout("status: unknown"), Expect::Stdout("nul_run")],
    },
    Row {
        name: "invalid UTF-8 inside the root-cause line",
        make: |d| {
            let log = simulate(d, "fp8-kv-sm120");
            let mut bytes = std::fs::read(&log).unwrap();
            let cause = b"No valid attention backend found for cuda";
            let mut corrupted = 0;
            let mut from = 0;
            while let Some(p) = find(&bytes[from..], cause) {
                // " for" becomes three bytes that are not UTF-8 (the line keeps its length).
                let at = from + p + cause.len() - 9;
                bytes[at..at + 4].copy_from_slice(b" \xff\xfe\xc0");
                corrupted += 1;
                from = at;
            }
            assert!(
                corrupted >= 8,
                "the fp8 log has one ValueError line per rank"
            );
            std::fs::write(&log, bytes).unwrap();
            Input::at(log)
        },
        args: &["triage", "{in}"],
        code: 1,
        expect: &[
            Expect::Stdout("fp8_kv_cache_unsupported_backend"),
            Expect::Stdout("backend found \u{fffd}\u{fffd}\u{fffd} cuda with"),
        ],
    },
    Row {
        // Ray's deduplication marker is `[repeated 7x across cluster]`; this one has lost its
        // count (found by `cargo xtask fuzz`, target framer).
        name: "Ray's repeat marker without a count",
        make: |d| {
            write(
                d,
                "ray.log",
                b"(RayWorkerWrapper pid=392789, ip=10.0.0.2) ERROR 03-13 16:32:15 worker_base.py:574] \
                  boom [repeated across cluster]\n",
            )
        },
        args: &["triage", "{in}"],
        code: 2,
        expect: &[Expect::Stdout("boom [repeated across cluster]")],
    },
    Row {
        name: "256 MiB line of one byte, no newline",
        make: |d| write_repeated(d, "x.log", b"", b"x", 256 * MIB),
        args: &["triage", "{in}"],
        code: 3,
        expect: &[
            Expect::Stdout("partial_line at byte 0 (268435456 bytes)"),
            Expect::Stdout("longer than 65536 bytes were analysed by their first 65536"),
            // The file's pages (it is mapped) and no copy of the line.
            Expect::PeakRssBelowMib(256 + 64),
        ],
    },
    Row {
        // A log whose line ends became `\r` (one process's records, as a converter or a
        // `\r`-redrawing writer leaves them): one 256 MiB line holding about a million
        // `(APIServer pid=7) INFO …` records.
        name: "256 MiB line of one process's records joined by \\r",
        make: |d| {
            write_repeated(
                d,
                "cr.log",
                b"(APIServer pid=7) INFO 01-28 14:02:07 [api_server.py:1] vLLM API server version 0.15.1\r",
                b"(APIServer pid=7) INFO 01-28 14:03:11 [loggers.py:123] Engine 000: Avg prompt throughput: 0.0 tokens/s, Running: 0 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.0%\r",
                256 * MIB,
            )
        },
        args: &["triage", "{in}"],
        code: 3,
        expect: &[
            Expect::Stdout("status: starting"),
            Expect::Stdout("partial_line"),
        ],
    },
    Row {
        // `--pid` asks for the launch in which a line carries the pid: here one long line whose
        // own prefix is another process's and which names pid 7 thousands of times (writers
        // sharing a line, or records joined by \r). The answer: no line carries pid 7.
        name: "--pid on a 1 MiB line naming that pid thousands of times",
        make: |d| {
            write_repeated(
                d,
                "pid.log",
                b"(Worker_TP0 pid=9) INFO 01-28 14:02:07 [gpu_worker.py:1] loading\r",
                b"(APIServer pid=7) INFO 01-28 14:03:11 [loggers.py:123] Engine 000: Running: 0 reqs, Waiting: 0 reqs\r",
                MIB,
            )
        },
        args: &["triage", "{in}", "--pid", "7"],
        code: 3,
        expect: &[Expect::Stdout("no line in this log carries pid 7")],
    },
    Row {
        name: "tqdm progress redrawn with \\r, never a newline",
        make: |d| {
            let log = simulate(d, "healthy-llama-8b");
            let text = std::fs::read(&log).unwrap();
            // The startup up to the weights (ending in the loader's prefix), then the progress
            // bar of a slow load, redrawn and never finished.
            let cut = find(&text, b"Loading safetensors").unwrap();
            let mut bytes = text[..cut].to_vec();
            for i in 0..20_000 {
                bytes.extend_from_slice(
                    format!(
                        "\rLoading safetensors checkpoint shards: {:3}% Completed | {i}/20000 [00:{:02}<00:00, 1.00it/s]",
                        i * 100 / 20_000,
                        i % 60
                    )
                    .as_bytes(),
                );
            }
            std::fs::write(&log, bytes).unwrap();
            Input::at(log)
        },
        args: &["triage", "{in}"],
        code: 3,
        expect: &[
            Expect::Stdout("status: starting"),
            Expect::Stdout("partial_line"),
        ],
    },
    Row {
        name: "a directory",
        make: |d| Input::at(d.to_path_buf()),
        args: &["triage", "{in}"],
        code: 66,
        expect: &[Expect::Stderr("is a directory, not a log file")],
    },
    Row {
        name: "a missing file",
        make: |d| Input::at(d.join("missing.log")),
        args: &["triage", "{in}"],
        code: 66,
        expect: &[Expect::Stderr("missing.log: No such file or directory")],
    },
    Row {
        name: "no read permission (chmod 000)",
        make: |d| {
            let mut input = write(d, "secret.log", b"ERROR 01-28 14:02:07 [x.py:1] boom\n");
            std::fs::set_permissions(&input.path, std::fs::Permissions::from_mode(0o000)).unwrap();
            if rustix::process::geteuid().is_root() {
                // Permission bits do not stop root (CAP_DAC_OVERRIDE): faultkit would read the
                // file. The next row covers a file that opens and cannot be read.
                input.skip =
                    Some("running as root, which file permissions do not stop".to_string());
            }
            input
        },
        args: &["triage", "{in}"],
        code: 66,
        expect: &[Expect::Stderr("secret.log: Permission denied")],
    },
    Row {
        // Unreadable even to root: /proc/self/mem of the reader opens, is a regular file of
        // length 0 (so it is read, not mapped), and reading at offset 0 fails with EIO (page 0
        // is never mapped).
        name: "a file whose read fails (/proc/self/mem)",
        make: |_| Input::at(PathBuf::from("/proc/self/mem")),
        args: &["triage", "{in}"],
        code: 66,
        expect: &[Expect::Stderr("/proc/self/mem: Input/output error")],
    },
    Row {
        name: "a FIFO another process writes a crash log into",
        make: |d| {
            let log = std::fs::read(simulate(&d.join("sim"), "port-in-use")).unwrap();
            let fifo = d.join("vllm.fifo");
            let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
            assert!(made.success(), "mkfifo failed");
            let mut input = Input::at(fifo.clone());
            input.during = Some(Box::new(move |_pid| feed_fifo(&fifo, &log)));
            input
        },
        args: &["triage", "{in}"],
        code: 1,
        expect: &[Expect::Stdout("port_in_use")],
    },
    Row {
        // A relaunch with `> same.log`: the file is truncated and the new launch, longer than
        // what follow had read, is written at once.
        name: "followed file truncated and rewritten",
        make: |d| follow_input(d, Rewrite::Truncate),
        args: &["follow", "{in}", "--timeout", "5"],
        code: 1,
        expect: &[Expect::Stdout("port_in_use")],
    },
    Row {
        // A relaunch into a new file of the same name (`mv vllm.log old.log; vllm serve > vllm.log`).
        name: "followed file replaced by rename",
        make: |d| follow_input(d, Rewrite::Rename),
        args: &["follow", "{in}", "--timeout", "5"],
        code: 1,
        expect: &[Expect::Stdout("port_in_use")],
    },
    Row {
        name: "scenario by name (FAULTKIT_SCENARIOS) with a value of the wrong type",
        make: |d| scenario_dir(d, &scenario_text("0.15", 1, "", "")),
        args: &["simulate", "bad"],
        code: 64,
        expect: &[
            Expect::Stderr("crash/bad.toml:2:8: invalid type"),
            Expect::Stderr("expected a string"),
        ],
    },
    Row {
        name: "scenario file by path with an unknown key",
        make: |d| {
            write(
                d,
                "bad.toml",
                scenario_text("\"0.15.1\"", 1, "colour = \"red\"\n", "").as_bytes(),
            )
        },
        args: &["simulate", "{in}"],
        code: 64,
        expect: &[Expect::Stderr("bad.toml:5:1: unknown field `colour`")],
    },
    Row {
        name: "scenario run by name with an unknown root-cause id",
        make: |d| {
            scenario_dir(
                d,
                &scenario_text(
                    "\"0.15.1\"",
                    1,
                    "[[faults]]\nkind = \"kill\"\nprocess = \"Worker_TP0\"\nsignal = \"SIGKILL\"\nat = \"serving\"\n",
                    "root_cause = \"worker_killed_by_gremlins\"\n",
                ),
            )
        },
        args: &["scenario", "bad", "--out", "{in}/out"],
        code: 64,
        expect: &[Expect::Stderr(
            "crash/bad.toml:12:14: unknown root-cause id `worker_killed_by_gremlins`",
        )],
    },
    Row {
        name: "scenario whose outside signal names a phase",
        make: |d| {
            write(
                d,
                "bad.toml",
                scenario_text(
                    "\"0.15.1\"",
                    2,
                    "[[faults]]\nkind = \"signal\"\nprocess = \"Worker_TP1\"\nat = \"load_weights\"\n",
                    "",
                )
                .as_bytes(),
            )
        },
        args: &["simulate", "{in}"],
        code: 64,
        expect: &[Expect::Stderr(
            "fault `signal` is sent to a ready server: it takes no `at`",
        )],
    },
    Row {
        name: "simulate with a vLLM release the simulator does not know",
        make: |d| Input::at(d.to_path_buf()),
        args: &[
            "simulate",
            "fp8-kv-sm120",
            "--vllm",
            "0.99",
            "--out",
            "{in}/out",
        ],
        code: 64,
        expect: &[
            Expect::Stderr("vLLM 0.99 is not a release the simulator knows"),
            Expect::Stderr("0.15.1"),
        ],
    },
    Row {
        name: "scenario file whose vllm is a release the simulator does not know",
        make: |d| {
            write(
                d,
                "bad.toml",
                scenario_text("\"0.7.9\"", 1, "", "").as_bytes(),
            )
        },
        args: &["simulate", "{in}"],
        code: 64,
        expect: &[Expect::Stderr(
            "bad.toml:2:8: vLLM 0.7.9 is not a release the simulator knows",
        )],
    },
    Row {
        name: "scenario list over a directory holding a bad file",
        make: |d| scenario_dir(d, &scenario_text("\"0.15.1\"", 0, "", "")),
        args: &["simulate", "--list"],
        code: 64,
        expect: &[Expect::Stderr("crash/bad.toml:4:")],
    },
    Row {
        name: "hostile terminal sequences in the root-cause line (human)",
        make: |d| write(d, "hostile.log", HOSTILE_LOG.as_bytes()),
        args: &["triage", "{in}"],
        code: 1,
        expect: &[
            Expect::Stdout("port_in_use"),
            Expect::StdoutLacks("\x1b"),
            Expect::StdoutLacks("\x07"),
            Expect::StdoutLacks("\x08"),
            Expect::StdoutLacks("\u{9b}"),
            Expect::StdoutLacks("\u{9d}"),
            Expect::StdoutLacks("\u{85}"),
            Expect::StdoutLacks("pwned\x07"),
            // What stays is shown escaped.
            Expect::Stdout("c1-osc:\\u{009d}0;pwned\\u{009c} bell:\\x07 bs:\\x08"),
        ],
    },
    Row {
        name: "hostile terminal sequences in the root-cause line (--json)",
        make: |d| write(d, "hostile.log", HOSTILE_LOG.as_bytes()),
        args: &["triage", "{in}", "--json"],
        code: 1,
        expect: &[
            // `text` is the line with its ANSI sequences removed, every other character exact.
            Expect::RootCauseText(
                "(APIServer pid=7) OSError: [Errno 98] Address already in use   click red \
                 c1-osc:\u{9d}0;pwned\u{9c} bell:\x07 bs:\x08 nel:\u{85} end",
            ),
            // JSON escapes control characters: none reaches a terminal raw.
            Expect::StdoutLacks("\x1b"),
            Expect::StdoutLacks("\x07"),
            Expect::StdoutLacks("\u{9d}"),
            Expect::StdoutLacks("\u{85}"),
        ],
    },
];

/// A root-cause line carrying an OSC title, a clear-screen, an OSC 8 hyperlink, a C1 CSI, a C1
/// OSC string, a bell, a backspace and a C1 next-line.
const HOSTILE_LOG: &str = "(APIServer pid=7) INFO 01-28 14:02:07 [utils.py:261] vLLM API server version 0.15.1\n\
    (APIServer pid=7) Traceback (most recent call last):\n\
    (APIServer pid=7)   File \"/x.py\", line 1, in f\n\
    (APIServer pid=7) OSError: [Errno 98] Address already in use \x1b]0;pwned\x07 \x1b[2J \
    \x1b]8;;http://evil/\x07click\x1b]8;;\x07 \u{9b}31mred c1-osc:\u{9d}0;pwned\u{9c} bell:\x07 bs:\x08 nel:\u{85} end\n";

#[test]
fn bad_input_gets_a_documented_answer() {
    // Rows are independent (each has its own directory): a few run at a time, so rows that hit
    // the time bound do not add up.
    let next = AtomicUsize::new(0);
    let results: Vec<Mutex<Option<RowResult>>> = ROWS.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..ROWS_AT_ONCE {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(row) = ROWS.get(i) else { break };
                let r = run_row(row);
                *results[i].lock().unwrap() = Some(r);
            });
        }
    });
    let mut failures = Vec::new();
    let mut skipped = Vec::new();
    for (row, r) in ROWS.iter().zip(results) {
        match r.into_inner().unwrap().expect("every row ran") {
            Ok(None) => {}
            Ok(Some(why)) => skipped.push(format!("{}: {why}", row.name)),
            Err(e) => failures.push(format!("── {}\n{e}", row.name)),
        }
    }
    for s in &skipped {
        eprintln!("bad_input: not run: {s}");
    }
    assert!(
        failures.is_empty(),
        "{} of {} rows failed:\n{}",
        failures.len(),
        ROWS.len(),
        failures.join("\n")
    );
}

/// What a row did: `Ok(None)` passed, `Ok(Some(why))` cannot run here, `Err` failed (and how).
type RowResult = Result<Option<String>, String>;

/// Run one row.
fn run_row(row: &Row) -> RowResult {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let input = (row.make)(dir.path());
    if let Some(why) = input.skip {
        return Ok(Some(why));
    }
    let args: Vec<OsString> = row
        .args
        .iter()
        .map(|a| a.replace("{in}", &input.path.to_string_lossy()).into())
        .collect();
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("faultkit"));
    cmd.args(&args)
        .env(
            "FAULTKIT_SCENARIOS",
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios"),
        )
        .env_remove("NO_COLOR")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if row
        .expect
        .iter()
        .any(|e| matches!(e, Expect::PeakRssBelowMib(_)))
    {
        cmd.env("FAULTKIT_REPORT_PEAK_RSS", "1");
    }
    for (k, v) in &input.env {
        cmd.env(k, v);
    }
    let ran = run_bounded(cmd, input.during)?;
    let shown = || {
        format!(
            "faultkit {}\nexit {:?}\n── stdout\n{}\n── stderr\n{}",
            row.args.join(" "),
            ran.code,
            head(&ran.stdout, 3000),
            head(&ran.stderr, 3000)
        )
    };
    let mut problems = Vec::new();
    if let Some(e) = &ran.during_error {
        problems.push(format!("while it ran: {e}"));
    }
    if ran.timed_out {
        // What it printed before it was stopped says nothing about the row.
        problems.push(format!(
            "did not finish within {} s (hang); stopped",
            ROW_TIMEOUT.as_secs()
        ));
        return Err(format!("{}\n{}", problems.join("\n"), shown()));
    }
    if ran.code != Some(row.code) {
        problems.push(format!("exit code {:?}, expected {}", ran.code, row.code));
    }
    if ran.stderr.contains("panicked") {
        problems.push("panicked".into());
    }
    let json = row.args.contains(&"--json");
    if !json {
        if let Some((at, c)) = raw_control(&ran.stdout) {
            problems.push(format!(
                "raw control character {c:?} at byte {at} of the human output"
            ));
        }
    }
    for e in row.expect {
        match e {
            Expect::Stdout(s) if !ran.stdout.contains(s) => {
                problems.push(format!("stdout lacks {s:?}"))
            }
            Expect::Stderr(s) if !ran.stderr.contains(s) => {
                problems.push(format!("stderr lacks {s:?}"))
            }
            Expect::StdoutLacks(s) if ran.stdout.contains(s) => {
                problems.push(format!("stdout contains {s:?}"))
            }
            Expect::PeakRssBelowMib(max) => match peak_rss_mib(&ran.stderr) {
                Some(mib) if mib < *max => {}
                other => problems.push(format!("peak RSS {other:?} MiB, expected below {max}")),
            },
            Expect::RootCauseText(text) => {
                match serde_json::from_str::<serde_json::Value>(&ran.stdout) {
                    Ok(v) if v["root_cause"]["text"].as_str() == Some(text) => {}
                    Ok(v) => problems.push(format!(
                        "root_cause.text is {:?}, expected {text:?}",
                        v["root_cause"]["text"]
                    )),
                    Err(e) => problems.push(format!("stdout is not JSON: {e}")),
                }
            }
            _ => {}
        }
    }
    for s in &input.stdout_has {
        if !ran.stdout.contains(s.as_str()) {
            problems.push(format!("stdout lacks {s:?}"));
        }
    }
    if problems.is_empty() {
        Ok(None)
    } else {
        Err(format!("{}\n{}", problems.join("\n"), shown()))
    }
}

struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    timed_out: bool,
    during_error: Option<String>,
}

/// Run `cmd`, call `during` with its pid, and wait at most `ROW_TIMEOUT` for it to exit.
fn run_bounded(mut cmd: Command, during: During) -> Result<Ran, String> {
    let mut child = cmd.spawn().map_err(|e| format!("starting faultkit: {e}"))?;
    let drain = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut buf);
            }
            String::from_utf8_lossy(&buf).into_owned()
        })
    };
    let out = drain(
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    );
    let err = drain(
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    );
    let during_error = during.and_then(|f| f(child.id()).err());
    let status = match wait_for(ROW_TIMEOUT, "the command to exit", || {
        child.try_wait().transpose()
    }) {
        Ok(exited) => Some(exited.map_err(|e| e.to_string())?),
        // A hang: stopped, and reported as such.
        Err(_) => {
            let _ = child.kill();
            let _ = child.wait();
            None
        }
    };
    let timed_out = status.is_none();
    Ok(Ran {
        code: status.and_then(|s| s.code()),
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
        timed_out,
        during_error,
    })
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> Input {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    Input::at(p)
}

/// `first`, then `unit` repeated until the file holds `size` bytes (the last unit cut short).
fn write_repeated(dir: &Path, name: &str, first: &[u8], unit: &[u8], size: usize) -> Input {
    let p = dir.join(name);
    let mut w = std::io::BufWriter::with_capacity(MIB, std::fs::File::create(&p).unwrap());
    w.write_all(first).unwrap();
    let mut block = Vec::with_capacity(MIB + unit.len());
    while block.len() < MIB {
        block.extend_from_slice(unit);
    }
    let mut left = size - first.len();
    while left > 0 {
        let n = left.min(block.len());
        w.write_all(&block[..n]).unwrap();
        left -= n;
    }
    w.flush().unwrap();
    Input::at(p)
}

/// A scenario file of the fewest keys: `vllm` as written (quoted or not), `count` GPUs, `extra`
/// lines before `[expect]` and `expect` lines after its status (line 2 is `vllm`, line 4 `gpus`).
fn scenario_text(vllm: &str, count: u32, extra: &str, expect: &str) -> String {
    format!(
        "summary = \"x\"\nvllm = {vllm}\ncommand = \"vllm serve m\"\ngpus = {{ model = \"h100\", count = {count} }}\n{extra}[expect]\nstatus = \"crashed\"\n{expect}"
    )
}

/// `faultkit simulate NAME --out DIR` (seed 0); the log's path.
fn simulate(dir: &Path, name: &str) -> PathBuf {
    let ok = Command::new(assert_cmd::cargo::cargo_bin("faultkit"))
        .args(["simulate", name, "--out"])
        .arg(dir)
        .env(
            "FAULTKIT_SCENARIOS",
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios"),
        )
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(ok.success(), "faultkit simulate {name}");
    dir.join("vllm.log")
}

/// A scenario directory holding `crash/bad.toml`, named by FAULTKIT_SCENARIOS.
fn scenario_dir(d: &Path, toml: &str) -> Input {
    let root = d.join("scenarios");
    std::fs::create_dir_all(root.join("crash")).unwrap();
    std::fs::write(root.join("crash/bad.toml"), toml).unwrap();
    let mut input = Input::at(d.to_path_buf());
    input
        .env
        .push(("FAULTKIT_SCENARIOS", root.into_os_string()));
    input
}

/// Open the FIFO for writing once faultkit has opened it for reading, write `bytes`, close.
fn feed_fifo(fifo: &Path, bytes: &[u8]) -> Result<(), String> {
    // Non-blocking: the open fails (ENXIO) until a reader is there, instead of blocking forever
    // if faultkit never opens the FIFO.
    let mut f = wait_for(CONDITION_TIMEOUT, "faultkit to open the FIFO", || {
        std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(fifo)
            .ok()
    })?;
    // Far below the pipe's 64 KiB: a non-blocking write cannot come back short.
    assert!(bytes.len() < 60_000);
    f.write_all(bytes)
        .map_err(|e| format!("writing the FIFO: {e}"))
}

/// How the followed file is rewritten.
#[derive(Clone, Copy)]
enum Rewrite {
    Truncate,
    Rename,
}

/// A file holding the start of an older launch; once `faultkit follow` has read all of it, it is
/// rewritten with a crash log longer than what follow read. The verdict must be about the crash
/// log alone: its root-cause line number is the truth's.
fn follow_input(d: &Path, how: Rewrite) -> Input {
    let old_log = std::fs::read(simulate(&d.join("old"), "fp8-kv-sm120")).unwrap();
    let new_dir = d.join("new");
    let new_log = std::fs::read(simulate(&new_dir, "port-in-use")).unwrap();
    let truth: serde_json::Value =
        serde_json::from_slice(&std::fs::read(new_dir.join("truth.json")).unwrap()).unwrap();
    let line = truth["root_cause"]["line"].as_u64().unwrap();
    // Whole lines of the old launch, about a third of the new log's length.
    let cut = old_log[..new_log.len() / 3]
        .iter()
        .rposition(|&c| c == b'\n')
        .unwrap()
        + 1;
    let path = d.join("vllm.log");
    std::fs::write(&path, &old_log[..cut]).unwrap();
    let mut input = Input::at(path.clone());
    input.stdout_has.push(format!("root cause: line {line},"));
    input.during = Some(Box::new(move |pid| {
        wait_for(CONDITION_TIMEOUT, "follow to read the whole file", || {
            read_position(pid, &path).filter(|&p| p == cut as u64)
        })?;
        match how {
            Rewrite::Truncate => std::fs::write(&path, &new_log),
            Rewrite::Rename => {
                let tmp = path.with_extension("new");
                std::fs::write(&tmp, &new_log).and_then(|()| std::fs::rename(&tmp, &path))
            }
        }
        .map_err(|e| format!("rewriting the followed file: {e}"))
    }));
    input
}

/// The read position of process `pid` in the file `path` (its fdinfo), if it has it open.
fn read_position(pid: u32, path: &Path) -> Option<u64> {
    for fd in std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.flatten() {
        if std::fs::read_link(fd.path()).ok().as_deref() == Some(path) {
            let info =
                std::fs::read_to_string(format!("/proc/{pid}/fdinfo/{}", fd.file_name().to_str()?))
                    .ok()?;
            return info
                .lines()
                .find_map(|l| l.strip_prefix("pos:"))
                .and_then(|p| p.trim().parse().ok());
        }
    }
    None
}

/// Poll `f` until it gives a value, at most `bound`.
fn wait_for<T>(bound: Duration, what: &str, f: impl FnMut() -> Option<T>) -> Result<T, String> {
    launch::wait::until(bound, POLL, what, f)
}

/// The first raw control character a terminal would act on: C0 but newline and tab, DEL, C1.
fn raw_control(s: &str) -> Option<(usize, char)> {
    s.char_indices().find(|&(_, c)| {
        (c.is_control() && c != '\n' && c != '\t') || ('\u{80}'..='\u{9f}').contains(&c)
    })
}

fn peak_rss_mib(stderr: &str) -> Option<u64> {
    stderr
        .lines()
        .find_map(|l| l.strip_prefix("faultkit: peak RSS (VmHWM) "))
        .and_then(|v| v.trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kb| kb / 1024)
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn head(s: &str, n: usize) -> &str {
    let mut end = n.min(s.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

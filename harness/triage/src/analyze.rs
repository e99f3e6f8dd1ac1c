//! From records to a verdict: classify every record with the signature rules, demote echoes,
//! fold identical failures across ranks, pick the originating one, and gather evidence.
//!
//! Main function: [`analyze_launch`]. The root cause is the first record by (role, layer, file
//! order): a cause before a weak signal before an unclassified error before an echo; within a
//! role the lowest layer (worker < engine core < API server) and then the earliest line.

use std::collections::{BTreeMap, VecDeque};

use regex::Regex;
use std::sync::OnceLock;

use super::grammar::{parse_line_in, HeaderKind, Level};
use super::layers::Layers;
use super::rules::{Role, RuleSet};
use super::scan::{self, WindowedLines};
use super::segment::{is_config_dump, is_engine_init};
use super::traceback::{
    is_bare_exception_type, is_chain_marker, is_elision, is_exception_statement,
    is_ignored_exception_head, is_libc_fatal, is_process_head, is_tool_fatal, is_traceback_start,
    resplit, Assembler, LineRole, Record,
};
use super::verdict::{Damage, RootCause, Secondary, Stale, Status, Verdict, VERDICT_SCHEMA};

/// The shortest exception message that another exception's message is taken to quote (a
/// wrapper's `f"…: {err}"`): shorter ones (`bad input`, `0`) occur inside any text.
const QUOTED_MESSAGE_MIN: usize = 12;

/// At most this many secondary entries are listed.
const SECONDARY_MAX: usize = 24;
/// At most this many key frames are quoted.
const FRAMES_MAX: usize = 8;

/// The class of a record, best first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Class {
    Cause,
    /// A `Type: message` statement no signature matched, outside a traceback (in an error
    /// record, or on its own: an excerpt that kept the exception line but not its frames).
    LoneException,
    /// A signature matched header-less text that is not an exception line (a message whose
    /// `Type: ` an excerpt lost, a tool's output): an exception line elsewhere outranks it.
    BareCause,
    /// A traceback cut before its exception line, no signature matched.
    IncompleteUnknown,
    Weak,
    UnknownError,
    /// An exception a library logged as a warning or for information (`WARNING … ImportError:
    /// …`): the process went on.
    Warned,
    Echo,
}

#[derive(Clone, Debug)]
struct Candidate {
    class: Class,
    layer: u8,
    id: String,
    rule: Option<usize>,
    /// Index into record.lines of the line to quote.
    quote: usize,
    record: usize,
    hung: bool,
}

/// Facts about one launch region the caller knows.
#[derive(Clone, Debug)]
pub struct Region {
    pub start: usize,
    pub end: usize,
    /// Line number of the region's first line.
    pub first_line: u64,
    /// Pids of this launch, when known (lines of other pids are foreign).
    pub launch_pid: Option<u32>,
    /// The lines just before the region: what its process printed while importing, before the
    /// banner (the command line, import warnings).
    pub preamble: Option<(usize, usize)>,
}

/// Everything one pass over a region yields.
#[derive(Debug)]
pub struct Analysis {
    pub verdict: Verdict,
    pub last_line: u64,
    pub pids: Vec<u32>,
    /// Offset of the first line of a newer API server that started after this launch's server
    /// shut down: a launch boundary the text lost.
    pub newer_launch_at: Option<usize>,
}

fn is_exception_like(body: &str) -> bool {
    let head = body.split(": ").next().unwrap_or("");
    !head.is_empty()
        && head.len() < 120
        && head
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '_')
        && head.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && body.len() > head.len()
}

/// A weak signal reporting that process P died (`Engine core proc EngineCore_DP0 died
/// unexpectedly`) defers to P's own report, under the same signature, of a death below it
/// (`Worker proc VllmWorker-3 died unexpectedly`): the supervisor's line may land first in the
/// file when both write in the same instant, but P's report is nearer the cause. Followed down
/// the layers; each step moves to a lower layer, so it ends.
fn defer_to_the_dead(order: &mut [usize], cands: &[Candidate], records: &[Record]) {
    while let Some(&first) = order.first() {
        let c = &cands[first];
        if c.class != Class::Weak {
            return;
        }
        let report = records[c.record].lines[c.quote].body.as_str();
        let deeper = order.iter().position(|&i| {
            let d = &cands[i];
            d.class == Class::Weak
                && d.id == c.id
                && d.layer < c.layer
                && records[d.record]
                    .process
                    .as_deref()
                    .is_some_and(|p| reported_dead(report).any(|dead| dead == p))
        });
        match deeper {
            Some(pos) => order[..=pos].rotate_right(1),
            None => return,
        }
    }
}

/// A death report (`Worker proc VllmWorker-0 died unexpectedly`) first is the consequence of
/// what was told around it: an error a lower layer wrote earlier (a worker's own error record,
/// its exception line) comes first, else an echo after it that quotes a known cause (the engine
/// core's `Worker failed with error '…'`).
fn defer_to_the_last_words(order: &mut [usize], cands: &[Candidate], records: &[Record]) {
    let Some(&first) = order.first() else {
        return;
    };
    let c = &cands[first];
    let report = &records[c.record].lines[c.quote];
    if c.class != Class::Weak || reported_dead(&report.body).next().is_none() {
        return;
    }
    let told = order
        .iter()
        .position(|&i| {
            let d = &cands[i];
            matches!(
                d.class,
                Class::Cause
                    | Class::LoneException
                    | Class::UnknownError
                    | Class::IncompleteUnknown
            ) && d.layer < c.layer
                && records[d.record].lines[d.quote].no < report.no
        })
        .or_else(|| {
            order.iter().position(|&i| {
                let d = &cands[i];
                d.class == Class::Echo
                    && d.id != "unknown"
                    && records[d.record].lines[d.quote].no > report.no
            })
        });
    if let Some(pos) = told {
        order[..=pos].rotate_right(1);
    }
}

/// A process's report of a fatal signal in native code (`!!!!!!! Segfault encountered !!!!!!!`,
/// UCX's `Caught signal 11 (Segmentation fault: …)`) first is the end of what it told just before
/// it: an error record of its own a few lines above with no signature of its own (a library's
/// `[HAMI-core ERROR (…)]: Illegal device id: …`) says why it crashed. That record's line goes
/// first, named by the signal's rule. A supervisor's report that another process died is not
/// its own crash (`defer_to_the_last_words` handles it).
fn last_words_before_a_crash(order: &mut [usize], cands: &mut [Candidate], records: &[Record]) {
    let Some(&first) = order.first() else {
        return;
    };
    let c = &cands[first];
    let rec = &records[c.record];
    let report = &rec.lines[c.quote];
    if c.class != Class::Weak || reported_dead(&report.body).next().is_some() {
        return;
    }
    let (process, at) = (rec.process.clone(), report.no);
    hand_over_to_the_earliest(order, cands, records, |d, drec, no| {
        d.class == Class::UnknownError
            && !drec.traceback
            && drec.process == process
            && no < at
            && no + LAST_WORDS_LINES >= at
    });
}

/// The first candidate's signature names a line told with it: the earliest candidate (by line)
/// that `pick` accepts goes first, with the first's id and rule.
fn hand_over_to_the_earliest(
    order: &mut [usize],
    cands: &mut [Candidate],
    records: &[Record],
    pick: impl Fn(&Candidate, &Record, u64) -> bool,
) {
    let Some(&first) = order.first() else {
        return;
    };
    let line_of = |i: usize| records[cands[i].record].lines[cands[i].quote].no;
    let chosen = order
        .iter()
        .enumerate()
        .filter(|&(_, &i)| pick(&cands[i], &records[cands[i].record], line_of(i)))
        .min_by_key(|&(_, &i)| line_of(i))
        .map(|(pos, _)| pos);
    if let Some(pos) = chosen {
        let (id, rule) = (cands[first].id.clone(), cands[first].rule);
        let w = order[pos];
        cands[w].id = id;
        cands[w].rule = rule;
        order[..=pos].rotate_right(1);
    }
}

/// A bare exception line that repeats the exception line of a traceback in the same stream — a
/// paste's summary above the log it summarises (the error first, then the whole output), or the
/// error printed again on its own after its traceback — is that failure, told twice: the
/// traceback, which says where it happened, is the one that counts.
fn demote_summaries(cands: &mut [Candidate], records: &[Record]) {
    for i in 0..cands.len() {
        let c = &cands[i];
        let rec = &records[c.record];
        if !matches!(c.class, Class::Cause | Class::LoneException)
            || rec.traceback
            || rec.lines.len() != 1
            || rec.header != HeaderKind::None
        {
            continue;
        }
        let said = rec.lines[c.quote].body.trim();
        let told_again = cands.iter().any(|d| {
            let drec = &records[d.record];
            let dq = &drec.lines[d.quote];
            drec.traceback
                && drec.process == rec.process
                && dq.no != rec.lines[c.quote].no
                && dq.role == LineRole::Exception
                && dq.body.trim() == said
        });
        if told_again {
            cands[i].class = Class::Echo;
        }
    }
}

/// An exception whose message ends with `:` and carries a child process's output (vLLM's P2P
/// check: `Error happened when batch testing peer-to-peer access from … to …:` and then the
/// stderr of the subprocess it ran, in vllm/distributed/device_communicators/
/// custom_all_reduce_utils.py) is told in detail by the child's own traceback that follows: the
/// first exception of a traceback of the same process within a few dozen lines, that no rule
/// names. Its line goes first, named by the wrapper's rule.
fn detail_of_the_child(order: &mut [usize], cands: &mut [Candidate], records: &[Record]) {
    let Some(&first) = order.first() else {
        return;
    };
    let c = &cands[first];
    let rec = &records[c.record];
    let q = &rec.lines[c.quote];
    if c.rule.is_none() || !q.body.trim_end().ends_with(':') || q.role != LineRole::Exception {
        return;
    }
    let (process, at) = (rec.process.clone(), q.no);
    hand_over_to_the_earliest(order, cands, records, |d, drec, no| {
        d.rule.is_none()
            && matches!(d.class, Class::Cause | Class::LoneException)
            && drec.traceback
            && drec.process == process
            && no > at
            && no <= at + CHILD_DETAIL_LINES
    });
}

/// How far below a wrapper's message its child's traceback may end.
const CHILD_DETAIL_LINES: u64 = 40;

/// How far above a crash report its process's last words may stand.
const LAST_WORDS_LINES: u64 = 3;

/// The warnings a compiled extension's failed import leaves, before the reason: vLLM's
/// (vllm/_custom_ops.py, `logger.warning("Failed to import from vllm._C with %r", e)`; from 0.11
/// vllm/platforms/interface.py, `… vllm._C: %r`) and vllm-ascend's
/// (vllm_ascend/device_allocator/camem.py, `Failed to import vllm_ascend_C:%s`). The first op
/// called then fails with `'_OpNamespace' '_C' object has no attribute …`. The noise rule of
/// signatures.toml names the same texts, so the warning itself is never a failure.
const C_IMPORT_FAILED: [&str; 3] = [
    "Failed to import from vllm._C with ",
    "Failed to import from vllm._C: ",
    "Failed to import vllm_ascend_C:",
];

/// Why a compiled extension did not load, from its import warning.
fn c_import_reason(body: &str) -> Option<&str> {
    C_IMPORT_FAILED.iter().find_map(|w| body.strip_prefix(w))
}

/// The compiled extension's import warning in the text a launch printed before its banner
/// (vLLM imports its ops, and warns, before the API server logs its version).
fn preamble_c_import_reason(b: &[u8], from: usize, to: usize, layers: &Layers) -> Option<String> {
    let to = to.min(b.len());
    b[from.min(to)..to].split(|&c| c == b'\n').find_map(|line| {
        let p = parse_line_in(&line[..line.len().min(scan::LINE_BYTES_MAX)], layers);
        c_import_reason(p.body.as_ref()).map(str::to_string)
    })
}

/// A shared library of the platform's runtime (CUDA, ROCm, CANN, oneAPI) rather than of the
/// extension itself.
fn names_a_platform_runtime(reason: &str) -> bool {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"\blib(torch_cuda|torch_hip|c10_cuda|c10_hip|cuda|cudart|nvrtc|cublas\w*|cudnn\w*|cusparse\w*|cufft\w*|curand\w*|nccl|nvidia-ml|amdhip64|hip\w*|rocm\w*|hsa-runtime64|ascendcl|acl\w*|hccl|atb|ge_runner|ze_loader|sycl)\.so")
            .expect("platform runtime library pattern")
    })
    .is_match(reason)
}

/// The id of an op missing from `_C` is why `_C` did not load, as the import warning told it:
/// the module was never built (`No module named 'vllm._C'`), or it was built against another
/// torch (`undefined symbol`). A shared library it cannot open keeps the op's own id: that is a
/// wheel built for another platform (a CUDA wheel on a host without CUDA's libraries).
fn explained_by_the_c_import(
    id: String,
    quote: &str,
    import_failure: Option<&str>,
    rules: &RuleSet,
) -> String {
    let Some(reason) = import_failure else {
        return id;
    };
    if !quote.contains("'_OpNamespace' '_C") {
        return id;
    }
    if reason.contains("cannot open shared object file") {
        // The platform's runtime missing is a wheel built for another platform (the op's own
        // id); the extension's own library missing is an extension not built or not installed.
        return if names_a_platform_runtime(reason) {
            id
        } else {
            "missing_module".to_string()
        };
    }
    let mut told: Vec<usize> = rules
        .matches(reason)
        .into_iter()
        .filter(|&r| rules.rules()[r].role == Role::Cause)
        .collect();
    told.sort_by_key(|&r| std::cmp::Reverse(rules.rules()[r].priority));
    told.first().map_or(id, |&r| rules.rules()[r].id.clone())
}

/// A line of CANN's error report, the detail the Ascend runtime prints under a failed call:
/// its error code first (`EE9999: …`, `EZ9999[PID: …]`, `EL0004: …`, `EJ0003: …`), two capitals
/// and four digits.
fn is_cann_report(body: &str) -> bool {
    let b = body.trim_start().as_bytes();
    b.len() > 6
        && b[..2].iter().all(u8::is_ascii_uppercase)
        && b[2..6].iter().all(u8::is_ascii_digit)
        && matches!(b[6], b':' | b'[')
}

/// CPython's caret/tilde line under a code line (`    ^^^^^^`, `~~~^~~`).
fn is_caret(body: &str) -> bool {
    let t = body.trim();
    !t.is_empty() && t.chars().all(|c| matches!(c, '^' | '~'))
}

/// NCCL's exception message ends with `Last error:` and the detail on the next line (`Error
/// while creating shared memory segment …`): a rule that names the detail names the cause the
/// generic `unhandled system error` stands for.
fn prefer_the_last_error(order: &mut [usize], cands: &[Candidate], records: &[Record]) {
    let Some(&first) = order.first() else {
        return;
    };
    let c = &cands[first];
    let q = &records[c.record].lines[c.quote];
    let after_last_error = |d: &Candidate| {
        let rec = &records[d.record];
        let before = if d.quote > 0 {
            rec.lines.get(d.quote - 1)
        } else {
            d.record
                .checked_sub(1)
                .and_then(|p| records.get(p))
                .and_then(|p| p.lines.last())
        };
        before.is_some_and(|l| l.body.trim() == "Last error:")
    };
    let detail = order.iter().position(|&i| {
        let d = &cands[i];
        let dq = &records[d.record].lines[d.quote];
        d.rule.is_some() && d.id != c.id && dq.no > q.no && dq.no <= q.no + 4 && after_last_error(d)
    });
    if let Some(pos) = detail {
        order[..=pos].rotate_right(1);
    }
}

fn is_pydantic_summary(body: &str) -> bool {
    body.contains("ValidationError")
        && (body.contains(" validation error for ") || body.contains(" validation errors for "))
}

/// Pydantic's line for a validator's error: `  Value error, …` or `  Assertion failed, …`.
fn is_pydantic_detail(body: &str) -> bool {
    // Pydantic indents it by two spaces (a prefix an input did not let us strip may precede it).
    let t = body.trim_start();
    t.starts_with("Value error, ")
        || t.starts_with("Assertion failed, ")
        || body.contains("  Value error, ")
        || body.contains("  Assertion failed, ")
}

/// Pydantic's summary line (`ValidationError: 1 validation error for ModelConfig`) defers to its
/// detail line (`  Value error, Model architectures [...] are not supported`) right after it,
/// which states the cause — also when a paste lost the prefix of one of the two.
fn prefer_the_detail(order: &mut [usize], cands: &[Candidate], records: &[Record]) {
    let Some(&first) = order.first() else {
        return;
    };
    let c = &cands[first];
    let q = &records[c.record].lines[c.quote];
    if !is_pydantic_summary(&q.body) {
        return;
    }
    let detail = order.iter().position(|&i| {
        let d = &cands[i];
        let dq = &records[d.record].lines[d.quote];
        dq.no > q.no && dq.no <= q.no + 3 && is_pydantic_detail(&dq.body)
    });
    if let Some(pos) = detail {
        order[..=pos].rotate_right(1);
    }
}

/// A cause told by a log record that is not an exception (`Available KV cache memory: -1.36
/// GiB`, `Failed to load model - not enough GPU memory …`) defers to the exception the same
/// process raises for the same cause after it (`ValueError: No available memory for the cache
/// blocks`, `torch.OutOfMemoryError: …`), or a worker's to its engine core's: the root-cause
/// line is an exception line when there is one. The exception must state that cause itself: one named only by the detail its record
/// carries after the exception line (Ray's `ActorDiedError: The actor died unexpectedly …` and
/// then `The actor died because its node has died`) reports a consequence of the record before.
fn prefer_the_exception(
    order: &mut [usize],
    cands: &[Candidate],
    records: &[Record],
    rules: &RuleSet,
) {
    let Some(&first) = order.first() else {
        return;
    };
    let c = &cands[first];
    let rec = &records[c.record];
    let q = &rec.lines[c.quote];
    let is_exception = |r: &Record, l: &super::traceback::RecLine| {
        l.role == LineRole::Exception || (!r.traceback && is_exception_statement(&l.body))
    };
    // A fatal report of native code (a failed assert(), a compiler's fatal line) states the
    // failure itself; the exception raised after it only reports that the call failed.
    if c.rule.is_none() || is_exception(rec, q) || is_libc_fatal(&q.body) || is_tool_fatal(&q.body)
    {
        return;
    }
    let later = order.iter().position(|&i| {
        let d = &cands[i];
        let drec = &records[d.record];
        let dq = &drec.lines[d.quote];
        // The same process, or a worker's engine core: it sizes the KV cache from what its
        // workers profiled and raises for them.
        let same_process = drec.process == rec.process && drec.pid == rec.pid;
        let workers_engine = rec.process.as_deref().is_some_and(|p| p.contains("Worker"))
            && drec
                .process
                .as_deref()
                .is_some_and(|p| p.starts_with("EngineCore"));
        d.id == c.id
            && dq.no > q.no
            && (same_process || workers_engine)
            && is_exception(drec, dq)
            && d.rule
                .is_some_and(|r| rules.rules()[r].regex.is_match(&dq.body))
    });
    if let Some(pos) = later {
        order[..=pos].rotate_right(1);
    }
}

/// A traceback cut before its exception line (or an error record with no exception) says where a
/// process failed, not what failed. An echo that quotes a known cause (the engine core's
/// `Worker failed with error '…'`, which carries its worker's exception message) is then the only
/// statement of it, and goes first.
fn prefer_the_quoted_cause(order: &mut [usize], cands: &[Candidate]) {
    let Some(&first) = order.first() else {
        return;
    };
    let c = &cands[first];
    if !matches!(c.class, Class::IncompleteUnknown | Class::UnknownError) || c.rule.is_some() {
        return;
    }
    let quoted = order.iter().position(|&i| {
        let d = &cands[i];
        d.class == Class::Echo && d.id != "unknown"
    });
    if let Some(pos) = quoted {
        order[..=pos].rotate_right(1);
    }
}

/// A launch whose first failure is argparse's error (`vllm serve: error: …`) ended there: the
/// process exited with status 2 before it started anything, so failures printed after it in
/// the same file are another server's (an older one still writing after a relaunch).
fn argparse_exit_first(order: &mut [usize], cands: &[Candidate], records: &[Record]) {
    let line_of = |i: usize| {
        let c = &cands[i];
        records[c.record].lines[c.quote].no
    };
    let Some(pos) = order
        .iter()
        .position(|&i| is_argparse_exit(&records[cands[i].record].lines[cands[i].quote].body))
    else {
        return;
    };
    let at = line_of(order[pos]);
    if order.iter().all(|&i| line_of(i) >= at) {
        order[..=pos].rotate_right(1);
    }
}

/// An exception named by what is printed right under it:
/// - its message, which a paste wrapped onto the next line (`ImportError: /x/_C.abi3.so:`, then
///   `undefined symbol: …`): the signature of that line names the exception;
/// - a bare line within a few lines after it, in its process, that a stronger rule names: the
///   accelerator runtime's report of why the call failed (CANN's `EE9999: Inner Error!` block
///   under torch_npu's `HCCL function error: …`, with `rtGetDeviceIndexByPhyId execute failed,
///   reason=[device id error]`). The exception's line stays the root cause. (A report inside the
///   exception's own record is quoted the same way by `classify`.)
fn name_by_what_follows(
    order: &[usize],
    cands: &mut [Candidate],
    records: &[Record],
    rules: &RuleSet,
) {
    let Some(&first) = order.first() else {
        return;
    };
    let c = &cands[first];
    if !matches!(c.class, Class::LoneException | Class::Cause) {
        return;
    }
    let q = &records[c.record].lines[c.quote];
    let line_of = |i: usize| records[cands[i].record].lines[cands[i].quote].no;
    let named = if c.rule.is_none() && (is_tool_fatal(&q.body) || is_libc_fatal(&q.body)) {
        // A native fatal report (`LLVM ERROR: …` on stderr) is told again by the exception its
        // caller raises (`RuntimeError: PassManager::run failed`), often far below it where
        // stdout and stderr were merged: the next exception, when a signature names it.
        order
            .iter()
            .copied()
            .filter(|&i| line_of(i) > q.no && cands[i].class == Class::Cause)
            .min_by_key(|&i| line_of(i))
            .filter(|&i| cands[i].rule.is_some())
    } else if c.rule.is_none() && q.body.trim_end().ends_with(':') {
        order.iter().copied().find(|&i| {
            let d = &cands[i];
            d.class == Class::BareCause && records[d.record].lines[d.quote].no == q.no + 1
        })
    } else {
        // The report's markers (`EE9999: …`) are no candidates of their own: its reason line is.
        let prio = |r: usize| rules.rules()[r].priority;
        let floor = c.rule.map_or(i32::MIN, prio);
        order.iter().copied().find(|&i| {
            let d = &cands[i];
            let dq = &records[d.record].lines[d.quote];
            d.class == Class::BareCause
                && d.id != c.id
                && d.rule.is_some_and(|r| prio(r) > floor)
                && dq.no > q.no
                && dq.no <= q.no + 8
                && records[d.record].process == records[c.record].process
        })
    };
    if let Some(w) = named {
        let (id, rule) = (cands[w].id.clone(), cands[w].rule);
        cands[first].id = id;
        cands[first].rule = rule;
    }
}

/// The processes a supervisor's report says died: `… proc NAME died …` and
/// `Failed core proc(s): {'NAME': 1, …}`.
fn reported_dead(report: &str) -> impl Iterator<Item = &str> {
    let named = report
        .split(" proc ")
        .skip(1)
        .filter_map(|rest| rest.split_once(" died").map(|(name, _)| name))
        .filter(|name| !name.is_empty() && !name.contains(' '));
    let listed = report
        .split_once("proc(s): {")
        .map(|(_, rest)| rest.split('}').next().unwrap_or(""))
        .into_iter()
        .flat_map(|list| list.split(','))
        .filter_map(|item| item.split(':').next())
        .map(|name| name.trim().trim_matches(['\'', '"']))
        .filter(|name| !name.is_empty());
    named.chain(listed)
}

/// Which stage of vLLM a record comes from: 0 worker, 1 engine core, 2 API server.
fn layer_of(rec: &Record) -> u8 {
    if let Some(p) = rec.process.as_ref().or(rec.process_hint.as_ref()) {
        if p.starts_with("Worker")
            || p.starts_with("VllmWorker")
            || p.starts_with("RayWorker")
            || p.starts_with("rank")
        {
            return 0;
        }
        if p.starts_with("EngineCore")
            || p.starts_with("DPEngineCore")
            || p.starts_with("SpawnProcess")
            || p.contains("Engine")
        {
            return 1;
        }
        if is_api_server_name(p) {
            return 2;
        }
    }
    if let Some(loc) = &rec.location {
        let file = loc.rsplit('/').next().unwrap_or(loc);
        let file = file.split(':').next().unwrap_or(file);
        match file {
            "multiproc_executor.py"
            | "multiproc_worker_utils.py"
            | "worker_base.py"
            | "gpu_worker.py"
            | "gpu_model_runner.py"
            | "model_runner.py"
            | "worker.py"
            | "linear.py"
            | "flash_attn.py" => return 0,
            "core.py"
            | "engine.py"
            | "llm_engine.py"
            | "async_llm_engine.py"
            | "core_client.py" => return 1,
            "api_server.py" | "serve.py" | "launcher.py" | "arg_utils.py" | "registry.py"
            | "utils.py" | "cli_args.py" => return 2,
            _ => {}
        }
        if loc.contains("torch/distributed/elastic") || loc.contains("torch/distributed/run.py") {
            return 1;
        }
    }
    for l in &rec.lines {
        if l.role == LineRole::Frame
            && (l.body.contains("/worker/")
                || l.body.contains("multiproc_worker_utils")
                || l.body.contains("model_executor"))
        {
            return 0;
        }
    }
    for l in &rec.lines {
        if l.role == LineRole::Frame
            && (l.body.contains("torch/distributed/elastic")
                || l.body.contains("torch/distributed/run.py"))
        {
            return 1;
        }
        if l.role == LineRole::Frame
            && (l.body.contains("entrypoints") || l.body.contains("/bin/vllm"))
        {
            return 2;
        }
    }
    0
}

/// The fold key of a message: digits as `#`, CPython's `Did you mean` hint dropped, bounded.
fn normalize(s: &str) -> String {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| Regex::new(r"\d+").expect("valid"));
    let s = s.split(". Did you mean:").next().unwrap_or(s);
    let n = re.replace_all(s, "#");
    n.chars().take(160).collect()
}

/// Ray's `ray.exceptions.RayTaskError(AssertionError): ray::RayWorkerWrapper.execute_method() (pid=…)`
/// carries the remote worker's traceback in its message, ending with the original exception
/// line (`AssertionError: camem allocator is not available`): that line, the last of the record
/// that opens with the wrapped type.
fn ray_task_origin(rec: &Record, li: usize) -> Option<usize> {
    let body = rec.lines[li].body.as_str();
    let start = body.find("RayTaskError(")? + "RayTaskError(".len();
    let inner = &body[start..start + body[start..].find(')')?];
    if inner.is_empty() {
        return None;
    }
    rec.lines[li + 1..]
        .iter()
        .rposition(|l| {
            let t = l.body.trim_start();
            t.strip_prefix(inner)
                .is_some_and(|rest| rest.starts_with(": ") || rest.trim().is_empty())
        })
        .map(|p| li + 1 + p)
}

/// The bare traceback under uvicorn's `Exception in ASGI application`, read line by line.
#[derive(Debug, Default)]
struct AsgiSpan {
    /// The request's exception line was read, and no chain marker since.
    ended: bool,
}

impl AsgiSpan {
    /// Whether this bare line still belongs to the request's error.
    fn extend(&mut self, body: &str) -> bool {
        if self.ended && (is_traceback_start(body) || is_process_head(body).is_some()) {
            return false;
        }
        if is_chain_marker(body) {
            self.ended = false;
        } else if !body.starts_with(char::is_whitespace)
            && (is_exception_statement(body) || is_bare_exception_type(body))
        {
            self.ended = true;
        }
        true
    }
}

/// The exception a request gets once the engine is dead: V0's `AsyncEngineDeadError`
/// (vllm/engine/async_llm_engine.py: `Background loop has errored already.`, or raised from the
/// loop's own error), V0's `MQEngineDeadError` (vllm/engine/multiprocessing/__init__.py) and V1's
/// `EngineDeadError` (vllm/v1/engine/exceptions.py): any class so named. A request's error that
/// ends in one did not happen to the request alone.
fn says_engine_dead(body: &str) -> bool {
    exception_class(body).ends_with("EngineDeadError")
}

/// A frame of V0's engine loop (vllm/engine/async_llm_engine.py: `run_engine_loop`, :815 in
/// v0.8.5, and the loop task's done callback, `_log_task_completion` there and
/// `_raise_exception_on_finish` in 0.4, which hands the loop's exception to every request): an error raised there is the engine's,
/// whichever request's traceback shows it.
fn in_engine_loop(frame: &str) -> bool {
    frame.rsplit_once(", in ").is_some_and(|(_, function)| {
        matches!(
            function.split_whitespace().next(),
            Some("run_engine_loop" | "_raise_exception_on_finish" | "_log_task_completion")
        )
    })
}

/// A tool-call parser's source file, named by a frame (`/app/hermes_tool_parser.py`) or a log
/// site (`hermes_tool_parser.py:110`): vLLM's parsers and plugins' alike are `…_tool_parser.py`.
fn is_tool_parser(file: &str) -> bool {
    let base = file.rsplit('/').next().unwrap_or(file);
    base.find(".py")
        .is_some_and(|end| base[..end].ends_with("_tool_parser"))
}

/// An engine that logs statistics: its process's pid and its data-parallel index, as far as the
/// log names them.
type EngineKey = (Option<u32>, Option<u32>);

/// What a launch's lines told of serving, gathered while they are read: it decides which errors
/// the launch survived.
#[derive(Debug, Default)]
struct Serving {
    /// The first line that says the server is up.
    ready_line: Option<u64>,
    /// The first line that says a shutdown was asked for: uvicorn's `Shutting down`, or the
    /// `[shutdown] …` records of newer releases (`EngineCore: trigger received signal=SIGTERM`,
    /// `API server: shutdown triggered`).
    shutdown_line: Option<u64>,
    /// The engine's statistics lines that show it at work, the latest `BUSY_LINES_MAX`.
    busy_lines: VecDeque<Busy>,
    /// The latest excerpt's `[...]`: what is on either side of it may be different runs.
    last_elision: Option<u64>,
    /// Request error spans (uvicorn's line and the bare traceback under it), disjoint and in
    /// line order, the latest `ASGI_SPANS_MAX`.
    asgi_spans: VecDeque<(u64, u64)>,
    /// The request span still open, when the last lines were one.
    open_span: Option<AsgiSpan>,
}

/// Appends to a deque that keeps its latest `max` items.
fn push_latest<T>(items: &mut VecDeque<T>, item: T, max: usize) {
    if items.len() == max {
        items.pop_front();
    }
    items.push_back(item);
}

impl Serving {
    fn note_busy(&mut self, no: u64, engine: EngineKey) {
        let busy = Busy {
            line: no,
            engine,
            elided_at: self.last_elision,
        };
        push_latest(&mut self.busy_lines, busy, BUSY_LINES_MAX);
    }

    /// uvicorn's `Exception in ASGI application`, then the request's traceback as bare text:
    /// one request's error. The span ends at a line with a log header (`headed`), or at a new
    /// traceback (or multiprocessing's `Process …:` head) after the request's exception line
    /// without a chain marker between: an engine's fatal traceback printed right after is not
    /// the request's. An exception group's bordered lines (`grouped`) stay in it.
    fn note_request_line(&mut self, no: u64, body: &str, headed: bool, grouped: bool) {
        if body.starts_with(ASGI_ERROR_HEAD) {
            push_latest(&mut self.asgi_spans, (no, no), ASGI_SPANS_MAX);
            self.open_span = Some(AsgiSpan::default());
            return;
        }
        let still = !headed
            && self
                .open_span
                .as_mut()
                .is_some_and(|state| grouped || state.extend(body));
        match self.asgi_spans.back_mut() {
            Some(span) if still => span.1 = no,
            _ => self.open_span = None,
        }
    }

    fn in_asgi_span(&self, no: u64) -> bool {
        let i = self.asgi_spans.partition_point(|&(head, _)| head < no);
        i > 0 && self.asgi_spans[i - 1].1 >= no
    }

    /// A request's error: uvicorn's `Exception in ASGI application` and the bare traceback
    /// under it (told on another stream than uvicorn's `ERROR:` header), a record of vLLM's
    /// OpenAI serving layer (`entrypoints/openai/serving_*.py`, which catches a request's error,
    /// answers it with an error response and logs it), and one raised in a tool-call parser (its
    /// innermost frame in a `…_tool_parser.py`, vLLM's or a plugin's: it runs on one request's
    /// output). It says the server was serving, whatever the excerpt kept of its start. One that
    /// ends in the engine's death did not happen to the request alone.
    fn request_time(&self, r: &Record, c: &Candidate) -> bool {
        let first = r.lines.first();
        let no = r.lines[c.quote].no;
        (first.is_some_and(|l| l.body.starts_with(ASGI_ERROR_HEAD))
            || self.in_asgi_span(no)
            || r.location.as_deref().is_some_and(is_request_handler)
            || r.lines[..c.quote]
                .iter()
                .rev()
                .find(|l| l.role == LineRole::Frame)
                .is_some_and(|l| is_tool_parser(frame_file(&l.body))))
            && !r.lines.iter().any(|l| {
                (l.role == LineRole::Exception && says_engine_dead(&l.body))
                    || (l.role == LineRole::Frame && in_engine_loop(&l.body))
            })
    }

    /// An engine that went on working after line `no` (two of one process's periodic
    /// statistics lines with tokens made, so at least one interval apart, and no elision
    /// between; two data-parallel engines' lines of the same instant are not that). The
    /// statistics must be told the way the error was (`prefixed`), with process prefixes or
    /// without: an unprefixed error among prefixed statistics is another program's, or another
    /// run's that wrote into the same file.
    fn worked_after(&self, no: u64, prefixed: bool) -> bool {
        let start = self.busy_lines.partition_point(|b| b.line <= no);
        let after = self
            .busy_lines
            .range(start..)
            .filter(|b| b.engine.0.is_some() == prefixed);
        let mut first: Vec<EngineKey> = Vec::new();
        let mut second = None;
        for b in after {
            if first.contains(&b.engine) {
                second = Some(b);
                break;
            }
            first.push(b.engine);
        }
        second.is_some_and(|b| b.elided_at.is_none_or(|e| e <= no))
    }

    /// Whether the launch went on after the candidate's error: then it is not the launch's root
    /// cause. One logged before the server became ready (it got up regardless: a backend probe,
    /// an optional import), a request's error, and one the engine worked on after.
    fn survived(&self, r: &Record, c: &Candidate) -> bool {
        let no = r.lines[c.quote].no;
        // The engine core's death (`logger.exception("EngineCore encountered a fatal
        // error.")` in `run_engine_core`, vllm/v1/engine/core.py), or a report that a process
        // died, ends the server, wherever a capture or a collector put its ready line (pytest
        // writes stderr after stdout; a collector merges streams out of order).
        let died = r
            .lines
            .first()
            .is_some_and(|l| l.body.starts_with("EngineCore encountered a fatal error"))
            || reported_dead(&r.lines[c.quote].body).next().is_some();
        // An exception the process went on from (logged as a warning, ignored by CPython, a
        // cancelled task) after it became ready did not end it either; one CPython printed and
        // ignored (`Exception ignored in: …`) went on, ready or not.
        let went_on = c.class == Class::Warned
            && (self.ready_line.is_some()
                || r.lines
                    .first()
                    .is_some_and(|l| is_ignored_exception_head(&l.body)));
        // A death report (`EngineDeadError: … See stack trace (above)`) after a ready server was
        // asked to shut down, with nothing above it: the shutdown it reports was asked for.
        let asked = c.class == Class::Echo
            && self.ready_line.is_some()
            && self.shutdown_line.is_some_and(|s| s < no);
        // argparse's `vllm serve: error: …` exits its process (status 2): whatever serves
        // after it in the file is another server's.
        let exited = is_argparse_exit(&r.lines[c.quote].body);
        !died
            && !exited
            && (self.request_time(r, c)
                || went_on
                || asked
                || self.worked_after(no, r.pid.is_some())
                || self.ready_line.is_some_and(|ready| no < ready))
    }
}

/// argparse's error line of vLLM's CLI (`vllm serve: error: argument …`, `api_server.py: error:
/// unrecognized arguments: …`): `parser.error()` prints it and exits with status 2.
fn is_argparse_exit(body: &str) -> bool {
    super::layers::argparse_error_prog(body)
        .is_some_and(|prog| prog.contains("vllm") || prog.contains("api_server"))
}

/// A line of the engine's periodic statistics that shows it at work.
#[derive(Clone, Copy, Debug)]
struct Busy {
    line: u64,
    engine: EngineKey,
    /// The latest excerpt's elision (`[...]`) before it.
    elided_at: Option<u64>,
}

/// At most this many of the engine's statistics lines are kept (the latest): two per engine
/// after an error tell that it went on.
const BUSY_LINES_MAX: usize = 1024;
/// At most this many request error spans are kept (the latest); an older request's error is
/// told by its own log site and frames.
const ASGI_SPANS_MAX: usize = 4096;
/// At most this many interleaved lines are reported as damage.
const INTERLEAVED_LINES_MAX: usize = 32;

/// uvicorn's head of a request's uncaught error (uvicorn/protocols/http/*_impl.py:
/// `msg = "Exception in ASGI application\n"`).
const ASGI_ERROR_HEAD: &str = "Exception in ASGI application";

/// asyncio's `CancelledError` (`asyncio.exceptions.CancelledError`, `concurrent.futures`'),
/// raised in a task that was cancelled.
fn is_cancellation(body: &str) -> bool {
    exception_class(body) == "CancelledError"
}

/// The class of an exception line without its module: `CancelledError` of
/// `asyncio.exceptions.CancelledError`, `ExceptionGroup` of `ExceptionGroup: … (1 sub-exception)`.
fn exception_class(body: &str) -> &str {
    let t = body.trim();
    let ty = t.split_once(':').map_or(t, |(ty, _)| ty);
    ty.rsplit('.').next().unwrap_or(ty)
}

/// A line that says an engine has started: its `init engine (profile, create kv cache, warmup
/// model) took … seconds` (V0 vllm/engine/llm_engine.py from 0.6, V1 vllm/v1/engine/core.py);
/// before 0.6, a single-process V0 engine's `Graph capturing finished in … secs`
/// (worker/model_runner.py), the last step of its start.
fn is_engine_ready(p: &super::grammar::ParsedLine<'_>) -> bool {
    let body = p.body.as_ref();
    p.header == HeaderKind::Vllm
        && (body.starts_with("init engine (profile, create kv cache, warmup model) took")
            || (p.process.is_none() && body.starts_with("Graph capturing finished in ")))
}

/// A line that only a started engine's caller prints, but not in the order of the engine's
/// events: `LLM.generate`'s progress bar (`Processed prompts: …`, vllm/entrypoints/llm.py),
/// which tqdm writes in place and leaves in the file as its last state when it closes — after
/// an error that stopped the generation, too; and the quick-start example's `Prompt: '…',
/// Generated text: '…'` (vLLM's examples/offline_inference.py, later
/// examples/offline_inference/basic.py), printed once generation returned.
fn says_engine_ran(body: &str) -> bool {
    body.starts_with("Processed prompts: ")
        || (body.starts_with("Prompt: ") && body.contains(", Generated text: "))
}

/// The file a traceback's frame line names (`  File "/x/hermes_tool_parser.py", line 228, in f`).
fn frame_file(frame: &str) -> &str {
    frame
        .split_once("File \"")
        .and_then(|(_, rest)| rest.split_once('"'))
        .map_or("", |(file, _)| file)
}

/// The engine's periodic statistics (`Avg prompt throughput: 10724.5 tokens/s, Avg generation
/// throughput: 651.8 tokens/s, Running: 77 reqs, …`: vllm/engine/metrics.py:487 and
/// vllm/v1/metrics/loggers.py:113 in v0.8.5) showing tokens made: an engine at work (a stuck
/// one goes on logging its running requests at 0.0 tokens/s). Some(the engine's index) when
/// it is, `Some(None)` for a log that names no engine.
fn busy_engine(body: &str) -> Option<Option<u32>> {
    // `Engine 000: ` before it from 0.9 on (one logger per engine of a data-parallel server).
    let (engine, rest) = match body.strip_prefix("Engine ") {
        Some(r) => r
            .split_once(": ")
            .map_or((None, ""), |(i, r)| (i.parse::<u32>().ok(), r)),
        None => (None, body),
    };
    if !rest.starts_with("Avg prompt throughput: ") {
        return None;
    }
    let number_after = |key: &str| {
        rest.split_once(key).and_then(|(_, r)| {
            r.split(|c: char| !(c.is_ascii_digit() || c == '.'))
                .next()
                .and_then(|n| n.parse::<f64>().ok())
        })
    };
    (number_after("Avg prompt throughput: ").is_some_and(|n| n > 0.0)
        || number_after("Avg generation throughput: ").is_some_and(|n| n > 0.0))
    .then_some(engine)
}

/// The status code of uvicorn's access log line (`… "POST /v1/completions HTTP/1.1" 500
/// Internal Server Error` → `500`): a request's outcome, never a failure's own report (a
/// request's error is told by the traceback beside it). Most lines of a serving log are these.
fn access_status(body: &str) -> Option<&str> {
    // Byte searches only: this runs on every line uvicorn wrote.
    let b = body.as_bytes();
    let open = memchr::memchr(b'"', b)?;
    let close = open + 1 + memchr::memchr(b'"', &b[open + 1..])?;
    let request = &b[open + 1..close];
    let version = memchr::memrchr(b' ', request).map_or(request, |sp| &request[sp + 1..]);
    if !version.starts_with(b"HTTP/") {
        return None;
    }
    let code = body.get(close + 2..close + 5)?;
    (b.get(close + 1) == Some(&b' ')
        && code.bytes().all(|c| c.is_ascii_digit())
        && b.get(close + 5).is_none_or(|&c| c == b' '))
    .then_some(code)
}

/// Where `AttentionSelectorConfig(` starts in a line (the attention selector's log of its
/// inputs). One searcher built once: this runs on every line a launch parses.
fn attention_selector_config(body: &str) -> Option<usize> {
    static FINDER: OnceLock<memchr::memmem::Finder<'static>> = OnceLock::new();
    FINDER
        .get_or_init(|| memchr::memmem::Finder::new("AttentionSelectorConfig("))
        .find(body.as_bytes())
}

/// vLLM's name for its API server process: `APIServer` (and `ApiServer_<i>` beside others).
fn is_api_server_name(name: &str) -> bool {
    name.starts_with("APIServer") || name.starts_with("ApiServer")
}

/// A line of vLLM's OpenAI-compatible server (its process prefix, or a record its entry point
/// logs): the launch is a server, ready only once it serves.
fn is_api_server_line(p: &super::grammar::ParsedLine<'_>) -> bool {
    p.process.as_deref().is_some_and(is_api_server_name)
        || (p.header == HeaderKind::Vllm
            && p.location
                .as_deref()
                .is_some_and(|l| l.starts_with("api_server.py:") || l.starts_with("launcher.py:")))
}

/// The message of a `Type: message` line.
fn exception_message(body: &str) -> &str {
    body.split_once(": ").map_or("", |(_, m)| m).trim()
}

/// The exception line of a chain that states the failure, from the line chosen (the chain's
/// last):
/// - torch.dynamo's `BackendCompilerFailed: backend='…' raised:` puts the exception the backend
///   raised on the next line (`AssertionError: …`; torch/_dynamo/exc.py builds the message as
///   `backend={name!r} raised:\n{type}: {exception}`): that line;
/// - a later exception that repeats an earlier one's message (`raise RuntimeError(error)` in a
///   handler, `DeferredCudaCallError: CUDA call failed lazily at initialization with error: …`
///   raised from it) wraps it: the earliest exception whose message it quotes.
fn origin_in_chain(rec: &Record, li: usize) -> usize {
    let line = &rec.lines[li];
    if line.body.trim_end().ends_with(" raised:") {
        if let Some(next) = rec.lines.get(li + 1) {
            if is_exception_statement(&next.body) {
                return li + 1;
            }
        }
    }
    if line.role != LineRole::Exception {
        return li;
    }
    let said = exception_message(&line.body);
    // Triton's `CompilationError: at 106:17:` (triton/compiler/errors.py: the position in the
    // kernel's source, then the source) says where, not what: the exception it was raised from
    // (`ValueError: arange's range must be a power of 2`) says what.
    if is_source_position(said) {
        if let Some(e) = rec.lines[..li]
            .iter()
            .rposition(|l| l.role == LineRole::Exception && is_exception_like(&l.body))
        {
            return e;
        }
    }
    rec.lines[..li]
        .iter()
        .position(|l| {
            let m = exception_message(&l.body);
            l.role == LineRole::Exception && m.len() >= QUOTED_MESSAGE_MIN && said.contains(m)
        })
        .unwrap_or(li)
}

/// TorchScript's interpreter wraps the error of the code it ran: `RuntimeError: The following
/// operation failed in the TorchScript interpreter.`, then the TorchScript tracebacks and, last,
/// the error itself (torch/csrc/jit/runtime/interpreter.cpp). The wrapper only says that the
/// error follows. An exception group (`ExceptionGroup: unhandled errors in a TaskGroup (1 sub-exception)`,
/// anyio's and starlette's) wraps its sub-exceptions the same way: they follow, numbered.
fn is_wrapper_exception(body: &str) -> bool {
    exception_message(body) == "The following operation failed in the TorchScript interpreter."
        || exception_class(body).ends_with("ExceptionGroup")
}

/// The error a wrapper at `li` carries, when its record holds it: the last exception statement
/// after the wrapper.
fn wrapped_inner(rec: &Record, li: usize) -> Option<usize> {
    rec.lines[li + 1..]
        .iter()
        .rposition(|l| is_exception_statement(&l.body))
        .map(|p| li + 1 + p)
}

/// A line of an exception group as CPython 3.11+ prints it (traceback.py,
/// `TracebackException.format`): each nested traceback's lines behind `| ` (one per level of
/// nesting) and the groups' borders (`+-+---------------- 1 ----------------`,
/// `+------------------------------------`). The text behind the bars, and a border as an empty
/// line, so that a nested traceback reads as one.
fn exception_group_body(body: &str) -> Option<&str> {
    let t = body.trim_start();
    if t.starts_with('+') && t.len() > 8 && t.bytes().all(|b| b"+-. 0123456789".contains(&b)) {
        return Some("");
    }
    let mut rest = t.strip_prefix('|')?;
    while let Some(r) = rest.strip_prefix(' ') {
        rest = r;
        if let Some(r) = rest.strip_prefix('|') {
            rest = r;
        } else {
            break;
        }
    }
    // The traceback behind the bars keeps its own indentation (`|   File "…"` → `  File "…"`).
    let inner = &t[t.len() - rest.len()..];
    Some(if inner.starts_with("  ") {
        inner
    } else {
        inner.trim_start()
    })
}

/// A message that is only a position in a source text: `at 106:17:`.
fn is_source_position(message: &str) -> bool {
    message
        .strip_prefix("at ")
        .and_then(|m| m.strip_suffix(':'))
        .and_then(|m| m.split_once(':'))
        .is_some_and(|(l, c)| {
            !l.is_empty()
                && !c.is_empty()
                && l.bytes().all(|b| b.is_ascii_digit())
                && c.bytes().all(|b| b.is_ascii_digit())
        })
}

/// An exception whose message is only an object's repr (`KeyError: <vllm.config.ModelConfig
/// object at 0x7fec41821900>`): the exception raised from it says what went wrong.
fn says_nothing(body: &str) -> bool {
    let m = exception_message(body);
    m.starts_with('<') && m.ends_with('>') && m.contains(" at 0x")
}

/// With no signature to say which exception of a chain names the failure, the first of those
/// joined by `The above exception was the direct cause of the following exception:` (`raise X
/// from e`): the later ones wrap it (vLLM's `Failed to apply PixtralProcessor on data=…` around
/// the processor's own error). An exception raised while handling another (`During handling of
/// the above exception, another exception occurred:`) is a failure of its own and stays.
fn first_direct_cause(rec: &Record, mut li: usize) -> usize {
    loop {
        // A message that goes on under it (`RuntimeError: Error raised in subprocess:`) carries
        // the detail itself.
        if rec.lines[li].body.trim_end().ends_with(':') {
            return li;
        }
        match direct_cause(rec, li) {
            Some(e)
                if is_exception_like(&rec.lines[e].body) && !says_nothing(&rec.lines[e].body) =>
            {
                li = e
            }
            _ => return li,
        }
    }
}

/// The exception the one at `li` was raised from (`raise X from e`: `The above exception was
/// the direct cause of the following exception:` between them), when its record holds it.
fn direct_cause(rec: &Record, li: usize) -> Option<usize> {
    let chain = rec.lines[..li]
        .iter()
        .rposition(|l| l.role == LineRole::Chain)?;
    if rec.lines[chain + 1..li]
        .iter()
        .any(|l| l.role == LineRole::Exception)
        || !rec.lines[chain]
            .body
            .starts_with("The above exception was the direct cause")
    {
        return None;
    }
    rec.lines[..chain]
        .iter()
        .rposition(|l| l.role == LineRole::Exception)
}

fn classify(rec: &Record, rules: &RuleSet) -> Option<(Class, Option<usize>, usize)> {
    // A traceback header and nothing else (or an excerpt's elision mark): the writer has not
    // got further (yet), or the text is not there.
    if rec
        .lines
        .iter()
        .all(|l| l.role == LineRole::TracebackStart || is_elision(&l.body) || is_caret(&l.body))
    {
        return None;
    }
    // An exception CPython printed and ignored (in an atexit callback, a destructor): the process
    // went on, whatever it says (Ray's SIGTERM handler's `SystemExit: 15` during shutdown).
    if rec
        .lines
        .first()
        .is_some_and(|l| is_ignored_exception_head(&l.body))
    {
        let i = rec
            .lines
            .iter()
            .rposition(|l| l.role == LineRole::Exception)
            .unwrap_or(0);
        return Some((Class::Warned, None, i));
    }
    // Lines whose text a rule may match.
    let context: Vec<&str> = rec.lines.iter().map(|l| l.body.as_str()).collect();
    let mut best: BTreeMap<(Class, i32), (usize, usize)> = BTreeMap::new(); // → (rule, line)
    let mut noise_only = true;
    for (i, l) in rec.lines.iter().enumerate() {
        if l.role == LineRole::Frame || is_config_dump(&l.body) {
            continue;
        }
        let matched = rules.matches(&l.body);
        if matched.is_empty() {
            if !l.body.trim().is_empty() {
                noise_only = false;
            }
            continue;
        }
        // The line's class is its strongest-priority rule's.
        let mut line_rules: Vec<usize> = matched
            .into_iter()
            .filter(|&ri| {
                let r = &rules.rules()[ri];
                // A line with no header at all is bare text: a print, a tool's stderr, or the
                // message of an exception whose `Type: ` an excerpt lost. A cause rule may
                // name it; an info or warning record needs a rule that accepts any level.
                let bare = l.level.is_none() && rec.header == HeaderKind::None;
                let level_ok = r.any_level
                    || rec.traceback
                    || matches!(l.level, Some(Level::Error) | Some(Level::Critical))
                    || (l.level.is_none() && is_exception_like(&l.body))
                    || (bare && r.role == Role::Cause)
                    || is_exception_statement(&l.body);
                let frames_ok = r
                    .frames
                    .as_ref()
                    .is_none_or(|f| context.iter().any(|c| f.is_match(c)));
                let raised_ok = r.raised_in.as_ref().is_none_or(|f| {
                    rec.lines[..i]
                        .iter()
                        .rev()
                        .find(|l| l.role == LineRole::Frame)
                        .is_some_and(|l| f.is_match(&l.body))
                });
                level_ok && frames_ok && raised_ok
            })
            .collect();
        if line_rules
            .iter()
            .any(|&ri| rules.rules()[ri].role == Role::Noise)
        {
            continue;
        }
        noise_only = false;
        line_rules.sort_by_key(|&ri| std::cmp::Reverse(rules.rules()[ri].priority));
        // A line that says it reports a failure told elsewhere (`Worker failed with error '…',
        // please check the stack trace above for the root cause`) is an echo, and one vLLM logs
        // and goes on from (`Error retrieving safetensors: …`) is weak, whatever the text it
        // quotes: a `wraps` rule decides the line's class. The cause it quotes still names it
        // (an excerpt may hold only the echo).
        let wrapper = line_rules
            .iter()
            .map(|&o| &rules.rules()[o])
            .find(|r| r.wraps)
            .map(|r| {
                if r.role == Role::Weak {
                    Class::Weak
                } else {
                    Class::Echo
                }
            });
        let wrapper = wrapper.filter(|_| {
            line_rules
                .iter()
                .any(|&o| rules.rules()[o].role == Role::Cause)
        });
        if wrapper.is_some() {
            line_rules.retain(|&o| rules.rules()[o].role == Role::Cause);
        }
        for &ri in &line_rules {
            let r = &rules.rules()[ri];
            let class = match (wrapper, r.role) {
                (Some(w), _) => w,
                (None, Role::Cause) => Class::Cause,
                (None, Role::Weak) => Class::Weak,
                (None, Role::Echo) => Class::Echo,
                (None, Role::Noise) => continue,
            };
            let key = (class, -r.priority);
            let better = match best.get(&key) {
                None => true,
                Some(&(bri, bli)) => {
                    // Same rule: prefer a line matching `prefer`, then exception/head lines,
                    // then the deepest source line.
                    if bri == ri {
                        // `prefer` first; then the last exception line (the end of a chain);
                        // then head lines; then continuation; then the deepest source line.
                        let rank = |li: usize| {
                            let line = &rec.lines[li];
                            let pref = r.prefer.as_ref().is_some_and(|p| p.is_match(&line.body));
                            match (pref, line.role) {
                                (true, _) => 0,
                                (false, LineRole::Exception) => 1,
                                // A typed statement among a record's message lines (a paste
                                // that lost its newlines) is its exception line.
                                (false, LineRole::Head) if is_exception_statement(&line.body) => 1,
                                (false, LineRole::Head | LineRole::TracebackStart) => 2,
                                (false, LineRole::Continuation) => 3,
                                _ => 4,
                            }
                        };
                        let (a, b) = (rank(i), rank(bli));
                        a < b || (a == b && (a == 4 || a == 1))
                    } else {
                        false
                    }
                }
            };
            if better {
                best.insert(key, (ri, i));
            }
        }
    }
    if let Some((&(class, _), &(ri, li))) = best.iter().next() {
        // An echo raised from an exception its record holds (`raise AsyncEngineDeadError(…)
        // from e`) says that exception is the failure, though no signature names it: ranked as
        // any exception no signature names, not above what one does.
        // An exception without a message (`raise TimeoutError() from exc` in asyncio's
        // `wait_for`) still names it better than the echo.
        if class == Class::Echo {
            if let Some(e) = direct_cause(rec, li).filter(|&e| !is_cancellation(&rec.lines[e].body))
            {
                return Some((Class::UnknownError, None, first_direct_cause(rec, e)));
            }
        }
        let line = &rec.lines[li];
        let bare = class == Class::Cause
            && !rec.traceback
            && rec.header == HeaderKind::None
            && line.level.is_none()
            && !is_exception_like(&line.body)
            && !is_exception_statement(&line.body)
            && !is_tool_fatal(&line.body)
            && !rules.rules()[ri].any_level;
        let class = if bare { Class::BareCause } else { class };
        // A rule that matched the continuation of an exception's message (the output a
        // `RuntimeError: Ninja build failed. Ninja output:` carries, or the runtime's detail
        // after a failed call: CANN's `EE1001: … invalid device=3`) names the cause; the line
        // is the exception's own.
        let li = match rec.lines[..li]
            .iter()
            .rposition(|l| l.role == LineRole::Exception)
        {
            Some(e)
                if rec.lines[li].role == LineRole::Continuation
                    && (rec.lines[e].body.trim_end().ends_with(':')
                        || is_cann_report(&rec.lines[li].body)
                        || rules
                            .matches(&rec.lines[e].body)
                            .iter()
                            .any(|&o| rules.rules()[o].role == Role::Cause)) =>
            {
                e
            }
            _ => li,
        };
        // A rule that matched the code a traceback quotes (`self._check_scheme_supported(…)`,
        // the call that raised) names the cause; the line is the exception's that follows.
        let li = match rec.lines[li..]
            .iter()
            .position(|l| l.role == LineRole::Exception)
        {
            Some(e) if rec.lines[li].role == LineRole::Source => li + e,
            _ => li,
        };
        // Pydantic's summary (`ValidationError: 1 validation error for ModelConfig`) is
        // followed in the same record by the detail that states the cause.
        let li = origin_in_chain(rec, li);
        let li = ray_task_origin(rec, li).unwrap_or(li);
        let li = if is_wrapper_exception(&rec.lines[li].body) {
            wrapped_inner(rec, li).unwrap_or(li)
        } else {
            li
        };
        let li = if is_pydantic_summary(&rec.lines[li].body) {
            rec.lines
                .iter()
                .enumerate()
                .skip(li + 1)
                .take(3)
                .find(|(_, l)| is_pydantic_detail(&l.body))
                .map_or(li, |(d, _)| d)
        } else {
            li
        };
        return Some((class, Some(ri), li));
    }
    if noise_only && !rec.traceback {
        return None;
    }
    // No signature: an exception line, or the last frame/source/error line.
    if let Some(i) = rec
        .lines
        .iter()
        .rposition(|l| l.role == LineRole::Exception)
    {
        if let Some(o) = ray_task_origin(rec, i) {
            return Some((Class::Cause, None, o));
        }
        // A chain of asyncio cancellations only: something stopped the task (a shutdown, a
        // caller that gave up), the task itself did not fail.
        if rec
            .lines
            .iter()
            .filter(|l| l.role == LineRole::Exception)
            .all(|l| is_cancellation(&l.body))
        {
            return Some((Class::Warned, None, i));
        }
        if is_wrapper_exception(&rec.lines[i].body) {
            return Some(match wrapped_inner(rec, i) {
                Some(inner) => (Class::Cause, None, inner),
                None => (Class::Echo, None, i),
            });
        }
        // Text after frames that is not `Type: message` (a faulthandler dump, a prompt) is not
        // an exception.
        if is_exception_like(&rec.lines[i].body) {
            // A traceback logged as a warning or for information (`logger.warning(…,
            // exc_info=True)`: an optional import that failed) did not stop the process.
            if matches!(
                rec.level(),
                Some(Level::Warning | Level::Info | Level::Debug)
            ) {
                return Some((Class::Warned, None, i));
            }
            return Some((
                Class::Cause,
                None,
                first_direct_cause(rec, origin_in_chain(rec, i)),
            ));
        }
        return Some((Class::UnknownError, None, i));
    }
    if rec.traceback {
        // The traceback lost its exception line. A record logged with it (`logger.exception(e)`
        // writes the exception's message, then the traceback) states it in its head;
        // otherwise the last frame names where it failed (not a code line or a caret line
        // under it).
        let head = rec.lines.first().filter(|l| {
            l.role == LineRole::Head
                && matches!(l.level, Some(Level::Error | Level::Critical))
                && !l.body.trim().is_empty()
                && !is_elision(&l.body)
                && !is_caret(&l.body)
        });
        let i = head
            .map(|_| 0)
            .or_else(|| rec.lines.iter().rposition(|l| l.role == LineRole::Frame))
            .or_else(|| {
                rec.lines.iter().rposition(|l| {
                    l.role == LineRole::Source && !is_caret(&l.body) && !is_elision(&l.body)
                })
            })
            .unwrap_or(0);
        return Some((Class::IncompleteUnknown, None, i));
    }
    if let Some(i) = rec
        .lines
        .iter()
        .rposition(|l| is_exception_statement(&l.body))
    {
        // Libraries print such lines as warnings on import (protobuf's `AttributeError:
        // 'MessageFactory' …`): in a warning or info record the process went on.
        let class = match rec.lines[i].level {
            Some(Level::Warning | Level::Info | Level::Debug) => Class::Warned,
            _ => Class::LoneException,
        };
        return Some((class, None, i));
    }
    if let Some(i) = rec.lines.iter().position(|l| is_tool_fatal(&l.body)) {
        return Some((Class::Cause, None, i));
    }
    // The C library's last words before it aborts the process: an error of unknown kind, which
    // the SIGABRT report after it names (`last_words_before_a_crash`).
    if let Some(i) = rec.lines.iter().position(|l| is_libc_fatal(&l.body)) {
        return Some((Class::UnknownError, None, i));
    }
    if matches!(rec.level(), Some(Level::Error) | Some(Level::Critical)) {
        // The error record's own line (not an excerpt's elision mark before it).
        let i = rec
            .lines
            .iter()
            .position(|l| matches!(l.level, Some(Level::Error | Level::Critical)))
            .unwrap_or(0);
        return Some((Class::UnknownError, None, i));
    }
    None
}

/// An exception whose message ends with a colon and is followed at once, on the same stream, by
/// a traceback introduces that traceback: the output of a subprocess (`RuntimeError: Error
/// raised in subprocess:` then the child's own traceback). It reports the failure told below it.
fn introduces_traceback(records: &[Record], ri: usize, quote: usize) -> bool {
    let rec = &records[ri];
    let q = &rec.lines[quote];
    if !q.body.trim_end().ends_with(':') {
        return false;
    }
    traceback_follows(records, ri, q.no, |r| r.stream == rec.stream)
}

/// A traceback record starts within three lines after line `no` of record `ri` (and `same`
/// accepts it).
fn traceback_follows(
    records: &[Record],
    ri: usize,
    no: u64,
    same: impl Fn(&Record) -> bool,
) -> bool {
    records[ri + 1..]
        .iter()
        .take_while(|r| r.first_line() <= no + 3)
        .any(|r| r.traceback && r.first_line() > no && same(r))
}

/// asyncio's default exception handler logs one record of several lines (CPython
/// asyncio/base_events.py, `default_exception_handler`): its message (`Exception in callback
/// <handle>`, `Task exception was never retrieved`, `Future exception was never retrieved`),
/// `handle: …` or `future: …`, and the traceback, which a log format leaves without its header.
/// The traceback states the failure; the message only introduces it.
fn introduces_asyncio_traceback(records: &[Record], ri: usize, quote: usize) -> bool {
    let q = &records[ri].lines[quote];
    let body = q.body.trim_start();
    let intro = body.starts_with("Exception in callback ")
        || body.starts_with("Task exception was never retrieved")
        || body.starts_with("Future exception was never retrieved");
    // The traceback has no header: another stream than the message's.
    intro && traceback_follows(records, ri, q.no, |_| true)
}

/// Analyse one launch region.
pub fn analyze_launch(
    b: &[u8],
    region: &Region,
    rules: &RuleSet,
    sc: &scan::Scan,
    layers: &Layers,
    explain: bool,
    diagnostics: &mut Vec<String>,
) -> Analysis {
    let mut lines = WindowedLines::new(b, sc, region.start, region.end, region.first_line);
    let mut asm = Assembler::new();
    let mut ready = false;
    // What decides which errors the launch survived, gathered as the lines are read.
    let mut serving = Serving::default();
    let mut stopped = false;
    let mut started = false;
    // The first line that says an engine is up (`is_engine_ready`): an offline `LLM(...)` is
    // ready there; a server only once it serves, so this counts only when no API server shows.
    let mut engine_ready_line: Option<u64> = None;
    let mut engine_ran = false;
    let mut server_seen = false;
    let mut evidence: BTreeMap<String, serde_json::Value> = BTreeMap::new();
    let mut version: Option<String> = None;
    let mut pids: Vec<u32> = Vec::new();
    let mut interleaved_lines: Vec<u64> = Vec::new();
    let mut foreign_pids: Vec<u32> = Vec::new();
    let mut foreign_lines = 0u64;
    let mut api_pid: Option<u32> = region.launch_pid;
    let mut after_nul = false;
    let mut content_before_nul = false;
    let mut seen_pids_before_nul: Vec<u32> = Vec::new();
    let mut explicit_kv: Option<bool> = None;
    // Why vLLM's compiled ops did not load, when it said so.
    let mut c_import_failure: Option<String> = None;
    let mut newer_launch_at: Option<usize> = None;
    for line in lines.by_ref() {
        // A paste that lost its newlines holds a whole traceback on one physical line: its
        // records are read piece by piece (the verdict still names the physical line).
        let split = resplit(line.bytes);
        for &piece in split
            .as_deref()
            .unwrap_or(std::slice::from_ref(&line.bytes))
        {
            if memchr::memchr(0, line.bytes).is_some() {
                after_nul = true;
            }
            let mut p = parse_line_in(piece, layers);
            let in_group = exception_group_body(&p.body).map(str::to_string);
            let grouped = in_group.is_some();
            if let Some(inner) = in_group {
                p.body = std::borrow::Cow::Owned(inner);
            }
            if p.body.is_empty() && p.process.is_none() {
                continue;
            }
            if !after_nul {
                content_before_nul = true;
            }
            // A launch is under way once a line is recognisably vLLM's (a header or a prefix).
            if p.header == HeaderKind::Vllm
                || p.process.is_some()
                || p.header == HeaderKind::Uvicorn
            {
                started = true;
            }
            if let Some(pid) = p.pid {
                // A different API server, or a writer first seen after a NUL hole (an older
                // server still writing at its old offset), belongs to another launch. The API
                // servers vLLM starts side by side (`--api-server-count`, data parallel) are named
                // `ApiServer_<i>` (vllm/v1/utils.py APIServerProcessManager): one launch.
                let is_api = p.process.as_deref().is_some_and(|n| {
                    is_api_server_name(n)
                        && !n
                            .rsplit_once('_')
                            .is_some_and(|(_, i)| i.bytes().all(|b| b.is_ascii_digit()))
                });
                if is_api && api_pid.is_none() {
                    api_pid = Some(pid);
                }
                let foreign = (is_api && api_pid.is_some_and(|a| a != pid))
                    || foreign_pids.contains(&pid)
                    || (after_nul
                        && !seen_pids_before_nul.contains(&pid)
                        && !pids.contains(&pid)
                        && content_before_nul);
                // Another API server after this one shut down is a newer launch whose banner
                // the text lost (an excerpt, a relaunch into the same file), not an older writer.
                if is_api && foreign && stopped && !after_nul && newer_launch_at.is_none() {
                    newer_launch_at = Some(line.offset);
                }
                if foreign {
                    if !foreign_pids.contains(&pid) {
                        foreign_pids.push(pid);
                    }
                    foreign_lines += 1;
                    continue;
                }
                if !pids.contains(&pid) {
                    pids.push(pid);
                }
                if !after_nul && !seen_pids_before_nul.contains(&pid) {
                    seen_pids_before_nul.push(pid);
                }
            }
            if p.interleaved && interleaved_lines.len() < INTERLEAVED_LINES_MAX {
                interleaved_lines.push(line.no);
            }
            let body = p.body.as_ref();
            // Status markers and evidence.
            if p.header == HeaderKind::Uvicorn || is_api_server_line(&p) {
                server_seen = true;
            }
            if let Some(engine) = busy_engine(body).filter(|_| p.level == Some(Level::Info)) {
                serving.note_busy(line.no, (p.pid, engine));
            }
            if is_elision(body) {
                serving.last_elision = Some(line.no);
            }
            serving.note_request_line(line.no, body, p.header != HeaderKind::None, grouped);
            if (p.header == HeaderKind::Uvicorn && body.starts_with("Shutting down"))
                || (p.level == Some(Level::Info) && body.starts_with("[shutdown] "))
            {
                serving.shutdown_line.get_or_insert(line.no);
            }
            if is_engine_ready(&p) {
                engine_ready_line.get_or_insert(line.no);
            }
            // Up, but no ready line: where it stands says nothing of errors before it.
            engine_ran |= says_engine_ran(body);
            let access = (p.header == HeaderKind::Uvicorn)
                .then(|| access_status(body))
                .flatten();
            if access.is_some_and(|code| code.starts_with('2')) {
                // A request answered (2xx): up, whether or not the log kept its startup lines; but an answer says nothing
                // of errors before it (an excerpt may join two runs), so no ready line. An answer
                // after a shutdown is a later run's, whose start the log did not keep (one between
                // uvicorn's `Shutting down` and its `Application shutdown complete` is a request
                // in flight that the graceful shutdown waited for).
                ready = true;
                if stopped {
                    serving.shutdown_line = None;
                }
                stopped = false;
            }
            if p.header == HeaderKind::Uvicorn {
                if body.starts_with("Application startup complete")
                    || body.starts_with("Uvicorn running on")
                {
                    ready = true;
                    serving.ready_line.get_or_insert(line.no);
                } else if body.starts_with("Application shutdown complete") {
                    stopped = true;
                }
            }
            if version.is_none() {
                version = version_of(body);
            }
            if c_import_failure.is_none() {
                c_import_failure = c_import_reason(body).map(str::to_string);
            }
            if body.starts_with("non-default args: ") {
                explicit_kv = Some(body.contains("'kv_cache_dtype'"));
            }
            if is_engine_init(body) {
                collect_config_evidence(body, &mut evidence);
            }
            if let Some(pos) = attention_selector_config(body) {
                if let Some(mla) = field(&body[pos..], "use_mla=") {
                    evidence.insert("use_mla".into(), serde_json::Value::Bool(mla == "True"));
                }
            }
            // An info or debug record can only be named by a rule that matches at any level
            // (unless it states an exception): most lines of a log are such records.
            let rule_hit = if access.is_some() {
                false
            } else if matches!(p.level, Some(Level::Info | Level::Debug))
                && !is_exception_statement(body)
            {
                rules.any_level_match(body)
            } else {
                !rules.matches(body).is_empty()
            };
            asm.push(line.no, line.offset, line.bytes, &p, rule_hit);
        }
    }
    let last_line = lines.next_no().saturating_sub(1).max(region.first_line);
    if lines.long_lines > 0 {
        diagnostics.push(format!(
            "{} line(s) longer than {} bytes were analysed by their first {} bytes",
            lines.long_lines,
            scan::LINE_BYTES_MAX,
            scan::LINE_BYTES_MAX
        ));
    }
    if foreign_lines > 0 {
        diagnostics.push(format!(
            "{foreign_lines} line(s) from pid(s) {} belong to another launch (an older server still writing to this file); they are not part of this verdict",
            foreign_pids.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
        ));
    }
    if !server_seen {
        if let Some(no) = engine_ready_line {
            ready = true;
            serving.ready_line.get_or_insert(no);
        }
        ready |= engine_ran;
    }
    let records = asm.finish();
    if c_import_failure.is_none() {
        c_import_failure = region
            .preamble
            .and_then(|(from, to)| preamble_c_import_reason(b, from, to, layers));
    }
    let c_import_failure = c_import_failure.as_deref();

    // Classify.
    let mut cands: Vec<Candidate> = Vec::new();
    for (ri, rec) in records.iter().enumerate() {
        let Some((class, rule, quote)) = classify(rec, rules) else {
            continue;
        };
        if rule.is_none() && introduces_asyncio_traceback(&records, ri, quote) {
            continue;
        }
        let unknown_exception =
            rule.is_none() && matches!(class, Class::Cause | Class::LoneException);
        let class = if unknown_exception && introduces_traceback(&records, ri, quote) {
            Class::Echo
        } else {
            class
        };
        let id = rule.map_or("unknown".to_string(), |r| rules.rules()[r].id.clone());
        let id = explained_by_the_c_import(id, &rec.lines[quote].body, c_import_failure, rules);
        let hung = rule.is_some_and(|r| rules.rules()[r].hung);
        cands.push(Candidate {
            class,
            layer: layer_of(rec),
            id,
            rule,
            quote,
            record: ri,
            hung,
        });
    }
    demote_summaries(&mut cands, &records);
    let mut order: Vec<usize> = (0..cands.len()).collect();
    order.sort_by_key(|&i| {
        let c = &cands[i];
        let line = records[c.record].lines[c.quote].no;
        // Weak signals (a supervisor's report, watchdog timeouts) say nothing about causality
        // by their layer: the earliest wins.
        // Nor do echoes: a later echo repeats an earlier one.
        let layer = if matches!(c.class, Class::Weak | Class::Echo) {
            0
        } else {
            c.layer
        };
        // An error record without an exception and a traceback cut before its exception line
        // are both failures of unknown kind: the lower layer (a worker's report before the
        // engine's cut traceback) comes first.
        let class = if c.class == Class::IncompleteUnknown {
            Class::UnknownError
        } else {
            c.class
        };
        (class, layer, line)
    });
    defer_to_the_dead(&mut order, &cands, &records);
    defer_to_the_last_words(&mut order, &cands, &records);
    last_words_before_a_crash(&mut order, &mut cands, &records);
    detail_of_the_child(&mut order, &mut cands, &records);
    prefer_the_exception(&mut order, &cands, &records, rules);
    prefer_the_detail(&mut order, &cands, &records);
    prefer_the_last_error(&mut order, &cands, &records);
    prefer_the_quoted_cause(&mut order, &cands);
    argparse_exit_first(&mut order, &cands, &records);
    name_by_what_follows(&order, &mut cands, &records, rules);

    if explain {
        for &i in &order {
            let c = &cands[i];
            let r = &records[c.record];
            diagnostics.push(format!(
                "candidate {:?} layer {} id {} line {} ({} lines, {}): {}",
                c.class,
                c.layer,
                c.id,
                r.lines[c.quote].no,
                r.lines.len(),
                r.process.as_deref().unwrap_or("-"),
                r.lines[c.quote].body.chars().take(120).collect::<String>()
            ));
        }
    }
    let mut v = Verdict::empty();
    v.schema = VERDICT_SCHEMA;
    v.vllm_version = version;
    // Whether the launch survived each candidate, told once (the choices below ask again).
    let survived: Vec<bool> = cands
        .iter()
        .map(|c| serving.survived(&records[c.record], c))
        .collect();
    let survivors: Vec<usize> = order.iter().copied().filter(|&i| survived[i]).collect();
    // Root cause and folding.
    let root_i = order.iter().copied().find(|&i| !survived[i]);
    // A root exception whose message ends with another exception's of the same type (vLLM's
    // `raise type(err)(f"Error in model execution (input dumped to {filename}): {err}")` in
    // vllm/worker/model_runner_base.py's `dump_input_when_exception`, :152 in v0.6.4.post1 as the
    // real logs batch-32/2697 and batch-15/1209 show; gone by v0.8.5) wraps it: the one it
    // carries is the failure, where the excerpt kept it.
    let quote = |i: usize| {
        let c = &cands[i];
        records[c.record].lines[c.quote].body.as_str()
    };
    // torch_npu's `RuntimeError: The Inner error is reported as above. …` says the failure is the
    // report above it (the operator's own error record, CANN's codes): the nearest error record
    // before it that is no traceback of its own, when the log kept one.
    let root_i = root_i.map(|ri| {
        if !exception_message(quote(ri)).starts_with("The Inner error is reported as above") {
            return ri;
        }
        let root = &records[cands[ri].record];
        let no = root.lines[cands[ri].quote].no;
        // Not the exception's own message told line by line at the same log site
        // (`logger.exception(e)`: `… engine.py:400] The Inner error is reported as above. …`).
        let line_of = |j: usize| records[cands[j].record].lines[cands[j].quote].no;
        let mut report: Vec<usize> = order
            .iter()
            .copied()
            .filter(|&j| {
                let c = &cands[j];
                let r = &records[c.record];
                !r.traceback
                    && matches!(
                        c.class,
                        Class::Cause | Class::LoneException | Class::UnknownError
                    )
                    && r.lines[c.quote].no < no
                    && (r.location.is_none() || r.location != root.location)
                    && !survived[j]
            })
            .collect();
        report.sort_unstable_by_key(|&j| line_of(j));
        // The report is the run of error lines that ends nearest the exception: its head is the
        // first of them (c10's `[rank0]:[E… compiler_depend.ts:…] … error code is 507014`, then
        // the ACL's `[ERROR] … ERR00100 PTA call acl api failed` on the next line).
        let Some(mut head) = report.pop() else {
            return ri;
        };
        while let Some(&j) = report.last() {
            if line_of(j) + 1 != line_of(head) {
                break;
            }
            head = j;
            report.pop();
        }
        head
    });
    let root_i = root_i.map(|ri| {
        let outer = quote(ri);
        let m = exception_message(outer);
        order
            .iter()
            .copied()
            .find(|&j| {
                let inner = quote(j);
                let said = exception_message(inner);
                cands[j].class <= Class::UnknownError
                    && !survived[j]
                    && is_exception_statement(outer)
                    && is_exception_statement(inner)
                    && exception_class(outer) == exception_class(inner)
                    && said.len() >= QUOTED_MESSAGE_MIN
                    && m.strip_suffix(said)
                        .is_some_and(|head| head.ends_with(": "))
            })
            .unwrap_or(ri)
    });
    if root_i.is_none() {
        // A server that raised a request's error and went on was serving: it is up.
        ready |= survivors
            .iter()
            .any(|&i| serving.request_time(&records[cands[i].record], &cands[i]));
        if let Some(&first) = survivors.first() {
            let r = &records[cands[first].record];
            diagnostics.push(format!(
                "{} error record(s) the server survived (it became ready after them, or a request's error while serving), first at line {}: not a launch failure",
                survivors.len(),
                r.lines[cands[first].quote].no
            ));
        }
    }
    let mut used = vec![false; cands.len()];
    if let Some(ri) = root_i {
        let root = &cands[ri];
        let rec = &records[root.record];
        let q = &rec.lines[root.quote];
        let key = (root.id.clone(), fold_key(&q.body));
        let mut ranks: Vec<String> = Vec::new();
        for &i in &order {
            let c = &cands[i];
            let r = &records[c.record];
            let k = (c.id.clone(), fold_key(&r.lines[c.quote].body));
            if k == key && c.class <= Class::UnknownError {
                used[i] = true;
                let name = r.process.clone().unwrap_or_else(|| "unknown".into());
                if !ranks.contains(&name) {
                    ranks.push(name);
                }
            }
        }
        // Ranks listed first-failing first; the root is the earliest line of the group that
        // states the exception with its type (a `logger.exception(e)` record's bare message is
        // the same failure, told before its traceback), else the earliest line.
        let mut group: Vec<usize> = (0..cands.len()).filter(|&i| used[i]).collect();
        group.sort_by_key(|&i| records[cands[i].record].lines[cands[i].quote].no);
        let typed = |i: &usize| {
            let c = &cands[*i];
            let l = &records[c.record].lines[c.quote];
            l.role == LineRole::Exception || is_exception_statement(&l.body)
        };
        let mut first = group
            .iter()
            .copied()
            .find(typed)
            .or_else(|| group.first().copied())
            .unwrap_or(ri);
        if let Some(b) = interrupted_earlier(&records, &cands, &group, first) {
            // That rank failed first: its record was cut in two and this one written between.
            first = b;
            group.retain(|&i| i != b);
            group.insert(0, b);
        }
        let fc = &cands[first];
        let frec = &records[fc.record];
        let fq = &frec.lines[fc.quote];
        let mut ordered_ranks: Vec<String> = Vec::new();
        for &i in &group {
            let name = records[cands[i].record]
                .process
                .clone()
                .unwrap_or_else(|| "unknown".into());
            if !ordered_ranks.contains(&name) {
                ordered_ranks.push(name);
            }
        }
        let frames: Vec<String> = frec
            .lines
            .iter()
            .filter(|l| l.role == LineRole::Frame)
            .map(|l| l.body.trim().to_string())
            .collect();
        let frames = if frames.len() > FRAMES_MAX {
            frames[frames.len() - FRAMES_MAX..].to_vec()
        } else {
            frames
        };
        let quote_pid = parse_line_in(fq.text.as_bytes(), layers).pid;
        v.root_cause = Some(RootCause {
            id: fc.id.clone(),
            line: fq.no,
            process: frec.process.clone(),
            pid: quote_pid.or(frec.pid),
            text: fq.text.clone(),
            message: strip_to_message(&fq.body),
            traceback: frames,
            ranks: ordered_ranks,
        });
        if let Some(rule) = fc.rule.map(|r| &rules.rules()[r]) {
            v.meaning = rule.meaning.clone();
            v.fix = rule
                .fix
                .clone()
                .map(|f| fix_with_evidence(&fc.id, f, &evidence, explicit_kv));
        }
        // The backend's reason `kv_cache_dtype not supported` names an FP8 cause only when the
        // KV cache is FP8 (or `auto`, which a checkpoint can turn into FP8): with another dtype
        // set explicitly (`nvfp4`, say) the backend rejects that dtype.
        if let Some(rc) = v.root_cause.as_mut() {
            let kv = evidence.get("kv_cache_dtype").and_then(|v| v.as_str());
            if let Some(kv) = kv.filter(|kv| *kv != "auto" && !kv.starts_with("fp8")) {
                if rc.id == "fp8_kv_cache_unsupported_backend" && explicit_kv == Some(true) {
                    rc.id = "attention_backend_unsupported".into();
                    v.meaning = Some(format!(
                        "The selected attention backend does not support kv_cache_dtype={kv} on this GPU and model."
                    ));
                    v.fix = Some(format!(
                        "Use a KV-cache dtype the backend supports (`--kv-cache-dtype auto` or `bfloat16`), or choose an attention backend that supports {kv}."
                    ));
                }
            }
        }
        v.status = if fc.hung {
            Status::Hung
        } else {
            Status::Crashed
        };
        let _ = ranks;
    } else if stopped {
        v.status = Status::Stopped;
    } else if ready {
        v.status = Status::Ready;
    } else if started {
        v.status = Status::Starting;
    }
    // Secondary: every other candidate, folded by message.
    let mut sec: Vec<Secondary> = Vec::new();
    let mut sec_keys: Vec<String> = Vec::new();
    for &i in &order {
        if used[i] {
            continue;
        }
        let c = &cands[i];
        let r = &records[c.record];
        let q = &r.lines[c.quote];
        let k = fold_key(&q.body);
        if let Some(pos) = sec_keys.iter().position(|x| *x == k) {
            sec[pos].count += 1;
            continue;
        }
        sec_keys.push(k);
        sec.push(Secondary {
            line: q.no,
            process: r.process.clone(),
            count: 1,
            text: q.text.clone(),
        });
    }
    sec.sort_by_key(|s| s.line);
    if sec.len() > SECONDARY_MAX {
        diagnostics.push(format!(
            "{} more secondary errors not listed",
            sec.len() - SECONDARY_MAX
        ));
        sec.truncate(SECONDARY_MAX);
    }
    v.secondary = sec;
    v.evidence = evidence;
    let mut damage: Vec<Damage> = scan::damage(b, sc, region.start, region.end);
    // A file that begins with a hole was rotated (copytruncate) under a writer without
    // O_APPEND: it continues mid-launch.
    if region.start == 0 && b.first() == Some(&0) {
        damage.push(Damage {
            kind: "rotated".into(),
            offset: Some(0),
            length: None,
            line: Some(1),
        });
    }
    for no in &interleaved_lines {
        damage.push(Damage {
            kind: "interleaved_line".into(),
            offset: None,
            length: None,
            line: Some(*no),
        });
    }
    v.damage = damage;
    v.stale = Stale {
        suspected: false,
        reason: None,
    };
    pids.sort_unstable();
    Analysis {
        verdict: v,
        last_line,
        pids,
        newer_launch_at,
    }
}

/// A log site of vLLM's OpenAI serving layer, whose per-request errors do not stop the
/// server: `serving_chat.py:136`, `[serving_completion.py:131]`, `serving_engine.py`, and its
/// tool-call parsers (`hermes_tool_parser.py:110` in v0.8.5: `extract_tool_calls` catches the
/// model's unparsable output, logs it and answers with plain content).
fn is_request_handler(location: &str) -> bool {
    let file = location.rsplit('/').next().unwrap_or(location);
    let file = file.trim_start_matches('[');
    file.starts_with("serving_") || is_tool_parser(file)
}

fn version_of(body: &str) -> Option<String> {
    let grab = |rest: &str| {
        let v: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '.' || *c == '+')
            .collect();
        if v.chars().next().is_some_and(|c| c.is_ascii_digit()) {
            Some(v)
        } else {
            None
        }
    };
    if let Some(rest) = body.strip_prefix("vLLM API server version ") {
        return grab(rest);
    }
    if let Some(rest) = body.strip_prefix("vLLM server version ") {
        return grab(rest);
    }
    if body.contains('█') {
        if let Some(pos) = body.find("  version ") {
            return grab(&body[pos + 10..]);
        }
    }
    for prefix in [
        "Initializing a V1 LLM engine (v",
        "Initializing an LLM engine (v",
    ] {
        if let Some(rest) = body.strip_prefix(prefix) {
            return grab(rest);
        }
    }
    None
}

fn field<'s>(s: &'s str, key: &str) -> Option<&'s str> {
    let pos = s.find(key)?;
    let rest = &s[pos + key.len()..];
    let end = rest.find([',', ')']).unwrap_or(rest.len());
    Some(rest[..end].trim())
}

fn collect_config_evidence(body: &str, evidence: &mut BTreeMap<String, serde_json::Value>) {
    if let Some(kv) = field(body, "kv_cache_dtype=") {
        evidence.insert("kv_cache_dtype".into(), kv.into());
    }
    for key in [
        "tensor_parallel_size",
        "pipeline_parallel_size",
        "data_parallel_size",
    ] {
        if let Some(v) = field(body, &format!("{key}=")).and_then(|v| v.parse::<u64>().ok()) {
            evidence.insert(key.into(), v.into());
        }
    }
    if let Some(q) = field(body, "quantization=") {
        evidence.insert("quantization".into(), q.into());
    }
    if let Some(m) = field(body, "model=") {
        evidence.insert("model".into(), m.trim_matches('\'').into());
    }
}

fn fix_with_evidence(
    id: &str,
    fix: String,
    evidence: &BTreeMap<String, serde_json::Value>,
    explicit_kv: Option<bool>,
) -> String {
    if id == "fp8_kv_cache_unsupported_backend" {
        if let (Some(kv), Some(false)) = (
            evidence.get("kv_cache_dtype").and_then(|v| v.as_str()),
            explicit_kv,
        ) {
            if kv.starts_with("fp8") {
                return format!(
                    "The command line sets no --kv-cache-dtype, yet the engine runs with kv_cache_dtype={kv}: the checkpoint's quantization config (kv_cache_scheme / kv_cache_quant_algo) made `auto` resolve to {kv}. {fix}"
                );
            }
        }
    }
    fix
}

/// The statement without log header (the body already lacks prefixes).
/// What folds two reports of one failure together: the message without its exception type
/// (V0's engine logs `logger.exception(e)` — the bare message — before the raw traceback ends
/// in `ValueError: message`), digits as `#`.
fn fold_key(body: &str) -> String {
    let m = strip_to_message(body);
    let m = if is_exception_like(&m) {
        m.split_once(": ").map_or(m.as_str(), |(_, rest)| rest)
    } else {
        m.as_str()
    };
    normalize(m)
}

fn strip_to_message(body: &str) -> String {
    body.trim_start_matches(", ").trim().to_string()
}

/// A failure of another process in `group` that began before `first`'s record and wrote nothing
/// while that record was written — its record cut in two (a line written in two pieces) with
/// `first`'s whole traceback in between — so it failed first although its exception line comes
/// later. Only records whose start the text holds (a message or `Traceback …` header) count:
/// an excerpt that cut a record's head says nothing about when it began.
fn interrupted_earlier(
    records: &[Record],
    cands: &[Candidate],
    group: &[usize],
    first: usize,
) -> Option<usize> {
    let starts = |r: &Record| {
        r.lines
            .first()
            .filter(|l| matches!(l.role, LineRole::Head | LineRole::TracebackStart))
            .map(|l| l.no)
    };
    let a = &records[cands[first].record];
    let (a_start, a_end) = (starts(a)?, a.lines[cands[first].quote].no);
    group
        .iter()
        .copied()
        .filter(|&b| records[cands[b].record].process != a.process)
        .filter_map(|b| {
            let r = &records[cands[b].record];
            let began = starts(r)?;
            let quiet = !r.lines.iter().any(|l| (a_start..=a_end).contains(&l.no));
            (began < a_start && quiet && r.lines[cands[b].quote].no > a_end).then_some((began, b))
        })
        .min()
        .map(|(_, b)| b)
}

#[cfg(test)]
mod tests {
    use crate::{triage, Options, Output};

    fn one(log: &str) -> crate::Verdict {
        let Output::One(v) = triage(log.as_bytes(), &Options::default()) else {
            panic!("one verdict")
        };
        v
    }

    #[test]
    fn a_call_signature_error_is_a_version_mismatch_only_across_packages() {
        // A plugin calling vLLM with arguments vLLM no longer takes: the two were built for
        // different releases. The same TypeError raised inside vLLM's own code is a bug of one
        // release, which no rule names.
        let across = "\
Traceback (most recent call last):
  File \"/usr/local/lib/python3.11/site-packages/vllm/v1/engine/core.py\", line 83, in __init__
  File \"/vllm-workspace/vllm-ascend/vllm_ascend/worker/model_runner_v1.py\", line 301, in __init__
    self.attn_backend = get_attn_backend(0, self.dtype, None, 128, use_mla=True)
TypeError: get_attn_backend() got multiple values for argument 'use_mla'
";
        assert_eq!(root(across), (5, "dependency_version_mismatch".to_string()));
        let within = across.replace(
            "/vllm-workspace/vllm-ascend/vllm_ascend/",
            "/usr/local/lib/python3.11/site-packages/vllm/",
        );
        assert_eq!(root(&within), (5, "unknown".to_string()));
    }

    #[test]
    fn api_servers_started_side_by_side_are_one_launch() {
        // vLLM names the API servers it starts together ApiServer_0, ApiServer_1, …: a second
        // one's traceback is this launch's, not an older server's still writing to the file.
        let log = "\
(ApiServer_3 pid=39385) Traceback (most recent call last):
(ApiServer_3 pid=39385)   File \"/usr/local/lib/python3.12/dist-packages/uvloop/__init__.py\", line 96, in run
[...]
(ApiServer_2 pid=39384)   File \"/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core_client.py\", line 535, in __init__
(ApiServer_2 pid=39384)     raise TimeoutError(
(ApiServer_2 pid=39384) TimeoutError: Timed out waiting for engines to send initial message on input socket.
";
        assert_eq!(root(log), (6, "engine_ready_timeout".to_string()));
    }

    #[test]
    fn the_runtime_report_under_an_exception_names_it() {
        // torch_npu's HCCL error, then CANN's inner-error report whose reason a rule names: the
        // exception line stays the root cause and takes the reason's id.
        let log = "\
[rank0]: RuntimeError: create_config:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:102 HCCL function error: hcclCommInitRootInfoConfig(numRanks, &rootInfo, rank, config, &(comm->hcclComm_)), error code is 15
[rank0]: [ERROR] 2025-04-27-03:11:08 (PID:540988, Device:0, RankID:0) ERR02200 DIST call hccl api failed.
[rank0]: EE9999: Inner Error!
[rank0]:         TraceBack (most recent call last):
[rank0]:        rtGetDeviceIndexByPhyId execute failed, reason=[device id error][FUNC:FuncErrorReason][FILE:error_message_manage.cc][LINE:53]
";
        assert_eq!(root(log), (1, "device_visibility_mismatch".to_string()));
    }

    #[test]
    fn a_cann_report_inside_the_record_names_its_exception() {
        // The reason CANN prints under torch_npu's exception, in the same logged record: the
        // exception line is the root cause, the report's rule its id.
        let log = "\
(VllmWorker TP2 pid=7) ERROR 08-27 01:44:46 [multiproc_executor.py:602] Traceback (most recent call last):
(VllmWorker TP2 pid=7) ERROR 08-27 01:44:46 [multiproc_executor.py:602]   File \"/w/vllm_ascend/quantization/w8a8_dynamic.py\", line 384, in init_routing_quant
(VllmWorker TP2 pid=7) ERROR 08-27 01:44:46 [multiproc_executor.py:602]     global_expert_tokens = torch.bincount(expanded_expert_idx,
(VllmWorker TP2 pid=7) ERROR 08-27 01:44:46 [multiproc_executor.py:602] RuntimeError: operator():build/CMakeFiles/torch_npu.dir/compiler_depend.ts:47 NPU function error: c10_npu::acl::AclrtSynchronizeStreamWithTimeout(copy_stream), error code is 107027
(VllmWorker TP2 pid=7) ERROR 08-27 01:44:46 [multiproc_executor.py:602] EE9999: Inner Error!
(VllmWorker TP2 pid=7) ERROR 08-27 01:44:46 [multiproc_executor.py:602] EE9999: [PID: 7] 2025-08-27-01:44:46.558.672 Not allow to synchronize captured-stream, stream_id=9.
";
        assert_eq!(root(log), (4, "cudagraph_capture_failed".to_string()));
        assert!(super::is_cann_report(
            "EZ9999[PID: 940664] HCCL_BUFFSIZE is too SMALL"
        ));
        assert!(!super::is_cann_report("ERROR 08-27 01:44:46 [x.py:1] y"));
    }

    #[test]
    fn a_launch_configuration_names_no_failure() {
        // argparse's Namespace dump and the engine's config line name settings
        // (`max_lora_rank=16`), not failures; the echo is all the text says of the failure.
        let v = one("\
Namespace(model='m', enable_lora=None, max_lora_rank=16, kv_cache_dtype='auto')
INFO 01-17 11:35:43 [core.py:75] Initializing a V1 LLM engine (v0.10.2) with config: model='m', max_lora_rank=16
RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}
");
        let rc = v.root_cause.expect("a root cause");
        assert_eq!((rc.line, rc.id.as_str()), (3, "unknown"), "{rc:?}");
    }

    #[test]
    fn the_import_warning_before_the_banner_explains_a_missing_op() {
        // vLLM imports its ops (and warns) before the API server logs its version; the op then
        // fails. The module was never built: missing_module, not a wheel for another platform.
        let v = one("\
WARNING 08-31 15:52:50 _custom_ops.py:18] Failed to import from vllm._C with ModuleNotFoundError(\"No module named 'vllm._C'\")
INFO 08-31 15:52:52 api_server.py:440] vLLM API server version 0.5.5
ERROR 08-31 15:52:59 engine.py:1] AttributeError: '_OpNamespace' '_C' object has no attribute 'gelu_quick'
");
        assert_eq!(v.root_cause.expect("a root cause").id, "missing_module");
        // A plugin's own kernel library missing is the same; the platform's runtime missing is
        // a wheel built for another platform.
        let plugin = "\
WARNING 09-18 10:33:14 [camem.py:64] Failed to import vllm_ascend_C:libvllm_ascend_kernels.so: cannot open shared object file: No such file or directory.
ERROR 09-18 10:34:29 [core.py:718] AttributeError: '_OpNamespace' '_C_ascend' object has no attribute 'weak_ref_tensor'
";
        assert_eq!(
            one(plugin).root_cause.expect("a root cause").id,
            "missing_module"
        );
        let cpu = plugin
            .replace(
                "vllm_ascend_C:libvllm_ascend_kernels.so",
                "from vllm._C with ImportError('libcuda.so.1",
            )
            .replace("_C_ascend", "_C");
        assert_ne!(
            one(&cpu).root_cause.expect("a root cause").id,
            "missing_module"
        );
    }

    #[test]
    fn a_quoted_cause_outranks_a_traceback_that_lost_its_exception() {
        let v = one("\
(Worker pid=1101) ERROR 07-03 17:10:49 [multiproc_executor.py:962] Traceback (most recent call last):
(Worker pid=1101) ERROR 07-03 17:10:49 [multiproc_executor.py:962]   File \"/x/flashinfer/jit/cpp_ext.py\", line 247, in generate_ninja_build_for_op
(Worker pid=1101) ERROR 07-03 17:10:49 [multiproc_executor.py:962]     cuda_home = get_cuda_path()
[...]
(EngineCore_DP1 pid=541) RuntimeError: Worker failed with error 'Could not find nvcc and default cuda_home='/usr/local/cuda' doesn't exist', please check the stack trace above for the root cause
");
        let rc = v.root_cause.expect("a root cause");
        assert_eq!(
            (rc.line, rc.id.as_str()),
            (5, "flashinfer_jit_build_failed"),
            "{rc:?}"
        );
    }

    #[test]
    fn an_exception_line_on_its_own_is_a_crash_on_that_line() {
        // An excerpt that kept only the last line of a traceback, behind a markdown quote.
        let v = one("some context\n> RuntimeError: the frobnicator is out of alignment.\n");
        assert_eq!(v.status, crate::Status::Crashed);
        let rc = v.root_cause.expect("a root cause");
        assert_eq!(rc.line, 2, "{rc:?}");
        assert_eq!(rc.id, "unknown");
        // A library's import-time warning that looks like an exception ranks below a
        // traceback's own exception line.
        let v = one("\
AttributeError: 'MessageFactory' object has no attribute 'GetPrototype'
Traceback (most recent call last):
  File \"/x/vllm/config.py\", line 1, in f
ValueError: Cannot find the config file for awq
");
        assert_eq!(v.root_cause.expect("a root cause").line, 4);
        // Not exceptions: a warning class, a sentence with a colon.
        let v = one("UserWarning: something is deprecated\nNote: this is fine\n");
        assert!(v.root_cause.is_none(), "{:?}", v.root_cause);
    }

    #[test]
    fn an_error_the_server_survived_is_not_its_root_cause() {
        let startup_probe = "\
(APIServer pid=10) INFO 11-30 03:31:00 [api_server.py:1] vLLM API server version 0.15.1
(EngineCore_DP0 pid=11) ERROR 11-30 03:31:05 [core.py:1] Traceback (most recent call last):
(EngineCore_DP0 pid=11) ERROR 11-30 03:31:05 [core.py:1]   File \"/x/vllm/probe.py\", line 3, in probe
(EngineCore_DP0 pid=11) ERROR 11-30 03:31:05 [core.py:1] ImportError: cannot import name '_C'
(APIServer pid=10) INFO:     Application startup complete.
";
        let v = one(startup_probe);
        assert_eq!(v.status, crate::Status::Ready, "{:?}", v.root_cause);
        assert!(v.root_cause.is_none());
        assert!(
            v.diagnostics.iter().any(|d| d.contains("survived")),
            "{:?}",
            v.diagnostics
        );
        // A request's error, logged by the OpenAI serving layer while serving.
        let request = "\
INFO:     Application startup complete.
ERROR 07-22 08:51:06 [serving_completion.py:131] Error in preprocessing prompt inputs
ERROR 07-22 08:51:06 [serving_completion.py:131] Traceback (most recent call last):
ERROR 07-22 08:51:06 [serving_completion.py:131]   File \"/x/vllm/entrypoints/openai/serving_completion.py\", line 123, in create_completion
ERROR 07-22 08:51:06 [serving_completion.py:131] ValueError: This model's maximum context length is 4096 tokens.
INFO:     127.0.0.1:34636 - \"POST /v1/completions HTTP/1.1\" 400 Bad Request
";
        let v = one(request);
        assert_eq!(v.status, crate::Status::Ready, "{:?}", v.root_cause);
        // The same without the start: a record of the serving layer or of a tool-call parser
        // (which catches the model's unparsable output and answers with plain text) says the
        // server was serving, and it went on.
        for excerpt in [request.split_once('\n').unwrap().1, "\
ERROR 12-02 05:59:06 hermes_tool_parser.py:108] Error in extracting tool call from response.
ERROR 12-02 05:59:06 hermes_tool_parser.py:108] Traceback (most recent call last):
ERROR 12-02 05:59:06 hermes_tool_parser.py:108]   File \"/x/json/decoder.py\", line 355, in raw_decode
ERROR 12-02 05:59:06 hermes_tool_parser.py:108] json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)
"] {
            let v = one(excerpt);
            assert_eq!(v.status, crate::Status::Ready, "{excerpt}: {:?}", v.root_cause);
            assert!(v.root_cause.is_none(), "{excerpt}: {:?}", v.root_cause);
        }
        // The same error in a worker after readiness is a crash at runtime.
        let runtime = "\
(APIServer pid=10) INFO:     Application startup complete.
(Worker_TP1 pid=12) ERROR 11-30 03:40:00 [multiproc_executor.py:1] Traceback (most recent call last):
(Worker_TP1 pid=12) ERROR 11-30 03:40:00 [multiproc_executor.py:1]   File \"/x/vllm/worker.py\", line 1, in execute
(Worker_TP1 pid=12) ERROR 11-30 03:40:00 [multiproc_executor.py:1] ValueError: bad things
";
        let v = one(runtime);
        assert_eq!(v.status, crate::Status::Crashed);
        assert_eq!(v.root_cause.expect("a root cause").line, 4);
    }

    #[test]
    fn a_report_of_a_death_defers_to_the_dead_process_own_report() {
        // The API server's line about the engine core lands first; the engine core's line
        // about the worker it lost is nearer the cause.
        let log = "\
(APIServer pid=10) INFO 11-30 03:31:00 [api_server.py:1] vLLM API server version 0.15.1
(EngineCore_DP0 pid=11) INFO 11-30 03:31:01 [core.py:96] Initializing a V1 LLM engine (v0.15.1) with config: x
(APIServer pid=10) ERROR 11-30 03:31:42 [core_client.py:605] Engine core proc EngineCore_DP0 died unexpectedly, shutting down client.
(EngineCore_DP0 pid=11) ERROR 11-30 03:31:42 [multiproc_executor.py:246] Worker proc VllmWorker-3 died unexpectedly, shutting down executor.
";
        let Output::One(v) = triage(log.as_bytes(), &Options::default()) else {
            panic!("one verdict")
        };
        let rc = v.root_cause.expect("a root cause");
        assert_eq!(rc.id, "worker_killed_by_signal");
        assert_eq!(rc.line, 4, "{rc:?}");
        // A report naming another process (EngineCore_DP01) does not defer.
        let other = log.replace("proc EngineCore_DP0 died", "proc EngineCore_DP01 died");
        let Output::One(v) = triage(other.as_bytes(), &Options::default()) else {
            panic!("one verdict")
        };
        assert_eq!(v.root_cause.expect("a root cause").line, 3);
    }

    #[test]
    fn the_dead_are_read_from_the_report() {
        fn names(r: &str) -> Vec<&str> {
            super::reported_dead(r).collect()
        }
        assert_eq!(
            names("Engine core proc EngineCore_DP0 died unexpectedly, shutting down client."),
            ["EngineCore_DP0"]
        );
        assert_eq!(
            names("Engine core initialization failed. See root cause above. Failed core proc(s): {'EngineCore_DP0': 1, 'EngineCore_DP1': 1}"),
            ["EngineCore_DP0", "EngineCore_DP1"]
        );
        // `Worker` as a word is no process name.
        assert_eq!(
            names("Worker proc VllmWorker-3 died unexpectedly"),
            ["VllmWorker-3"]
        );
    }

    fn root(log: &str) -> (u64, String) {
        let v = one(log);
        let r = v.root_cause.expect("a root cause");
        (r.line, r.id)
    }

    #[test]
    fn a_rank_whose_traceback_was_cut_in_two_failed_first() {
        let w = |rank: u32, body: &str| {
            format!("(Worker_TP{rank} pid=1{rank}) ERROR 11-22 03:35:01 [multiproc_executor.py:783] {body}\n")
        };
        let record = |rank: u32| -> Vec<String> {
            [
                "WorkerProc failed to start.",
                "Traceback (most recent call last):",
                "  File \"/v/vllm/platforms/cuda.py\", line 9, in get_attn_backend_cls",
                "    raise ValueError(",
                "ValueError: No valid attention backend found for cuda",
            ]
            .iter()
            .map(|b| w(rank, b))
            .collect()
        };
        // TP2 begins, TP0 writes its whole traceback while TP2 is between two writes, then TP2
        // ends: TP2 failed first, though its exception line comes later.
        let (tp2, tp0) = (record(2), record(0));
        let log = [&tp2[..3], &tp0[..], &tp2[3..]].concat().concat();
        let v = one(&log);
        let rc = v.root_cause.expect("a root cause");
        assert_eq!(
            (rc.line, rc.process.as_deref()),
            (10, Some("Worker_TP2")),
            "{log}"
        );
        assert_eq!(rc.ranks, ["Worker_TP2", "Worker_TP0"]);
        // Written line by line in turn, the first exception line is the first failure.
        let mut turns = Vec::new();
        for (a, b) in tp2.iter().zip(&tp0) {
            turns.push(a.clone());
            turns.push(b.clone());
        }
        let rc = one(&turns.concat()).root_cause.expect("a root cause");
        assert_eq!(rc.line, 9);
        // An excerpt that cut TP2's head says nothing about when it began.
        let cut = [&tp2[2..3], &tp0[..], &tp2[3..]].concat().concat();
        let rc = one(&cut).root_cause.expect("a root cause");
        assert_eq!(rc.process.as_deref(), Some("Worker_TP0"), "{cut}");
    }

    #[test]
    fn an_exception_line_outranks_a_traceback_cut_after_it() {
        // An excerpt: the exception line, then the frames of a traceback whose end was cut.
        let log = "(EngineCore_DP0 pid=7) RuntimeError: Expect (32 <= headDim <= 2048)\n\n\
                   ^^^^^^^^^^^^\n\
                   (EngineCore_DP0 pid=7)   File \"/x/torch/_ops.py\", line 1243, in __call__\n\
                   (EngineCore_DP0 pid=7)     return self._op(*args, **kwargs)\n";
        assert_eq!(root(log).0, 1);
    }

    #[test]
    fn a_cut_traceback_is_quoted_at_its_last_frame_never_a_caret_or_code_line() {
        let log = "(APIServer pid=5) Traceback (most recent call last):\n\
                   (APIServer pid=5)   File \"/usr/local/bin/vllm\", line 33, in <module>\n\
                   (APIServer pid=5)     sys.exit(main())\n\
                   (APIServer pid=5)              ^^^^^^\n";
        assert_eq!(root(log).0, 2);
    }

    #[test]
    fn an_exception_that_introduces_a_subprocess_traceback_defers_to_it() {
        let log = "ERROR 06-13 11:12:03 [registry.py:963] RuntimeError: Error raised in subprocess:\n\
                   ERROR 06-13 11:12:03 [registry.py:963] Traceback (most recent call last):\n\
                   ERROR 06-13 11:12:03 [registry.py:963]   File \"/x/registry.py\", line 936, in load_model_cls\n\
                   ERROR 06-13 11:12:03 [registry.py:963]     mod = importlib.import_module(self.module_name)\n\
                   ERROR 06-13 11:12:03 [registry.py:963] ModuleNotFoundError: No module named 'torchvision'\n";
        assert_eq!(root(log).0, 5);
    }

    #[test]
    fn a_record_of_a_cause_defers_to_the_exception_the_process_raises_for_it() {
        let log = "(EngineCore pid=9) INFO 06-12 12:49:02 [gpu_worker.py:480] Available KV cache memory: -1.36 GiB\n\
                   (EngineCore pid=9) ERROR 06-12 12:49:02 [core.py:1199] EngineCore failed to start.\n\
                   (EngineCore pid=9) ERROR 06-12 12:49:02 [core.py:1199] Traceback (most recent call last):\n\
                   (EngineCore pid=9) ERROR 06-12 12:49:02 [core.py:1199]   File \"/x/kv_cache_utils.py\", line 686, in check_enough_kv_cache_memory\n\
                   (EngineCore pid=9) ERROR 06-12 12:49:02 [core.py:1199]     raise ValueError(\n\
                   (EngineCore pid=9) ERROR 06-12 12:49:02 [core.py:1199] ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.\n";
        assert_eq!(root(log), (6, "kv_cache_no_memory".to_string()));
    }

    #[test]
    fn a_workers_record_of_a_cause_defers_to_its_engine_cores_exception() {
        let log = "(Worker_TP0 pid=5) INFO 06-12 12:49:02 [gpu_worker.py:480] Available KV cache memory: -1.36 GiB\n\
                   (EngineCore_DP0 pid=4) ERROR 06-12 12:49:02 [core.py:1199] EngineCore failed to start.\n\
                   (EngineCore_DP0 pid=4) ERROR 06-12 12:49:02 [core.py:1199] Traceback (most recent call last):\n\
                   (EngineCore_DP0 pid=4) ERROR 06-12 12:49:02 [core.py:1199]   File \"/x/kv_cache_utils.py\", line 686, in check_enough_kv_cache_memory\n\
                   (EngineCore_DP0 pid=4) ERROR 06-12 12:49:02 [core.py:1199]     raise ValueError(\n\
                   (EngineCore_DP0 pid=4) ERROR 06-12 12:49:02 [core.py:1199] ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.\n";
        assert_eq!(root(log), (6, "kv_cache_no_memory".to_string()));
    }

    #[test]
    fn an_argparse_exit_is_the_launch_whatever_another_server_writes_after_it() {
        let log = "usage: vllm serve [model_tag] [options]\n\
                   vllm serve: error: argument --tensor-parallel-size/-tp: invalid int value: 'abc'\n\
                   INFO 09-19 22:22:04 [loggers.py:111] Engine 000: Avg prompt throughput: 759.0 tokens/s, Avg generation throughput: 446.5 tokens/s, Running: 3 reqs, Waiting: 0 reqs, GPU KV cache usage: 1.2%, Prefix cache hit rate: 0.0%\n\
                   INFO:     10.0.2.180:35836 - \"POST /v1/completions HTTP/1.1\" 200 OK\n\
                   INFO 09-19 22:22:15 [loggers.py:111] Engine 000: Avg prompt throughput: 683.2 tokens/s, Avg generation throughput: 401.9 tokens/s, Running: 33 reqs, Waiting: 0 reqs, GPU KV cache usage: 4.1%, Prefix cache hit rate: 0.0%\n";
        assert_eq!(root(log), (2, "cli_argument_error".to_string()));
    }

    #[test]
    fn pydantic_summary_defers_to_its_detail_line() {
        let log = "pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig\n\
                   (APIServer pid=6)   Value error, Model architectures ['X'] are not supported for now. Supported architectures: dict_keys(['A'])\n";
        assert_eq!(root(log), (2, "unsupported_model_arch".to_string()));
    }

    #[test]
    fn a_build_tool_fatal_diagnostic_is_a_root_cause_line() {
        let log = "INFO 05-27 11:47:55 [backends.py:430] Dynamo bytecode transform time: 13.06 s\n\
                   /usr/bin/ld: cannot find -lcuda: No such file or directory\n\
                   collect2: error: ld returned 1 exit status\n\
                   ERROR 05-27 11:47:57 [core.py:396] EngineCore failed to start.\n\
                   ERROR 05-27 11:47:57 [core.py:396] Traceback (most recent call last):\n\
                   ERROR 05-27 11:47:57 [core.py:396]   File \"/x/core.py\", line 329, in __init__\n\
                   ERROR 05-27 11:47:57 [core.py:396]     super().__init__(vllm_config, executor_class, log_stats,\n";
        assert_eq!(root(log).0, 2);
    }

    #[test]
    fn a_library_exception_logged_as_a_warning_is_not_the_root_cause() {
        let log = "(EngineCore pid=4) WARNING 06-11 01:28:03 [import_utils.py:408] ImportError: cannot import name '_C' from partially initialized module 'deep_gemm'\n\
                   (EngineCore pid=4) ERROR 06-11 01:28:58 [core.py:1199] RuntimeError: Error in function 'BatchPrefill' at prefill.cuh:3201: Unsupported max_mma_kv: 0\n";
        assert_eq!(root(log).0, 2);
    }

    #[test]
    fn a_crash_report_defers_to_the_error_its_process_printed_just_before() {
        let log = "\
(Worker pid=7) INFO 05-11 15:34:02 [pynccl.py:111] vLLM is using nccl==2.28.9
[HAMI-core ERROR (pid:7 thread=1 multiprocess_memory_limit.c:1255)]: Illegal device id: 31069
!!!!!!! Segfault encountered !!!!!!!
  File \"/libvgpu/src/multiprocess/multiprocess_memory_limit.c\", line 469, in add_gpu_device_memory_usage
  File \"<unknown>\", line 0, in _PyObject_MakeTpCall
";
        assert_eq!(root(log), (2, "worker_killed_by_signal".to_string()));
        // Without the error record, the banner itself (not a frame of its native stack).
        let alone = log
            .lines()
            .filter(|l| !l.contains("HAMI"))
            .collect::<Vec<_>>()
            .join("\n");
        assert_eq!(root(&alone), (2, "worker_killed_by_signal".to_string()));
    }

    #[test]
    fn a_chained_exception_that_repeats_an_earlier_message_wraps_it() {
        let log = "\
Traceback (most recent call last):
  File \"/x/vllm/v1/attention/backends/flash_attn.py\", line 182, in __init__
    raise ValueError(
ValueError: Something the backend cannot do here.

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File \"/x/unsloth_zoo/vllm_utils.py\", line 1690, in load_vllm
    raise RuntimeError(error)
RuntimeError: Something the backend cannot do here.
";
        assert_eq!(root(log).0, 4);
    }

    #[test]
    fn dynamo_names_the_exception_its_backend_raised_on_the_next_line() {
        let log = "\
ERROR 05-28 18:58:32 [core.py:522] Traceback (most recent call last):
ERROR 05-28 18:58:32 [core.py:522]   File \"/x/vllm/compilation/compiler_interface.py\", line 414, in compile
ERROR 05-28 18:58:32 [core.py:522]     assert hash_str is not None, (
ERROR 05-28 18:58:32 [core.py:522] torch._dynamo.exc.BackendCompilerFailed: backend='<vllm.compilation.backends.VllmBackend object at 0x7f>' raised:
ERROR 05-28 18:58:32 [core.py:522] AssertionError: failed to get the hash of the compiled graph
ERROR 05-28 18:58:32 [core.py:522]
";
        assert_eq!(root(log).0, 5);
    }

    #[test]
    fn a_compiler_that_crashed_is_a_failure_of_its_own() {
        let log = "\
neuronx-cc terminated abnormally - Please open a support ticket at https://example.invalid/new
(EngineCore_DP0 pid=15120) ERROR 01-27 16:26:16 [core.py:866] EngineCore failed to start.
(EngineCore_DP0 pid=15120) ERROR 01-27 16:26:16 [core.py:866] Traceback (most recent call last):
(EngineCore_DP0 pid=15120) ERROR 01-27 16:26:16 [core.py:866]   File \"/x/vllm/v1/engine/core.py\", line 857, in run_engine_core
";
        assert_eq!(root(log).0, 1);
    }

    #[test]
    fn an_exception_python_ignored_is_no_failure() {
        let log = "\
ERROR 02-09 02:31:11 engine.py:389] ValueError: Ray does not allocate any GPUs on the driver node.
Exception ignored in atexit callback: <function shutdown at 0x7fa44c55bd80>
Traceback (most recent call last):
  File \"/x/ray/_private/worker.py\", line 1499, in sigterm_handler
    sys.exit(signum)
SystemExit: 15
";
        assert_eq!(root(log), (1, "ray_driver_node_without_gpu".to_string()));
    }

    #[test]
    fn an_exception_pasted_above_its_log_is_that_logs_failure() {
        // The reporter's summary line first, then the log: a plugin that failed to import, and
        // the platform detection that failed because of it.
        let log = "\
RuntimeError: Failed to infer device type
ERROR 04-16 13:55:44 __init__.py:46] Failed to load plugin ascend
ERROR 04-16 13:55:44 __init__.py:46] Traceback (most recent call last):
ERROR 04-16 13:55:44 __init__.py:46]   File \"/x/vllm/plugins/__init__.py\", line 41, in load_plugins_by_group
ERROR 04-16 13:55:44 __init__.py:46] ModuleNotFoundError: No module named 'vllm_ascend'
INFO 04-16 13:55:44 __init__.py:211] No platform detected, vLLM is running on UnspecifiedPlatform
Traceback (most recent call last):
  File \"/x/vllm/engine/arg_utils.py\", line 1, in create_engine_config
    device_config = DeviceConfig(device=self.device)
RuntimeError: Failed to infer device type
";
        assert_eq!(root(log).0, 5);
    }

    #[test]
    fn a_wrappers_message_that_carries_a_childs_output_defers_to_the_childs_exception() {
        let log = "\
[rank0]: Traceback (most recent call last):
[rank0]:   File \"/x/vllm/distributed/device_communicators/custom_all_reduce_utils.py\", line 223, in gpu_p2p_access_check
[rank0]:     raise RuntimeError(
[rank0]: RuntimeError: Error happened when batch testing peer-to-peer access from (0, 0, 1, 1) to (0, 1, 0, 1):
[rank0]: some noise of the child
[rank0]: Process SpawnProcess-1:
[rank0]: Traceback (most recent call last):
[rank0]:   File \"/x/vllm/distributed/device_communicators/cuda_wrapper.py\", line 127, in CUDART_CHECK
[rank0]:     raise RuntimeError(f\"CUDART error: {error_str}\")
[rank0]: RuntimeError: CUDART error: invalid argument
";
        assert_eq!(root(log), (10, "gpu_p2p_check_failed".to_string()));
    }

    #[test]
    fn a_failed_assert_in_native_code_is_the_failure_the_exception_after_it_reports() {
        let log = "\
python3: /project/lib/Dialect/TritonGPU/Transforms/AccelerateMatmul.cpp:42: int f(int): Assertion `false && \"computeCapability not supported\"' failed.
(EngineCore_0 pid=1) ERROR 07-09 02:09:12 [core.py:586] Traceback (most recent call last):
(EngineCore_0 pid=1) ERROR 07-09 02:09:12 [core.py:586]   File \"/x/triton/compiler/compiler.py\", line 1, in compile
(EngineCore_0 pid=1) ERROR 07-09 02:09:12 [core.py:586] RuntimeError: PassManager::run failed
";
        assert_eq!(root(log), (1, "triton_compile_error".to_string()));
    }

    #[test]
    fn the_c_librarys_heap_report_is_the_last_words_before_the_abort() {
        let log = "\
(RayWorkerWrapper pid=336) INFO 03-27 22:18:01 [pynccl.py:69] vLLM is using nccl==2.25.1
(RayWorkerWrapper pid=336) free(): double free detected in tcache 2
(RayWorkerWrapper pid=336) *** SIGABRT received at time=1743139179 on cpu 162 ***
(RayWorkerWrapper pid=336) Fatal Python error: Aborted
";
        assert_eq!(root(log), (2, "worker_killed_by_signal".to_string()));
    }

    #[test]
    fn without_a_signature_the_first_of_a_chain_of_direct_causes_names_the_failure() {
        let chain = |marker: &str| {
            format!(
                "Traceback (most recent call last):\n  File \"/x/mistral.py\", line 1, in f\n\
                 AttributeError: 'MistralTokenizer' object has no attribute 'init_kwargs'\n\n\
                 {marker}\n\nTraceback (most recent call last):\n  File \"/x/vllm/multimodal/processing.py\", line 2, in g\n\
                 RuntimeError: Failed to apply PixtralProcessor on data={{}} with kwargs={{}}\n"
            )
        };
        let direct = chain("The above exception was the direct cause of the following exception:");
        assert_eq!(root(&direct).0, 3);
        // Raised while handling the first: a failure of its own.
        let during = chain("During handling of the above exception, another exception occurred:");
        assert_eq!(root(&during).0, 9);
    }

    #[test]
    fn dynamo_names_the_exception_on_the_next_line_also_without_a_log_header() {
        let log = "\
Traceback (most recent call last):
  File \"/x/torch/_dynamo/output_graph.py\", line 1, in call_user_compiler
torch._dynamo.exc.BackendCompilerFailed: backend='<vllm.compilation.backends.VllmBackend object at 0x7f>' raised:
RuntimeError: Triton Error [CUDA]: device kernel image is invalid
";
        assert_eq!(root(log).0, 4);
    }

    #[test]
    fn an_out_of_memory_is_told_by_the_step_of_the_start_it_stopped() {
        let oom = |frame: &str| {
            format!(
                "ERROR 06-23 04:48:56 [core.py:519] Traceback (most recent call last):\n\
                 ERROR 06-23 04:48:56 [core.py:519]   File \"/x/vllm/v1/worker/gpu_model_runner.py\", line 1, in {frame}\n\
                 ERROR 06-23 04:48:56 [core.py:519] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.44 GiB.\n"
            )
        };
        for (frame, id) in [
            ("initialize_kv_cache_tensors", "cuda_oom_kv_cache_alloc"),
            ("_allocate_kv_cache", "cuda_oom_kv_cache_alloc"),
            ("profile_run", "cuda_oom_warmup"),
            ("capture_model", "cuda_oom_cudagraph_capture"),
            ("load_model", "cuda_oom_model_load"),
        ] {
            assert_eq!(root(&oom(frame)), (3, id.to_string()), "{frame}");
        }
    }

    #[test]
    fn an_exception_printed_again_after_its_traceback_is_that_traceback() {
        let log = "\
ERROR 06-23 04:48:56 [core.py:519] Traceback (most recent call last):
ERROR 06-23 04:48:56 [core.py:519]   File \"/x/vllm/v1/worker/gpu_model_runner.py\", line 1, in capture_model
ERROR 06-23 04:48:56 [core.py:519] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 112.00 MiB.
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 112.00 MiB.
";
        assert_eq!(root(log), (3, "cuda_oom_cudagraph_capture".to_string()));
    }

    #[test]
    fn a_code_line_that_lost_its_indentation_is_still_no_root_cause() {
        let log = "\
ERROR 03-18 13:09:10 core.py:291] EngineCore hit an exception: Traceback (most recent call last):
ERROR 03-18 13:09:10 core.py:291] File \"/x/kv_cache_utils.py\", line 455, in check
ERROR 03-18 13:09:10 core.py:291] raise ValueError(\"No available memory for the cache blocks. \"
ERROR 03-18 13:09:10 core.py:291] ValueError: No available memory for the cache blocks. Try increasing gpu_memory_utilization.
";
        assert_eq!(root(log), (4, "kv_cache_no_memory".to_string()));
    }

    #[test]
    fn an_exception_that_only_shows_an_objects_repr_defers_to_the_one_raised_from_it() {
        let log = "\
Traceback (most recent call last):
  File \"/x/collections/__init__.py\", line 1106, in __getitem__
    raise KeyError(key)
KeyError: <vllm.config.ModelConfig object at 0x7fec41821900>

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File \"/x/vllm/multimodal/registry.py\", line 96, in __getitem__
    raise KeyError(msg) from exc
KeyError: 'Cannot find `mm_limits` for model=/m. Did you forget to call `init_mm_limits_per_prompt`?'
";
        assert_eq!(root(log).0, 11);
    }

    #[test]
    fn a_caret_line_alone_is_never_a_root_cause() {
        // An excerpt that starts with the carets under a code line it lost, then a frame.
        let log = "\
(VllmWorker rank=2 pid=7)            ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
(VllmWorker rank=7 pid=9)   File \"/x/vllm/compilation/cuda_piecewise_backend.py\", line 1, in __call__
";
        assert_eq!(root(log).0, 2);
    }
    #[test]
    fn a_later_exception_takes_a_records_cause_only_when_its_own_line_states_it() {
        // Ray's report that a node died, then the engine's ActorDiedError, whose detail (not its
        // exception line) says the node died: the report is the origin.
        let log = "\
(EngineCore_DP0 pid=7) (raylet) The node with node id: 0d82f65b and address: 10.1.2.3 and node name: 10.1.2.3 has been marked dead because the detector has missed too many heartbeats from it.
(EngineCore_DP0 pid=7) ERROR 04-25 09:04:10 [core.py:948] Traceback (most recent call last):
(EngineCore_DP0 pid=7) ERROR 04-25 09:04:10 [core.py:948]   File \"/x/ray/_private/worker.py\", line 970, in get_objects
(EngineCore_DP0 pid=7) ERROR 04-25 09:04:10 [core.py:948]     raise value
(EngineCore_DP0 pid=7) ERROR 04-25 09:04:10 [core.py:948] ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.
(EngineCore_DP0 pid=7) ERROR 04-25 09:04:10 [core.py:948] The actor died because its node has died. Node Id: 0d82f65b
";
        assert_eq!(root(log), (1, "node_lost".to_string()));
    }

    #[test]
    fn v0_engines_keyboard_interrupt_on_sigterm_is_an_echo() {
        // The engine's failure, then the SIGTERM its front end sends turned into
        // KeyboardInterrupt by the engine's signal handler.
        let log = "\
ERROR 03-30 02:15:01 [engine.py:160] Traceback (most recent call last):
ERROR 03-30 02:15:01 [engine.py:160]   File \"/x/vllm/model_executor/guided_decoding/xgrammar_decoding.py\", line 355, in __call__
ERROR 03-30 02:15:01 [engine.py:160]     assert self.matchers[i].accept_token(sampled_token)
ERROR 03-30 02:15:01 [engine.py:160] AssertionError
CRITICAL 03-30 02:15:01 [launcher.py:116] MQLLMEngine is already dead, terminating server process
Process SpawnProcess-1:
Traceback (most recent call last):
  File \"/x/vllm/engine/multiprocessing/engine.py\", line 426, in signal_handler
    raise KeyboardInterrupt(\"MQLLMEngine terminated\")
KeyboardInterrupt: MQLLMEngine terminated
INFO 03-30 02:15:02 [multiproc_worker_utils.py:137] Terminating local vLLM worker processes
Exception ignored in: <function LLMEngine.__del__ at 0x71e575061300>
Traceback (most recent call last):
  File \"/usr/lib/python3.12/threading.py\", line 994, in start
    _start_new_thread(self._bootstrap, ())
RuntimeError: can't create new thread at interpreter shutdown
";
        assert_eq!(root(log).0, 4);
    }

    #[test]
    fn an_offline_engine_is_ready_once_initialised_and_a_cancelled_task_is_no_failure() {
        let log = "\
INFO 09-18 09:25:10 [llm_engine.py:240] Initializing a V0 LLM engine (v0.8.5.post1) with config: model='m'
INFO 09-18 09:25:40 [llm_engine.py:437] init engine (profile, create kv cache, warmup model) took 30.06 seconds
[2025-09-18 09:25:53] ERROR base_events.py:1758: Exception in callback done_callback(<Task cancelled>) at /w/backend.py:278
handle: <Handle done_callback(<Task cancelled>) at /w/backend.py:278>
Traceback (most recent call last):
  File \"/usr/lib/python3.10/asyncio/futures.py\", line 196, in result
    raise exc
asyncio.exceptions.CancelledError
";
        let v = one(log);
        assert_eq!(v.status, crate::Status::Ready, "{v:?}");
        assert!(v.root_cause.is_none());
        // A server is ready only once it serves: the same line under an API server is not.
        let server = "\
INFO 09-18 09:25:09 [api_server.py:1034] vLLM API server version 0.8.5.post1
INFO 09-18 09:25:40 [llm_engine.py:437] init engine (profile, create kv cache, warmup model) took 30.06 seconds
";
        assert_eq!(one(server).status, crate::Status::Starting);
    }
    #[test]
    fn tritons_compilation_error_defers_to_the_exception_it_was_raised_from() {
        let log = "\
(Worker_TP1 pid=7) ERROR 12-19 17:12:51 [multiproc_executor.py:826] Traceback (most recent call last):
(Worker_TP1 pid=7) ERROR 12-19 17:12:51 [multiproc_executor.py:826]   File \"/x/triton/language/semantic.py\", line 583, in arange
(Worker_TP1 pid=7) ERROR 12-19 17:12:51 [multiproc_executor.py:826]     raise ValueError(\"arange's range must be a power of 2\")
(Worker_TP1 pid=7) ERROR 12-19 17:12:51 [multiproc_executor.py:826] ValueError: arange's range must be a power of 2
(Worker_TP1 pid=7) ERROR 12-19 17:12:51 [multiproc_executor.py:826] 
(Worker_TP1 pid=7) ERROR 12-19 17:12:51 [multiproc_executor.py:826] The above exception was the direct cause of the following exception:
(Worker_TP1 pid=7) ERROR 12-19 17:12:51 [multiproc_executor.py:826] 
(Worker_TP1 pid=7) ERROR 12-19 17:12:51 [multiproc_executor.py:826] Traceback (most recent call last):
(Worker_TP1 pid=7) ERROR 12-19 17:12:51 [multiproc_executor.py:826]   File \"/x/triton/compiler/compiler.py\", line 1, in make_ir
(Worker_TP1 pid=7) ERROR 12-19 17:12:51 [multiproc_executor.py:826] triton.compiler.errors.CompilationError: at 106:17:
(Worker_TP1 pid=7) ERROR 12-19 17:12:51 [multiproc_executor.py:826]     if USE_ALIBI_SLOPES:
";
        assert_eq!(root(log), (4, "triton_compile_error".to_string()));
    }

    #[test]
    fn llvms_fatal_error_is_the_root_named_by_the_exception_that_reports_it() {
        let log = "\
(EngineCore_DP0 pid=7) INFO 07-31 15:57:42 [core.py:1] starting
Unsupported conversion from f16 to f16
LLVM ERROR: Unsupported rounding mode for conversion.
(EngineCore_DP0 pid=7) ERROR 07-31 15:57:54 [core.py:710] Dumping input data for V1 LLM engine
(EngineCore_DP0 pid=7) ERROR 07-31 15:57:54 [core.py:710] Traceback (most recent call last):
(EngineCore_DP0 pid=7) ERROR 07-31 15:57:54 [core.py:710]   File \"/x/triton/backends/nvidia/compiler.py\", line 1, in make_llir
(EngineCore_DP0 pid=7) ERROR 07-31 15:57:54 [core.py:710]     pm.run(mod)
(EngineCore_DP0 pid=7) ERROR 07-31 15:57:54 [core.py:710] RuntimeError: PassManager::run failed
";
        assert_eq!(root(log), (3, "triton_compile_error".to_string()));
    }

    #[test]
    fn a_death_report_after_an_asked_for_shutdown_is_no_failure() {
        let log = "\
(APIServer pid=9) INFO 08-01 23:30:00 [api_server.py:1] vLLM API server version 0.25.1
(APIServer pid=9) INFO:     Application startup complete.
(EngineCore pid=8) INFO 08-01 23:37:28 [core.py:1214] [shutdown] EngineCore: trigger received signal=SIGTERM
(APIServer pid=9) INFO 08-01 23:37:28 [launcher.py:100] [shutdown] API server: shutdown triggered
(APIServer pid=9) ERROR 08-01 23:37:28 [async_llm.py:704] Traceback (most recent call last):
(APIServer pid=9) ERROR 08-01 23:37:28 [async_llm.py:704]   File \"/x/vllm/v1/engine/async_llm.py\", line 1, in output_handler
(APIServer pid=9) ERROR 08-01 23:37:28 [async_llm.py:704] vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.
(APIServer pid=9) INFO:     Shutting down
(APIServer pid=9) INFO:     Application shutdown complete.
";
        let v = one(log);
        assert!(v.root_cause.is_none(), "{v:?}");
        assert_eq!(v.status, crate::Status::Stopped);
        // The same report with no shutdown asked for is the server's death.
        let died = log.replace("[shutdown] ", "");
        assert!(one(&died).root_cause.is_some());
        // A later run (its start cut from the log) answered after the shutdown: its engine's
        // death is no part of the earlier run's shutdown.
        let (before, report) = log.split_at(log.find("(APIServer pid=9) ERROR").expect("report"));
        let report: String = report.lines().take(3).map(|l| format!("{l}\n")).collect();
        let later = format!(
            "{before}(APIServer pid=9) INFO:     Shutting down\n\
             (APIServer pid=9) INFO:     Application shutdown complete.\n\
             INFO:     10.0.0.1:3210 - \"POST /v1/chat/completions HTTP/1.1\" 200 OK\n{report}"
        );
        assert!(one(&later).root_cause.is_some(), "{later}");
    }
    #[test]
    fn older_offline_engines_are_ready_at_their_last_start_line_or_their_first_output() {
        // V0 before 0.6: the graph capture ends the start.
        let v0 = "\
INFO 06-22 17:21:04 llm_engine.py:73] Initializing an LLM engine with config: model='m'
INFO 06-22 17:21:11 llm_engine.py:231] # GPU blocks: 1627, # CPU blocks: 780
INFO 06-22 17:21:20 model_runner.py:458] Graph capturing finished in 7 secs.
";
        assert_eq!(one(v0).status, crate::Status::Ready);
        // An eager engine: only `LLM.generate`'s progress bar says it served.
        let eager = "\
INFO 12-06 11:39:30 llm_engine.py:249] Initializing an LLM engine (v0.6.4.post1) with config: model='m'
INFO 12-06 11:39:36 gpu_executor.py:113] # GPU blocks: 1207, # CPU blocks: 1365
Processed prompts: 100%|███| 1/1 [00:00<00:00,  3.00it/s]
";
        assert_eq!(one(eager).status, crate::Status::Ready);
        let cut = "\
INFO 12-06 11:39:30 llm_engine.py:249] Initializing an LLM engine (v0.6.4.post1) with config: model='m'
INFO 12-06 11:39:36 gpu_executor.py:113] # GPU blocks: 1207, # CPU blocks: 1365
";
        assert_eq!(one(cut).status, crate::Status::Starting);
    }

    #[test]
    fn torchscripts_wrapper_defers_to_the_error_it_carries() {
        let log = "\
(EngineCore_DP0 pid=7) ERROR 06-27 02:23:02 [core.py:1008] Traceback (most recent call last):
(EngineCore_DP0 pid=7) ERROR 06-27 02:23:02 [core.py:1008]   File \"/x/torch/nn/modules/module.py\", line 1, in _call_impl
(EngineCore_DP0 pid=7) ERROR 06-27 02:23:02 [core.py:1008] RuntimeError: The following operation failed in the TorchScript interpreter.
(EngineCore_DP0 pid=7) ERROR 06-27 02:23:02 [core.py:1008] Traceback of TorchScript, original code (most recent call last):
(EngineCore_DP0 pid=7) ERROR 06-27 02:23:02 [core.py:1008]   File \"/x/neuronx_distributed/trace/spmd.py\", line 32, in forward
(EngineCore_DP0 pid=7) ERROR 06-27 02:23:02 [core.py:1008]             output = self.models[bucket_idx].forward(inputs)
(EngineCore_DP0 pid=7) ERROR 06-27 02:23:02 [core.py:1008] RuntimeError: Failed to execute the model status=1006 message=Execution Out-Of-Bounds Memory Access
";
        assert_eq!(root(log), (7, "cuda_kernel_fault".to_string()));
    }
    #[test]
    fn a_requests_error_that_reports_the_dead_engine_is_its_failure() {
        // V0's engine loop timed out; the next request is told the engine is dead, raised from
        // the loop's own error. The echo names nothing; the exception it was raised from does.
        let log = "\
ERROR:    Exception in ASGI application
Traceback (most recent call last):
  File \"/x/vllm/engine/async_llm_engine.py\", line 475, in engine_step
    request_outputs = await self.engine.step_async()
asyncio.exceptions.CancelledError

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File \"/x/asyncio/tasks.py\", line 458, in wait_for
    raise exceptions.TimeoutError() from exc
asyncio.exceptions.TimeoutError

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File \"/x/vllm/engine/async_llm_engine.py\", line 411, in start_background_loop
    raise AsyncEngineDeadError(
vllm.engine.async_llm_engine.AsyncEngineDeadError: Background loop has errored already
";
        let v = one(log);
        assert_eq!(v.status, crate::Status::Crashed, "{:?}", v.root_cause);
        assert_eq!(v.root_cause.expect("a root cause").line, 12);
    }

    #[test]
    fn a_wrapper_that_carries_an_error_defers_to_it() {
        // One worker's traceback kept only its wrapper (`raise type(err)(f"Error in model
        // execution (input dumped to …): {err}") from err`), another's the error itself.
        let log = "\
(VllmWorkerProcess pid=1) ERROR 01-07 13:38:08 multiproc_worker_utils.py:236] ValueError: Error in model execution (input dumped to /tmp/x.pkl): Attempted to assign 2074 multimodal tokens to 2040 placeholders
(VllmWorkerProcess pid=2) ERROR 01-07 13:38:08 multiproc_worker_utils.py:236] Traceback (most recent call last):
(VllmWorkerProcess pid=2) ERROR 01-07 13:38:08 multiproc_worker_utils.py:236]   File \"/x/vllm/model_executor/models/utils.py\", line 1, in merge
(VllmWorkerProcess pid=2) ERROR 01-07 13:38:08 multiproc_worker_utils.py:236] ValueError: Attempted to assign 2074 multimodal tokens to 2040 placeholders
";
        assert_eq!(root(log).0, 4);
        // A message that only goes on after another's (CPython's `Did you mean: …`) wraps
        // nothing.
        let log = "\
Traceback (most recent call last):
  File \"/x/vllm/transformers_utils/tokenizer.py\", line 1, in get
AttributeError: TokenizersBackend has no attribute all_special_tokens_extended. Did you mean: 'num_special_tokens_to_add'?
Traceback (most recent call last):
  File \"/x/vllm/entrypoints/llm.py\", line 1, in init
AttributeError: TokenizersBackend has no attribute all_special_tokens_extended
";
        assert_eq!(root(log).0, 3);
    }

    #[test]
    fn an_offline_engine_that_ran_is_up_wherever_its_caller_printed_that() {
        // tqdm leaves the progress bar's last state in the file when it closes: after the error
        // that stopped the generation.
        let log = "\
(VllmWorkerProcess pid=2) ERROR 01-07 13:38:08 multiproc_worker_utils.py:236] Traceback (most recent call last):
(VllmWorkerProcess pid=2) ERROR 01-07 13:38:08 multiproc_worker_utils.py:236]   File \"/x/vllm/worker/worker_base.py\", line 1, in execute
(VllmWorkerProcess pid=2) ERROR 01-07 13:38:08 multiproc_worker_utils.py:236] ValueError: bad input
Processed prompts:   0%|          | 0/1 [00:11<?, ?it/s]
";
        let v = one(log);
        assert_eq!(v.status, crate::Status::Crashed, "{:?}", v.root_cause);
        assert_eq!(v.root_cause.expect("a root cause").line, 3);
        // The quick-start example's outputs, then an exception CPython ignored at exit.
        let log = "\
Prompt: 'Hello, my name is', Generated text: ' Dustin'
Exception ignored in: <function TCPStore.__del__ at 0x7f930d38e8c0>
Traceback (most recent call last):
  File \"/x/cupyx/distributed/_store.py\", line 59, in __del__
TypeError: 'NoneType' object is not callable
";
        let v = one(log);
        assert!(v.root_cause.is_none(), "{:?}", v.root_cause);
        assert_eq!(v.status, crate::Status::Ready);
        // A shell's report that the process then died is a failure of its own.
        let died = format!("{log}[1]    3100846 segmentation fault (core dumped)  python run.py\n");
        assert_eq!(root(&died), (6, "worker_killed_by_signal".to_string()));
    }

    #[test]
    fn an_engine_that_went_on_making_tokens_survived_the_error_before() {
        let error = "\
Traceback (most recent call last):
  File \"/x/anyio/_backends/_asyncio.py\", line 680, in __aexit__
    raise BaseExceptionGroup(
ValueError: the request went wrong
";
        let stats = |tokens: &str| {
            format!("INFO 08-08 16:36:33 metrics.py:406] Avg prompt throughput: {tokens} tokens/s, Avg generation throughput: {tokens} tokens/s, Running: 77 reqs, Swapped: 0 reqs\n")
        };
        let busy = format!("{error}{}{}", stats("651.8"), stats("480.5"));
        assert!(one(&busy).root_cause.is_none());
        // One interval is not enough; an engine stuck at 0.0 tokens/s is not at work; an
        // elision may join two runs.
        let once = format!("{error}{}", stats("651.8"));
        let stuck = format!("{error}{}{}", stats("0.0"), stats("0.0"));
        let joined = format!("{error}[...]\n{}{}", stats("651.8"), stats("480.5"));
        // Two engines of a data-parallel server at the same instant are one interval of each.
        let dp = format!(
            "{error}{}{}",
            stats("651.8").replace("] Avg", "] Engine 000: Avg"),
            stats("480.5").replace("] Avg", "] Engine 001: Avg")
        );
        for log in [once, stuck, joined, dp] {
            assert_eq!(one(&log).root_cause.expect("a root cause").line, 4, "{log}");
        }
    }

    #[test]
    fn a_requests_own_error_is_told_by_where_it_was_raised() {
        // uvicorn's line, then the request's traceback on another stream (bare text).
        let asgi = "\
ERROR:    Exception in ASGI application
  + Exception Group Traceback (most recent call last):
  |   File \"/x/anyio/_backends/_asyncio.py\", line 763, in __aexit__
  |     raise BaseExceptionGroup(
  | ExceptionGroup: unhandled errors in a TaskGroup (1 sub-exception)
  +-+---------------- 1 ----------------
    | Traceback (most recent call last):
    |   File \"/x/vllm/entrypoints/openai/protocol.py\", line 513, in check_generation_prompt
    | AttributeError: 'bytes' object has no attribute 'get'
    +------------------------------------
";
        // A tool-call parser (a plugin's, without vLLM's log prefixes) on one request's output.
        let parser = "\
Traceback (most recent call last):
  File \"/app/hermes_tool_parser.py\", line 228, in extract_tool_calls_streaming
    function_name = current_tool_call.get(\"name\")
AttributeError: 'NoneType' object has no attribute 'get'
";
        for log in [asgi, parser] {
            let v = one(log);
            assert!(v.root_cause.is_none(), "{log}: {:?}", v.root_cause);
            assert_eq!(v.status, crate::Status::Ready, "{log}");
        }
        // The engine loop's error, handed to the request: the engine's failure.
        let engine = asgi.replace(
            "    |   File \"/x/vllm/entrypoints/openai/protocol.py\", line 513, in check_generation_prompt\n",
            "    |   File \"/x/vllm/engine/async_llm_engine.py\", line 498, in run_engine_loop\n",
        );
        assert_eq!(one(&engine).status, crate::Status::Crashed);
        // A child's fatal traceback printed right after the request's (V0's engine process on
        // the same stream): not the request's, whatever follows uvicorn's line.
        let request = "\
ERROR:    Exception in ASGI application
Traceback (most recent call last):
  File \"/x/vllm/entrypoints/openai/serving_chat.py\", line 1, in create_chat_completion
ValueError: bad request
";
        let fatal = "\
Process SpawnProcess-1:
Traceback (most recent call last):
  File \"/x/vllm/engine/multiprocessing/engine.py\", line 1, in run_mp_engine
RuntimeError: CUDA error: an illegal memory access was encountered
";
        let v = one(&format!("{request}{fatal}"));
        assert_eq!(v.root_cause.expect("a root cause").line, 8);
        // A chained exception is still the request's.
        let chained = format!(
            "{request}\nThe above exception was the direct cause of the following exception:\n\n{}",
            request.lines().skip(1).collect::<Vec<_>>().join("\n") + "\n"
        );
        assert!(one(&chained).root_cause.is_none(), "{chained}");
    }

    #[test]
    fn a_bare_error_colon_is_a_tools_message_not_an_exception() {
        // CPython names a non-builtin exception with its module (`shutil.Error: …`); `Error: …`
        // is a CI runner's or a CLI's line.
        let log = "\
Error:  TBE Subprocess[task_distribute] raise error[], main process disappeared!
ERROR 06-02 17:15:31 [multiproc_executor.py:135] Worker proc VllmWorker-3 died unexpectedly, shutting down executor.
Error: Executing the custom container implementation failed. Please contact your self hosted runner administrator.
";
        assert_eq!(root(log), (2, "worker_killed_by_signal".to_string()));
        assert!(crate::traceback::is_exception_statement(
            "shutil.Error: [Errno 2]"
        ));
    }

    #[test]
    fn torch_npus_inner_error_defers_to_the_report_above_it() {
        let report = "[rank0]:[E628 08:28:45.008203220 compiler_depend.ts:422] RopeOperation setup failed!\n";
        let exception = "\
Traceback (most recent call last):
  File \"/x/vllm_ascend/ops/rotary_embedding.py\", line 1, in forward
RuntimeError: The Inner error is reported as above. The process exits for this inner error, and the current working operator name is RopeOperation.
";
        assert_eq!(root(&format!("{report}{exception}")).0, 1);
        // A report of two lines (c10's error, then the ACL's): its head.
        let acl = "[ERROR] 2025-12-29-13:22:33 (PID:359, Device:0, RankID:-1) ERR00100 PTA call acl api failed\n";
        assert_eq!(root(&format!("{report}{acl}{exception}")).0, 1);
        // Without a report above it, the exception is what the log has.
        assert_eq!(root(exception).0, 3);
    }

    #[test]
    fn a_code_line_that_lost_its_indentation_stays_in_its_traceback() {
        // A paste that kept one space of the four under a frame: still the frame's code line,
        // not the end of the traceback.
        let log = "\
Traceback (most recent call last):
  File \"/x/starlette/_exception_handler.py\", line 53, in wrapped_app
 raise exc
  File \"/x/vllm/multimodal/utils.py\", line 111, in async_fetch_image
    image_raw = await global_http_connection.async_get_bytes(image_url)
ValueError: the image could not be fetched
";
        let v = one(log);
        assert_eq!(v.root_cause.expect("a root cause").line, 6);
        assert!(
            !v.diagnostics.iter().any(|d| d.contains("raise exc")),
            "{:?}",
            v.diagnostics
        );
    }

    #[test]
    fn uvicorns_access_line_gives_its_status_code() {
        let status = super::access_status;
        assert_eq!(
            status(r#"127.0.0.1:56492 - "POST /v1/chat/completions HTTP/1.1" 200 OK"#),
            Some("200")
        );
        assert_eq!(
            status(r#"10.0.0.1:1 - "GET /health HTTP/2" 500 Internal Server Error"#),
            Some("500")
        );
        assert_eq!(
            status(r#"10.0.0.1:1 - "GET /health HTTP/1.1" 404"#),
            Some("404")
        );
        assert_eq!(status(r#"said "hello world" 200 times"#), None);
        assert_eq!(status(r#"x - "GET / HTTP/1.1" 2000 OK"#), None);
        assert_eq!(status(r#"x - "GET / HTTP/1.1""#), None);
        assert_eq!(status("Application startup complete."), None);
    }

    #[test]
    fn a_server_that_answers_requests_is_ready_even_without_its_startup_lines() {
        let log = "\
(APIServer pid=9) INFO 09-20 19:07:49 [api_server.py:1896] vLLM API server version 0.10.2
(APIServer pid=9) INFO 09-20 19:08:39 [api_server.py:1971] Starting vLLM API server 0 on http://0.0.0.0:8000
(APIServer pid=9) INFO:     127.0.0.1:56492 - \"POST /v1/chat/completions HTTP/1.1\" 200 OK
";
        assert_eq!(one(log).status, crate::Status::Ready);
        let refused = log.replace("200 OK", "404 Not Found");
        assert_eq!(one(&refused).status, crate::Status::Starting);
        // Answers after a shutdown are a later run's, whose start the log did not keep.
        let again = format!(
            "{log}(APIServer pid=9) INFO:     Application shutdown complete.\n\
             INFO:     10.0.0.1:3210 - \"POST /v1/chat/completions HTTP/1.1\" 200 OK\n"
        );
        assert_eq!(one(&again).status, crate::Status::Ready);
        let stopped = format!("{log}(APIServer pid=9) INFO:     Application shutdown complete.\n");
        assert_eq!(one(&stopped).status, crate::Status::Stopped);
    }

    #[test]
    fn a_device_kernels_assert_is_the_root_named_by_the_runtime_error_after_it() {
        let log = "\
DumpHead: AIV-38, CoreType=AIV, block dim=40
[ASSERT] [CANN_VERSION : 8.1.RC1][TimeStamp : 0] /x/ascendc/gather_v3/gather_v3_base.h:137: Assertion `(0 <= val
&& val < this->gxSize_)' Index 326 out of range[0 257)!
Traceback (most recent call last):
  File \"/x/vllm_ascend/worker/model_runner_v1.py\", line 1, in execute_model
RuntimeError: ACL stream synchronize failed, error code:507035
";
        let (line, _) = root(log);
        assert_eq!(line, 2);
    }
    #[test]
    fn an_exception_groups_nested_traceback_reads_as_a_traceback() {
        // CPython 3.11+'s exception group: the nested traceback behind `| `, its borders.
        let log = "\
  + Exception Group Traceback (most recent call last):
  |   File \"/x/starlette/_utils.py\", line 76, in collapse_excgroups
  |     yield
  | ExceptionGroup: unhandled errors in a TaskGroup (1 sub-exception)
  +-+---------------- 1 ----------------
    | Traceback (most recent call last):
    |   File \"/x/vllm/worker/neuron_model_runner.py\", line 72, in _prepare_prompt
    |     assert len(block_table) == 1
    | AssertionError
    +------------------------------------
";
        assert_eq!(root(log).0, 9);
        assert_eq!(
            super::exception_group_body("    +------------------------------------"),
            Some("")
        );
        assert_eq!(
            super::exception_group_body("    |   File \"/x\", line 1, in f"),
            Some("  File \"/x\", line 1, in f")
        );
        assert_eq!(
            super::exception_group_body("| vllm | 1 | UNAVAILABLE"),
            Some("vllm | 1 | UNAVAILABLE")
        );
        assert_eq!(super::exception_group_body("INFO 1"), None);
    }
}

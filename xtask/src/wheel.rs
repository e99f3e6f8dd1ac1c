//! `cargo xtask wheel-check --vllm VERSION`: every `[file:line]` of a profile checked against a
//! released vLLM wheel's source.
//!
//! Local (it downloads the wheel with pip, no dependencies, about 330 MB); never run in CI. For
//! each message of the profile it finds the logger call that prints the message's literal text in
//! the file the profile names, and compares the call's line and level with the profile's; for each
//! traceback frame in vLLM's package it compares the source line at the frame's line with the
//! frame's source. A mismatch is reported with the line found, as the profile entry to write, so
//! a new release's profile starts from its base profile's entries checked against the new wheel
//! (`--profile BASE`).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use generator::profile::{Frame, MsgSpec, Profile};
use generator::Version;

/// Options of `cargo xtask wheel-check`.
#[derive(clap::Args, Debug)]
pub struct WheelCheckArgs {
    /// The vLLM release whose wheel is read (e.g. 0.24.0).
    #[arg(long)]
    vllm: String,
    /// The profile to check (default: the profile for that release). Name a base profile to
    /// check its entries against a release that has no profile yet.
    #[arg(long)]
    profile: Option<String>,
    /// An unpacked wheel or a site-packages directory (holding `vllm/`) instead of downloading.
    #[arg(long)]
    wheel: Option<PathBuf>,
    /// Also list the entries that agree.
    #[arg(long)]
    verbose: bool,
    /// Write the lines found into the profile's own file (data/profiles/…): an entry it defines
    /// is edited in place, an inherited one gets an override. Entries not located are left for
    /// reading by hand.
    #[arg(long)]
    fix: bool,
}

pub fn run(a: WheelCheckArgs) -> Result<i32> {
    let release = Version::parse(&a.vllm)
        .with_context(|| format!("--vllm {}: not a release number", a.vllm))?;
    let profile = match &a.profile {
        Some(p) => {
            let v = Version::parse(p).with_context(|| format!("--profile {p}: not a release"))?;
            Profile::all()
                .iter()
                .find(|q| q.version == v)
                .with_context(|| {
                    let known: Vec<String> = Profile::all()
                        .iter()
                        .map(|q| q.version.to_string())
                        .collect();
                    format!(
                        "--profile {p}: no such profile (profiles: {})",
                        known.join(", ")
                    )
                })?
        }
        None => {
            if !Profile::knows(release) {
                bail!(
                    "{}; name the profile to check against its wheel with --profile",
                    Profile::unknown_release(&a.vllm)
                );
            }
            Profile::for_version(release)
        }
    };
    if a.fix && profile.version != release {
        bail!(
            "--fix writes into the profile of the release checked, and vLLM {} has none (its \
             nearest is {}): create data/profiles/v{}.toml inheriting it, then run --fix again",
            a.vllm,
            profile.version,
            a.vllm
        );
    }
    let root = match &a.wheel {
        Some(w) => w.clone(),
        None => unpack(&a.vllm)?,
    };
    if !root.join("vllm").is_dir() {
        bail!("{}: holds no vllm/ package", root.display());
    }
    let tree = Tree::read(&root.join("vllm"))?;
    eprintln!(
        "wheel-check: profile {} against vLLM {}'s source ({} files)",
        profile.version,
        a.vllm,
        tree.files.len()
    );
    let mut tally = Tally::default();
    let mut fixes = Fixes::default();
    for (key, m) in &profile.msg {
        let finding = check_msg(&tree, m);
        tally.add(
            &finding,
            a.verbose,
            || format!("msg {key}"),
            |at| format!("{key} = {{ at = \"{at}\", level = \"{}\", … }}", m.level),
        );
        if let Finding::Moved(at, _) = finding {
            fixes.msg.push((key.clone(), m.clone(), at));
        }
    }
    for (key, frames) in &profile.stack {
        let mut fixed = frames.clone();
        for (i, f) in frames.iter().enumerate() {
            let finding = check_frame(&tree, f);
            tally.add(
                &finding,
                a.verbose,
                || format!("stack {key}[{i}] {}", f.function),
                |at| format!("\"{}:{at} {} | …\"", f.path, f.function),
            );
            if let Finding::Moved(at, _) = finding {
                fixed[i].line = at.parse().expect("a frame's line is a number");
            }
        }
        if fixed != *frames {
            fixes.stack.push((key.clone(), frames.clone(), fixed));
        }
    }
    if a.fix && !(fixes.msg.is_empty() && fixes.stack.is_empty()) {
        let file = fixes.write(profile.version)?;
        eprintln!(
            "wheel-check: wrote {} messages and {} stacks into {}",
            fixes.msg.len(),
            fixes.stack.len(),
            file.display()
        );
    }
    println!(
        "\n{} agree, {} moved, {} not located (read by hand), {} outside vLLM's package (not checked)",
        tally.ok, tally.moved, tally.missing, tally.outside
    );
    Ok(i32::from(tally.moved + tally.missing > 0))
}

/// The entries found at other lines: messages (key, entry, new `file:line`) and stacks (key,
/// frames, frames with their new lines).
#[derive(Default)]
struct Fixes {
    msg: Vec<(String, MsgSpec, String)>,
    stack: Vec<(String, Vec<Frame>, Vec<Frame>)>,
}

impl Fixes {
    /// Edits the profile file of `version`: entries it defines in place, overrides of inherited
    /// ones right under their table's header.
    fn write(&self, version: Version) -> Result<PathBuf> {
        let dir =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../simulators/generator/data/profiles");
        let wanted = format!("version = \"{version}\"");
        let file = fs::read_dir(&dir)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .find(|p| fs::read_to_string(p).is_ok_and(|t| t.lines().any(|l| l.trim() == wanted)))
            .with_context(|| format!("no file in {} says {wanted}", dir.display()))?;
        let mut lines: Vec<String> = fs::read_to_string(&file)?
            .lines()
            .map(str::to_string)
            .collect();
        let mut new_msgs = Vec::new();
        for (key, m, at) in &self.msg {
            let head = format!("{} = {{", toml_key(key));
            match lines.iter_mut().find(|l| l.starts_with(&head)) {
                Some(l) => {
                    *l = l.replacen(&format!("at = \"{}\"", m.at), &format!("at = \"{at}\""), 1)
                }
                None => {
                    let mut entry = format!(
                        "{head} at = {}, level = {}, text = {}",
                        toml_str(at),
                        toml_str(&m.level),
                        toml_str(&m.text)
                    );
                    if let Some(r) = &m.ranks {
                        let r = serde_json::to_value(r)?;
                        entry.push_str(&format!(", ranks = {r}"));
                    }
                    new_msgs.push(entry + " }");
                }
            }
        }
        let mut new_stacks = Vec::new();
        for (key, old, new) in &self.stack {
            let head = format!("{} = [", toml_key(key));
            match lines.iter().position(|l| l.starts_with(&head)) {
                Some(start) => {
                    for (o, n) in old.iter().zip(new) {
                        let from = format!("\"{}:{} {}", o.path, o.line, o.function);
                        let to = format!("\"{}:{} {}", n.path, n.line, n.function);
                        if let Some(l) = lines[start..]
                            .iter_mut()
                            .find(|l| l.trim_start().starts_with(&from))
                        {
                            *l = l.replacen(&from, &to, 1);
                        }
                    }
                }
                None => {
                    new_stacks.push(head);
                    new_stacks.extend(
                        new.iter()
                            .map(|f| format!("  {},", toml_str(&frame_string(f)))),
                    );
                    new_stacks.push("]".into());
                }
            }
        }
        insert_under(&mut lines, "[msg]", new_msgs);
        insert_under(&mut lines, "[stack]", new_stacks);
        fs::write(&file, lines.join("\n") + "\n")?;
        Ok(file)
    }
}

/// Puts `entries` right under a table's header line (the table is added at the end if absent).
fn insert_under(lines: &mut Vec<String>, header: &str, entries: Vec<String>) {
    if entries.is_empty() {
        return;
    }
    let at = match lines.iter().position(|l| l.trim() == header) {
        Some(at) => at,
        None => {
            // A new profile that only names its base: the table starts here.
            lines.extend([String::new(), header.to_string()]);
            lines.len() - 1
        }
    };
    let mut block = vec![
        "# Lines read in the release's wheel (cargo xtask wheel-check --fix); frames it could not"
            .to_string(),
        "# place keep their inherited lines.".to_string(),
    ];
    block.extend(entries);
    block.push(String::new());
    lines.splice(at + 1..at + 1, block);
}

/// A key as TOML writes it: bare where it can be.
fn toml_key(key: &str) -> String {
    if key
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        key.to_string()
    } else {
        toml_str(key)
    }
}

/// A basic TOML string (JSON's escapes are TOML's).
fn toml_str(s: &str) -> String {
    serde_json::to_string(s).expect("a string serializes")
}

/// A frame as profiles write it: `PATH:LINE FUNCTION | SOURCE | CARET`.
fn frame_string(f: &Frame) -> String {
    // The console script's line is the host's, resolved when rendering.
    let line = if f.path == "${console_script}" && f.line == 0 {
        "${console_script_line}".to_string()
    } else {
        f.line.to_string()
    };
    let mut s = format!("{}:{line} {}", f.path, f.function);
    if let Some(src) = &f.source {
        s.push_str(" | ");
        s.push_str(src);
    }
    if let Some(c) = &f.caret {
        s.push_str(" | ");
        s.push_str(c);
    }
    s
}

/// Downloads and unpacks the wheel's Python files under target/faultkit-wheels/vllm-VERSION.
fn unpack(version: &str) -> Result<PathBuf> {
    let base = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../target/faultkit-wheels")
        .join(format!("vllm-{version}"));
    let done = base.join(".unpacked");
    if done.exists() {
        return Ok(base);
    }
    let dl = base.join("download");
    fs::create_dir_all(&dl)?;
    eprintln!("==> wheel-check: pip download vllm=={version} --no-deps (about 330 MB)");
    let status = Command::new("python3")
        .args([
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary",
            ":all:",
            "--quiet",
        ])
        .arg("--dest")
        .arg(&dl)
        .arg(format!("vllm=={version}"))
        .status()
        .context("running python3 -m pip")?;
    if !status.success() {
        bail!("pip download vllm=={version} failed ({status})");
    }
    let wheel = fs::read_dir(&dl)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .with_context(|| format!("{}: pip left no wheel", dl.display()))?;
    // Only the Python sources: the compiled kernels are most of the wheel.
    let script = "import sys, zipfile\n\
                  z = zipfile.ZipFile(sys.argv[1])\n\
                  z.extractall(sys.argv[2], [n for n in z.namelist() if n.endswith('.py')])\n";
    let status = Command::new("python3")
        .args(["-c", script])
        .arg(&wheel)
        .arg(&base)
        .status()
        .context("running python3 to unpack the wheel")?;
    if !status.success() {
        bail!("unpacking {} failed ({status})", wheel.display());
    }
    fs::remove_file(&wheel)?;
    fs::write(&done, "")?;
    Ok(base)
}

/// The package's Python files, by path relative to its parent (`vllm/…`).
struct Tree {
    files: BTreeMap<String, Vec<String>>,
}

impl Tree {
    fn read(pkg: &Path) -> Result<Tree> {
        let parent = pkg.parent().unwrap_or(pkg);
        let mut files = BTreeMap::new();
        let mut stack = vec![pkg.to_path_buf()];
        while let Some(dir) = stack.pop() {
            for e in fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))? {
                let p = e?.path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|x| x == "py") {
                    let rel = p.strip_prefix(parent)?.to_string_lossy().into_owned();
                    let text = String::from_utf8_lossy(&fs::read(&p)?).into_owned();
                    files.insert(rel, text.lines().map(str::to_string).collect());
                }
            }
        }
        Ok(Tree { files })
    }

    fn named<'a>(&'a self, base: &'a str) -> impl Iterator<Item = (&'a str, &'a [String])> + 'a {
        self.files
            .iter()
            .filter(move |(p, _)| p.rsplit('/').next() == Some(base))
            .map(|(p, l)| (p.as_str(), l.as_slice()))
    }
}

/// What the wheel says about one entry.
enum Finding {
    Ok,
    /// At another line (and the note, e.g. another level or file).
    Moved(String, Option<String>),
    Missing(String),
    Outside,
}

#[derive(Default)]
struct Tally {
    ok: usize,
    moved: usize,
    missing: usize,
    outside: usize,
}

impl Tally {
    fn add(
        &mut self,
        f: &Finding,
        verbose: bool,
        what: impl Fn() -> String,
        entry: impl Fn(&str) -> String,
    ) {
        match f {
            Finding::Ok => {
                self.ok += 1;
                if verbose {
                    println!("ok       {}", what());
                }
            }
            Finding::Moved(at, note) => {
                self.moved += 1;
                let note = note
                    .as_deref()
                    .map(|n| format!("  ({n})"))
                    .unwrap_or_default();
                println!("moved    {}: {}{note}", what(), entry(at));
            }
            Finding::Missing(why) => {
                self.missing += 1;
                println!("missing  {}: {why}", what());
            }
            Finding::Outside => self.outside += 1,
        }
    }
}

/// Runs of three words of a message's literal text that a single source line would hold: words
/// touching a `${…}` field, or holding quotes, backslashes or format characters, break a run. A
/// text without such a run gives its longest run, if it has six characters or more.
fn probes(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut longest: Vec<&str> = Vec::new();
    for line in text.split('\n') {
        let mut run: Vec<&str> = Vec::new();
        let words = line
            .split_whitespace()
            .map(Some)
            .chain(std::iter::once(None));
        for w in words {
            match w.filter(|w| !w.contains("${") && !w.contains(['"', '\'', '\\', '%', '{', '}'])) {
                Some(w) => {
                    run.push(w);
                    if run.len() >= 3 {
                        out.push(run[run.len() - 3..].join(" "));
                    }
                }
                None => {
                    if run.join(" ").len() > longest.join(" ").len() {
                        longest = std::mem::take(&mut run);
                    }
                    run.clear();
                }
            }
        }
    }
    if out.is_empty() && longest.join(" ").len() >= 6 {
        out.push(longest.join(" "));
    }
    out
}

/// The logging level of a call that opens on this line: a logger method by its name, a call of
/// something named `*log*` (a chosen logger method, `log_level(…)`) at any level, or a `print`.
fn call_level(line: &str) -> Option<&'static str> {
    const METHODS: [(&str, &str); 7] = [
        ("debug", "DEBUG"),
        ("info", "INFO"),
        ("warning", "WARNING"),
        ("warn", "WARNING"),
        ("error", "ERROR"),
        ("exception", "ERROR"),
        ("critical", "CRITICAL"),
    ];
    let t = line.trim_start();
    let t = t.strip_prefix("return ").unwrap_or(t);
    let callee = t.split('(').next().filter(|c| c.len() < t.len())?;
    if callee.contains(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.')) {
        return None;
    }
    if callee == "print" {
        return Some("ANY");
    }
    if let Some((object, method)) = callee.rsplit_once('.') {
        if object.to_ascii_lowercase().contains("log") {
            let method = method.trim_end_matches("_once");
            return Some(
                METHODS
                    .iter()
                    .find(|(m, _)| *m == method)
                    .map_or("ANY", |(_, level)| level),
            );
        }
    }
    callee.to_ascii_lowercase().contains("log").then_some("ANY")
}

/// The line (1-based) of the call that holds source line `hit` (0-based): the nearest line at or
/// above it, within ten, that opens a logging call or a `print`.
fn call_line(lines: &[String], hit: usize) -> Option<(usize, &'static str)> {
    (hit.saturating_sub(10)..=hit)
        .rev()
        .find_map(|i| call_level(&lines[i]).map(|l| (i + 1, l)))
}

fn check_msg(tree: &Tree, m: &MsgSpec) -> Finding {
    let file = m.file();
    let Ok(at) = m.line().parse::<usize>() else {
        return Finding::Outside;
    };
    let candidates: Vec<(&str, &[String])> = tree.named(file).collect();
    if candidates.is_empty() {
        return Finding::Outside;
    }
    let probes = probes(&m.text);
    if probes.is_empty() {
        return Finding::Missing("no literal text to look for".into());
    }
    // Every call in a file of that name whose lines hold a probe: (file, call line, level,
    // probes it holds).
    let mut calls: Vec<(&str, usize, &str, usize)> = Vec::new();
    for (path, lines) in &candidates {
        for (i, l) in lines.iter().enumerate() {
            let held = probes.iter().filter(|p| l.contains(p.as_str())).count();
            if held == 0 {
                continue;
            }
            if let Some((c, level)) = call_line(lines, i) {
                match calls.iter_mut().find(|(p, n, _, _)| p == path && *n == c) {
                    Some(call) => call.3 += held,
                    None => calls.push((path, c, level, held)),
                }
            }
        }
    }
    let wanted = m.level.as_str();
    let level_ok = |l: &str| l == wanted || l == "ANY";
    // A logging call at the profile's line whose text is a variable (`logger.warning(msg)`): the
    // message is built above it, and the call is where the record comes from.
    let variable_call = |lines: &[String]| {
        lines
            .get(at.wrapping_sub(1))
            .is_some_and(|l| call_level(l).is_some_and(level_ok) && !l.contains(['"', '\'']))
    };
    if calls.is_empty() && candidates.len() == 1 && variable_call(candidates[0].1) {
        return Finding::Ok;
    }
    if calls.is_empty() {
        return Finding::Missing(format!(
            "no call in any {file} prints \"{}\" (a message built elsewhere: read it by hand)",
            probes[0]
        ));
    }
    let best = calls.iter().map(|c| c.3).max().unwrap_or(0);
    if calls
        .iter()
        .any(|&(_, n, l, held)| n == at && level_ok(l) && 2 * held >= best)
    {
        return Finding::Ok;
    }
    let &(path, n, level, held) = calls
        .iter()
        .min_by_key(|&&(_, n, l, held)| (!level_ok(l), std::cmp::Reverse(held), n.abs_diff(at)))
        .expect("calls is not empty");
    if 3 * held < probes.len() {
        return Finding::Missing(format!(
            "not located: the call nearest its words, {path}:{n}, holds {held} of {} (a message \
             built elsewhere: read it by hand)",
            probes.len()
        ));
    }
    if !level_ok(level) {
        return Finding::Missing(format!(
            "the call at {path}:{n} prints at {level}, not {wanted}"
        ));
    }
    let mut notes = Vec::new();
    if candidates.len() > 1 {
        notes.push(path.to_string());
    }
    Finding::Moved(
        format!("{file}:{n}"),
        (!notes.is_empty()).then(|| notes.join("; ")),
    )
}

/// The name of the function whose body holds line `i` (0-based): the nearest `def` above it
/// indented less than the line.
fn enclosing_def(lines: &[String], i: usize) -> Option<&str> {
    let indent = |s: &str| s.len() - s.trim_start().len();
    let mut limit = indent(&lines[i]);
    for l in lines[..i].iter().rev() {
        let t = l.trim_start();
        // Blank lines, comments, decorators, strings and the closing brackets of a multi-line
        // signature or call do not open a block.
        if t.is_empty() || indent(l) >= limit || t.starts_with([')', ']', '}', '#', '@', '"', '\''])
        {
            continue;
        }
        if let Some(rest) = t
            .strip_prefix("def ")
            .or_else(|| t.strip_prefix("async def "))
        {
            return rest.split('(').next();
        }
        limit = indent(l);
        if limit == 0 {
            break;
        }
    }
    None
}

fn check_frame(tree: &Tree, f: &Frame) -> Finding {
    if !f.path.starts_with("vllm/") {
        return Finding::Outside;
    }
    let Some(lines) = tree.files.get(&f.path) else {
        return Finding::Missing(format!("{} is not in the wheel", f.path));
    };
    // A lambda's or a comprehension's frame is named by its kind, not by a `def`.
    let anonymous = f.function.starts_with('<') && f.function != "<module>";
    let in_function = |i: usize| {
        anonymous
            || f.function == "<module>" && enclosing_def(lines, i).is_none()
            || enclosing_def(lines, i) == Some(f.function.as_str())
    };
    let line = f.line as usize;
    let Some(source) = f.source.as_deref().map(str::trim) else {
        return if line >= 1 && line <= lines.len() && in_function(line - 1) {
            Finding::Ok
        } else {
            Finding::Missing(format!("line {line} is not in {}", f.function))
        };
    };
    if line >= 1 && line <= lines.len() && lines[line - 1].trim() == source {
        return Finding::Ok;
    }
    let hits: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].trim() == source)
        .collect();
    let best = hits
        .iter()
        .min_by_key(|&&i| (!in_function(i), (i + 1).abs_diff(line)))
        .copied();
    let in_it: Vec<usize> = hits.iter().copied().filter(|&i| in_function(i)).collect();
    if in_it.len() > 1 {
        let at: Vec<String> = in_it.iter().map(|i| (i + 1).to_string()).collect();
        return Finding::Missing(format!(
            "`{source}` is at lines {} of {}: which one is the frame's",
            at.join(", "),
            f.function
        ));
    }
    match best {
        Some(i) if in_function(i) => Finding::Moved((i + 1).to_string(), None),
        Some(i) => Finding::Missing(format!(
            "`{source}` is at line {} of {}, in {}, not {}",
            i + 1,
            f.path,
            enclosing_def(lines, i).unwrap_or("<module>"),
            f.function
        )),
        None => Finding::Missing(format!("no line of {} reads `{source}`", f.path)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(s: &str) -> Vec<String> {
        s.lines().map(str::to_string).collect()
    }

    #[test]
    fn fixes_go_under_their_table_which_a_new_profile_gets_at_its_end() {
        let mut l = lines("version = \"9.0\"\n[msg]\na = 1");
        insert_under(&mut l, "[msg]", vec!["b = 2".into()]);
        assert_eq!(l[1], "[msg]");
        assert_eq!(&l[4..], ["b = 2", "", "a = 1"]);
        let mut l = lines("version = \"9.0\"\ninherits = \"8.0\"");
        insert_under(&mut l, "[stack]", vec!["s = []".into()]);
        assert_eq!(l[2..4], ["", "[stack]"]);
        assert_eq!(l[6], "s = []");
        let parsed: toml::Table = l.join("\n").parse().unwrap();
        assert!(parsed["stack"].get("s").is_some());
        let mut l = lines("version = \"9.0\"");
        insert_under(&mut l, "[msg]", vec![]);
        assert_eq!(l.len(), 1, "nothing to write adds no table");
    }

    #[test]
    fn probes_skip_fields_and_format_characters() {
        let p = probes("Using max model len ${max_model_len}");
        assert_eq!(p, ["Using max model", "max model len"]);
        assert!(probes("${a} ${b}").is_empty());
        assert_eq!(
            probes("Casting torch.${from} to torch.${dtype}."),
            ["Casting"]
        );
        assert_eq!(probes("Upcasting torch.${from} to x"), ["Upcasting"]);
    }

    #[test]
    fn a_call_is_found_above_its_string_and_its_level_read() {
        let src = lines(
            "def f():\n    logger.warning(\n        \"Found ulimit of %s and failed\"\n        \" to raise it\", x)\n",
        );
        assert_eq!(call_line(&src, 2), Some((2, "WARNING")));
        assert_eq!(call_level("    log_level(\"x\")"), Some("ANY"));
        assert_eq!(call_level("    logger.info_once(x)"), Some("INFO"));
        assert_eq!(call_level("    x = f(\"Using\")"), None);
        assert_eq!(enclosing_def(&src, 2), Some("f"));
        let sig =
            lines("class A:\n    def __init__(\n        self,\n    ) -> None:\n        x = 1\n");
        assert_eq!(enclosing_def(&sig, 4), Some("__init__"));
    }
}

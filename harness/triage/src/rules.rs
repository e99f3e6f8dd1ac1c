//! Signature rules: how a root cause shows in a log, as data (`harness/rules/signatures.toml`,
//! embedded at build time, extendable with `--rules FILE`).
//!
//! Main type: [`RuleSet`]. Matching is two-step: one Aho–Corasick pass over a line finds which
//! rules' literals occur, then only those rules' regexes run.

use std::fmt;
use std::sync::OnceLock;

use aho_corasick::AhoCorasick;
use regex::Regex;
use serde::Deserialize;

/// What a matching line says about the failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// A root cause.
    Cause,
    /// A root cause only when nothing else failed (a supervisor's report, a watchdog timeout).
    Weak,
    /// A known consequence of another failure.
    Echo,
    /// Never a candidate.
    Noise,
}

/// A regex compiled when it is first used: the built-in set has about two hundred, and a run
/// meets the literals of a few (startup stays what one rule costs, not what all of them cost).
/// User rules are compiled when they are read, so that a bad pattern is reported with its rule.
#[derive(Clone, Debug)]
pub struct LazyRegex {
    src: String,
    re: OnceLock<Regex>,
}

impl LazyRegex {
    fn lazy(src: &str) -> LazyRegex {
        LazyRegex {
            src: src.to_string(),
            re: OnceLock::new(),
        }
    }

    fn compiled(src: &str) -> Result<LazyRegex, regex::Error> {
        let re = Regex::new(src)?;
        Ok(LazyRegex {
            src: src.to_string(),
            re: OnceLock::from(re),
        })
    }

    pub fn get(&self) -> &Regex {
        self.re.get_or_init(|| {
            Regex::new(&self.src).expect("built-in rule patterns compile (checked by tests)")
        })
    }

    pub fn is_match(&self, s: &str) -> bool {
        self.get().is_match(s)
    }

    pub fn as_str(&self) -> &str {
        &self.src
    }
}

/// One rule.
#[derive(Clone, Debug)]
pub struct Rule {
    pub id: String,
    pub role: Role,
    pub regex: LazyRegex,
    pub frames: Option<LazyRegex>,
    /// Must match the traceback's innermost frame above the line: the code that raised (a
    /// call across packages, say, where `frames` would accept any frame of the traceback).
    pub raised_in: Option<LazyRegex>,
    pub prefer: Option<LazyRegex>,
    pub any_level: bool,
    /// An echo or weak rule that decides its line whatever cause rule also matches it: the line
    /// reports a failure told elsewhere (`… please check the stack trace above for the root
    /// cause`), or one vLLM logs and survives (`Error retrieving safetensors: …`); the cause it
    /// quotes only names it.
    pub wraps: bool,
    pub hung: bool,
    pub priority: i32,
    pub layer: Option<String>,
    pub meaning: Option<String>,
    pub fix: Option<String>,
    /// Prefilter: at least one must occur in the line.
    pub literals: Vec<String>,
    /// From a `--rules` file.
    pub user: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    rule: Vec<RawRule>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    id: String,
    role: Option<Role>,
    #[serde(default)]
    literals: Vec<String>,
    regex: String,
    frames: Option<String>,
    raised_in: Option<String>,
    prefer: Option<String>,
    #[serde(default)]
    any_level: bool,
    #[serde(default)]
    wraps: bool,
    status: Option<String>,
    priority: Option<i32>,
    layer: Option<String>,
    meaning: Option<String>,
    fix: Option<String>,
}

/// An automaton over the literals of the rules `keep` selects, and for each literal the rules it
/// selects.
fn literal_index(rules: &[Rule], keep: impl Fn(&Rule) -> bool) -> (AhoCorasick, Vec<Vec<usize>>) {
    let mut literals: Vec<&str> = Vec::new();
    let mut by_literal: Vec<Vec<usize>> = Vec::new();
    for (i, rule) in rules.iter().enumerate().filter(|(_, r)| keep(r)) {
        for l in &rule.literals {
            match literals.iter().position(|x| x == l) {
                Some(p) => by_literal[p].push(i),
                None => {
                    literals.push(l);
                    by_literal.push(vec![i]);
                }
            }
        }
    }
    let ac = AhoCorasick::new(&literals).expect("literals build an automaton");
    (ac, by_literal)
}

/// A rule file problem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleError {
    pub source: String,
    pub message: String,
}

impl fmt::Display for RuleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.source, self.message)
    }
}

impl std::error::Error for RuleError {}

/// All rules, with the literal prefilter.
#[derive(Clone, Debug)]
pub struct RuleSet {
    rules: Vec<Rule>,
    ac: AhoCorasick,
    /// For each literal pattern, the rules it selects.
    by_literal: Vec<Vec<usize>>,
    /// Rules without literals: always run.
    always: Vec<usize>,
    /// The literals of the rules that match at any level (info and warning records): most
    /// lines of a log are info records, which only these rules can name.
    ac_any_level: AhoCorasick,
    /// For each of those literals, the rules it selects.
    by_any_level_literal: Vec<Vec<usize>>,
}

const BUILTIN: &str = include_str!("../rules/signatures.toml");

/// The taxonomy ids (the same file the simulator uses).
pub fn taxonomy_ids() -> &'static [String] {
    vocab::taxonomy::ids()
}

impl RuleSet {
    /// The built-in rules.
    pub fn builtin() -> &'static RuleSet {
        static SET: OnceLock<RuleSet> = OnceLock::new();
        SET.get_or_init(|| {
            let rules = parse(BUILTIN, "built-in signatures.toml", false)
                .expect("built-in rules are valid (checked by tests)");
            RuleSet::from_rules(rules)
        })
    }

    /// The built-in rules plus a user rule file (its rules take precedence at equal priority).
    pub fn with_user_rules(text: &str, source: &str) -> Result<RuleSet, RuleError> {
        let mut rules = parse(text, source, true)?;
        rules.extend(RuleSet::builtin().rules.iter().cloned());
        Ok(RuleSet::from_rules(rules))
    }

    fn from_rules(rules: Vec<Rule>) -> RuleSet {
        let always = (0..rules.len())
            .filter(|&i| rules[i].literals.is_empty())
            .collect();
        let (ac, by_literal) = literal_index(&rules, |_| true);
        let (ac_any_level, by_any_level_literal) = literal_index(&rules, |r| r.any_level);
        RuleSet {
            rules,
            ac,
            by_literal,
            always,
            ac_any_level,
            by_any_level_literal,
        }
    }

    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// Whether a rule that matches at any level (`any_level`) matches `line`: all that an info
    /// record can be named by.
    pub fn any_level_match(&self, line: &str) -> bool {
        if !self.always.is_empty() {
            return self.matches(line).iter().any(|&i| self.rules[i].any_level);
        }
        self.ac_any_level.find_overlapping_iter(line).any(|m| {
            self.by_any_level_literal[m.pattern().as_usize()]
                .iter()
                .any(|&i| self.rules[i].regex.is_match(line))
        })
    }

    /// Indices of rules whose regex matches `line`.
    pub fn matches(&self, line: &str) -> Vec<usize> {
        // Most lines hold no literal at all: one unanchored search (the automaton's prefilter)
        // answers that without the overlapping walk.
        if self.always.is_empty() && !self.ac.is_match(line) {
            return Vec::new();
        }
        let mut cand: Vec<usize> = self.always.clone();
        for m in self.ac.find_overlapping_iter(line) {
            cand.extend_from_slice(&self.by_literal[m.pattern().as_usize()]);
        }
        cand.sort_unstable();
        cand.dedup();
        cand.retain(|&i| self.rules[i].regex.is_match(line));
        cand
    }
}

fn parse(text: &str, source: &str, user: bool) -> Result<Vec<Rule>, RuleError> {
    let err = |message: String| RuleError {
        source: source.to_string(),
        message,
    };
    let raw: RawFile = toml::from_str(text).map_err(|e| {
        let where_ = e
            .span()
            .map(|s| {
                let line = text[..s.start.min(text.len())].matches('\n').count() + 1;
                format!("line {line}: ")
            })
            .unwrap_or_default();
        err(format!("{where_}{}", e.message().trim_end()))
    })?;
    let mut out = Vec::new();
    for (n, r) in raw.rule.into_iter().enumerate() {
        let role = r.role.unwrap_or(Role::Cause);
        let known = taxonomy_ids().contains(&r.id) || r.id == "unknown";
        if !user && !known {
            return Err(err(format!(
                "rule {}: id `{}` is not in taxonomy.toml",
                n + 1,
                r.id
            )));
        }
        if r.id.trim().is_empty() {
            return Err(err(format!("rule {}: empty id", n + 1)));
        }
        // The built-in patterns are checked by a test and compiled on first use; a user's are
        // compiled now, so that a bad one is reported with its rule.
        let compile = |what: &str, s: &str| {
            if user {
                LazyRegex::compiled(s)
                    .map_err(|e| err(format!("rule {} ({}): bad {what}: {e}", n + 1, r.id)))
            } else {
                Ok(LazyRegex::lazy(s))
            }
        };
        if r.wraps && !matches!(role, Role::Echo | Role::Weak) {
            return Err(err(format!(
                "rule {} ({}): `wraps` is for echo and weak rules",
                n + 1,
                r.id
            )));
        }
        let hung = match r.status.as_deref() {
            None | Some("crashed") => false,
            Some("hung") => true,
            Some(other) => {
                return Err(err(format!(
                    "rule {} ({}): status must be \"crashed\" or \"hung\", not {other:?}",
                    n + 1,
                    r.id
                )))
            }
        };
        out.push(Rule {
            id: r.id.clone(),
            role,
            regex: compile("regex", &r.regex)?,
            frames: r
                .frames
                .as_deref()
                .map(|f| compile("frames", f))
                .transpose()?,
            raised_in: r
                .raised_in
                .as_deref()
                .map(|f| compile("raised_in", f))
                .transpose()?,
            prefer: r
                .prefer
                .as_deref()
                .map(|f| compile("prefer", f))
                .transpose()?,
            any_level: r.any_level,
            wraps: r.wraps,
            hung,
            priority: r.priority.unwrap_or(50) + if user { 1 } else { 0 },
            layer: r.layer,
            meaning: r.meaning,
            fix: r.fix,
            literals: r.literals,
            user,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_rules_cover_the_taxonomy() {
        let set = RuleSet::builtin();
        for id in taxonomy_ids() {
            assert!(
                set.rules()
                    .iter()
                    .any(|r| &r.id == id && r.role != Role::Noise),
                "no rule for taxonomy id {id}"
            );
        }
    }

    /// Built-in patterns are compiled on first use: every one must compile.
    #[test]
    fn every_builtin_pattern_compiles() {
        for (i, r) in RuleSet::builtin().rules().iter().enumerate() {
            for (what, re) in [
                ("regex", Some(&r.regex)),
                ("frames", r.frames.as_ref()),
                ("raised_in", r.raised_in.as_ref()),
                ("prefer", r.prefer.as_ref()),
            ] {
                if let Some(re) = re {
                    assert!(
                        Regex::new(re.as_str()).is_ok(),
                        "built-in rule {} ({}): bad {what}: {}",
                        i + 1,
                        r.id,
                        re.as_str()
                    );
                }
            }
        }
    }

    /// Every built-in rule says where its text comes from (vLLM's, a library's or a tool's
    /// source, or the real logs it was read from): a `# Source:` comment right above it.
    #[test]
    fn every_builtin_rule_names_its_source() {
        let lines: Vec<&str> = BUILTIN.lines().collect();
        let mut unsourced = Vec::new();
        for (i, l) in lines.iter().enumerate() {
            if l.trim() != "[[rule]]" {
                continue;
            }
            let sourced = lines[..i]
                .iter()
                .rev()
                .take_while(|c| c.starts_with('#'))
                .any(|c| c.starts_with("# Source:"));
            if !sourced {
                unsourced.push(i + 1);
            }
        }
        assert!(
            unsourced.is_empty(),
            "rules without a `# Source:` comment at lines {unsourced:?} of signatures.toml"
        );
    }

    /// The id of the highest-priority rule matching `line`.
    fn best(line: &str) -> Option<String> {
        let set = RuleSet::builtin();
        set.matches(line)
            .into_iter()
            .max_by_key(|&i| set.rules()[i].priority)
            .map(|i| set.rules()[i].id.clone())
    }

    #[test]
    fn a_file_named_config_json_is_the_model_not_an_adapter() {
        let missing = |path: &str| {
            best(&format!(
                "FileNotFoundError: [Errno 2] No such file or directory: '{path}'"
            ))
        };
        assert_eq!(
            missing("/models/llama/config.json").as_deref(),
            Some("model_path_not_found")
        );
        assert_eq!(
            missing("config.json").as_deref(),
            Some("model_path_not_found")
        );
        assert_ne!(
            missing("org/adapters/adapter_config.json").as_deref(),
            Some("model_path_not_found")
        );
        assert_ne!(
            missing("/m/preprocessor_config.json").as_deref(),
            Some("model_path_not_found")
        );
    }

    #[test]
    fn packages_of_rays_extras_are_optional_dependencies() {
        for m in ["cupy", "pyarrow"] {
            assert_eq!(
                best(&format!("ModuleNotFoundError: No module named '{m}'")).as_deref(),
                Some("missing_optional_dependency"),
                "{m}"
            );
        }
        assert_eq!(
            best("ModuleNotFoundError: No module named 'transformers'").as_deref(),
            Some("missing_module")
        );
    }

    #[test]
    fn torch_compile_tracing_and_transformers_registry_errors_are_named() {
        assert_eq!(
            best("torch.fx.experimental.symbolic_shapes.ConstraintViolationError: Constraints violated (L['input_ids'].size()[0])! For more information, run with TORCH_LOGS=\"+dynamic\".").as_deref(),
            Some("torch_compile_error")
        );
        assert_eq!(
            best("RuntimeError: Worker failed with error 'dynamic shape operator: aten.bincount.default; Operator does not have a meta kernel that supports dynamic output shapes, please report an issue to PyTorch'").as_deref(),
            Some("torch_compile_error")
        );
        assert_eq!(
            best(
                "ValueError: 'aimv2' is already used by a Transformers config, pick another name."
            )
            .as_deref(),
            Some("dependency_version_mismatch")
        );
    }

    #[test]
    fn headline_matches_fp8_rule() {
        let set = RuleSet::builtin();
        let line = "ValueError: No valid attention backend found for cuda with AttentionSelectorConfig(head_size=576, dtype=torch.bfloat16, kv_cache_dtype=fp8_e4m3, block_size=None, use_mla=True, has_sink=False, use_sparse=False, use_mm_prefix=False, attn_type=AttentionType.DECODER). Reasons: {FLASH_ATTN_MLA: [kv_cache_dtype not supported], TRITON_MLA: [kv_cache_dtype not supported]}.";
        let ids: Vec<_> = set
            .matches(line)
            .iter()
            .map(|&i| set.rules()[i].id.clone())
            .collect();
        assert!(ids.contains(&"fp8_kv_cache_unsupported_backend".to_string()));
        assert!(ids.contains(&"attention_backend_unsupported".to_string()));
    }

    #[test]
    fn shell_job_reports_are_read_alike_by_the_traceback_and_the_rules() {
        use crate::traceback::is_shell_job_report;
        let set = RuleSet::builtin();
        let ids = |line: &str| -> Vec<String> {
            set.matches(line)
                .iter()
                .map(|&i| set.rules()[i].id.clone())
                .collect()
        };
        let signal = [
            "[1]    3100846 segmentation fault (core dumped)  python -m vllm.entrypoints.openai.api_server",
            "[1]  + 3100846 abort      vllm serve /models/x",
            "zsh: segmentation fault  python serve.py",
            "[1]+  Segmentation fault      (core dumped) python serve.py",
            "./run.sh: line 5: 12345 Aborted                 (core dumped) python serve.py",
            "bash: line 1: 12345 Bus error (core dumped) vllm serve x",
            "12345 segmentation fault  python serve.py",
        ];
        let killed = [
            "[1]+  Killed                  python serve.py",
            "[2]  - 4242 killed     vllm serve x",
            "zsh: killed     vllm serve x",
            "./run.sh: line 5: 12345 Killed                  python serve.py",
        ];
        for (lines, id) in [
            (&signal[..], "worker_killed_by_signal"),
            (&killed[..], "host_oom_killed"),
        ] {
            for line in lines {
                assert!(is_shell_job_report(line), "{line}");
                assert!(ids(line).iter().any(|i| i == id), "{line}: {:?}", ids(line));
            }
        }
        // The shell's other job lines end a traceback too, but name no cause.
        for line in ["[1]+  Done                    python serve.py", "[1] 12345"] {
            assert!(is_shell_job_report(line), "{line}");
            assert!(ids(line).is_empty(), "{line}: {:?}", ids(line));
        }
        // Not job reports: vLLM's own lines, an exception's message.
        for line in [
            "Aborted request chatcmpl-1234.",
            "[1] Failed to load the model",
            "RuntimeError: Worker died or was killed",
            "Killed process 4242 (python) total-vm:1024kB",
        ] {
            assert!(!is_shell_job_report(line), "{line}");
            assert!(
                !ids(line)
                    .iter()
                    .any(|i| i == "worker_killed_by_signal" || i == "host_oom_killed"),
                "{line}: {:?}",
                ids(line)
            );
        }
    }

    #[test]
    fn user_rules_extend_and_bad_rules_are_errors() {
        let set = RuleSet::with_user_rules(
            "[[rule]]\nid = \"my_cause\"\nliterals = [\"frobnicate\"]\nregex = 'frobnicate failed'\n",
            "mine.toml",
        )
        .unwrap();
        let m = set.matches("RuntimeError: frobnicate failed");
        assert_eq!(set.rules()[m[0]].id, "my_cause");
        // The built-ins still work after a user file.
        assert!(!set
            .matches("OSError: [Errno 98] Address already in use")
            .is_empty());
        let e = RuleSet::with_user_rules("[[rule]]\nid = \"x\"\nregex = '('\n", "bad.toml")
            .unwrap_err();
        assert!(e.message.contains("bad regex"), "{e}");
        let e = RuleSet::with_user_rules("[[rule]]\nid = \"x\"\n", "bad.toml").unwrap_err();
        assert!(e.message.contains("regex"), "{e}");
    }
}

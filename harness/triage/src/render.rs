//! Human-readable verdicts, and the safety rules for text that came from a log: control
//! characters are escaped (a log line must never move the cursor, set a window title or open a
//! hyperlink in the reader's terminal) and secrets are masked.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::sync::OnceLock;

use regex::Regex;

use super::verdict::{Status, Verdict};

/// Escape every control character (C0 but tab, DEL, C1) as `\xNN` / `\u{NNNN}`.
pub fn escape_control(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        let cp = c as u32;
        if (cp < 0x20 && c != '\t') || cp == 0x7f {
            let _ = write!(out, "\\x{cp:02x}");
        } else if (0x80..0xa0).contains(&cp)
            || c == '\u{2028}'
            || c == '\u{2029}'
            || ('\u{202a}'..='\u{202e}').contains(&c)
            || ('\u{2066}'..='\u{2069}').contains(&c)
        {
            let _ = write!(out, "\\u{{{cp:04x}}}");
        } else {
            out.push(c);
        }
    }
    out
}

/// JSON made safe for a terminal, still exact. serde_json escapes C0 controls, `"` and `\`, but
/// writes DEL, C1 controls (U+009B alone is a CSI, U+009D an OSC) and the line-separator and
/// bidirectional-override characters raw; this escapes those as `\uXXXX` too. Outside strings
/// JSON text is ASCII, so only string contents change spelling and the JSON decodes to the same
/// values.
pub fn escape_json_controls(json: &str) -> Cow<'_, str> {
    if !json.chars().any(json_escapes) {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 32);
    for c in json.chars() {
        if json_escapes(c) {
            let _ = write!(out, "\\u{:04x}", c as u32);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `value` as pretty JSON for a terminal: [`escape_json_controls`] applied.
pub fn json_pretty<T: serde::Serialize + ?Sized>(value: &T) -> serde_json::Result<String> {
    serde_json::to_string_pretty(value).map(|j| escape_json_controls(&j).into_owned())
}

fn json_escapes(c: char) -> bool {
    c == '\u{7f}'
        || ('\u{80}'..'\u{a0}').contains(&c)
        || c == '\u{2028}'
        || c == '\u{2029}'
        || ('\u{202a}'..='\u{202e}').contains(&c)
        || ('\u{2066}'..='\u{2069}').contains(&c)
}

/// Mask Hugging Face tokens and API keys.
pub fn mask_secrets(s: &str) -> String {
    static RES: OnceLock<[Regex; 3]> = OnceLock::new();
    let res = RES.get_or_init(|| {
        [
            Regex::new(r"hf_[A-Za-z0-9]{16,}").expect("valid"),
            Regex::new(r#"(?i)(api[_-]?key['"]?\s*[:=]\s*['"]?)([^'"\s,)}]+)"#).expect("valid"),
            Regex::new(r#"(--api-key[= ])(\S+)"#).expect("valid"),
        ]
    });
    let s = res[0].replace_all(s, "hf_***");
    let s = res[1].replace_all(&s, "${1}***");
    let s = res[2].replace_all(&s, "${1}***");
    s.into_owned()
}

/// Apply [`mask_secrets`] to every text of a verdict (JSON output included).
pub fn mask_verdict(v: &mut Verdict) {
    if let Some(rc) = &mut v.root_cause {
        rc.text = mask_secrets(&rc.text);
        rc.message = mask_secrets(&rc.message);
    }
    for s in &mut v.secondary {
        s.text = mask_secrets(&s.text);
    }
    for d in &mut v.diagnostics {
        *d = mask_secrets(d);
    }
}

struct Paint {
    on: bool,
}

impl Paint {
    fn wrap(&self, code: &str, s: &str) -> String {
        if self.on {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }
    fn bold(&self, s: &str) -> String {
        self.wrap("1", s)
    }
    fn red(&self, s: &str) -> String {
        self.wrap("1;31", s)
    }
    fn green(&self, s: &str) -> String {
        self.wrap("1;32", s)
    }
    fn yellow(&self, s: &str) -> String {
        self.wrap("1;33", s)
    }
    fn dim(&self, s: &str) -> String {
        self.wrap("2", s)
    }
}

fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let cut: String = s.chars().take(max).collect();
        format!("{cut}…")
    }
}

/// The verdict for a person. `color` only when writing to a terminal without NO_COLOR.
pub fn human(v: &Verdict, color: bool) -> String {
    let p = Paint { on: color };
    let mut o = String::new();
    let status = v.status.as_str();
    let status_painted = match v.status {
        Status::Crashed | Status::Hung => p.red(status),
        Status::Ready | Status::Stopped => p.green(status),
        _ => p.yellow(status),
    };
    let launch = match (v.launch, v.launches.len()) {
        (Some(i), n) if n > 1 => format!("launch {} of {n}", i),
        (Some(_), _) => "launch 0".to_string(),
        (None, _) => "no launch".to_string(),
    };
    let version = v
        .vllm_version
        .as_deref()
        .map(|x| format!(", vLLM {}", escape_control(x)))
        .unwrap_or_default();
    let id = v
        .root_cause
        .as_ref()
        .map(|rc| format!(" — {}", p.bold(&rc.id)))
        .unwrap_or_default();
    let _ = writeln!(o, "status: {status_painted}{id}  ({launch}{version})");
    if v.stale.suspected {
        let _ = writeln!(
            o,
            "{} {}",
            p.yellow("stale log:"),
            escape_control(v.stale.reason.as_deref().unwrap_or(""))
        );
    }
    if let Some(rc) = &v.root_cause {
        let who = match (&rc.process, rc.pid) {
            (Some(name), Some(pid)) => format!("{} (pid {pid})", escape_control(name)),
            (Some(name), None) => escape_control(name),
            (None, Some(pid)) => format!("pid {pid}"),
            (None, None) => "unprefixed output".into(),
        };
        let _ = writeln!(o);
        let _ = writeln!(o, "{} line {}, {who}", p.bold("root cause:"), rc.line);
        let _ = writeln!(o, "  {}", escape_control(&shorten(&rc.message, 2000)));
        if rc.ranks.len() > 1 {
            let _ = writeln!(
                o,
                "  {}",
                p.dim(&format!(
                    "same failure in {} processes: {}",
                    rc.ranks.len(),
                    escape_control(&rc.ranks.join(", "))
                ))
            );
        }
        if !rc.traceback.is_empty() {
            let _ = writeln!(o);
            let _ = writeln!(o, "{}", p.bold("key frames (innermost last):"));
            for f in &rc.traceback {
                let _ = writeln!(o, "  {}", escape_control(f));
            }
        }
        if let Some(m) = &v.meaning {
            let _ = writeln!(o);
            let _ = writeln!(o, "{} {}", p.bold("what it means:"), escape_control(m));
        }
        if let Some(f) = &v.fix {
            let _ = writeln!(o, "{} {}", p.bold("fix:"), escape_control(f));
        }
    }
    if !v.evidence.is_empty() {
        let ev: Vec<String> = v
            .evidence
            .iter()
            .map(|(k, val)| {
                format!(
                    "{k}={}",
                    val.as_str()
                        .map(str::to_string)
                        .unwrap_or_else(|| val.to_string())
                )
            })
            .collect();
        let _ = writeln!(o);
        let _ = writeln!(
            o,
            "{} {}",
            p.bold("evidence:"),
            escape_control(&ev.join("  "))
        );
    }
    if !v.secondary.is_empty() {
        let total: u64 = v.secondary.iter().map(|s| s.count).sum();
        let _ = writeln!(o);
        let _ = writeln!(
            o,
            "{} {} ({} distinct)",
            p.bold("consequences folded:"),
            total,
            v.secondary.len()
        );
        for s in v.secondary.iter().take(8) {
            let who = s
                .process
                .as_deref()
                .map(escape_control)
                .unwrap_or_else(|| "-".into());
            let times = if s.count > 1 {
                format!(" ×{}", s.count)
            } else {
                String::new()
            };
            let _ = writeln!(
                o,
                "  line {} {who}{times}: {}",
                s.line,
                escape_control(&shorten(&s.text, 160))
            );
        }
    }
    if !v.damage.is_empty() {
        let _ = writeln!(o);
        let kinds: Vec<String> = v
            .damage
            .iter()
            .map(|d| match (d.offset, d.length, d.line) {
                (Some(off), Some(len), _) => format!("{} at byte {off} ({len} bytes)", d.kind),
                (_, _, Some(line)) => format!("{} at line {line}", d.kind),
                _ => d.kind.clone(),
            })
            .collect();
        let _ = writeln!(o, "{} {}", p.yellow("damage:"), kinds.join("; "));
    }
    for d in &v.diagnostics {
        let _ = writeln!(o, "{} {}", p.dim("note:"), escape_control(d));
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_sequences_are_escaped() {
        let s = escape_control("a\x1b]0;pwned\x07b\x1b[2Jc\u{9b}31m\r");
        assert!(!s.contains('\x1b'));
        assert!(!s.contains('\x07'));
        assert!(!s.contains('\r'));
        assert!(s.contains("\\x1b]0;pwned\\x07"));
        assert!(s.contains("\\u{009b}"));
    }

    #[test]
    fn json_keeps_no_raw_c1_and_decodes_to_the_same_text() {
        let text = "osc:\u{9d}0;t\u{9c} csi:\u{9b}2J del:\u{7f} rlo:\u{202e} nel:\u{85} é ✓";
        let json = serde_json::to_string(&text).unwrap();
        let safe = escape_json_controls(&json);
        assert!(!safe.chars().any(json_escapes), "{safe}");
        assert!(safe.contains("\\u009d0;t\\u009c"));
        assert_eq!(serde_json::from_str::<String>(&safe).unwrap(), text);
        assert!(matches!(
            escape_json_controls("{\"a\": \"é\"}"),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn secrets_are_masked() {
        let s = mask_secrets(
            "token hf_abcdefghijklmnopqrstuvwx and 'api_key': 'sk-123' and --api-key secret1",
        );
        assert!(!s.contains("abcdefghijkl"));
        assert!(!s.contains("sk-123"));
        assert!(!s.contains("secret1"));
    }
}

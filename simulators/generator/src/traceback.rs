//! Python tracebacks as CPython prints them: frames, caret lines (3.11+), exception chains.
//!
//! Main type: [`Traceback`], assembled from a profile's frame fragments and rendered to the text
//! that `traceback.format_exc()` returns (no trailing newline, like logging's `formatException`).

use crate::profile::{Frame, Profile};

/// One exception with its frames, optionally chained to the one that caused it.
#[derive(Clone, Debug, Default)]
pub struct Traceback {
    pub frames: Vec<Frame>,
    /// `Type: message`; may span lines.
    pub exception: String,
    /// The exception raised while handling this one comes after it in the text:
    /// `(cause, direct)` where direct selects "The above exception was the direct cause…".
    pub cause: Option<(Box<Traceback>, bool)>,
}

impl Traceback {
    pub fn new(exception: impl Into<String>) -> Traceback {
        Traceback {
            frames: Vec::new(),
            exception: exception.into(),
            cause: None,
        }
    }

    /// Append frames of a named fragment of the profile.
    pub fn with(mut self, profile: &Profile, stack: &str) -> Traceback {
        self.frames.extend(profile.stack(stack).iter().cloned());
        self
    }

    /// This exception was raised from (`direct`) or while handling `cause`.
    pub fn caused_by(mut self, cause: Traceback, direct: bool) -> Traceback {
        self.cause = Some((Box::new(cause), direct));
        self
    }

    /// The text, without a trailing newline. Lines are separated by `\n`.
    pub fn render(&self, profile: &Profile) -> String {
        let mut out = String::new();
        if let Some((cause, direct)) = &self.cause {
            out.push_str(&cause.render(profile));
            out.push_str(if *direct {
                "\n\nThe above exception was the direct cause of the following exception:\n\n"
            } else {
                "\n\nDuring handling of the above exception, another exception occurred:\n\n"
            });
        }
        out.push_str("Traceback (most recent call last):\n");
        for f in &self.frames {
            let path = profile.frame_path(&f.path);
            let line = if f.line == 0 {
                profile.console_script_line
            } else {
                f.line
            };
            out.push_str(&format!(
                "  File \"{path}\", line {line}, in {}\n",
                f.function
            ));
            if let Some(src) = &f.source {
                out.push_str("    ");
                out.push_str(src);
                out.push('\n');
                if profile.carets() {
                    if let Some(caret) = &f.caret {
                        let (caret, pos) = match caret.strip_prefix('>') {
                            Some(c) => (c, src.rfind(c)),
                            None => (caret.as_str(), src.find(caret.as_str())),
                        };
                        if let Some(pos) = pos {
                            if !(pos == 0 && caret.len() == src.len()) {
                                out.push_str(&" ".repeat(4 + src[..pos].chars().count()));
                                out.push_str(&"^".repeat(caret.chars().count()));
                                out.push('\n');
                            }
                        }
                    }
                }
            }
        }
        out.push_str(&self.exception);
        out
    }
}

/// The index (0-based, in `\n`-separated lines) of the line of the final exception that states
/// the cause: its first line, or for a pydantic `ValidationError` the `Value error, …` line.
pub fn exception_line_index(text: &str, exception: &str) -> usize {
    // The exception is printed last (trailing newlines of either side do not shift it).
    let start = match text.rfind(exception.trim_end_matches('\n')) {
        Some(at) => text[..at].matches('\n').count(),
        None => {
            let total = text.trim_end_matches('\n').split('\n').count();
            total.saturating_sub(exception.trim_end_matches('\n').split('\n').count())
        }
    };
    start + statement_offset(exception)
}

/// The message of an exception's first line (`ValueError: bad` → `bad`; empty without one).
pub fn exception_message(exception: &str) -> String {
    exception
        .split('\n')
        .next()
        .and_then(|l| l.split_once(": "))
        .map_or(String::new(), |(_, m)| m.to_string())
}

/// Which line of a (multi-line) exception text states the cause.
pub fn statement_offset(exception: &str) -> usize {
    let mut lines = exception.split('\n');
    let first = lines.next().unwrap_or("");
    if first.contains("ValidationError") && first.contains("validation error") {
        // pydantic names the field on a line of its own when the error is a field's
        // (`cache_dtype`), then `  Value error, …`.
        for (i, line) in lines.take(2).enumerate() {
            if line.trim_start().starts_with("Value error,") {
                return i + 1;
            }
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::version::Version;

    #[test]
    fn renders_like_cpython_312() {
        let p = Profile::for_version(Version::parse("0.15.1").unwrap());
        let tb = Traceback::new("ValueError: x").with(p, "worker_main");
        let s = tb.render(p);
        assert_eq!(
            s,
            "Traceback (most recent call last):\n  File \"/usr/local/lib/python3.12/dist-packages/vllm/v1/executor/multiproc_executor.py\", line 743, in worker_main\n    worker = WorkerProc(*args, **kwargs)\n             ^^^^^^^^^^^^^^^^^^^^^^^^^^^\nValueError: x"
        );
        assert_eq!(exception_line_index(&s, "ValueError: x"), 4);
        // A multi-line message ending in a newline, the text trimmed or not.
        let exc = "ValueError: bad path.\nPlease verify:\n1. this\n";
        let tb = Traceback::new(exc).with(p, "worker_main");
        let s = tb.render(p);
        assert_eq!(exception_line_index(&s, exc), 4);
        assert_eq!(exception_line_index(s.trim_end_matches('\n'), exc), 4);
    }
}

//! Log files mapped into memory, safe against the file shrinking underneath.
//!
//! Reading a large log through `mmap` costs no copy (triage of a 1 GiB file must stay within a
//! small factor of `rg`), and the newest-launch search only touches the pages it reads, so a
//! 10 GiB file costs what its last launch costs. The hazard: if another process truncates the
//! file while it is mapped (a relaunch with `> same.log`), touching a page past the new end
//! raises SIGBUS. A SIGBUS handler maps a zero page over the faulting page of *our* mappings, so
//! the vanished bytes read as NULs — exactly the damage triage already reports — and a SIGBUS
//! anywhere else keeps its default action.
#![allow(unsafe_code)]

use std::fs::File;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Once;

/// Mappings the handler may repair: (start, len) pairs; 0 = free slot.
const SLOTS: usize = 16;
static RANGES: [(AtomicUsize, AtomicUsize); SLOTS] =
    [const { (AtomicUsize::new(0), AtomicUsize::new(0)) }; SLOTS];

/// A read-only mapping of a file.
#[derive(Debug)]
pub struct Mapped {
    map: memmap2::Mmap,
    slot: Option<usize>,
}

impl std::ops::Deref for Mapped {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.map
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        if let Some(s) = self.slot {
            RANGES[s].1.store(0, Ordering::SeqCst);
            RANGES[s].0.store(0, Ordering::SeqCst);
        }
    }
}

/// Map `file` read-only.
pub fn map(file: &File) -> io::Result<Mapped> {
    install_guard();
    // SAFETY: the mapping is read-only and private to this process. The file may change under
    // it; bytes that change are just log text (we never rely on them staying the same), and
    // bytes that vanish (truncation) fault with SIGBUS, which the guard below turns into reads
    // of zero pages instead of a crash.
    let map = unsafe { memmap2::Mmap::map(file)? };
    let start = map.as_ptr() as usize;
    let len = map.len();
    let mut slot = None;
    for (i, (s, l)) in RANGES.iter().enumerate() {
        if s.compare_exchange(0, start, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            l.store(len, Ordering::SeqCst);
            slot = Some(i);
            break;
        }
    }
    if slot.is_none() {
        return Err(io::Error::other("too many log files mapped at once"));
    }
    Ok(Mapped { map, slot })
}

fn ours(addr: usize) -> bool {
    RANGES.iter().any(|(s, l)| {
        let s = s.load(Ordering::SeqCst);
        let l = l.load(Ordering::SeqCst);
        s != 0 && addr >= s && addr < s + l
    })
}

extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    // SAFETY: `info` is provided by the kernel for an SA_SIGINFO handler. Only async-signal-safe
    // calls follow (sysconf, mmap, signal, raise).
    unsafe {
        let addr = (*info).si_addr() as usize;
        if ours(addr) {
            let page = libc::sysconf(libc::_SC_PAGESIZE) as usize;
            let base = addr & !(page - 1);
            let p = libc::mmap(
                base as *mut libc::c_void,
                page,
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                -1,
                0,
            );
            if p != libc::MAP_FAILED {
                return;
            }
        }
        // Not ours, or unrepairable: the default action (terminate with SIGBUS).
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
}

fn install_guard() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: installs a process-wide handler for SIGBUS; the handler only touches atomics
        // and async-signal-safe libc functions.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_sigbus as *const () as usize;
            sa.sa_flags = libc::SA_SIGINFO;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(libc::SIGBUS, &sa, std::ptr::null_mut());
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn truncation_under_a_mapping_reads_as_zeros() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("shrinking.log");
        let mut f = File::create(&path).unwrap();
        let page = 4096;
        f.write_all(&vec![b'x'; page * 4]).unwrap();
        f.sync_all().unwrap();
        let m = map(&File::open(&path).unwrap()).unwrap();
        assert_eq!(m[0], b'x');
        // A relaunch truncates the file with `>`.
        File::create(&path).unwrap();
        // Reading the vanished pages must not kill us.
        let sum: u64 = m.iter().map(|&b| u64::from(b)).sum();
        assert!(sum < u64::from(b'x') * (page as u64) * 4);
        assert_eq!(m[page * 3], 0);
    }
}

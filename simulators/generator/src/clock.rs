//! Time: simulated instants ([`SimTime`]) and their renderings in vLLM, torch and NCCL formats.
//!
//! The generator never reads the wall clock; its instants derive from the seed. The fake
//! server reads real time through its own `clock` module and renders it as a `SimTime`.

use std::fmt::Write as _;

/// Microseconds since the Unix epoch, in UTC.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct SimTime(pub u64);

impl SimTime {
    pub fn from_secs(s: u64) -> SimTime {
        SimTime(s * 1_000_000)
    }

    pub fn plus_ms(self, ms: u64) -> SimTime {
        SimTime(self.0 + ms * 1000)
    }

    pub fn plus_us(self, us: u64) -> SimTime {
        SimTime(self.0 + us)
    }

    pub fn secs(self) -> u64 {
        self.0 / 1_000_000
    }

    fn parts(self) -> Civil {
        civil(self.secs())
    }

    /// `MM-DD HH:MM:SS` (vLLM's `_DATE_FORMAT`).
    pub fn log_stamp(self) -> String {
        let c = self.parts();
        format!(
            "{:02}-{:02} {:02}:{:02}:{:02}",
            c.month, c.day, c.hour, c.minute, c.second
        )
    }

    /// torch c10 log stamp after the severity letter: `128 14:02:45.318233310` (month not
    /// zero-padded, nanoseconds).
    pub fn c10_stamp(self) -> String {
        let c = self.parts();
        let nanos = (self.0 % 1_000_000) * 1000 + (self.0 * 7919 % 1000);
        format!(
            "{}{:02} {:02}:{:02}:{:02}.{:09}",
            c.month, c.day, c.hour, c.minute, c.second, nanos
        )
    }

    /// The stamp of torch's own Python logger after the severity letter, glog style with
    /// millisecond resolution: `1203 09:52:02.112000`.
    pub fn torch_log_stamp(self) -> String {
        let c = self.parts();
        format!(
            "{:02}{:02} {:02}:{:02}:{:02}.{:03}000",
            c.month,
            c.day,
            c.hour,
            c.minute,
            c.second,
            self.0 % 1_000_000 / 1000
        )
    }

    /// glog stamp after the severity letter: `1129 22:01:09.739000`.
    pub fn glog_stamp(self) -> String {
        let c = self.parts();
        format!(
            "{:02}{:02} {:02}:{:02}:{:02}.{:06}",
            c.month,
            c.day,
            c.hour,
            c.minute,
            c.second,
            self.0 % 1_000_000
        )
    }

    /// Ray's Python logger: `2026-01-28 14:02:45,318`.
    pub fn ray_stamp(self) -> String {
        let c = self.parts();
        format!(
            "{:04}-{:02}-{:02} {:02}:{:02}:{:02},{:03}",
            c.year,
            c.month,
            c.day,
            c.hour,
            c.minute,
            c.second,
            (self.0 % 1_000_000) / 1000
        )
    }

    /// RFC 3339 with nanoseconds, as `docker logs --timestamps` prints.
    pub fn rfc3339_nanos(self) -> String {
        let c = self.parts();
        let mut s = String::with_capacity(32);
        let _ = write!(
            s,
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}{:03}Z",
            c.year,
            c.month,
            c.day,
            c.hour,
            c.minute,
            c.second,
            self.0 % 1_000_000,
            (self.0 * 31) % 1000
        );
        s
    }

    /// `Sun Nov 29 22:00:30 2026` (nvidia-smi's banner).
    pub fn ctime(self) -> String {
        let c = self.parts();
        const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
        const MONTHS: [&str; 12] = [
            "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
        ];
        format!(
            "{} {} {:2} {:02}:{:02}:{:02} {}",
            DAYS[((self.secs() / 86_400) % 7) as usize],
            MONTHS[(c.month - 1) as usize],
            c.day,
            c.hour,
            c.minute,
            c.second,
            c.year
        )
    }
}

struct Civil {
    year: i64,
    month: u32,
    day: u32,
    hour: u32,
    minute: u32,
    second: u32,
}

/// Days-from-civil inverse (Howard Hinnant's algorithm), for UTC seconds.
fn civil(secs: u64) -> Civil {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    Civil {
        year: if m <= 2 { y + 1 } else { y },
        month: m,
        day: d,
        hour: (rem / 3600) as u32,
        minute: ((rem % 3600) / 60) as u32,
        second: (rem % 60) as u32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        // 2026-01-28 14:02:45 UTC
        let t = SimTime(1_769_608_965_318_233);
        assert_eq!(t.log_stamp(), "01-28 14:02:45");
        assert!(t.c10_stamp().starts_with("128 14:02:45.318233"));
        assert_eq!(t.glog_stamp(), "0128 14:02:45.318233");
        assert!(t.rfc3339_nanos().starts_with("2026-01-28T14:02:45.318233"));
        assert_eq!(
            SimTime::from_secs(1_795_989_630).ctime(),
            "Sun Nov 29 22:00:30 2026"
        );
    }
}

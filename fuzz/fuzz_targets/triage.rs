//! libFuzzer target `triage`: see `faultkit_fuzz::triage` for what it feeds and checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| faultkit_fuzz::triage(data));

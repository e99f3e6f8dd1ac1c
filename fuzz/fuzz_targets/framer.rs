//! libFuzzer target `framer`: see `faultkit_fuzz::framer` for what it feeds and checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| faultkit_fuzz::framer(data));

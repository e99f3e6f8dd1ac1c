//! libFuzzer target `scenario`: see `faultkit_fuzz::scenario` for what it feeds and checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| faultkit_fuzz::scenario(data));

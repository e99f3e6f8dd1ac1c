//! `faultkit`: reproduce vLLM launch failures and diagnose them.

mod cli;

fn main() {
    std::process::exit(cli::run());
}

//! `fake-nvidia-smi`: `nvidia-smi` over the fake server's GPU state (see `simulators::fake::smi`).

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(simulators::fake::smi::main(&args));
}

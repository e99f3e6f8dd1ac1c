//! `fake-nvidia-smi`: `nvidia-smi` over the fake server's GPU state (see `fake_vllm::smi`).

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(fake_vllm::smi::main(&args));
}

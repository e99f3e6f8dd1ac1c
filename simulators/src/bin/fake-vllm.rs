//! `fake-vllm`: vLLM's command line as a real process tree (see `simulators::fake`). Called as
//! `vllm`, `python3` or `nvidia-smi` through shims on `PATH`, it behaves as that program.

fn main() {
    std::process::exit(simulators::fake::main());
}

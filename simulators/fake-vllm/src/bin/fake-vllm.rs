//! `fake-vllm`: vLLM's command line as a real process tree (see `fake_vllm`). Called as
//! `vllm`, `python3` or `nvidia-smi` through shims on `PATH`, it behaves as that program.

fn main() {
    std::process::exit(fake_vllm::main());
}

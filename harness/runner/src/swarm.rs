//! Swarm testing (TigerBeetle's VOPR idea): draw hardware × model × flags × vLLM version × host ×
//! faults from a seed, simulate, and demand that triage agrees with the truth. A failure names
//! its seed; `--swarm --count 1 --seed S` reruns exactly that case.

use std::path::Path;

use generator::seed::Rng;
use generator::{Scenario, Seed};

fn pick<'a>(rng: &mut Rng, xs: &'a [&'a str]) -> &'a str {
    xs[rng.range(0, xs.len() as u64 - 1) as usize]
}

/// The scenario of swarm case `seed`.
pub fn draw(seed: u64) -> Scenario {
    let mut rng = Seed(seed).derive("swarm-draw", 0).rng();
    let gpus: Vec<&str> = generator::catalog::gpus()
        .iter()
        .map(|g| g.id.as_str())
        .collect();
    let models: Vec<&str> = generator::catalog::models()
        .iter()
        .map(|m| m.id.as_str())
        .collect();
    // Every release the profiles know (`version` and `also`), oldest first.
    let versions: Vec<String> = generator::profile::Profile::releases()
        .iter()
        .map(ToString::to_string)
        .collect();
    let versions: Vec<&str> = versions.iter().map(String::as_str).collect();
    let version = pick(&mut rng, &versions);
    let gpu = pick(&mut rng, &gpus);
    let count = *rng.pick(&[1u32, 2, 4, 8]);
    let model = if rng.chance(5) {
        None
    } else {
        Some(pick(&mut rng, &models))
    };
    let divisors: Vec<u32> = (1..=count).filter(|d| count.is_multiple_of(*d)).collect();
    let tp = *rng.pick(&divisors);
    let pp = if count / tp >= 2 && rng.chance(20) {
        2
    } else {
        1
    };
    let mut cmd = format!("vllm serve /models/{}", model.unwrap_or("does-not-exist"));
    if tp > 1 {
        cmd.push_str(&format!(" --tensor-parallel-size {tp}"));
    }
    if pp > 1 {
        cmd.push_str(&format!(" --pipeline-parallel-size {pp}"));
    }
    match rng.range(0, 9) {
        0 => cmd.push_str(" --kv-cache-dtype fp8"),
        1 => cmd.push_str(" --kv-cache-dtype auto"),
        2 if generator::Version::parse(version)
            .is_some_and(|v| v.has(generator::release::Switch::KvDtypeBfloat16)) =>
        {
            cmd.push_str(" --kv-cache-dtype bfloat16")
        }
        _ => {}
    }
    match rng.range(0, 9) {
        0 => cmd.push_str(" --gpu-memory-utilization 0.5"),
        1 => cmd.push_str(" --gpu-memory-utilization 0.99"),
        2 => cmd.push_str(" --gpu-memory-utilization 0.95"),
        _ => {}
    }
    if rng.chance(15) {
        cmd.push_str(&format!(
            " --max-model-len {}",
            rng.pick(&[4096u64, 32768, 131072, 1_000_000])
        ));
    }
    if rng.chance(75) {
        cmd.push_str(" --trust-remote-code");
    }
    if rng.chance(15) {
        cmd.push_str(" --enforce-eager");
    }
    if rng.chance(4) {
        cmd.push_str(" --temperature 0.8");
    }
    let mut text = format!(
        "summary = \"swarm case {seed}\"\nvllm = \"{version}\"\ncommand = \"{cmd}\"\ngpus = {{ model = \"{gpu}\", count = {count} }}\n"
    );
    if let Some(m) = model {
        text.push_str(&format!("model = \"{m}\"\n"));
    }
    if rng.chance(50) {
        text.push_str("env = { NO_COLOR = \"1\" }\n");
    }
    let mut host = Vec::new();
    if rng.chance(5) {
        host.push("ports_in_use = [8000]".to_string());
    }
    if rng.chance(5) {
        host.push("shm_mib = 64".to_string());
    }
    if rng.chance(3) {
        host.push("nccl = \"peer_access\"".to_string());
    }
    if !host.is_empty() {
        text.push_str(&format!("host = {{ {} }}\n", host.join(", ")));
    }
    if rng.chance(35) {
        let fault = match rng.range(0, 9) {
            0 => "kind = \"relaunch_into_same_log\"\nafter = \"crash\"\nnew_launch_lines = 0".to_string(),
            1 => "kind = \"relaunch_into_same_log\"\nafter = \"kill9\"".to_string(),
            2 => "kind = \"relaunch_into_same_log\"\nafter = \"ready\"\nnew_launch_lines = 4".to_string(),
            3 => format!(
                "kind = \"truncate_while_writing\"\nappend = {}\nnew_command = \"vllm serve /models/x --tensor-parallel-size abc\"",
                rng.chance(50)
            ),
            4 => "kind = \"partial_last_line\"".to_string(),
            5 => "kind = \"kill\"\nprocess = \"Worker_TP1\"\nsignal = \"SIGKILL\"\nat = \"serving\"".to_string(),
            6 => "kind = \"hang\"\nprocess = \"Worker_TP1\"\nat = \"serving\"".to_string(),
            7 => "kind = \"hold_gpu_memory\"\ngib = 30".to_string(),
            _ => "kind = \"earlier_launches\"\nearlier_launches = 1".to_string(),
        };
        text.push_str(&format!("\n[[faults]]\n{fault}\n"));
    }
    text.push_str("\n[expect]\nstatus = \"unknown\"\n");
    let path = Path::new("swarm").join(format!("case-{seed}.toml"));
    Scenario::from_toml(&path, &text)
        .unwrap_or_else(|e| panic!("swarm case {seed} drew an invalid scenario: {e}\n{text}"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn draws_are_deterministic_and_valid() {
        for s in 0..300 {
            let a = super::draw(s);
            let b = super::draw(s);
            assert_eq!(a.command, b.command);
        }
    }
}

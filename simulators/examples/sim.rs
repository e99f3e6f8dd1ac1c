//! Ad-hoc: simulate one scenario file to stdout (development aid).
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let s = simulators::Scenario::load(std::path::Path::new(&args[1])).unwrap();
    let seed = args.get(2).and_then(|x| x.parse().ok()).unwrap_or(0);
    let (log, truth) = simulators::simulate_to_vec(
        &s,
        &simulators::SimOptions {
            seed: simulators::Seed(seed),
            ..Default::default()
        },
    );
    use std::io::Write;
    std::io::stdout().write_all(&log).unwrap();
    eprintln!("{}", truth.to_json());
}

//! What each process of a fake launch does, and when: the simulator's launch script cut into
//! one timeline per process.
//!
//! Main types: [`Plan`] (built once per launch, identically in every process of the tree) and
//! [`RolePlan`] (one process: when its parent spawns it, the steps it takes up to the launch's
//! outcome, and the steps it takes when told to stop). The text simulator and the fake server
//! share the script, so a process run writes the same lines as a text run of that scenario.

use std::collections::BTreeMap;

use generator::clock::SimTime;
use generator::deploy::Deployment;
use generator::profile::Engine;
use generator::scenario::Scenario;
use generator::script::{build_launch, Ending, LaunchLog, LaunchStatus};
use generator::seed::Seed;

/// The role of the API server process (the one the user started).
pub const API_ROLE: &str = "APIServer";
/// The role of the engine core process.
pub const ENGINE_ROLE: &str = "EngineCore";
/// CUDA context memory a process holds from device init on.
const CONTEXT_MIB: u64 = 512;

/// One timed step of one process.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    pub t: SimTime,
    pub what: What,
}

#[derive(Clone, Debug, PartialEq)]
pub enum What {
    /// Write event `events[i]` of the launch log.
    Write(usize),
    /// Start the child process with this role.
    Spawn(String),
    /// Claim memory on a GPU (rank-relative index) in the GPU state.
    HoldGpu { rank: u32, mib: u64 },
    /// Create the shared-memory segment of the launch (engine core).
    CreateShm,
    /// Open the launch's shared-memory segment (a reader).
    OpenShm,
    /// The server answers HTTP from now on (API server).
    Ready,
    /// Killed by this signal.
    Die(i32),
    /// Stop making progress; ignore SIGTERM.
    Hang,
    /// (Ray driver) Wait until the machine `node` is really gone; what follows is the reaction.
    AwaitNodeLoss { node: u32 },
    /// Wait until the child with this role has exited; what follows is the reaction.
    AwaitChildExit(String),
}

/// One process of the tree.
#[derive(Clone, Debug)]
pub struct RolePlan {
    pub role: String,
    /// The role that spawns this one (`None` for the API server).
    pub parent: Option<String>,
    /// Steps up to the launch's outcome.
    pub run: Vec<Step>,
    /// Steps after a stop request (healthy launches: the shutdown lines).
    pub on_stop: Vec<Step>,
    /// The machine the process runs on (0: the head; others only in Ray deployments).
    pub node: u32,
    /// A Ray actor: its output goes to its driver (the engine core), which prints it.
    pub ray_actor: bool,
}

/// The launch, per process.
#[derive(Clone, Debug)]
pub struct Plan {
    pub log: LaunchLog,
    pub deployment: Deployment,
    pub roles: BTreeMap<String, RolePlan>,
    /// After its steps, does a process stay up (healthy or hung launch) or exit 1 (crashed)?
    pub stays_up: bool,
}

impl Plan {
    /// Builds the plan of `s` (its `args` are the command actually run) from `start`.
    pub fn build(s: &Scenario, seed: Seed, start: SimTime) -> Plan {
        let d = Deployment::derive(s, &s.args);
        let healthy = d.failure.is_none();
        let ending = if healthy {
            Ending::StopAfter { serve_ms: 0 }
        } else {
            Ending::Natural { serve_ms: 0 }
        };
        let log = build_launch(&d, &s.env, seed, start, ending);
        let stop_from = if healthy { log.traffic_from } else { None };
        let stays_up = matches!(
            log.status,
            LaunchStatus::Ready | LaunchStatus::Stopped | LaunchStatus::Hung
        );

        // Roles in order of first appearance; `shell` is not ours (a user's shell), the
        // resource tracker writes through the API server.
        let role_of = |proc: usize| -> Option<String> {
            match log.procs[proc].role.as_str() {
                "shell" => None,
                "tracker" => Some(API_ROLE.to_string()),
                r => Some(r.to_string()),
            }
        };
        let mut roles: BTreeMap<String, RolePlan> = BTreeMap::new();
        let mut first_t: BTreeMap<String, SimTime> = BTreeMap::new();
        for (i, ev) in log.events.iter().enumerate() {
            let Some(role) = role_of(ev.proc) else {
                continue;
            };
            let rp = roles.entry(role.clone()).or_insert_with(|| RolePlan {
                role: role.clone(),
                parent: parent_of(&role, &log, &d),
                run: Vec::new(),
                on_stop: Vec::new(),
                node: node_of_role(&role, &d),
                ray_actor: log.procs[ev.proc].ray.is_some(),
            });
            let step = Step {
                t: ev.t,
                what: What::Write(i),
            };
            if stop_from.is_some_and(|t| ev.t >= t) {
                rp.on_stop.push(step);
            } else {
                rp.run.push(step);
            }
            first_t
                .entry(role)
                .and_modify(|t| *t = (*t).min(ev.t))
                .or_insert(ev.t);
        }
        roles
            .entry(API_ROLE.to_string())
            .or_insert_with(|| RolePlan {
                role: API_ROLE.to_string(),
                parent: None,
                run: Vec::new(),
                on_stop: Vec::new(),
                node: 0,
                ray_actor: false,
            });

        // Spawns: a child starts a little before its first line.
        let children: Vec<(String, String, SimTime)> = roles
            .values()
            .filter_map(|r| {
                let parent = r.parent.clone()?;
                let t = first_t.get(&r.role).copied().unwrap_or(start);
                Some((parent, r.role.clone(), SimTime(t.0.saturating_sub(50_000))))
            })
            .collect();
        for (parent, child, t) in children {
            if let Some(p) = roles.get_mut(&parent) {
                p.run.push(Step {
                    t,
                    what: What::Spawn(child),
                });
            }
        }

        // GPU memory: a context at spawn, the whole budget once the launch is up.
        let budget_mib = (d.memory.budget_gib * 1024.0) as u64;
        let gpu_roles: Vec<(String, u32)> = roles
            .keys()
            .filter_map(|r| gpu_rank(r, &roles, &d).map(|k| (r.clone(), k)))
            .collect();
        for (role, rank) in gpu_roles {
            let rp = roles.get_mut(&role).expect("role exists");
            let t0 = first_t.get(&role).copied().unwrap_or(start);
            rp.run.push(Step {
                t: t0,
                what: What::HoldGpu {
                    rank,
                    mib: CONTEXT_MIB,
                },
            });
            if let Some(t) = log.traffic_from {
                if stays_up || log.status == LaunchStatus::Crashed {
                    // The budget is held from the KV cache's allocation on, well before the
                    // server answers (a launcher checking memory right after ready sees it).
                    let claim = log
                        .memory_claimed
                        .filter(|c| *c < t)
                        .unwrap_or(SimTime(t.0.saturating_sub(1)));
                    rp.run.push(Step {
                        t: claim,
                        what: What::HoldGpu {
                            rank,
                            mib: budget_mib.max(CONTEXT_MIB),
                        },
                    });
                }
            }
        }

        // Shared memory: the engine core creates the workers' message queue before it starts
        // them (where it logs the handle, if the version logs it); workers attach.
        let logged = log.shm_names.first().and_then(|name| {
            log.events.iter().find(|ev| match &ev.body {
                generator::record::Body::Log { text, .. } => text.contains(name.as_str()),
                _ => false,
            })
        });
        let first_spawn = roles.get(ENGINE_ROLE).and_then(|eng| {
            eng.run
                .iter()
                .filter(|s| matches!(&s.what, What::Spawn(r) if r.starts_with("Worker")))
                .map(|s| s.t)
                .min()
        });
        let first_spawn = first_spawn.filter(|_| !d.ray);
        if let Some(t) = logged.map(|ev| ev.t).or(first_spawn) {
            let t = SimTime(t.0.saturating_sub(1)).min(first_spawn.unwrap_or(t));
            if let Some(eng) = roles.get_mut(ENGINE_ROLE) {
                eng.run.push(Step {
                    t: SimTime(t.0.saturating_sub(1)),
                    what: What::CreateShm,
                });
            }
            for rp in roles.values_mut() {
                if rp.role.starts_with("Worker") {
                    let at = first_t.get(&rp.role).copied().unwrap_or(t).max(t);
                    rp.run.push(Step {
                        t: at,
                        what: What::OpenShm,
                    });
                }
            }
        }

        if let (Some(t), Some(api)) = (log.traffic_from, roles.get_mut(API_ROLE)) {
            api.run.push(Step {
                t: SimTime(t.0.saturating_sub(2)),
                what: What::Ready,
            });
        }

        // A lost Ray node: the driver reacts when the machine is really gone.
        if let (Some((node, t)), Some(eng)) = (log.node_loss, roles.get_mut(ENGINE_ROLE)) {
            eng.run.push(Step {
                t,
                what: What::AwaitNodeLoss { node },
            });
            // The API server reacts to the engine core's death.
            if let Some(api) = roles.get_mut(API_ROLE) {
                api.run.push(Step {
                    t,
                    what: What::AwaitChildExit(ENGINE_ROLE.to_string()),
                });
            }
        }

        // Faults: a death or a hang ends the process's timeline. (The processes of a lost
        // machine die with it: nothing in them does it.)
        for death in &log.deaths {
            if let Some(rp) = roles.get_mut(&death.role) {
                if rp.node > 0 {
                    rp.run.retain(|s| s.t < death.t);
                    continue;
                }
                rp.run.retain(|s| s.t < death.t);
                rp.on_stop.clear();
                rp.run.push(Step {
                    t: death.t,
                    what: What::Die(death.signal),
                });
            }
        }
        for hang in &log.hangs {
            if let Some(rp) = roles.get_mut(&hang.role) {
                rp.run.retain(|s| s.t < hang.t);
                rp.on_stop.clear();
                rp.run.push(Step {
                    t: hang.t,
                    what: What::Hang,
                });
            }
        }
        for rp in roles.values_mut() {
            // Stable: steps at the same instant keep their order (spawn before the child's
            // first line, claims before the write that announces them).
            rp.run.sort_by_key(|s| s.t);
            rp.on_stop.sort_by_key(|s| s.t);
        }
        Plan {
            log,
            deployment: d,
            roles,
            stays_up,
        }
    }

    /// A worker with nothing to say about a failure elsewhere: its steps end before the root
    /// cause, so it waits for its parent to go.
    pub fn lingers(&self, role: &str) -> bool {
        let Some(root_t) = self.log.root.map(|i| self.log.events[i].t) else {
            return false;
        };
        !self.stays_up
            && role.starts_with("Worker")
            && self
                .roles
                .get(role)
                .is_some_and(|r| r.run.last().is_none_or(|s| s.t < root_t))
    }

    /// The simulated pid of `role` (the launch script's), for substitution by the real one.
    pub fn sim_pid(&self, role: &str) -> Option<u32> {
        self.log
            .procs
            .iter()
            .find(|p| p.role == role)
            .map(|p| p.pid)
    }

    /// The process title vLLM gives a role (`VLLM::EngineCore_DP0`, `VLLM::Worker_TP3`).
    pub fn title(&self, role: &str) -> String {
        let name = self
            .log
            .procs
            .iter()
            .rev()
            .find(|p| p.role == role)
            .and_then(|p| p.name.clone());
        match (role, name) {
            (API_ROLE, _) => "vllm".to_string(),
            (_, Some(n)) if !n.contains(' ') => format!("VLLM::{n}"),
            _ => format!("VLLM::{role}"),
        }
    }
}

/// Who starts whom: the API server starts the engine core, the engine core its workers. With
/// one rank (V1) or for rank 0 (V0) the worker runs inside the engine core process.
fn parent_of(role: &str, log: &LaunchLog, d: &Deployment) -> Option<String> {
    let _ = d;
    if role == API_ROLE {
        return None;
    }
    if role.starts_with("Worker") && log.procs.iter().any(|p| p.role == ENGINE_ROLE) {
        return Some(ENGINE_ROLE.to_string());
    }
    Some(API_ROLE.to_string())
}

/// The machine a role runs on.
fn node_of_role(role: &str, d: &Deployment) -> u32 {
    match role
        .strip_prefix("Worker")
        .and_then(|r| r.parse::<u32>().ok())
    {
        Some(r) if d.ray => d.node_of(r),
        _ => 0,
    }
}

/// The GPU (index on its machine) a role holds, if any.
fn gpu_rank(role: &str, roles: &BTreeMap<String, RolePlan>, d: &Deployment) -> Option<u32> {
    if let Some(r) = role.strip_prefix("Worker") {
        return r.parse::<u32>().ok().map(|r| r % d.gpus_per_node());
    }
    let has_worker0 = roles.contains_key("Worker0");
    if role == ENGINE_ROLE && (!has_worker0 || d.profile.engine == Engine::V0) {
        return Some(0);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn scenario(toml: &str) -> Scenario {
        Scenario::from_toml(Path::new("scenarios/t/t.toml"), toml).unwrap()
    }

    const FP8: &str = r#"
summary = "s"
vllm = "0.15.1"
command = "vllm serve nvidia/Kimi-K2.5-NVFP4 --tensor-parallel-size 8 --trust-remote-code"
gpus = { model = "rtx-pro-6000-blackwell", count = 8 }
model = "kimi-k2.5-nvfp4"
[expect]
status = "crashed"
"#;

    #[test]
    fn every_write_belongs_to_one_process_and_children_start_first() {
        let s = scenario(FP8);
        let plan = Plan::build(&s, Seed(3), SimTime::from_secs(1_800_000_000));
        assert!(!plan.stays_up);
        let writes: usize = plan
            .roles
            .values()
            .map(|r| {
                r.run
                    .iter()
                    .chain(&r.on_stop)
                    .filter(|s| matches!(s.what, What::Write(_)))
                    .count()
            })
            .sum();
        let shell = plan
            .log
            .events
            .iter()
            .filter(|e| plan.log.procs[e.proc].role == "shell")
            .count();
        assert_eq!(writes + shell, plan.log.events.len());
        let eng = &plan.roles[ENGINE_ROLE];
        assert_eq!(eng.parent.as_deref(), Some(API_ROLE));
        for r in 0..8 {
            let w = &plan.roles[&format!("Worker{r}")];
            assert_eq!(w.parent.as_deref(), Some(ENGINE_ROLE));
            let spawn_t = eng
                .run
                .iter()
                .find(|s| s.what == What::Spawn(w.role.clone()))
                .unwrap()
                .t;
            assert!(spawn_t < w.run[0].t);
        }
        assert!(eng.run.iter().any(|s| s.what == What::CreateShm));
    }

    #[test]
    fn healthy_launch_stays_up_and_has_shutdown_lines() {
        let s = scenario(&FP8.replace(
            "--trust-remote-code",
            "--trust-remote-code --kv-cache-dtype bfloat16",
        ));
        let plan = Plan::build(&s, Seed(1), SimTime::from_secs(1_800_000_000));
        assert!(plan.stays_up);
        let api = &plan.roles[API_ROLE];
        assert!(api.run.iter().any(|s| s.what == What::Ready));
        assert!(!api.on_stop.is_empty());
        assert!(plan.roles["Worker3"]
            .run
            .iter()
            .any(|s| matches!(s.what, What::HoldGpu { rank: 3, mib } if mib > CONTEXT_MIB)));
        // Every rank holds its budget from its KV cache on: seconds before the server answers,
        // so a launcher looking at GPU memory right after ready sees all of it.
        let ready = api.run.iter().find(|s| s.what == What::Ready).unwrap().t;
        for (role, rp) in &plan.roles {
            if let Some(claim) = rp.run.iter().find_map(|s| match s.what {
                What::HoldGpu { mib, .. } if mib > CONTEXT_MIB => Some(s.t),
                _ => None,
            }) {
                assert!(
                    claim.0 + 1_000_000 < ready.0,
                    "{role} claims its budget at {claim:?}, ready at {ready:?}"
                );
            }
        }
    }

    #[test]
    fn killed_worker_dies_and_writes_nothing_after() {
        let s = scenario(
            r#"
summary = "s"
vllm = "0.15.1"
command = "vllm serve meta-llama/Llama-3.1-70B-Instruct --tensor-parallel-size 8"
gpus = { model = "h100", count = 8 }
model = "llama-3.1-70b"
[[faults]]
kind = "kill"
process = "Worker_TP3"
signal = "SIGKILL"
at = "serving"
[expect]
status = "crashed"
"#,
        );
        let plan = Plan::build(&s, Seed(5), SimTime::from_secs(1_800_000_000));
        let w = &plan.roles["Worker3"];
        assert_eq!(w.run.last().unwrap().what, What::Die(9));
        assert!(w.on_stop.is_empty());
    }
}

R = "/usr/local/python3.10.17/lib/python3.10/site-packages/ray/_private/"
E1 = f'''  File "/vllm-workspace/vllm/vllm/v1/engine/core.py", line 577, in run_engine_core
    engine_core = EngineCoreProc(*args, **kwargs)
  File "/vllm-workspace/vllm/vllm/v1/engine/core.py", line 404, in __init__
    super().__init__(vllm_config, executor_class, log_stats,
  File "/vllm-workspace/vllm/vllm/v1/engine/core.py", line 75, in __init__
    self.model_executor = executor_class(vllm_config)
  File "/vllm-workspace/vllm/vllm/executor/executor_base.py", line 287, in __init__
    super().__init__(*args, **kwargs)
  File "/vllm-workspace/vllm/vllm/executor/executor_base.py", line 53, in __init__
    self._init_executor()
  File "/vllm-workspace/vllm/vllm/executor/ray_distributed_executor.py", line 115, in _init_executor
    self._init_workers_ray(placement_group)
  File "/vllm-workspace/vllm/vllm/executor/ray_distributed_executor.py", line 397, in _init_workers_ray
    self._run_workers("load_model",
  File "/vllm-workspace/vllm/vllm/executor/ray_distributed_executor.py", line 522, in _run_workers
    ray_worker_outputs = ray.get(ray_worker_outputs)
  File "{R}auto_init_hook.py", line 22, in auto_init_wrapper
    return fn(*args, **kwargs)
  File "{R}client_mode_hook.py", line 104, in wrapper
    return func(*args, **kwargs)
  File "{R}worker.py", line 2849, in get
    values, debugger_breakpoint = worker.get_objects(object_refs, timeout=timeout)
  File "{R}worker.py", line 937, in get_objects
    raise value.as_instanceof_cause()
ray.exceptions.RayTaskError(TypeError): ray::RayWorkerWrapper.execute_method() (pid=13215, ip=7.242.101.23, actor_id=02a815d7708e6d7233293c3f01000000, repr=<vllm.executor.ray_utils.RayWorkerWrapper object at 0xffcfc468d5a0>)'''.split("\n")
W = '''  File "/vllm-workspace/vllm/vllm/worker/worker_base.py", line 623, in execute_method
    raise e
  File "/vllm-workspace/vllm/vllm/worker/worker_base.py", line 614, in execute_method
    return run_method(self, method, args, kwargs)
  File "/vllm-workspace/vllm/vllm/utils/__init__.py", line 2736, in run_method
    return func(*args, **kwargs)
  File "/vllm-workspace/vllm-ascend/vllm_ascend/worker/worker_v1.py", line 240, in load_model
    self.model_runner.load_model()
  File "/usr/local/python3.10.17/lib/python3.10/site-packages/mindie_turbo/adaptor/vllm/weight_utils.py", line 94, in postprocess_loading
    func(self)
  File "/vllm-workspace/vllm-ascend/vllm_ascend/worker/model_runner_v1.py", line 1748, in load_model
    self.model = get_model(vllm_config=self.vllm_config)
  File "/vllm-workspace/vllm/vllm/model_executor/model_loader/__init__.py", line 59, in get_model
    return loader.load_model(vllm_config=vllm_config,
  File "/vllm-workspace/vllm/vllm/model_executor/model_loader/base_loader.py", line 41, in load_model
    self.load_weights(model, model_config)
  File "/vllm-workspace/vllm/vllm/model_executor/model_loader/default_loader.py", line 269, in load_weights
    loaded_weights = model.load_weights(
  File "/vllm-workspace/vllm/vllm/model_executor/models/qwen3_moe.py", line 541, in load_weights
    return loader.load_weights(weights)
  File "/vllm-workspace/vllm/vllm/model_executor/models/utils.py", line 291, in load_weights
    autoloaded_weights = set(self._load_module("", self.module, weights))
  File "/vllm-workspace/vllm/vllm/model_executor/models/utils.py", line 240, in _load_module
    for child_prefix, child_weights in self._groupby_prefix(weights):
  File "/vllm-workspace/vllm/vllm/model_executor/models/utils.py", line 129, in _groupby_prefix
    for prefix, group in itertools.groupby(weights_by_parts,
  File "/vllm-workspace/vllm/vllm/model_executor/models/utils.py", line 126, in <genexpr>
    weights_by_parts = ((weight_name.split(".", 1), weight_data)
  File "/vllm-workspace/vllm/vllm/model_executor/models/utils.py", line 288, in <genexpr>
    weights = ((name, weight) for name, weight in weights
  File "/vllm-workspace/vllm/vllm/model_executor/model_loader/default_loader.py", line 251, in get_all_weights
    yield from self._get_weights_iterator(primary_weights)
  File "/vllm-workspace/vllm/vllm/model_executor/model_loader/default_loader.py", line 198, in _get_weights_iterator
    weights_iterator = safetensors_weights_iterator(
TypeError: wrapper_weights_iterator.<locals>._safetensors_weights_iterator() takes 1 positional argument but 2 were given'''.split("\n")
P = "ERROR 07-31 19:35:35 [core.py:586] "
out = [P + l for l in ["EngineCore failed to start.", "Traceback (most recent call last):"] + E1 + W]
out += ["Process EngineCore_0:", "Traceback (most recent call last):",
 '  File "/usr/local/python3.10.17/lib/python3.10/multiprocessing/process.py", line 314, in _bootstrap',
 "    self.run()",
 '  File "/usr/local/python3.10.17/lib/python3.10/multiprocessing/process.py", line 108, in run',
 "    self._target(*self._args, **self._kwargs)",
 '  File "/vllm-workspace/vllm/vllm/v1/engine/core.py", line 590, in run_engine_core',
 "    raise e"] + E1 + W
out += ["INFO 07-31 19:35:35 [ray_distributed_executor.py:128] Shutting down Ray distributed executor. If you see error log from logging.cc regarding SIGTERM received, please ignore because this is the expected termination process in Ray.",
 "2025-07-31 19:35:35,770\tERROR worker.py:423 -- Unhandled error (suppress with 'RAY_IGNORE_UNHANDLED_ERRORS=1'): ray::RayWorkerWrapper.execute_method() (pid=13214, ip=7.242.101.23, actor_id=11573371cb1364127fd3f12c01000000, repr=<vllm.executor.ray_utils.RayWorkerWrapper object at 0xffcff00f55a0>)"] + W
a = open("2146a.txt").read().replace("<TAB>", "\t")
text = a + "\n".join(out) + "\n"
open("/work/staging/b53/N/3425-ascend-v1-0.9.2-ray-tp16-qwen3-235b-mindie-turbo-safetensors-iterator-typeerror.log","w").write(text)
print(len(text))

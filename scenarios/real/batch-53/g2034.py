P = "ERROR 07-26 06:20:12 [core.py:634] "
body = r'''EngineCore encountered a fatal error.
Traceback (most recent call last):
  File "/vllm-workspace/vllm/vllm/v1/engine/core.py", line 625, in run_engine_core
    engine_core.run_busy_loop()
  File "/vllm-workspace/vllm/vllm/v1/engine/core.py", line 652, in run_busy_loop
    self._process_engine_step()
  File "/vllm-workspace/vllm/vllm/v1/engine/core.py", line 677, in _process_engine_step
    outputs, model_executed = self.step_fn()
  File "/vllm-workspace/vllm/vllm/v1/engine/core.py", line 267, in step
    model_output = self.execute_model_with_error_logging(
  File "/vllm-workspace/vllm/vllm/v1/engine/core.py", line 253, in execute_model_with_error_logging
    raise err
  File "/vllm-workspace/vllm/vllm/v1/engine/core.py", line 244, in execute_model_with_error_logging
    return model_fn(scheduler_output)
  File "/vllm-workspace/vllm/vllm/v1/executor/abstract.py", line 87, in execute_model
    output = self.collective_rpc("execute_model",
  File "/vllm-workspace/vllm/vllm/executor/uniproc_executor.py", line 58, in collective_rpc
    answer = run_method(self.driver_worker, method, args, kwargs)
  File "/vllm-workspace/vllm/vllm/utils/__init__.py", line 2985, in run_method
    return func(*args, **kwargs)
  File "/vllm-workspace/vllm-ascend/vllm_ascend/worker/worker_v1.py", line 194, in execute_model
    output = self.model_runner.execute_model(scheduler_output,
  File "/usr/local/python3.10.17/lib/python3.10/site-packages/torch/utils/_contextlib.py", line 116, in decorate_context
    return func(*args, **kwargs)
  File "/vllm-workspace/vllm-ascend/vllm_ascend/worker/model_runner_v1.py", line 1442, in execute_model
    num_scheduled_tokens_np) = (self._process_reqs(
  File "/vllm-workspace/vllm-ascend/vllm_ascend/worker/model_runner_v1.py", line 949, in _process_reqs
    self.set_active_loras(self.input_batch, num_scheduled_tokens)
  File "/vllm-workspace/vllm/vllm/v1/worker/lora_model_runner_mixin.py", line 84, in set_active_loras
    return self._set_active_loras(prompt_lora_mapping, token_lora_mapping,
  File "/vllm-workspace/vllm/vllm/v1/worker/lora_model_runner_mixin.py", line 73, in _set_active_loras
    self.lora_manager.set_active_adapters(lora_requests, lora_mapping)
  File "/vllm-workspace/vllm/vllm/lora/worker_manager.py", line 167, in set_active_adapters
    set_active_adapters_worker(requests, mapping, self._apply_adapters,
  File "/vllm-workspace/vllm/vllm/adapter_commons/utils.py", line 55, in set_active_adapters_worker
    apply_adapters_func(requests)
  File "/vllm-workspace/vllm/vllm/lora/worker_manager.py", line 227, in _apply_adapters
    self.add_adapter(lora)
  File "/vllm-workspace/vllm/vllm/lora/worker_manager.py", line 240, in add_adapter
    lora = self._load_adapter(lora_request)
  File "/vllm-workspace/vllm/vllm/lora/worker_manager.py", line 141, in _load_adapter
    raise e
  File "/vllm-workspace/vllm/vllm/lora/worker_manager.py", line 116, in _load_adapter
    lora = self._lora_model_cls.from_local_checkpoint(
  File "/vllm-workspace/vllm/vllm/lora/models.py", line 255, in from_local_checkpoint
    check_unexpected_modules(f)
  File "/vllm-workspace/vllm/vllm/lora/models.py", line 225, in check_unexpected_modules
    raise ValueError('''
lines = body.split("\n")
layers = sorted(str(i) for i in range(16))
mods = []
for L in layers:
    for m in ["mlp.down_proj","mlp.gate_proj","mlp.up_proj","self_attn.k_proj","self_attn.o_proj","self_attn.q_proj","self_attn.v_proj"]:
        mods += [f"model.layers.{L}.{m}"]*2
ve = "ValueError: While loading /root/.cache/modelscope/hub/models/vllm-ascend/ilama-text2sql-spider, expected target modules in ['embed_tokens'] but received " + repr(mods) + ". Please verify that the loaded LoRA module is correct"
lines.append(ve)
text = "\n".join(P+l for l in lines) + "\n"
open("/work/staging/b53/N/3421-ascend-v1-0.10.0-ci-ilama-lora-expected-target-modules-embed-tokens.log","w").write(text)
print(len(text), len(lines))
print(ve[:300]); print(ve[-300:])

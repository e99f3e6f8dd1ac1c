P = "(VllmWorker rank=6 pid=653) ERROR 07-26 13:19:51 [multiproc_executor.py:539] "
tb = [
 "Traceback (most recent call last):",
 '  File "/usr/local/lib/python3.11/site-packages/vllm/v1/executor/multiproc_executor.py", line 534, in worker_busy_loop',
 "    output = func(*args, **kwargs)",
 "             " + "^"*len("func(*args, **kwargs)"),
 '  File "/usr/local/lib64/python3.11/site-packages/vllm_ascend/worker/worker_v1.py", line 245, in execute_model',
 "    output = self.model_runner.execute_model(scheduler_output)",
 "             " + "^"*len("self.model_runner.execute_model(scheduler_output)"),
 '  File "/usr/local/lib64/python3.11/site-packages/torch/utils/_contextlib.py", line 116, in decorate_context',
 "    return func(*args, **kwargs)",
 "           " + "^"*len("func(*args, **kwargs)"),
 '  File "/usr/local/lib64/python3.11/site-packages/vllm_ascend/worker/model_runner_v1.py", line 1513, in execute_model',
 "    logits = self.apply_grammar_bitmask(scheduler_output, logits)",
 "             " + "^"*len("self.apply_grammar_bitmask(scheduler_output, logits)"),
 '  File "/usr/local/lib64/python3.11/site-packages/vllm_ascend/worker/model_runner_v1.py", line 1357, in apply_grammar_bitmask',
 "    sorted_bitmask[batch_index] = grammar_bitmask[orig_index]",
 "    " + "~"*len("sorted_bitmask") + "^"*len("[batch_index]"),
 "IndexError: index 1 is out of bounds for axis 0 with size 1",
]
lines = ["WorkerProc hit an exception."] + tb + tb
text = "\n".join(P + l for l in lines) + "\n"
open("/work/staging/b53/N/3420-ascend-v1-0.9.1dev-tp8-qwen3-32b-json-object-grammar-bitmask-indexerror.log","w").write(text)
print(len(text)); 
for l in lines[:18]: print(repr(P+l)[:160])

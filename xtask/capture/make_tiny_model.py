#!/usr/bin/env python3
"""Create the tiny random Llama models used by the lab scenarios.

Usage: python make_tiny_model.py OUTDIR_ROOT  (run by `cargo xtask capture` inside the capture venv)
Creates under OUTDIR_ROOT:
  tiny-llama/          valid tiny Llama (4 heads, 512 positions)
  tiny-llama-3heads/   num_attention_heads=3 (for TP=2 divisibility failure)
  tiny-llama-hd32/     hidden_size=128, 4 heads -> head_dim 32: vLLM 0.8.5's V0
                       CPU PagedAttention rejects head size 16, so 0.8.5 uses this
                       as its base model to reach the missing-ops failure
  tiny-unsupported/    copy of tiny-llama with architectures=["FooBarForCausalLM"]
  tiny-remote-code/    copy of tiny-llama whose config needs custom code
                       (model_type "labfoo" + auto_map -> configuration_labfoo.py)
Needs: torch, transformers, tokenizers (all come with vllm).
"""
import json
import os
import shutil
import sys

import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

VOCAB = 256


def make_tokenizer(out):
    special = ["<unk>", "<s>", "</s>", "<pad>"]
    words = special + [f"w{i}" for i in range(VOCAB - len(special))]
    vocab = {w: i for i, w in enumerate(words)}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="<unk>", bos_token="<s>", eos_token="</s>", pad_token="<pad>",
        model_max_length=512,
    )
    fast.save_pretrained(out)


def make_llama(out, heads=4, hidden=64):
    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=VOCAB, hidden_size=hidden, intermediate_size=128,
        num_hidden_layers=2, num_attention_heads=heads, num_key_value_heads=heads,
        max_position_embeddings=512, bos_token_id=1, eos_token_id=2, pad_token_id=3,
    )
    LlamaForCausalLM(cfg).save_pretrained(out, safe_serialization=True)
    make_tokenizer(out)


def edit_config(d, fn):
    p = os.path.join(d, "config.json")
    with open(p) as f:
        cfg = json.load(f)
    fn(cfg)
    with open(p, "w") as f:
        json.dump(cfg, f, indent=2)


REMOTE_CODE = '''from transformers import PretrainedConfig


class LabFooConfig(PretrainedConfig):
    model_type = "labfoo"

    def __init__(self, vocab_size=256, hidden_size=64, intermediate_size=128,
                 num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=4, max_position_embeddings=512, **kwargs):
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.intermediate_size = intermediate_size
        self.num_hidden_layers = num_hidden_layers
        self.num_attention_heads = num_attention_heads
        self.num_key_value_heads = num_key_value_heads
        self.max_position_embeddings = max_position_embeddings
        super().__init__(**kwargs)
'''


def main():
    root = sys.argv[1]
    os.makedirs(root, exist_ok=True)
    base = os.path.join(root, "tiny-llama")
    make_llama(base)
    make_llama(os.path.join(root, "tiny-llama-3heads"), heads=3, hidden=48)
    make_llama(os.path.join(root, "tiny-llama-hd32"), heads=4, hidden=128)

    d = os.path.join(root, "tiny-unsupported")
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(base, d)
    edit_config(d, lambda c: c.update(architectures=["FooBarForCausalLM"]))

    d = os.path.join(root, "tiny-remote-code")
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(base, d)
    with open(os.path.join(d, "configuration_labfoo.py"), "w") as f:
        f.write(REMOTE_CODE)

    def rc(c):
        c["model_type"] = "labfoo"
        c["architectures"] = ["LabFooForCausalLM"]
        c["auto_map"] = {"AutoConfig": "configuration_labfoo.LabFooConfig"}
    edit_config(d, rc)
    print("models written under", root)


if __name__ == "__main__":
    main()

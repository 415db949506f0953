"""A small causal language model to fine-tune offline: a byte-level BPE tokenizer trained on
this folder's train.jsonl, and a 2-layer GPT-2 built from a config with random weights (about
0.1 M parameters), saved with save_pretrained so that it loads like any Hub model
(``model_uri="file:///…"`` or a folder path).

    python examples/fine-tuning/tiny_model.py OUT_FOLDER

Nothing is downloaded. The same seed gives the same weights and the same tokenizer."""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DATASET = os.path.join(HERE, "train.jsonl")


def texts(path=DATASET):
    with open(path) as f:
        return [json.loads(line)["text"] for line in f if line.strip()]


def make_tiny_model(out_dir, seed=0, vocab_size=300, width=64, layers=2, max_length=32):
    """Writes the model and its tokenizer to ``out_dir``; returns ``out_dir``."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(texts(), trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, model_max_length=max_length,
                                   bos_token="<|endoftext|>", eos_token="<|endoftext|>")
    torch.manual_seed(seed)
    config = GPT2Config(vocab_size=len(fast), n_positions=max_length, n_embd=width,
                        n_layer=layers, n_head=2, bos_token_id=fast.bos_token_id,
                        eos_token_id=fast.eos_token_id)
    model = GPT2LMHeadModel(config)
    os.makedirs(out_dir, exist_ok=True)
    model.save_pretrained(out_dir)
    fast.save_pretrained(out_dir)
    return out_dir


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: tiny_model.py OUT_FOLDER")
    print(make_tiny_model(sys.argv[1]))

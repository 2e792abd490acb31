"""Native llama.cpp (llama-cpp-python 0.3.36, built with GGML_NATIVE by tools/bench-setup.sh) on the bench's
prompt ids: the peer that reads the same GGUF files as Wisp, without a browser. run.mjs calls it with a
JSON spec and reads one JSON line, in the shape of tools/native_bench.rs's:

    python3 benches-web/llama_cpp_bench.py spec.json
    spec: { weights, threads, contextLen, prompts: [[ids…]…], decode, reps, warmup }

Greedy, one token per eval after the prompt (as every engine of the bench), from an empty cache each run.
Weights go into llama.cpp's plain CPU buffers (`use_extra_bufts = false`): with its extra buffer types (AMX
here, and the repacked layouts) this build crashes in its first decode on this machine, with or without
an adapter (tools/make_lora_fixtures.py meets the same crash).
"""
import json
import resource
import sys
import time

import numpy as np


def main():
    spec = json.load(open(sys.argv[1]))
    import llama_cpp.llama_cpp as lib
    from llama_cpp import Llama, __version__

    default = lib.llama_model_default_params

    def plain_params():
        p = default()
        p.use_extra_bufts = False
        return p

    lib.llama_model_default_params = plain_params
    t0 = time.perf_counter()
    llm = Llama(model_path=spec["weights"], n_ctx=spec["contextLen"], n_threads=spec["threads"],
                n_threads_batch=spec["threads"], n_batch=512, n_ubatch=512, logits_all=False, verbose=False)
    load_ms = (time.perf_counter() - t0) * 1000

    vocab = llm.n_vocab()

    def greedy():
        # The last evaluated position's logits (the only ones kept without logits_all).
        return int(np.argmax(np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(vocab,))))

    def generate(ids, n):
        start = time.perf_counter()
        llm.reset()  # position 0: eval drops the cache from there on
        llm.eval(ids)
        tokens = [greedy()]
        first = time.perf_counter()
        while len(tokens) < n:
            llm.eval([tokens[-1]])
            tokens.append(greedy())
        end = time.perf_counter()
        return tokens, {"ttftMs": (first - start) * 1000, "decodeMs": (end - first) * 1000}

    runs = []
    for i, ids in enumerate(spec["prompts"]):
        n = spec["decode"] if i == 0 else 1
        if spec.get("warmup", True):
            generate(ids, n)
        samples, tokens = [], None
        for _ in range(spec.get("reps", 1)):
            tokens, sample = generate(ids, n)
            samples.append(sample)
        runs.append({"tokens": tokens, "samples": samples})
    print(json.dumps({"engine": f"llama-cpp-python {__version__}", "threads": spec["threads"], "loadMs": load_ms,
                      "peakRssBytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, "runs": runs}))


if __name__ == "__main__":
    main()

"""SmolLM2-135M-Instruct in the quant types people download, made by llama.cpp's own quantizer, for the
benchmarks (benches-web/run.mjs): the PyPI Q4_1 file (tools/fetch-smollm2.sh) dequantized to an f32 GGUF,
then quantized to Q8_0, Q4_K_M and Q5_K_M, into the git-ignored benches-web/.models/.

    python3 tools/make_smollm2_quants.py            # writes what is missing

Needs llama-cpp-python 0.3.36 (tools/bench-setup.sh builds it). Each quantization takes seconds.
"""
import ctypes
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
SOURCE = ROOT / "models/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
OUT = ROOT / "benches-web/.models"
NAME = "SmolLM2-135M-Instruct"


def quantize(src, dst, ftype):
    import llama_cpp.llama_cpp as lib

    params = lib.llama_model_quantize_default_params()
    params.ftype = ftype
    # The source is itself quantized (Q4_1): llama.cpp dequantizes it to f32 first.
    params.allow_requantize = True
    params.nthread = 2
    tmp = dst.with_suffix(".part")
    rc = lib.llama_model_quantize(str(src).encode(), str(tmp).encode(), ctypes.byref(params))
    if rc != 0:
        raise SystemExit(f"llama_model_quantize {src.name} -> {dst.name} failed ({rc})")
    tmp.rename(dst)
    print(f"{dst.relative_to(ROOT)}: {dst.stat().st_size:,} bytes")


def main():
    import llama_cpp.llama_cpp as lib

    if not SOURCE.exists():
        raise SystemExit(f"{SOURCE} is missing: run bash tools/fetch-smollm2.sh")
    OUT.mkdir(parents=True, exist_ok=True)
    f32 = OUT / f"{NAME}.F32.gguf"
    if not f32.exists():
        quantize(SOURCE, f32, lib.LLAMA_FTYPE_ALL_F32)
    for label, ftype in [("Q8_0", lib.LLAMA_FTYPE_MOSTLY_Q8_0), ("Q4_K_M", lib.LLAMA_FTYPE_MOSTLY_Q4_K_M),
                         ("Q5_K_M", lib.LLAMA_FTYPE_MOSTLY_Q5_K_M)]:
        dst = OUT / f"{NAME}.{label}.gguf"
        if not dst.exists():
            quantize(f32, dst, ftype)


if __name__ == "__main__":
    sys.exit(main())

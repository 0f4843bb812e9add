"""Every CUDA source compiles for every target architecture, with nvcc and
with NVRTC, and defines every kernel the loader launches by name."""
import ctypes
import re
import subprocess

import pytest

from psjob.foundation.cuda import _source


def test_kernel_source_inlines_the_header_and_defines_every_listed_kernel():
    text = _source.kernel_source()
    assert '#include "optimizer_math.cuh"' not in text
    assert "adam_element" in text
    macro_uses = re.findall(r"^PSJOB_OPTIMIZER_KERNELS\((\w+), (\w+), (\w+), \w+\)", text, re.M)
    kernels_in_macro = re.findall(r"psjob_(\w+)_##LAYOUT##_##SUFFIX", text)
    defined = {f"psjob_{k}_{layout}_{suffix}" for _, suffix, layout in macro_uses
               for k in kernels_in_macro}
    assert defined == set(_source.KERNEL_NAMES)


def test_nvcc_builds_sass_for_every_target_architecture_and_ptx_for_the_newest(nvcc, tmp_path):
    # Compile the exact text NVRTC gets, warnings as errors, one fatbin for
    # all targets; --keep leaves each architecture's cubin and PTX to inspect.
    source = tmp_path / "psjob_optimizers.cu"
    source.write_text(_source.kernel_source())
    keep = tmp_path / "keep"
    keep.mkdir()
    result = subprocess.run(
        [nvcc, "-std=c++17", "-Werror", "all-warnings", "-fatbin", "-no-compress", "--keep",
         "--keep-dir", str(keep), *_source.nvcc_gencode_flags(), "-o", str(tmp_path / "k.fatbin"),
         str(source)], capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stderr
    for arch in _source.TARGET_ARCHS:
        cubins = list(keep.glob(f"*{arch}.cubin")) or list(
            keep.glob(f"*{arch.replace('sm_', 'compute_')}.cubin"))
        assert len(cubins) == 1, f"no cubin for {arch}: {sorted(p.name for p in keep.iterdir())}"
        data = cubins[0].read_bytes()
        missing = [n for n in _source.KERNEL_NAMES if n.encode() + b"\0" not in data]
        assert not missing, f"{arch} cubin lacks {missing}"
    ptx = (keep / f"psjob_optimizers.{_source.PTX_ARCH}.ptx").read_text()
    assert {n for n in _source.KERNEL_NAMES if f".entry {n}(" in ptx} == set(_source.KERNEL_NAMES)
    assert (tmp_path / "k.fatbin").stat().st_size > 0


def _nvrtc_compile(nvrtc, source, options):
    program = ctypes.c_void_p()
    assert nvrtc.nvrtcCreateProgram(ctypes.byref(program), source.encode(),
                                    b"psjob_optimizers.cu", 0, None, None) == 0
    try:
        encoded = [o.encode() for o in options]
        status = nvrtc.nvrtcCompileProgram(program, len(encoded),
                                           (ctypes.c_char_p * len(encoded))(*encoded))
        size = ctypes.c_size_t()
        nvrtc.nvrtcGetProgramLogSize(program, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        nvrtc.nvrtcGetProgramLog(program, log)
        if status != 0:
            return status, log.value.decode(errors="replace"), b""
        nvrtc.nvrtcGetCUBINSize(program, ctypes.byref(size))
        cubin = ctypes.create_string_buffer(size.value)
        nvrtc.nvrtcGetCUBIN(program, cubin)
        return status, log.value.decode(errors="replace"), cubin.raw
    finally:
        nvrtc.nvrtcDestroyProgram(ctypes.byref(program))


@pytest.mark.parametrize("arch", _source.TARGET_ARCHS)
def test_nvrtc_compiles_the_loader_source_for_each_target_as_cupy_will(nvrtc, arch):
    status, log, cubin = _nvrtc_compile(nvrtc, _source.kernel_source(),
                                        [*_source.NVRTC_OPTIONS, f"-arch={arch}"])
    assert status == 0, log
    missing = [n for n in _source.KERNEL_NAMES if n.encode() + b"\0" not in cubin]
    assert not missing, f"NVRTC {arch} cubin lacks {missing}"


def test_nvrtc_reports_a_broken_source_so_the_checks_above_can_fail(nvrtc):
    status, log, _ = _nvrtc_compile(nvrtc, _source.kernel_source() + "\nthis is not C++;\n",
                                    ["-arch=sm_80"])
    assert status != 0 and "error" in log

"""Builds the example extension with setuptools (the route without ninja; the tests use
torch.utils.cpp_extension.load when ninja is there):

    SPLITK_ATTENTION_PLANTED=1 python setup.py build_ext --build-lib DIR   # the planted bug
    python setup.py build_ext --build-lib DIR                               # fixed

The module is `splitk_attention` (fixed) or `splitk_attention_planted`; the probe headers come from
the tilescope package (tilescope.get_include()), the probes compiled in (TILESCOPE_TRACE=1).
"""
import os

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension, is_ninja_available

import tilescope

HERE = os.path.dirname(os.path.abspath(__file__))
planted = os.environ.get("SPLITK_ATTENTION_PLANTED") == "1"
name = "splitk_attention_planted" if planted else "splitk_attention"
nvcc_flags = ["-O2", "-DTILESCOPE_TRACE=1"] + (["-DFLASH_ATTENTION_PLANTED_BUG"] if planted else [])

setup(
    name=name,
    ext_modules=[CUDAExtension(name, [os.path.join(HERE, "splitk_attention.cu")],
                               include_dirs=[tilescope.get_include(), HERE],
                               extra_compile_args={"cxx": ["-O2"], "nvcc": nvcc_flags})],
    cmdclass={"build_ext": BuildExtension.with_options(use_ninja=is_ninja_available())},
)

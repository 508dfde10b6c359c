# The one list of the kernels' instantiations: which kernel is built for which dtypes and head
# dims. Everything that names them is generated from here (cmake/TilescopeKernelList.cmake):
# the instantiation units of both backends (one per stage and dtype), find_kernel's table of
# them, and base/kernel_list_entries.h, which base/kernel_list.h reads for the config's
# validation, the CLI's choices and help and the GUI's launch form. Adding a head dim or a dtype
# to a kernel is a change here, plus the kernel source where the kernel itself must change (its
# tile shapes, kernels/tile_shapes.h; a new dtype's element type in kernels/device/vec_io.cuh and
# base/dtype.h). docs/architecture.md says how.

# The dtypes (base/dtype.h's DType) and the element type the kernels read and write each as.
ts_kernel_dtype(f32 float)
ts_kernel_dtype(f16 __half)
ts_kernel_dtype(bf16 __nv_bfloat16)

# ts_kernel(<kind> STAGES ... DTYPES ... HEAD_DIMS ... [DTYPES_WHY <text>] [HEAD_DIMS_WHY <text>])
#   kind       base/attention_config.h's KernelKind, by its name
#   STAGES     the kernels it launches (kernels/kernel_registry.h's KernelStage), in order; a
#              stage another kernel lists first is built by that kernel's units (it must build
#              the dtypes and head dims this one asks for)
#   DTYPES     the dtypes it is built for; HEAD_DIMS the head dims; every dtype for every head dim
#   *_WHY      why it is built for no others: the refusal of another says so
# Each head dim costs an instantiation per stage, dtype and variant, compiled three times (the
# host build and nvcc's sm_80 and sm_90a): docs/perf.md has the build's cost.
ts_kernel(fa1
  STAGES fa1
  DTYPES f32 f16 bf16
  HEAD_DIMS 32 64 128 256)
ts_kernel(splitk
  STAGES splitk_partial splitk_reduce
  DTYPES f32 f16 bf16
  HEAD_DIMS 32 64 128 256)
ts_kernel(fa2
  STAGES fa2
  DTYPES f16 bf16
  DTYPES_WHY "it runs on tensor cores, which take 16-bit inputs"
  HEAD_DIMS 64 128
  HEAD_DIMS_WHY "each head dim costs two more nvcc builds (sm_80, sm_90a) of each of its units")
ts_kernel(splitk2
  STAGES splitk2_partial splitk_reduce
  DTYPES f16 bf16
  DTYPES_WHY "its partial pass is FA-2's, on tensor cores, which take 16-bit inputs"
  HEAD_DIMS 64 128
  HEAD_DIMS_WHY "its partial pass is FA-2's, built for these head dims")

// Cooperative groups on the CPU path: the shim's <cooperative_groups.h> refuses them by name.
#include <cooperative_groups.h>

__global__ void sync_grid() { cooperative_groups::this_grid().sync(); }

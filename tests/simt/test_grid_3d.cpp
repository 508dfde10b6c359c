// 3-D grids and blocks: every thread of every block runs once and sees its own coordinates.
#include <gtest/gtest.h>

#include "tests/simt/kernel_launchers.h"
#include "tests/simt/test_support.h"

namespace ts::test {
namespace {

void expect_every_thread_sees_its_coordinates(dim3 grid, dim3 block) {
  SCOPED_TRACE("grid (" + std::to_string(grid.x) + "," + std::to_string(grid.y) + "," +
               std::to_string(grid.z) + ") block (" + std::to_string(block.x) + "," +
               std::to_string(block.y) + "," + std::to_string(block.z) + ")");
  const unsigned per_block = block.x * block.y * block.z;
  const unsigned total = per_block * grid.x * grid.y * grid.z;
  DeviceArray<ThreadRecord> d_out(poisoned<ThreadRecord>(total));
  const RunStatus status = run_coordinates({grid, block}, d_out.get());
  ASSERT_TRUE(status.ok) << backend_name() << ": " << status.message;
  const std::vector<ThreadRecord> out = d_out.to_host();

  unsigned g = 0;
  for (unsigned bz = 0; bz < grid.z; ++bz)
    for (unsigned by = 0; by < grid.y; ++by)
      for (unsigned bx = 0; bx < grid.x; ++bx)
        for (unsigned tz = 0; tz < block.z; ++tz)
          for (unsigned ty = 0; ty < block.y; ++ty)
            for (unsigned tx = 0; tx < block.x; ++tx, ++g) {
              const ThreadRecord& r = out[g];
              const ThreadRecord want{{tx, ty, tz},
                                      {bx, by, bz},
                                      {block.x, block.y, block.z},
                                      {grid.x, grid.y, grid.z}};
              ASSERT_EQ(std::memcmp(&r, &want, sizeof r), 0)
                  << "record " << g << " holds thread (" << r.thread[0] << "," << r.thread[1] << ","
                  << r.thread[2] << ") of block (" << r.block[0] << "," << r.block[1] << ","
                  << r.block[2] << ")";
            }
}

TEST(Grid3d, EveryThreadSeesItsCoordinates) {
  expect_every_thread_sees_its_coordinates(dim3(3, 2, 2), dim3(4, 3, 2));
  expect_every_thread_sees_its_coordinates(dim3(2, 3, 4), dim3(8, 4, 2));
  expect_every_thread_sees_its_coordinates(dim3(1, 1, 5), dim3(1, 1, 64));
  expect_every_thread_sees_its_coordinates(dim3(7, 1, 1), dim3(1024, 1, 1));
}

}  // namespace
}  // namespace ts::test

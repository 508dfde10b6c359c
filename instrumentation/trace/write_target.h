// Where the programs may write a path the user named: one rule for every writer (capture's and
// export's -o, the viewer's screenshot, layout and frame-stats files, its export dialog and
// "save trace as", the recent-files store; AtomicFileWriter and StagedFolder apply it).
//
// A path that exists must be what is written there: a regular file where a file is written, a
// folder where a folder is. A device, FIFO or socket is refused, never replaced (a rename over
// /dev/null, as root, would break the system). A symbolic link is followed: a link to a regular
// file writes that file and keeps the link; a link to anything else, or to nothing, is refused.
// And a program never writes over one of its own inputs (compared by device and inode, so a
// symlink, a hard link or ./x is caught).
#pragma once

#include <filesystem>
#include <span>
#include <string_view>

namespace ts {

enum class WriteTarget { file, folder };

// Throws FileWriteError naming the path and what it is when it exists and is not `kind`. Where a
// file is wanted and a folder is there, the message suggests `example_name` in that folder when
// the caller knows what it writes ("run.trace.safetensors", "screenshot.png"), else no name.
void check_write_target(const std::filesystem::path& path, WriteTarget kind, std::string_view example_name = {});

// Where a file write to `path` renames its bytes to: `path`, or the regular file a symbolic
// link at `path` leads to. Throws FileWriteError as check_write_target(path, file) does.
std::filesystem::path resolve_file_target(const std::filesystem::path& path);

// check_write_target(path, file, example_name) and that the file can be created: its folder
// exists and is writable. For a check before a long run, so that a typo in -o is reported at once.
void check_output_file(const std::filesystem::path& path, std::string_view example_name);

// Throws FileWriteError when `output` exists and is the same file as one of `inputs` (missing
// inputs are skipped: their readers report them). `inputs_role` says what they are in the
// message ("an input of the capture").
void check_not_an_input(const std::filesystem::path& output, std::span<const std::filesystem::path> inputs,
                        std::string_view inputs_role);

}  // namespace ts

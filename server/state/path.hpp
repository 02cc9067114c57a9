// ZooKeeper's path rules (PathUtils.validatePath): absolute, no trailing '/', no empty, "." or
// ".." names, and none of the characters ZooKeeper refuses. One validator for the whole server.
#pragma once

#include <string>
#include <string_view>

namespace warden::server {

// Empty when `path` is valid, else the reason, as ZooKeeper words it.
std::string path_problem(std::string_view path);
inline bool valid_path(std::string_view path) { return path_problem(path).empty(); }

// "/a/b" -> "/a"; "/a" -> "/". Requires a path with at least one '/' past the root.
std::string_view parent_path(std::string_view path);
// "/a/b" -> "b".
std::string_view node_name(std::string_view path);

}  // namespace warden::server

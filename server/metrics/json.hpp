// JSON values as the AdminServer answers them (ZooKeeper's Jackson output: objects keep their
// keys' order, pretty-printed), written only: Warden never parses JSON.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace warden::server::metrics {

class Json {
 public:
  using Array = std::vector<Json>;
  using Object = std::vector<std::pair<std::string, Json>>;
  Json() = default;  // null
  Json(std::nullptr_t) {}
  Json(bool b) : v_(b) {}
  Json(int v) : v_(static_cast<int64_t>(v)) {}
  Json(int64_t v) : v_(v) {}
  Json(uint64_t v) : v_(static_cast<int64_t>(v)) {}
  Json(double v) : v_(v) {}
  Json(const char* s) : v_(std::string(s)) {}
  Json(std::string s) : v_(std::move(s)) {}
  static Json array(Array a = {}) { return Json(Tag{}, std::move(a)); }
  static Json object(Object o = {}) { return Json(Tag{}, std::move(o)); }

  // An object's member (appended; keys keep their order).
  Json& set(std::string key, Json value);
  // An array's element.
  Json& push(Json value);
  bool is_object() const { return std::holds_alternative<Object>(v_); }
  // A number's value (an int or a double); nullopt for anything else.
  std::optional<double> number() const;
  // Pretty-printed, two spaces an indent, "key" : value, as Jackson's default printer.
  std::string dump() const;
  // A scalar as a four-letter word prints it (mntr's values): numbers and strings bare.
  std::string text() const;

 private:
  struct Tag {};
  Json(Tag, Array a) : v_(std::move(a)) {}
  Json(Tag, Object o) : v_(std::move(o)) {}
  void write(std::string& out, int indent) const;
  std::variant<std::nullptr_t, bool, int64_t, double, std::string, Array, Object> v_{nullptr};
};

// A double as Java prints it: "4.0", "4.5", "3.3333" (at most four decimals, as ZooKeeper
// rounds its averages).
std::string java_double(double v);

}  // namespace warden::server::metrics
